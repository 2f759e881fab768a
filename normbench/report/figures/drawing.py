"""What every figure is drawn with: the style, the two layouts (WIDE, NARROW), the Figure a
figure function returns, panel grids, legends planned to fit, line styles, and axis ranges that
keep to what a metric can be and what float32 can hold."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure as MplFigure

from normbench.records import metrics as metric_table

# seaborn's "colorblind" palette (after Okabe and Ito's), as RGB in [0, 1]
PALETTE = [tuple(int(code[i:i + 2], 16) / 255 for i in (1, 3, 5)) for code in (
    "#0173b2", "#de8f05", "#029e73", "#d55e00", "#cc78bc", "#ca9161", "#fbafe4", "#949494", "#ece133", "#56b4e9")]
# Groups differ by line style and marker too, so they stay apart without colour (or in grey print).
LINESTYLES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "D", "v", "P", "X")
METRIC_UNITS = {name: m.unit for name, m in metric_table.TASK_METRICS.items()}
# A t-band from few seeds can reach past what the metric can be; drawn, it is clipped to this range.
METRIC_RANGE = {name: m.bounds for name, m in metric_table.TASK_METRICS.items()}
MIN_BAND_SEEDS = 3  # a band or error bar from fewer seeds is mostly the t quantile, so none is drawn
MIN_FONT_PT = 10.5
# A white grid: light grey gridlines and frame, dark grey text, no tick marks (seaborn's "whitegrid" style at
# its "notebook" scale, which the figures were first drawn with), then the sizes that keep text >= 10.5 pt
WHITEGRID = {
    "figure.facecolor": "white", "axes.facecolor": "white", "axes.edgecolor": ".8", "axes.grid": True,
    "axes.axisbelow": True, "axes.labelcolor": ".15", "axes.linewidth": 1.25, "grid.color": ".8", "grid.linestyle": "-",
    "grid.linewidth": 1, "text.color": ".15", "xtick.color": ".15", "ytick.color": ".15", "xtick.direction": "out",
    "ytick.direction": "out", "xtick.bottom": False, "xtick.top": False, "ytick.left": False, "ytick.right": False,
    "xtick.major.width": 1.25, "ytick.major.width": 1.25, "xtick.minor.width": 1, "ytick.minor.width": 1,
    "xtick.major.size": 6, "ytick.major.size": 6, "xtick.minor.size": 4, "ytick.minor.size": 4,
    "font.family": ["sans-serif"], "font.sans-serif": ["Arial", "DejaVu Sans", "Liberation Sans", "Bitstream Vera Sans",
                                                        "sans-serif"],
    "lines.linewidth": 1.5, "lines.markersize": 6, "lines.solid_capstyle": "round", "patch.edgecolor": "w",
    "patch.force_edgecolor": True, "patch.linewidth": 1, "image.cmap": "viridis",
}
STYLE = {**WHITEGRID,
         "font.size": 11, "axes.labelsize": 11, "axes.titlesize": 11.5, "xtick.labelsize": MIN_FONT_PT,
         "ytick.labelsize": MIN_FONT_PT, "legend.fontsize": MIN_FONT_PT, "legend.title_fontsize": 11,
         "figure.titlesize": 12}
DPI = 100
MIN_PANEL_PX = 60  # a panel lower than this has been squashed by its legend or labels
SINGLE_PANEL_GROUPS = 5  # beyond this many groups a task's curves become small multiples
LINE_IN = 0.2  # one line of legend text (10.5 pt), in inches
CHAR_IN = 0.085  # the width of an average character at 10.5 pt, in inches


@dataclass(frozen=True)
class Layout:
    """One rendering of every figure: its width in inches and how many panels sit side by side."""

    key: str
    width: float
    columns: int  # big panels (one per task) side by side
    small_columns: int  # small multiples side by side
    folder: str  # under figures/


WIDE = Layout("wide", 11.6, 2, 4, "")
NARROW = Layout("narrow", 6.0, 1, 2, "narrow")
LAYOUTS = (WIDE, NARROW)


@dataclass(frozen=True)
class Figure:
    name: str  # file stem under figures/ (and figures/narrow/)
    title: str
    caption: str
    study: str = ""  # the study whose groups it draws: the heading it is shown under
    # what its speed axis rests on: "paired" (bench arms), "unpaired" (each run's own step time:
    # never a result, so never on the first screen), "" where it shows no speed
    speed: str = ""

    @property
    def relative_path(self) -> str:
        return f"figures/{self.name}.png"

    @property
    def narrow_path(self) -> str:
        return f"figures/{NARROW.folder}/{self.name}.png"


def text(label: object) -> str:
    """A label safe for matplotlib: '$' would start mathtext, and config strings may hold one."""
    return str(label).replace("$", r"\$")


def wrap(label: object, width: int) -> str:
    """The whole label on lines of about `width` characters (breaking after ", " where it can)."""
    return "\n".join(textwrap.wrap(text(label), max(8, width), break_on_hyphens=False)) or text(label)


def spans_decades(values, ratio: float = 100.0) -> bool:
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    return values.size > 0 and values.min() > 0 and values.max() / values.min() >= ratio


def grid(layout: Layout, n_panels: int, panel_height: float, columns: int | None = None,
          extra_height: float = 0.0) -> tuple[MplFigure, list]:
    """n_panels panels, `columns` (default: the layout's) side by side, each `panel_height` inches
    tall, plus `extra_height` for what sits below them (the legend)."""
    ncols = max(1, min(columns or layout.columns, n_panels))
    nrows = -(-n_panels // ncols)
    figure = MplFigure(figsize=(layout.width, panel_height * nrows + extra_height + 0.3), dpi=DPI,
                       layout="constrained")
    FigureCanvasAgg(figure)
    panels = list(figure.subplots(nrows, ncols, squeeze=False).flat)
    for extra in panels[n_panels:]:
        extra.set_visible(False)
    return figure, panels[:n_panels]


@dataclass(frozen=True)
class Legend:
    labels: list[str]  # wrapped
    ncols: int
    height: float  # inches


def legend_plan(labels: list[str], layout: Layout, title: bool = True) -> Legend:
    """Every label whole, wrapped to its legend column; the height the legend needs."""
    if not labels:
        return Legend([], 1, 0.0)
    longest = max(len(str(label)) for label in labels)
    ncols = max(1, min(len(labels), int(layout.width // max(2.0, min(longest * CHAR_IN + 0.8, layout.width)))))
    chars = int((layout.width / ncols - 0.8) / CHAR_IN)
    wrapped = [wrap(label, chars) for label in labels]
    lines = [w.count("\n") + 1 for w in wrapped]
    rows = -(-len(labels) // ncols)
    tallest_column = max(sum(lines[i:i + rows]) for i in range(0, len(lines), rows))
    height = (tallest_column + (1.2 if title else 0.3)) * LINE_IN + 0.15 * rows
    return Legend(wrapped, ncols, height)


def legend(figure: MplFigure, handles: list, plan: Legend, title: str = "") -> None:
    if handles:
        figure.legend(handles, plan.labels, loc="outside lower center", ncols=plan.ncols, title=title or None,
                      frameon=False)


def line_style(index: int) -> dict:
    """Colour, dash and marker all change with the index, so neighbours differ in all three."""
    return {"color": PALETTE[index % len(PALETTE)], "linestyle": LINESTYLES[index % len(LINESTYLES)],
            "marker": MARKERS[index % len(MARKERS)]}



def banded(bands: pd.DataFrame) -> pd.DataFrame:
    """low and high only where at least MIN_BAND_SEEDS seeds stand behind the step."""
    few = bands["n"] < MIN_BAND_SEEDS
    return bands.assign(low=bands["low"].mask(few), high=bands["high"].mask(few))


# What a figure draws: the runner measures in float32, so a finite value outside its range (1e308
# in a planted record) was never measured, and kept, its margin overflows the axis limits to inf.
PLOTTABLE = (float(np.finfo(np.float32).smallest_subnormal), float(np.finfo(np.float32).max))


def plottable(values: np.ndarray, log: bool) -> np.ndarray:
    """Which values a figure may draw: finite, within float32's range (and > 0 on a log axis)."""
    values = np.asarray(values, dtype=float)
    with np.errstate(invalid="ignore"):
        inside = np.isfinite(values) & (np.abs(values) <= PLOTTABLE[1])
        return inside & (values >= PLOTTABLE[0]) if log else inside


def limits(values: np.ndarray, metric: str | None, log: bool) -> tuple[float, float] | None:
    """One y-range for every panel of a metric: its values, a margin, within what the metric can be."""
    values = np.asarray(values, dtype=float)
    values = values[plottable(values, log)]
    if not values.size:
        return None
    low, high = float(values.min()), float(values.max())
    if log:
        low, high = np.log10(low), np.log10(high)
    pad = 0.05 * (high - low) or 0.05 * max(abs(high), 1e-3 if not log else 0.5)
    low, high = low - pad, high + pad
    if log:
        return 10.0 ** low, 10.0 ** high
    floor, ceiling = METRIC_RANGE.get(metric or "", (None, None))
    low = low if floor is None else max(low, floor - 0.02 * (ceiling or 1.0))
    high = high if ceiling is None else min(high, ceiling + 0.02 * ceiling)
    return low, high


def tidy_ticks(ax, panel_width: float) -> None:
    """At most one x tick per ~0.9 inch on a linear axis, so tick labels never run into each other."""
    if ax.get_xscale() == "linear":
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(nbins=max(2, int(panel_width / 0.9)),
                                                                  steps=[1, 2, 2.5, 5, 10]))


def panel_width(layout: Layout, ncols: int) -> float:
    return layout.width / max(ncols, 1)


def task_of(tasks: list[str], task: str) -> str:
    return f"task {task}" if len(tasks) > 1 else ""
