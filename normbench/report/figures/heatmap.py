"""Heatmaps of a two-key study: the primary metric per cell (mean, half-width, n) on one colour
range over every panel, and the divergence rate where any run diverged."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.figure import Figure as MplFigure

from normbench.report.figures import drawing, png
from normbench.report.figures.drawing import METRIC_RANGE, MIN_FONT_PT, Figure, Layout, text, wrap


@dataclass(frozen=True)
class HeatmapPanel:
    task: str
    heading: str  # the task, and the setting it holds fixed when the study varies more than two
    grid: object  # aggregate.AxisGrid


def heatmaps(panels: list[HeatmapPanel], row: str, col: str, metric: dict[str, tuple[str, bool]], out: Path,
             note: str, suffix: str = "", study: str = "") -> list[Figure]:
    """Primary-metric mean and divergence rate over (row, col), one panel per task (and per value of
    any further arm setting), for one study: cells pool seeds only.

    Metric cells read "mean, ±95% half-width, n"; the colour range spans the cells' intervals (not only
    their means), so differences smaller than the noise do not look dramatic. The caption states each
    task's range."""
    if not panels:
        return []
    figures = []
    shape = panels[0].grid.metric.shape
    spans = _colour_spans(panels, metric)
    kinds = [("heatmap_primary", "Primary score: validation metric (mean over ok runs)")]
    # a divergence map where no run diverged is one colour and says nothing; the caption of the
    # primary map says so instead
    diverged = any((np.nan_to_num(p.grid.diverged.to_numpy(dtype=float)) > 0).any() for p in panels)
    if diverged:
        kinds.append(("heatmap_divergence", "Divergence rate (diverged / runs)"))
    # each primary panel's colour range, as its colour bar draws it (the caption names them)
    ranges = [f"{metric[p.task][0]}: {spans[metric[p.task][0]][0]:.3g} to {spans[metric[p.task][0]][1]:.3g}"
              for p in panels]
    for name, title in kinds:
        def draw(layout: Layout, name=name) -> MplFigure:
            ncols = min(layout.columns, len(panels))
            figure, axes = drawing.grid(layout, len(panels), max(2.6, 0.75 * shape[0] + 1.8), columns=ncols)
            panel_width = drawing.panel_width(layout, ncols)
            for ax, panel in zip(axes, panels):
                _heatmap_panel(ax, panel, name == "heatmap_primary", metric, spans, panel_width)
                ax.set_xlabel(text(col.removeprefix("axes.")))
                ax.set_ylabel(text(row.removeprefix("axes.")))
                ax.set_title(wrap(panel.heading, int(panel_width / drawing.CHAR_IN) - 4))
            return figure

        png.render(out, name + suffix, draw, smooth=True)
        caption = note
        if name == "heatmap_primary":
            caption = (f"Each cell: mean, ± half-width of its 95% t-interval, n = ok runs (seeds) in the cell. "
                       f"Colour range (the span of the cells' intervals, clipped to the metric's range): "
                       f"{'; '.join(dict.fromkeys(ranges))}, the same in every panel."
                       + ("" if diverged else " No run diverged (no divergence map).") + (f" {note}" if note else ""))
        figures.append(Figure(name + suffix, title, caption, study))
    return figures


def _colour_spans(panels: list[HeatmapPanel], metric: dict[str, tuple[str, bool]]) -> dict[str, tuple[float, float]]:
    """One colour range per metric over every panel of the figure, so equal colours mean equal values."""
    spans: dict[str, tuple[float, float]] = {}
    for panel in panels:
        metric_name = metric[panel.task][0]
        low, high = _interval_range(panel.grid, metric_name)
        known = spans.get(metric_name, (low, high))
        spans[metric_name] = (min(low, known[0]), max(high, known[1]))
    return spans


def _heatmap_panel(ax, panel: HeatmapPanel, primary: bool, metric: dict[str, tuple[str, bool]],
                   spans: dict[str, tuple[float, float]], panel_width: float) -> None:
    """One panel's cells: the primary metric (mean, ± half-width, n) or
    the divergence rate; cell texts only where the cells are wide enough, x labels turned where long."""
    grid = panel.grid
    table = (grid.metric if primary else grid.diverged).astype(float)
    if primary:
        metric_name, higher = metric[panel.task]
        cmap = "viridis" if higher else "viridis_r"
        label = f"{metric_name}, primary score ({'higher' if higher else 'lower'} is better)"
        vmin, vmax = spans[metric_name]
        annotations = _cell_text(grid)
    else:
        cmap, label, vmin, vmax = "cividis", "divergence rate", 0.0, 1.0
        annotations = table.map(lambda v: "" if np.isnan(v) else f"{v:.2g}")
    cell_width = (panel_width - 2.2) / max(table.shape[1], 1)
    display = table.copy()
    display.index = [text(v) for v in table.index]
    display.columns = [text(v) for v in table.columns]
    if display.notna().to_numpy().any():
        _cells(ax, display, cmap, vmin, vmax, annotations.to_numpy() if cell_width >= 0.6 else None, wrap(label, 30))
    longest = max((len(str(c)) for c in display.columns), default=1)
    if longest * drawing.CHAR_IN > cell_width * 0.9:
        ax.tick_params(axis="x", labelrotation=90)
    ax.grid(False)


DARK_TEXT, LIGHT_TEXT = ".15", "w"
ROW_LABEL_IN = 1.0  # the widest row name read across, in inches
LIGHT_CELL = 0.408  # relative luminance above which a cell's text is dark (WCAG's midpoint between black and white text)


def _cells(ax, table: pd.DataFrame, cmap: str, vmin: float, vmax: float, annotations, label: str) -> None:
    """A table as coloured cells in matrix order (first row on top), a white line between cells, missing
    values left blank, each row and column named at its centre (thinned where they would not fit), the
    cells' text in the shade that reads on each colour, and the colour bar with its label."""
    values = np.ma.masked_invalid(table.to_numpy(dtype=float))
    mesh = ax.pcolormesh(values, cmap=colormaps[cmap], vmin=vmin, vmax=vmax, edgecolors="white", linewidth=0.5)
    ax.set(xlim=(0, values.shape[1]), ylim=(0, values.shape[0]))
    ax.invert_yaxis()
    for spine in ax.spines.values():
        spine.set_visible(False)
    bar = ax.figure.colorbar(mesh, ax=ax, label=label)
    bar.outline.set_linewidth(0)
    for axis, names in ((ax.xaxis, list(table.columns)), (ax.yaxis, list(table.index))):
        shown = _every(axis, ax, len(names))
        axis.set_ticks([i + 0.5 for i in range(0, len(names), shown)], [names[i] for i in range(0, len(names), shown)])
    across = max((len(str(name)) for name in table.index), default=0) * drawing.CHAR_IN <= ROW_LABEL_IN
    for tick in ax.get_yticklabels():  # short row names read across; long ones along the axis, taking no width
        tick.set_rotation(0 if across else 90)
        tick.set_verticalalignment("center")
    if annotations is None:
        return
    missing = np.ma.getmaskarray(values)
    for (row, col), value in np.ndenumerate(values.filled(np.nan)):
        if missing[row, col]:
            continue
        shade = DARK_TEXT if _luminance(mesh.cmap(mesh.norm(value))[:3]) > LIGHT_CELL else LIGHT_TEXT
        ax.text(col + 0.5, row + 0.5, str(annotations[row, col]), ha="center", va="center", color=shade,
                fontsize=MIN_FONT_PT)


def _every(axis, ax, count: int) -> int:
    """Label every k-th cell so that labels at the axis's font size fit along it (1: every cell)."""
    box = ax.get_window_extent().transformed(ax.figure.dpi_scale_trans.inverted())
    length_in = box.width if axis is ax.xaxis else box.height
    font_in = MIN_FONT_PT / 72
    fit = int(length_in // font_in)
    return 1 if fit < 1 or count <= fit else count // fit + 1


def _luminance(rgb) -> float:
    """Relative luminance (WCAG 2): linearised sRGB channels, weighted."""
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def _interval_range(grid, metric_name: str) -> tuple[float, float]:
    """The colour range: from the lowest interval bound to the highest, within the metric's range."""
    mean = grid.metric.to_numpy(dtype=float)
    half = np.nan_to_num(grid.half_width.to_numpy(dtype=float), nan=0.0)
    low, high = np.nanmin(mean - half), np.nanmax(mean + half)
    floor, ceiling = METRIC_RANGE.get(metric_name, (None, None))
    low = low if floor is None else max(low, floor)
    high = high if ceiling is None else min(high, ceiling)
    if not high > low:
        low, high = low - 0.5 * abs(low or 1.0), high + 0.5 * abs(high or 1.0)
    return float(low), float(high)


def _cell_text(grid) -> pd.DataFrame:
    def cell(mean: float, half: float, n: float) -> str:
        if np.isnan(mean):
            return ""
        spread = f"\n±{half:.2g}" if not np.isnan(half) else ""
        return f"{mean:.3g}{spread}\nn={int(n)}"
    return pd.DataFrame([[cell(m, h, k) for m, h, k in zip(*rows)] for rows in
                         zip(grid.metric.to_numpy(dtype=float), grid.half_width.to_numpy(dtype=float),
                             grid.n.to_numpy(dtype=float))], index=grid.metric.index, columns=grid.metric.columns)
