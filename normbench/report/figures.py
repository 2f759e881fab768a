"""The report's figures, drawn from the aggregated frames and saved as PNG under figures/.

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

import dataclasses
import io
import itertools
import math
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import matplotlib

# Every figure is drawn on an explicit Agg canvas, so the backend only matters to pyplot, which
# seaborn imports. Fix it to Agg unless a host process (the runner) has already chosen one:
# switching would close that process's figures.
if "matplotlib.pyplot" not in sys.modules:
    matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402
import matplotlib.collections  # noqa: E402
import matplotlib.text  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure as MplFigure  # noqa: E402
from PIL import Image, PngImagePlugin  # noqa: E402  (matplotlib's own dependency)

from normbench import metrics as registry  # noqa: E402

PALETTE = sns.color_palette("colorblind", 10)
# Groups differ by line style and marker too, so they stay apart without colour (or in grey print).
LINESTYLES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "D", "v", "P", "X")
METRIC_UNITS = {name: m.unit for name, m in registry.TASK_METRICS.items()}
# A t-band from few seeds can reach past what the metric can be; drawn, it is clipped to this range.
METRIC_RANGE = {name: m.bounds for name, m in registry.TASK_METRICS.items()}
MIN_BAND_SEEDS = 3  # a band or error bar from fewer seeds is mostly the t quantile, so none is drawn
MIN_FONT_PT = 10.5
MIN_FONT_KEY = "normbench:min_font_px"
PROBLEMS_KEY = "normbench:layout_problems"
_STYLE = {**sns.axes_style("whitegrid"), **sns.plotting_context("notebook"),
          "font.size": 11, "axes.labelsize": 11, "axes.titlesize": 11.5, "xtick.labelsize": MIN_FONT_PT,
          "ytick.labelsize": MIN_FONT_PT, "legend.fontsize": MIN_FONT_PT, "legend.title_fontsize": 11,
          "figure.titlesize": 12}
_DPI = 100
_MIN_PANEL_PX = 60  # a panel lower than this has been squashed by its legend or labels
_SINGLE_PANEL_GROUPS = 5  # beyond this many groups a task's curves become small multiples
_LINE_IN = 0.2  # one line of legend text (10.5 pt), in inches
_CHAR_IN = 0.085  # the width of an average character at 10.5 pt, in inches


@dataclass(frozen=True)
class Layout:
    """One rendering of every figure: its width in inches and how many panels sit side by side."""

    key: str
    width: float
    columns: int  # big panels (one per task) side by side
    small_columns: int  # small multiples side by side
    folder: str  # under figures/

    @property
    def column_px(self) -> int:
        """The page column the figure is drawn for (the report's CSS): the PNG is shown that wide."""
        return 1170 if self.key == "wide" else 400


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


# Each figure's caption names its terms; their long explanations are written once, here, and the
# report shows them in one legend/glossary section.
GLOSSARY: dict[str, str] = {
    "arm": "One choice a study compares (its settings, e.g. norm=ln, placement=pre); its runs differ only in seed.",
    "interval": (f"A line's band, a bar's whisker or a point's bar: the 95% t-interval of the mean over seeds, "
                 f"drawn only where ≥ {MIN_BAND_SEEDS} seeds stand behind it (fewer seeds make it mostly the t "
                 f"quantile) and clipped to what the metric can be."),
    "rank": ("An arm's place in its study's leaderboard for one task; one-seed arms are not ranked. ★: an arm "
             "the evidence cannot yet tell apart from the best."),
    "Pareto front": "The dashed line through the ranked arms that no other ranked arm beats on both speed and metric.",
    "paired timing": ("Speed from `python -m normbench.bench arms`: every arm's training step rebuilt from its "
                      "record and timed interleaved in one process, round by round, so load falls on all arms "
                      "alike; the only speed the report states as a result."),
    "unpaired per-run throughput": ("Each run's own median step time, taken while the sweep's other runs and "
                                    "other processes shared the machine: it carries the load each run met, so "
                                    "a difference between arms is not a speed result."),
    "noisy timing": (f"Hatched grey bars: the median run's slowest tenth of steps took more than "
                     f"{registry.TIMING_NOISY:g}× its fastest tenth (step_ms p90/p10), or the seeds' throughputs "
                     f"differ by more than {registry.TIMING_NOISY:g}×: the machine's load changed while it was timed."),
    "small multiples": (f"Beyond {_SINGLE_PANEL_GROUPS} arms, one panel per arm (its title): its line in colour over "
                        "the other arms in grey; every panel of a metric shares one y-range."),
    "peak memory": ("GPU tensor memory on a GPU; on a CPU the whole process's resident memory (interpreter, "
                    "libraries, data), whose differences between norms are small against the shared base. The "
                    "two kinds are not comparable, so the report gives one memory table, not a chart per study."),
    "gradient flow": "‖∂L/∂h_t‖ against t, geometric mean over seeds: flat is perfect flow, falling toward t = 1 vanishing.",
    "steps to target": ("Steps until the validation metric first reached the task's target, counted at "
                        "evaluations (so in steps of eval_every); a run that never reaches it counts as such."),
}

# The report draws at most a handful of figures per study; it takes them in this order, most
# informative first. Curves answer convergence and the metric; the heatmap lays a two-key study
# out; speed comes only after (and means something only with paired timing); memory last, as a
# table (memory_table), not a figure per study.
STUDY_FIGURE_ORDER: tuple[str, ...] = (
    "learning_curves", "heatmaps", "tradeoff", "grad_flow", "loss_curves", "grad_norm_curves",
    "lr_sensitivity", "performance_profile", "throughput", "peak_memory",
)


def text(label: object) -> str:
    """A label safe for matplotlib: '$' would start mathtext, and config strings may hold one."""
    return str(label).replace("$", r"\$")


def wrap(label: object, width: int) -> str:
    """The whole label on lines of about `width` characters (breaking after ", " where it can)."""
    return "\n".join(textwrap.wrap(text(label), max(8, width), break_on_hyphens=False)) or text(label)


def _spans_decades(values, ratio: float = 100.0) -> bool:
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    return values.size > 0 and values.min() > 0 and values.max() / values.min() >= ratio


def _grid(layout: Layout, n_panels: int, panel_height: float, columns: int | None = None,
          extra_height: float = 0.0) -> tuple[MplFigure, list]:
    """n_panels panels, `columns` (default: the layout's) side by side, each `panel_height` inches
    tall, plus `extra_height` for what sits below them (the legend)."""
    ncols = max(1, min(columns or layout.columns, n_panels))
    nrows = -(-n_panels // ncols)
    figure = MplFigure(figsize=(layout.width, panel_height * nrows + extra_height + 0.3), dpi=_DPI,
                       layout="constrained")
    FigureCanvasAgg(figure)
    panels = list(figure.subplots(nrows, ncols, squeeze=False).flat)
    for extra in panels[n_panels:]:
        extra.set_visible(False)
    return figure, panels[:n_panels]


@dataclass(frozen=True)
class _Legend:
    labels: list[str]  # wrapped
    ncols: int
    height: float  # inches


def _legend_plan(labels: list[str], layout: Layout, title: bool = True) -> _Legend:
    """Every label whole, wrapped to its legend column; the height the legend needs."""
    if not labels:
        return _Legend([], 1, 0.0)
    longest = max(len(str(label)) for label in labels)
    ncols = max(1, min(len(labels), int(layout.width // max(2.0, min(longest * _CHAR_IN + 0.8, layout.width)))))
    chars = int((layout.width / ncols - 0.8) / _CHAR_IN)
    wrapped = [wrap(label, chars) for label in labels]
    lines = [w.count("\n") + 1 for w in wrapped]
    rows = -(-len(labels) // ncols)
    tallest_column = max(sum(lines[i:i + rows]) for i in range(0, len(lines), rows))
    height = (tallest_column + (1.2 if title else 0.3)) * _LINE_IN + 0.15 * rows
    return _Legend(wrapped, ncols, height)


def _legend(figure: MplFigure, handles: list, plan: _Legend, title: str = "") -> None:
    if handles:
        figure.legend(handles, plan.labels, loc="outside lower center", ncols=plan.ncols, title=title or None,
                      frameon=False)


def _line_style(index: int) -> dict:
    """Colour, dash and marker all change with the index, so neighbours differ in all three."""
    return {"color": PALETTE[index % len(PALETTE)], "linestyle": LINESTYLES[index % len(LINESTYLES)],
            "marker": MARKERS[index % len(MARKERS)]}


def _visible_texts(figure: MplFigure) -> list[matplotlib.text.Text]:
    return [t for t in figure.findobj(matplotlib.text.Text)
            if t.get_visible() and t.get_text().strip() and (t.axes is None or t.axes.get_visible())]


def _smallest_text_px(figure: MplFigure) -> float:
    return min((t.get_fontsize() for t in _visible_texts(figure)), default=MIN_FONT_PT) * _DPI / 72


def _overlap(a, b, slack: float = 1.0) -> bool:
    return (min(a.x1, b.x1) - max(a.x0, b.x0) > slack) and (min(a.y1, b.y1) - max(a.y0, b.y0) > slack)


def _markers(ax, renderer) -> list[tuple[float, float, float]]:
    """Every scatter marker the panel draws: (x, y, radius) in display pixels."""
    found = []
    for collection in ax.collections:
        if not isinstance(collection, matplotlib.collections.PathCollection) or not collection.get_visible():
            continue
        offsets = np.asarray(collection.get_offsets(), dtype=float).reshape(-1, 2)
        if not len(offsets):
            continue
        centres = collection.get_offset_transform().transform(offsets)
        sizes = np.resize(np.asarray(collection.get_sizes(), dtype=float), len(centres)) if len(
            collection.get_sizes()) else np.full(len(centres), matplotlib.rcParams["lines.markersize"] ** 2)
        radii = np.sqrt(sizes) / 2 * ax.figure.dpi / 72  # a scatter size is the marker's area in pt²
        found += [(float(x), float(y), float(r)) for (x, y), r in zip(centres, radii) if np.isfinite([x, y]).all()]
    return found


def _gap(box, x: float, y: float, radius: float) -> float:
    """Pixels from a text box to the edge of a marker (negative: the box covers part of it)."""
    dx = max(box.x0 - x, 0.0, x - box.x1)
    dy = max(box.y0 - y, 0.0, y - box.y1)
    return math.hypot(dx, dy) - radius


def _misplaced(box, own: tuple[float, float], markers: list[tuple[float, float, float]]) -> list[str]:
    """What is wrong with a label's text box `box` for the point at display `own`: it covers a
    marker (its own or another point's), or another point lies nearer to it than its own."""
    mine = [m for m in markers if math.hypot(m[0] - own[0], m[1] - own[1]) <= 0.5]
    others = [m for m in markers if m not in mine]
    found = []
    if any(_gap(box, *m) < -0.5 for m in mine):
        found.append("covers its own point")
    if any(_gap(box, *m) < -0.5 for m in others):
        found.append("sits on another point")
    nearest_own = min((_gap(box, *m) for m in mine), default=_gap(box, own[0], own[1], 0.0))
    if any(_gap(box, *m) < nearest_own for m in others):
        found.append("is nearer another point than its own")
    return found


def label_point_problems(ax, renderer=None) -> list[str]:
    """A direct label (an annotation with gid "label") must name its own point without doubt: its
    text box covers no marker (its own point's or another's) and lies nearer its own point than
    any other point. Checked on the drawn artists in display pixels: each label's text box from
    the renderer, each point where its scatter collection puts it, with its marker's size."""
    renderer = renderer or ax.figure.canvas.get_renderer()
    markers = _markers(ax, renderer)
    problems = []
    for note in ax.texts:
        if note.get_gid() != "label" or not note.get_visible() or not isinstance(note, matplotlib.text.Annotation):
            continue
        own = tuple(ax.transData.transform(np.asarray(note.xy, dtype=float)))
        problems += [f"label {note.get_text()!r} {what}"
                     for what in _misplaced(note.get_window_extent(renderer), own, markers)]
    return problems


def layout_problems(figure: MplFigure) -> list[str]:
    """What would make a laid-out figure hard to read, each in a phrase: tick labels (or any of the
    figure's labels, titles and legend entries) drawn over each other, a panel squashed below
    _MIN_PANEL_PX, a legend that repeats a label or cuts one short, a direct label (gid "label") on
    a point's marker or nearer another point than its own (`label_point_problems`). Heatmap cell
    values are left out (they sit inside their cells by construction)."""
    renderer = figure.canvas.get_renderer()
    problems: list[str] = []
    owned: list[tuple[object, str, object]] = []  # (owner, the text, its box)
    for ax in figure.axes:
        if not ax.get_visible():
            continue
        frame = ax.get_window_extent(renderer)
        if frame.height < _MIN_PANEL_PX and frame.width > frame.height:
            problems.append(f"panel {ax.get_title()!r} squashed to {frame.height:.0f} px")
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            low, high = (frame.x0, frame.x1) if name == "x" else (frame.y0, frame.y1)
            shown = []
            for label in axis.get_ticklabels(which="both"):
                if not (label.get_visible() and label.get_text().strip()):
                    continue
                box = label.get_window_extent(renderer)
                centre = (box.x0 + box.x1) / 2 if name == "x" else (box.y0 + box.y1) / 2
                if low - 1 <= centre <= high + 1:  # ticks outside the view are not drawn
                    shown.append((label.get_text(), box))
            for (a, box_a), (b, box_b) in itertools.combinations(shown, 2):
                if _overlap(box_a, box_b):
                    problems.append(f"{name} tick labels {a!r} and {b!r} overlap in panel {ax.get_title()!r}")
            owned += [((ax, name), t, box) for t, box in shown]
        for decoration in (ax.xaxis.label, ax.yaxis.label, ax.title):
            if decoration.get_visible() and decoration.get_text().strip():
                owned.append((decoration, decoration.get_text(), decoration.get_window_extent(renderer)))
        owned += [(t, t.get_text(), t.get_window_extent(renderer)) for t in ax.texts
                  if t.get_gid() == "label" and t.get_visible()]
        problems += label_point_problems(ax, renderer)
    legends = list(figure.legends) + [ax.get_legend() for ax in figure.axes if ax.get_legend() is not None]
    for legend in legends:
        entries = [t.get_text() for t in legend.get_texts()]
        repeated = sorted({e for e in entries if entries.count(e) > 1})
        if repeated:
            problems.append(f"legend repeats {repeated[0]!r}")
        if any(e.rstrip().endswith("…") for e in entries):
            problems.append("legend cuts a label short")
        owned += [(t, t.get_text(), t.get_window_extent(renderer)) for t in legend.get_texts()]
    for (owner_a, a, box_a), (owner_b, b, box_b) in itertools.combinations(owned, 2):
        if owner_a is not owner_b and not (isinstance(owner_a, tuple) and owner_a == owner_b) and _overlap(box_a, box_b, 2.0):
            problems.append(f"{a!r} and {b!r} overlap")
    return list(dict.fromkeys(problems))


def _save(figure: MplFigure, out: Path, name: str, layout: Layout, smooth: bool = False) -> None:
    """Lays the figure out once (constrained layout), checks it, then freezes that layout and renders it:
    laid out again at save time, the figure could differ from what was checked (and it costs a second layout)."""
    figure.draw_without_rendering()
    problems = layout_problems(figure)
    smallest = _smallest_text_px(figure)
    figure.set_layout_engine("none")
    folder = out / "figures" / layout.folder
    folder.mkdir(parents=True, exist_ok=True)
    drawn = io.BytesIO()
    figure.savefig(drawn, dpi=_DPI, format="png")
    figure.clear()
    # A plot has few colours: a 256-colour palette keeps it sharp at a third of the bytes, and
    # report.html carries every figure twice. The octree quantizer keeps the plotted colours exact
    # (the palette's lines and markers) and cuts another third of the bytes; it bands a continuous
    # colour scale, so a figure with one (`smooth`, the heatmaps' colour bars) keeps median cut.
    info = PngImagePlugin.PngInfo()
    info.add_text(MIN_FONT_KEY, f"{smallest:.2f}")
    info.add_text(PROBLEMS_KEY, "; ".join(problems))
    with Image.open(drawn) as image:
        method = Image.Quantize.MEDIANCUT if smooth else Image.Quantize.FASTOCTREE
        image.convert("RGB").quantize(256, method=method).save(
            folder / f"{name}.png", format="PNG", optimize=True, pnginfo=info)


def _render(out: Path, name: str, draw: Callable[[Layout], MplFigure], smooth: bool = False) -> None:
    """`draw` once per layout, each saved where its layout's PNGs go (`smooth`: it has a colour scale)."""
    with matplotlib.rc_context(_STYLE):
        for layout in LAYOUTS:
            _save(draw(layout), out, name, layout, smooth)


def _banded(bands: pd.DataFrame) -> pd.DataFrame:
    """low and high only where at least MIN_BAND_SEEDS seeds stand behind the step."""
    few = bands["n"] < MIN_BAND_SEEDS
    return bands.assign(low=bands["low"].mask(few), high=bands["high"].mask(few))


# What a figure draws: the runner measures in float32, so a finite value outside its range (1e308
# in a planted record) was never measured, and kept, its margin overflows the axis limits to inf.
_PLOTTABLE = (float(np.finfo(np.float32).smallest_subnormal), float(np.finfo(np.float32).max))


def _plottable(values: np.ndarray, log: bool) -> np.ndarray:
    """Which values a figure may draw: finite, within float32's range (and > 0 on a log axis)."""
    values = np.asarray(values, dtype=float)
    with np.errstate(invalid="ignore"):
        inside = np.isfinite(values) & (np.abs(values) <= _PLOTTABLE[1])
        return inside & (values >= _PLOTTABLE[0]) if log else inside


def _limits(values: np.ndarray, metric: str | None, log: bool) -> tuple[float, float] | None:
    """One y-range for every panel of a metric: its values, a margin, within what the metric can be."""
    values = np.asarray(values, dtype=float)
    values = values[_plottable(values, log)]
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


def _tidy_ticks(ax, panel_width: float) -> None:
    """At most one x tick per ~0.9 inch on a linear axis, so tick labels never run into each other."""
    if ax.get_xscale() == "linear":
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(nbins=max(2, int(panel_width / 0.9)),
                                                                  steps=[1, 2, 2.5, 5, 10]))


def _panel_width(layout: Layout, ncols: int) -> float:
    return layout.width / max(ncols, 1)


def _task_of(tasks: list[str], task: str) -> str:
    return f"task {task}" if len(tasks) > 1 else ""


def tradeoff(summary: pd.DataFrame, metrics: dict[str, tuple[str, bool]], out: Path, name: str = "tradeoff",
             study: str = "") -> Figure | None:
    """The answer's trade-off for one study: each arm's mean final val (95% CI where ≥ 3 seeds)
    against its throughput, one panel per task; points labelled by leaderboard rank (and the arm
    where it fits), ★ arms drawn as stars, arms with a diverged run crossed, the Pareto front (no
    other ranked arm both faster and better) joined by a line. `summary` has `label` (the arm)."""
    score = "final_val" if summary.get("final_val_mean", pd.Series(dtype=float)).notna().any() else "best_val"
    rows = summary.dropna(subset=[f"{score}_mean", "samples_per_s_median"])
    rows = rows[_plottable(rows[f"{score}_mean"], False) & _plottable(rows["samples_per_s_median"], True)]
    if rows.empty:
        return None
    tasks = list(dict.fromkeys(rows["task"]))
    legend_entries = ["★ could be the best", "other ranked arms", "1 seed: not ranked",
                      "≥ 1 run diverged", "Pareto front"]
    # Speed is a result only from paired timing (the arms timed side by side, analysis/speed.py);
    # a run's own step time carries the load it met, so without pairing the axis says so.
    paired = bool(len(rows)) and "timing" in rows and (rows["timing"] == "paired").all()
    unit = registry.metric("samples_per_s").unit
    speed_axis = (f"training {unit}, paired timing" if paired
                  else f"unpaired per-run throughput ({unit}, median over seeds)")

    def draw(layout: Layout) -> MplFigure:
        plan = _legend_plan(legend_entries, layout, title=False)
        figure, panels = _grid(layout, len(tasks), 3.8, extra_height=plan.height)
        for ax, task in zip(panels, tasks):
            mine = rows[rows["task"] == task]
            metric_name, higher = metrics.get(task, ("metric", True))
            floor, ceiling = METRIC_RANGE.get(metric_name, (None, None))
            x, y = mine["samples_per_s_median"], mine[f"{score}_mean"]
            banded = mine[mine[f"{score}_n"] >= MIN_BAND_SEEDS] if f"{score}_n" in mine else mine.iloc[0:0]
            if len(banded):
                low = banded[f"{score}_ci_low"].clip(lower=floor, upper=ceiling)
                high = banded[f"{score}_ci_high"].clip(lower=floor, upper=ceiling)
                centre = banded[f"{score}_mean"]
                ax.errorbar(banded["samples_per_s_median"], centre, fmt="none", ecolor="0.7", elinewidth=0.9,
                            yerr=np.vstack([(centre - low).clip(lower=0), (high - centre).clip(lower=0)]), zorder=1)
            ranked = mine["rank"].notna().to_numpy() if "rank" in mine else np.ones(len(mine), bool)
            star = mine["best"].astype(bool).to_numpy() & ranked
            ax.scatter(x[ranked & ~star], y[ranked & ~star], s=26, facecolors="none", edgecolors="0.35",
                       label=legend_entries[1], zorder=2)
            ax.scatter(x[~ranked], y[~ranked], s=14, color="0.65", marker="s", label=legend_entries[2], zorder=2)
            ax.scatter(x[star], y[star], s=70, marker="*", color=PALETTE[2], edgecolors="black", linewidths=0.5,
                       label=legend_entries[0], zorder=3)
            unstable = (mine["divergence_rate"] > 0).to_numpy()
            ax.scatter(x[unstable], y[unstable], s=60, marker="x", color=PALETTE[3], label=legend_entries[3], zorder=4)
            front = _pareto_front(mine[ranked], higher, score)
            if len(front) >= 2:  # one arm on the front is a point, not a line: nothing to draw or name
                ax.plot(front["samples_per_s_median"], front[f"{score}_mean"], color=PALETTE[0], linewidth=1,
                        linestyle="--", label=legend_entries[4], zorder=1)
            if _spans_decades(x, 10):
                ax.set_xscale("log")
            limits = _limits(np.concatenate([y, banded.get(f"{score}_ci_low", []), banded.get(f"{score}_ci_high", [])]),
                             metric_name, False)
            if limits:
                ax.set_ylim(*limits)
            ax.set_ylabel(wrap(f"final val {metric_name} ({'higher' if higher else 'lower'} is better)", 34))
            ax.set_xlabel(speed_axis)
            ax.set_title(text(_task_of(tasks, task)))
            _tidy_ticks(ax, _panel_width(layout, min(layout.columns, len(tasks))))
        handles = {}
        for ax in panels:
            for handle, label in zip(*ax.get_legend_handles_labels()):
                # a legend names only what the panels draw: a scatter with points, a line through two
                drawn = (len(handle.get_offsets()) if hasattr(handle, "get_offsets") else
                         len(handle.get_xdata()) - 1 if hasattr(handle, "get_xdata") else 1)
                if drawn > 0:
                    handles.setdefault(label, handle)
        kept = [e for e in legend_entries if e in handles]
        _legend(figure, [handles[e] for e in kept], _legend_plan(kept, layout, title=False))
        figure.draw_without_rendering()
        for ax, task in zip(panels, tasks):
            _label_points(ax, rows[rows["task"] == task], score)
        return figure

    _render(out, name, draw)
    caption = ("Each point is an arm: mean final validation metric (bars: 95% t-interval, ≥ "
               f"{MIN_BAND_SEEDS} seeds) against {'paired-timing' if paired else 'unpaired per-run'} throughput; "
               "labels: leaderboard rank and arm. See the glossary: interval, rank, Pareto front, "
               + ("paired timing." if paired else "unpaired per-run throughput."))
    return Figure(name, "Metric against speed" if paired else "Metric against unpaired per-run throughput",
                  caption, study, speed="paired" if paired else "unpaired")


def _label_points(ax, mine: pd.DataFrame, score: str) -> None:
    """Each point's label: its rank and arm, or the rank alone where the arm does not fit (unranked
    points: the arm), placed where it covers no other label and no point's marker, lies nearer its
    own point than any other (`_misplaced`) and stays inside the panel; ★ arms first, then by rank.
    A point whose label fits nowhere keeps its marker only (the leaderboard still names it)."""
    renderer = ax.figure.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    markers = _markers(ax, renderer)
    placed = []
    ranks = mine["rank"] if "rank" in mine else pd.Series(np.nan, index=mine.index)
    ordered = mine.assign(_star=~mine["best"].astype(bool), _rank=ranks.fillna(np.inf)).sort_values(["_star", "_rank"])
    offsets = [(7, 5, "left"), (7, -13, "left"), (-7, 5, "right"), (-7, -13, "right"), (0, 9, "center"),
               (0, -19, "center")]
    for _, row in ordered.iterrows():
        if math.isfinite(row["_rank"]):
            rank = f"{int(row['_rank'])}" if float(row["_rank"]).is_integer() else f"{row['_rank']:g}"
            choices = (f"{rank}: {row['label']}", rank)
        else:  # not ranked: its arm, or nothing
            choices = (str(row["label"]),)
        point = (row["samples_per_s_median"], row[f"{score}_mean"])
        own = tuple(ax.transData.transform(np.asarray(point, dtype=float)))
        for label in choices:
            done = False
            # a long label only beside its point; the short one may also sit above or below it
            for dx, dy, align in (offsets if label == choices[-1] else offsets[:4]):
                note = ax.annotate(text(label), point, xytext=(dx, dy), textcoords="offset points", ha=align,
                                   fontsize=MIN_FONT_PT, color="0.15", gid="label", annotation_clip=True)
                note.set_in_layout(False)
                box = note.get_window_extent(renderer)
                inside = box.x0 >= frame.x0 + 2 and box.x1 <= frame.x1 - 2 and box.y0 >= frame.y0 + 2 and box.y1 <= frame.y1 - 2
                if (inside and not any(_overlap(box, other, 0.0) for other in placed)
                        and not _misplaced(box, own, markers)):
                    placed.append(box)
                    done = True
                    break
                note.remove()
            if done:
                break


def _pareto_front(groups: pd.DataFrame, higher_is_better: bool, score: str = "final_val") -> pd.DataFrame:
    """Groups no other group beats on both throughput and metric, fastest first."""
    ordered = groups.sort_values("samples_per_s_median", ascending=False)
    values = ordered[f"{score}_mean"]
    values = values if higher_is_better else -values
    keep = values > values.cummax().shift(fill_value=-np.inf)
    return ordered[keep.to_numpy()]


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
    # one colour range per metric over every panel of the figure, so equal colours mean equal values
    spans: dict[str, tuple[float, float]] = {}
    for panel in panels:
        metric_name = metric[panel.task][0]
        low, high = _interval_range(panel.grid, metric_name)
        known = spans.get(metric_name, (low, high))
        spans[metric_name] = (min(low, known[0]), max(high, known[1]))
    kinds = [("heatmap_primary", "Primary score: validation metric (mean over ok runs)")]
    # a divergence map where no run diverged is one colour and says nothing; the caption of the
    # primary map says so instead
    diverged = any((np.nan_to_num(p.grid.diverged.to_numpy(dtype=float)) > 0).any() for p in panels)
    if diverged:
        kinds.append(("heatmap_divergence", "Divergence rate (diverged / runs)"))
    for name, title in kinds:
        ranges: list[str] = []

        def draw(layout: Layout, name=name, ranges=ranges) -> MplFigure:
            ranges.clear()
            ncols = min(layout.columns, len(panels))
            figure, axes = _grid(layout, len(panels), max(2.6, 0.75 * shape[0] + 1.8), columns=ncols)
            panel_width = _panel_width(layout, ncols)
            for ax, panel in zip(axes, panels):
                grid = panel.grid
                table = (grid.metric if name == "heatmap_primary" else grid.diverged).astype(float)
                if name == "heatmap_primary":
                    metric_name, higher = metric[panel.task]
                    cmap = "viridis" if higher else "viridis_r"
                    label = f"{metric_name}, primary score ({'higher' if higher else 'lower'} is better)"
                    vmin, vmax = spans[metric_name]
                    ranges.append(f"{metric_name}: {vmin:.3g} to {vmax:.3g}")
                    annotations = _cell_text(grid)
                else:
                    cmap, label, vmin, vmax = "cividis", "divergence rate", 0.0, 1.0
                    annotations = table.map(lambda v: "" if np.isnan(v) else f"{v:.2g}")
                cell_width = (panel_width - 2.2) / max(table.shape[1], 1)
                display = table.copy()
                display.index = [text(v) for v in table.index]
                display.columns = [text(v) for v in table.columns]
                if display.notna().to_numpy().any():
                    sns.heatmap(display, ax=ax, cmap=cmap, vmin=vmin, vmax=vmax,
                                annot=annotations.to_numpy() if cell_width >= 0.6 else False, fmt="",
                                annot_kws={"fontsize": MIN_FONT_PT}, linewidths=0.5,
                                cbar_kws={"label": wrap(label, 30)})
                longest = max((len(str(c)) for c in display.columns), default=1)
                if longest * _CHAR_IN > cell_width * 0.9:
                    ax.tick_params(axis="x", labelrotation=90)
                ax.grid(False)
                ax.set_xlabel(text(col.removeprefix("axes.")))
                ax.set_ylabel(text(row.removeprefix("axes.")))
                ax.set_title(wrap(panel.heading, int(panel_width / _CHAR_IN) - 4))
            return figure

        _render(out, name + suffix, draw, smooth=True)
        caption = note
        if name == "heatmap_primary":
            caption = (f"Each cell: mean, ± half-width of its 95% t-interval, n = ok runs (seeds) in the cell. "
                       f"Colour range (the span of the cells' intervals, clipped to the metric's range): "
                       f"{'; '.join(dict.fromkeys(ranges))}, the same in every panel."
                       + ("" if diverged else " No run diverged (no divergence map).") + (f" {note}" if note else ""))
        figures.append(Figure(name + suffix, title, caption, study))
    return figures


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


def _curve_panels(bands: pd.DataFrame, groups: dict[str, str], x: str, ylabel: Callable[[str], str],
                  xlabel: str, metric_of: Callable[[str], str], log_y: bool | None, out: Path, name: str,
                  title: str, caption: str, study: str) -> Figure | None:
    """Per task, one line (mean) and band (low..high) per group, x against mean.

    When every task has up to _SINGLE_PANEL_GROUPS groups, one panel per task with a legend below;
    otherwise small multiples: one panel per group (titled by it), its line and band in colour over
    the other groups' lines in light grey, so overlapping bands never hide each other. Panels of one
    metric share one y-range (log when the metric spans decades, or when log_y says so)."""
    if bands.empty:
        return None
    tasks = list(dict.fromkeys(bands["task"]))
    style_of = {group: _line_style(i) for i, group in enumerate(groups)}
    present = {t: [g for g in groups if (bands["group"][bands["task"] == t] == g).any()] for t in tasks}
    small = any(len(p) > _SINGLE_PANEL_GROUPS for p in present.values())
    layout_rows = ([(t, [g], present[t]) for t in tasks for g in present[t]] if small
                   else [(t, present[t], present[t]) for t in tasks])
    kinds = {metric_of(t) for t in tasks}
    log_of = {k: (log_y if log_y is not None else
                  _spans_decades(bands.loc[bands["task"].map(metric_of) == k, "mean"])) for k in kinds}
    limits = {}
    for kind in kinds:
        mine = bands[bands["task"].map(metric_of) == kind]
        limits[kind] = _limits(np.concatenate([mine["mean"], mine["low"].dropna(), mine["high"].dropna()]),
                               kind, log_of[kind])

    def draw(layout: Layout) -> MplFigure:
        ncols = min(layout.small_columns if small else layout.columns, len(layout_rows))
        panel_width = _panel_width(layout, ncols)
        title_chars = int((panel_width - 0.4) / _CHAR_IN)
        plan = _legend_plan(list(dict.fromkeys(groups[g] for t in tasks for g in present[t])) if not small else [], layout)
        heading_lines = max((wrap(_heading(tasks, t, coloured, context, groups), title_chars).count("\n") + 1
                             for t, coloured, context in layout_rows), default=1)
        figure, panels = _grid(layout, len(layout_rows), (2.5 if small else 3.4) + 0.2 * heading_lines, columns=ncols,
                               extra_height=plan.height)
        handles: dict[str, object] = {}
        for index, (ax, (task, coloured, context)) in enumerate(zip(panels, layout_rows)):
            mine = bands[bands["task"] == task]
            if len(coloured) < len(context):
                for group in context:
                    curve = mine[mine["group"] == group].sort_values(x)
                    ax.plot(curve[x], curve["mean"], color="0.82", linewidth=0.9, zorder=1)
            for group in coloured:
                curve = mine[mine["group"] == group].sort_values(x)
                style = style_of[group]
                (line,) = ax.plot(curve[x], curve["mean"], linewidth=1.6, markersize=4,
                                  markevery=max(1, len(curve) // 8), zorder=3, **style)
                ax.fill_between(curve[x], curve["low"], curve["high"], color=style["color"], alpha=0.15,
                                linewidth=0, zorder=2)
                handles.setdefault(groups[group], line)
            kind = metric_of(task)
            if log_of[kind]:
                ax.set_yscale("log")
            if limits[kind]:
                ax.set_ylim(*limits[kind])
            if index >= len(layout_rows) - ncols:  # the bottom row names x
                ax.set_xlabel(xlabel)
            if index % ncols == 0 or len({metric_of(t) for t in tasks}) > 1:
                ax.set_ylabel(wrap(ylabel(task), int(3.0 / _CHAR_IN) if small else 40))
            heading = _heading(tasks, task, coloured, context, groups)
            if heading:
                ax.set_title(wrap(heading, title_chars), fontsize=MIN_FONT_PT)
            _tidy_ticks(ax, panel_width)
        if not small:
            _legend(figure, list(handles.values()), _legend_plan(list(handles), layout), "arm")
        return figure

    _render(out, name, draw)
    if small:
        caption += " One panel per arm (see the glossary: small multiples)."
    return Figure(name, title, caption, study)


def _heading(tasks: list[str], task: str, coloured: list[str], context: list[str], groups: dict[str, str]) -> str:
    heading = _task_of(tasks, task)
    if len(coloured) < len(context):
        heading = f"{heading}: {groups[coloured[0]]}" if heading else groups[coloured[0]]
    return heading


def _clipped(bands: pd.DataFrame, metrics: dict[str, tuple[str, bool]]) -> pd.DataFrame:
    metric_of = bands["task"].map(lambda task: metrics.get(task, ("metric", True))[0])
    low_bound = metric_of.map(lambda m: METRIC_RANGE.get(m, (None, None))[0]).astype(float)
    high_bound = metric_of.map(lambda m: METRIC_RANGE.get(m, (None, None))[1]).astype(float)
    return bands.assign(low=bands["low"].clip(lower=low_bound), high=bands["high"].clip(upper=high_bound))


BAND_TEXT = "Line: mean over seeds; band: 95% t-interval (see the glossary: interval)."


def learning_curves(bands: pd.DataFrame, groups: dict[str, str], metrics: dict[str, tuple[str, bool]],
                    out: Path, note: str, suffix: str = "", study: str = "") -> list[Figure]:
    """Validation metric against step and against training seconds (one study's arms)."""
    def ylabel(task: str) -> str:
        metric, higher = metrics.get(task, ("metric", True))
        return f"validation {metric} ({METRIC_UNITS.get(metric, metric)}, {'higher' if higher else 'lower'} is better)"

    def metric_of(task: str) -> str:
        return metrics.get(task, ("metric", True))[0]

    if bands.empty:
        return []
    bands = _banded(_clipped(bands, metrics))
    figures = [
        _curve_panels(bands, groups, "step", ylabel, "training step", metric_of, None, out,
                      f"curves_val_vs_step{suffix}", "Validation metric vs step", f"{BAND_TEXT} {note}", study),
        _curve_panels(bands.dropna(subset=["time_s"]), groups, "time_s", ylabel,
                      "training time (s, train steps only)", metric_of, None, out, f"curves_val_vs_seconds{suffix}",
                      "Validation metric vs training seconds",
                      f"{BAND_TEXT} x: mean train seconds over seeds (see the glossary: unpaired per-run "
                      f"throughput). {note}",
                      study),
    ]
    return [f for f in figures if f is not None]


def loss_curves(bands: pd.DataFrame, groups: dict[str, str], out: Path, note: str, suffix: str = "",
                study: str = "") -> Figure | None:
    """Training loss (the logged train lines) against step, one study's arms."""
    if bands.empty:
        return None
    return _curve_panels(_banded(bands.assign(low=bands["low"].clip(lower=0))), groups, "step",
                         lambda task: "training loss (task loss, per logged step)", "training step",
                         lambda task: "loss", None, out, f"curves_loss_vs_step{suffix}", "Training loss vs step",
                         f"{BAND_TEXT} One batch's loss at each logged step. {note}", study)


def grad_norm_curves(bands: pd.DataFrame, groups: dict[str, str], out: Path, note: str, suffix: str = "",
                     study: str = "") -> Figure | None:
    if bands.empty:
        return None
    return _curve_panels(_banded(bands), groups, "step", lambda task: "gradient L2 norm before clipping",
                         "training step", lambda task: "grad_norm", True, out, f"grad_norm_vs_step{suffix}",
                         "Gradient norm vs step",
                         f"Geometric mean over seeds (log scale); band: 95% t-interval on log10 (see the "
                         f"glossary: interval). {note}",
                         study)


def grad_flow(profiles: pd.DataFrame, groups: dict[str, str], out: Path, note: str, suffix: str = "",
              study: str = "") -> Figure | None:
    """||dL/dh_t|| against t at init and at the end of training, recurrent runs only. Up to
    _SINGLE_PANEL_GROUPS arms: two panels (init, final) with every arm; more: one panel per arm with
    its two profiles. One log y-range for every panel."""
    profiles = profiles[_plottable(profiles["norm"].to_numpy(dtype=float), True)]
    if profiles.empty:
        return None
    shown = [g for g in groups if (profiles["group"] == g).any()]
    small = len(shown) > _SINGLE_PANEL_GROUPS
    limits = _limits(profiles["norm"].to_numpy(dtype=float), None, True)

    def draw(layout: Layout) -> MplFigure:
        if not small:
            plan = _legend_plan([groups[g] for g in shown], layout)
            figure, panels = _grid(layout, 2, 3.4, extra_height=plan.height)
            for ax, moment in zip(panels, ("init", "final")):
                mine = profiles[profiles["moment"] == moment]
                for index, group in enumerate(shown):
                    curve = mine[mine["group"] == group]
                    ax.plot(curve["t"], curve["norm"], label=groups[group], linewidth=1.4, markersize=4,
                            markevery=max(1, len(curve) // 8), **_line_style(index))
                ax.set_title("at initialization" if moment == "init" else "after training")
            handles = {}
            for ax in panels:
                for handle, label in zip(*ax.get_legend_handles_labels()):
                    handles.setdefault(label, handle)
            _legend(figure, list(handles.values()), _legend_plan(list(handles), layout), "arm")
        else:
            ncols = layout.small_columns
            chars = int((_panel_width(layout, ncols) - 0.4) / _CHAR_IN)
            lines = max(wrap(groups[g], chars).count("\n") + 1 for g in shown)
            legend = ["at initialization", "after training"]
            figure, panels = _grid(layout, len(shown), 2.4 + 0.2 * lines, columns=ncols,
                                   extra_height=_legend_plan(legend, layout, False).height)
            for ax, group in zip(panels, shown):
                for moment, style in (("init", {"color": "0.55", "linestyle": "--"}),
                                      ("final", {"color": PALETTE[0], "linestyle": "-"})):
                    curve = profiles[(profiles["moment"] == moment) & (profiles["group"] == group)]
                    ax.plot(curve["t"], curve["norm"], linewidth=1.4, label=legend[moment == "final"], **style)
                ax.set_title(wrap(groups[group], chars), fontsize=MIN_FONT_PT)
            _legend(figure, panels[0].get_legend_handles_labels()[0], _legend_plan(legend, layout, False))
        ncols = min(len(panels), layout.small_columns if small else layout.columns)
        for index, ax in enumerate(panels):
            ax.set_yscale("log")
            if limits:
                ax.set_ylim(*limits)
            if index >= len(panels) - ncols:
                ax.set_xlabel("time step t")
            if index % ncols == 0:
                ax.set_ylabel("‖∂L/∂h_t‖")
            _tidy_ticks(ax, _panel_width(layout, ncols))
        return figure

    _render(out, f"grad_flow_through_time{suffix}", draw)
    return Figure(f"grad_flow_through_time{suffix}", "Gradient flow through time",
                  "See the glossary: gradient flow. Log scale, one range for every panel."
                  + (" One panel per arm." if small else "")
                  + (f" {note}" if note else ""), study)


def _bars(bars: pd.DataFrame, value: str, low: str | None, high: str | None, xlabel: str, out: Path,
          name: str, title: str, caption: str, study: str, flag_noise: bool = True) -> Figure | None:
    """Horizontal bars, one panel per task (stacked), labelled by bars["label"] (whole, wrapped);
    bars whose bars["noisy"] is true are hatched and marked "(noisy timing)"."""
    rows = bars.dropna(subset=[value])
    if rows.empty:
        return None
    tasks = list(dict.fromkeys(rows["task"]))
    values = rows[value].to_numpy(dtype=float)
    if low:
        values = np.concatenate([values, rows[low].to_numpy(dtype=float)])
    log_x = _spans_decades(values)
    flags = (rows["noisy"].fillna(False).astype(bool) if flag_noise and "noisy" in rows
             else pd.Series(False, index=rows.index))

    def draw(layout: Layout) -> MplFigure:
        chars = 44 if layout is WIDE else 26

        def label_of(label: object, noisy: bool) -> str:
            return wrap(label, chars) + ("\n(noisy timing)" if noisy else "")

        lines = pd.Series([label_of(lab, n).count("\n") + 1 for lab, n in zip(rows["label"], flags)], index=rows.index)
        heights = [0.2 * lines[rows["task"] == t].clip(lower=2).sum() + 1.2 for t in tasks]
        figure = MplFigure(figsize=(layout.width, sum(heights) + 0.4), dpi=_DPI, layout="constrained")
        FigureCanvasAgg(figure)
        panels = list(figure.subplots(len(tasks), 1, squeeze=False, height_ratios=heights).flat)
        for ax, task in zip(panels, tasks):
            mine = rows[rows["task"] == task]
            # each bar gets the room its wrapped label needs (at least two lines), so a long label
            # never runs into its neighbour's; a bar is 0.8 of the narrowest room
            room = lines[mine.index].clip(lower=2).to_numpy(dtype=float)
            positions = np.cumsum(room) - room / 2
            error = None
            if low and high:
                error = np.vstack([(mine[value] - mine[low]).clip(lower=0), (mine[high] - mine[value]).clip(lower=0)])
            noisy = flags[mine.index].to_numpy()
            ax.barh(positions, mine[value], height=1.6, xerr=error, color=[PALETTE[7] if n else PALETTE[0] for n in noisy],
                    hatch=["//" if n else "" for n in noisy], ecolor="0.25", capsize=2)
            ax.set_yticks(positions, [label_of(label, n) for label, n in zip(mine["label"], noisy)])
            ax.set_ylim(room.sum(), 0)  # the first bar on top
            if log_x:
                ax.set_xscale("log")
            if len(tasks) > 1:
                ax.set_title(text(f"task {task}"))
            _tidy_ticks(ax, layout.width * 0.55)
        panels[-1].set_xlabel(wrap(xlabel, 60 if layout is WIDE else 40))
        return figure

    _render(out, name, draw)
    return Figure(name, title, caption, study)


def throughput(bars: pd.DataFrame, out: Path, note: str, noisy_limit: float, suffix: str = "",
               study: str = "") -> Figure | None:
    """Samples per second per arm, one panel per task; labelled unpaired unless every bar is a paired timing."""
    unit = registry.metric("samples_per_s").unit
    paired = bool(len(bars)) and "timing" in bars and (bars["timing"] == "paired").all()
    kind = "paired timing" if paired else "unpaired per-run throughput"
    figure = _bars(bars, "samples_per_s_median", "samples_per_s_min", "samples_per_s_max",
                   f"{unit}, {kind} (median over seeds; whiskers: min–max)", out, f"throughput{suffix}",
                   "Throughput (paired timing)" if paired else "Unpaired per-run throughput",
                   f"Training {unit} per task; hatched: noisy timing (limit {noisy_limit:g}×). See the glossary: "
                   f"{kind}, noisy timing. {note}".strip(), study)
    return None if figure is None else dataclasses.replace(figure, speed="paired" if paired else "unpaired")


MEMORY_KINDS = {
    "cuda_max_allocated": "peak GPU memory allocated by tensors",
    "process_rss_sampled": "peak process resident memory, includes the interpreter",
    "process_max_rss": "peak process resident memory, includes the interpreter",
}


def memory_label(kinds: list[str]) -> str:
    return "; ".join(MEMORY_KINDS.get(k, k) for k in kinds) if kinds else "peak memory (kind not recorded)"


def peak_memory(bars: pd.DataFrame, out: Path, note: str, suffix: str = "", study: str = "") -> Figure | None:
    """Peak GPU tensor memory per arm; None where it would carry no information: whole-process
    memory (a CPU run's), whose differences between norms vanish in the shared base, or arms within
    MEMORY_SAME of each other. memory_table gives the numbers once for the whole report."""
    kinds = sorted({k for value in bars.get("memory_kind", pd.Series(dtype=str)).dropna()
                    for k in str(value).split("/") if k})
    values = bars.get("peak_memory_mb_median", pd.Series(dtype=float)).dropna().to_numpy(dtype=float)
    values = values[_plottable(values, True)]
    if not kinds or any(k.startswith("process") for k in kinds) or not values.size:
        return None
    if values.max() <= values.min() * (1 + MEMORY_SAME):
        return None
    return _bars(bars, "peak_memory_mb_median", None, None, f"MB, median over seeds: {memory_label(kinds)}",
                 out, f"peak_memory{suffix}", "Peak memory",
                 f"{memory_label(kinds).capitalize()}, per task. See the glossary: peak memory. {note}".strip(),
                 study, flag_noise=False)


MEMORY_SAME = 0.02  # arms whose peak memory differs by at most 2% draw bars of one length: no figure
# The settings that decide how much memory a run needs: the memory table's rows
MEMORY_KEYS = ("task", "model", "hidden", "layers", "norm", "placement", "precision", "batch_size")


def memory_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One table of peak memory for the whole report (not a chart per study): one row per setting of
    MEMORY_KEYS that varies across the finished runs (the same settings in two studies pool), with
    the memory kind, the number of runs, their median and their min–max in MB. Empty when no
    finished run recorded its memory."""
    column = registry.path("peak_memory_mb")
    kind = registry.path("memory_kind")
    if column not in runs:
        return pd.DataFrame()
    done = runs[runs["status"].isin(("ok", "diverged"))] if "status" in runs else runs
    done = done[pd.to_numeric(done[column], errors="coerce").notna()]
    if done.empty:
        return pd.DataFrame()
    keyed = pd.DataFrame(index=done.index)
    for key in MEMORY_KEYS:
        source = "task.name" if key == "task" and "task.name" in done else f"axes.{key}"
        if source in done:
            keyed[key] = done[source].astype(str)
    keys = [k for k in keyed.columns if k == "task" or keyed[k].nunique() > 1]
    keyed["memory kind"] = done[kind].fillna("not recorded").map(lambda k: MEMORY_KINDS.get(str(k), str(k))) \
        if kind in done else "not recorded"
    keyed["mb"] = pd.to_numeric(done[column], errors="coerce")
    grouped = keyed.groupby(keys + ["memory kind"], sort=False)["mb"]
    table = grouped.agg(runs="size", median="median", low="min", high="max").reset_index()
    table["peak MB (median)"] = table["median"].map(lambda v: f"{v:.4g}")
    table["min–max MB"] = [f"{a:.4g}–{b:.4g}" if f"{a:.4g}" != f"{b:.4g}" else f"{a:.4g}"
                           for a, b in zip(table["low"], table["high"])]
    return table[[*keys, "memory kind", "runs", "peak MB (median)", "min–max MB"]]


def lr_sensitivity(points: pd.DataFrame, arms: pd.DataFrame, metrics: dict[str, tuple[str, bool]], out: Path,
                   note: str) -> Figure | None:
    """Final validation metric against lr (log x), one line per arm, one panel per task.

    Point: mean of the finished runs, bar: 95% t-interval clipped to the metric's range, drawn where
    ≥ MIN_BAND_SEEDS runs finished. Diverged runs are never dropped: a triangle at the panel's bottom,
    labelled with their count, at each lr where any diverged; ★ marks each arm's best lr."""
    if points.empty:
        return None
    tasks = list(dict.fromkeys(points["task"]))
    labels = list(dict.fromkeys(points["arm_label"]))

    def draw(layout: Layout) -> MplFigure:
        plan = _legend_plan(labels, layout)
        figure, panels = _grid(layout, len(tasks), 3.8, extra_height=plan.height)
        for ax, task in zip(panels, tasks):
            mine = points[points["task"] == task]
            metric, higher = metrics.get(task, ("metric", True))
            floor, ceiling = METRIC_RANGE.get(metric, (None, None))
            for index, label in enumerate(labels):
                # arms side by side at each lr (a small shift on the log axis), so their bars stay apart
                shift = 10.0 ** (0.012 * (index - (len(labels) - 1) / 2))
                curve = mine[mine["arm_label"] == label].sort_values("lr")
                if curve.empty:
                    continue
                few = curve["finished"] < MIN_BAND_SEEDS
                curve = curve.assign(lr=curve["lr"] * shift,
                                     low=curve["low"].clip(lower=floor, upper=ceiling).mask(few),
                                     high=curve["high"].clip(lower=floor, upper=ceiling).mask(few))
                style = _line_style(index)
                shown = curve[curve["finished"] > 0]
                error = np.vstack([(shown["mean"] - shown["low"]).clip(lower=0).fillna(0),
                                   (shown["high"] - shown["mean"]).clip(lower=0).fillna(0)])
                ax.errorbar(shown["lr"], shown["mean"], yerr=error, markersize=4, capsize=2, linewidth=1.3,
                            label=text(label), **style)
                best = arms[(arms["task"] == task) & (arms["arm_label"] == label)]["best_lr"]
                if len(best) and best.notna().iloc[0]:
                    at = shown[np.isclose(shown["lr"], float(best.iloc[0]) * shift)]
                    ax.scatter(at["lr"], at["mean"], marker="*", s=140, color=style["color"], zorder=5,
                               edgecolors="black", linewidths=0.5)
                failed = curve[curve["diverged"] > 0]
                height = 0.03 + 0.05 * (index % 6)  # stacked, so arms diverging at one lr stay apart
                ax.scatter(failed["lr"], [height] * len(failed), marker="v", s=45, color=style["color"],
                           transform=ax.get_xaxis_transform(), clip_on=False, zorder=6)
                top = float(points["lr"].max())
                for lr, count, runs in zip(failed["lr"], failed["diverged"], failed["runs"]):
                    at_right = lr >= top / shift  # the largest lr: the note goes to its left, inside the panel
                    ax.annotate(f"{int(count)}/{int(runs)} div.", (lr, height), xycoords=ax.get_xaxis_transform(),
                                xytext=(-7 if at_right else 5, -3), textcoords="offset points",
                                ha="right" if at_right else "left", color=style["color"])
            ax.set_xscale("log")
            ax.set_xlabel("learning rate (log scale; arms shifted slightly apart)")
            ax.set_ylabel(f"final val {metric}")
            ax.set_title(text(f"{'task ' + str(task) + ': ' if len(tasks) > 1 else ''}"
                              f"{'higher' if higher else 'lower'} is better"))
        handles = {}
        for ax in panels:
            for handle, label in zip(*ax.get_legend_handles_labels()):
                handles.setdefault(label, handle)
        _legend(figure, list(handles.values()), _legend_plan(list(handles), layout), "arm")
        return figure

    _render(out, "lr_sensitivity", draw)
    return Figure("lr_sensitivity", "Learning-rate sensitivity", note)


def performance_profile(ratios: pd.DataFrame, tau_max: float, out: Path, note: str) -> Figure | None:
    """ρ_a(τ), the share of tasks on which arm a needs ≤ τ × the fewest steps to target (log τ)."""
    if ratios.empty:
        return None
    finite = ratios.to_numpy(dtype=float)
    finite = finite[np.isfinite(finite)]
    right = max(tau_max, float(finite.max()) * 1.25 if finite.size else tau_max)
    arms = [str(a) for a in ratios.columns]
    tied = all(np.array_equal(np.sort(ratios[c].to_numpy(dtype=float)), np.sort(ratios[ratios.columns[0]].to_numpy(dtype=float)))
               for c in ratios.columns)

    def draw(layout: Layout) -> MplFigure:
        plan = _legend_plan(arms, layout)
        figure, (ax,) = _grid(layout, 1, 3.6, extra_height=plan.height)
        for index, arm in enumerate(ratios.columns):
            r = np.sort(ratios[arm].to_numpy(dtype=float))
            taus = np.unique(np.concatenate([[1.0], r[np.isfinite(r) & (r > 1.0)], [right]]))
            rho = [(r <= t * (1 + 1e-12)).mean() for t in taus]
            # earlier arms drawn wider, so arms with the same profile show as nested lines, not one
            width = 1.5 + 3.0 * (len(ratios.columns) - 1 - index) / max(len(ratios.columns) - 1, 1)
            ax.step(taus, rho, where="post", linewidth=width, alpha=0.85, label=text(arm), **_line_style(index))
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda value, _: f"{value:g}"))
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlim(1.0, right)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("τ: steps to target ÷ the fastest arm's on that task (log scale)")
        ax.set_ylabel("ρ(τ): share of tasks")
        _legend(figure, *ax.get_legend_handles_labels()[:1], _legend_plan(arms, layout), "arm")
        return figure

    _render(out, "performance_profile", draw)
    caption = (note + " See the glossary: steps to target. Arms with the same profile overlap; the wider line "
               "underneath is the earlier arm in the legend.")
    if tied:
        caption += " Here every arm has the same profile: the steps to target do not tell them apart."
    return Figure("performance_profile", "Performance profile (steps to target)", caption)
