"""The report's figures, drawn from the aggregated frames and saved as PNG under figures/.

One module per kind of figure a reader looks for: curves (over training), tradeoffs (metric
against speed), heatmap (two-key studies), bars (throughput, memory), sensitivity (lr, performance
profile); beneath them drawing (style, layouts, grids, legends, axis ranges), checks (the layout
checks) and png (saving), and glossary (the captions' terms, the order of a study's figures).
This package re-exports what the report and the tests use.

Figures are built as matplotlib.figure.Figure objects on an Agg canvas, never through pyplot:
nothing enters pyplot's global figure registry, and a runner that calls build_report at the end of
a long multirun leaks no figures. The callers choose which groups are drawn (one study at a time,
its best groups), so the count of files is fixed whatever the size of the sweep.

Every figure is drawn twice, for two columns a reader meets: WIDE fills the report's 1200 px column
at a desktop width (figures/NAME.png, panels side by side), NARROW is for a phone
(figures/narrow/NAME.png, panels stacked), so text is never scaled below 9 px on either. Heights
follow the content: panels have a fixed height each, and legends (below the panels, every label
whole, wrapped, never cut) get the lines they need. Before it is saved, each figure is laid out and
checked (`layout_problems`: tick labels over each other, texts over texts, squashed panels, legends
with repeated or cut labels, direct labels on a point's marker or nearer another point than their
own); each PNG records the findings and its smallest text size in pixels (PROBLEMS_KEY,
MIN_FONT_KEY), so tests and the browser check read them back from the file.

A figure function returns None (or []) where its figure would carry no information (no run
diverged, whole-process memory); the report takes a study's figures in STUDY_FIGURE_ORDER and
gives peak memory once, as memory_table. Captions are short and name their terms, explained once
in GLOSSARY. A figure's `speed` says what a speed axis rests on: paired timing, or unpaired
per-run throughput (never a result).
"""

from __future__ import annotations

import sys

import normbench.report.mplconfig  # noqa: F401  (before matplotlib: its cache stays out of $HOME)

# isort: split
import matplotlib  # noqa: E402

# Every figure is drawn on an explicit Agg canvas, so the backend only matters to pyplot, which
# a library in the same process may import. Fix it to Agg unless a host process (the runner) has
# already chosen one: switching would close that process's figures.
if "matplotlib.pyplot" not in sys.modules:
    matplotlib.use("Agg")

from normbench.report.figures.bars import (  # noqa: E402
    MEMORY_KEYS,
    MEMORY_KINDS,
    MEMORY_SAME,
    memory_label,
    memory_table,
    peak_memory,
    throughput,
)
from normbench.report.figures.checks import label_point_problems, layout_problems  # noqa: E402
from normbench.report.figures.curves import BAND_TEXT, grad_flow, grad_norm_curves, learning_curves, loss_curves  # noqa: E402
from normbench.report.figures.drawing import (  # noqa: E402
    LAYOUTS,
    METRIC_RANGE,
    METRIC_UNITS,
    MIN_BAND_SEEDS,
    MIN_FONT_PT,
    NARROW,
    PALETTE,
    WIDE,
    Figure,
    Layout,
    text,
    wrap,
)
from normbench.report.figures.glossary import GLOSSARY, STUDY_FIGURE_ORDER  # noqa: E402
from normbench.report.figures.heatmap import HeatmapPanel, heatmaps  # noqa: E402
from normbench.report.figures.png import MIN_FONT_KEY, PROBLEMS_KEY  # noqa: E402
from normbench.report.figures.sensitivity import lr_sensitivity, performance_profile  # noqa: E402
from normbench.report.figures.tradeoffs import tradeoff  # noqa: E402

__all__ = [
    "BAND_TEXT", "Figure", "GLOSSARY", "HeatmapPanel", "LAYOUTS", "Layout", "MEMORY_KEYS", "MEMORY_KINDS",
    "MEMORY_SAME", "METRIC_RANGE", "METRIC_UNITS", "MIN_BAND_SEEDS", "MIN_FONT_KEY", "MIN_FONT_PT", "NARROW",
    "PALETTE", "PROBLEMS_KEY", "STUDY_FIGURE_ORDER", "WIDE", "grad_flow", "grad_norm_curves", "heatmaps",
    "label_point_problems", "layout_problems", "learning_curves", "loss_curves", "lr_sensitivity", "memory_label",
    "memory_table", "peak_memory", "performance_profile", "text", "throughput", "tradeoff", "wrap",
]
