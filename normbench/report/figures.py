"""The report's figures, drawn from the aggregated frames and saved as PNG under figures/.

Figures are built as matplotlib.figure.Figure objects on an Agg canvas, never through pyplot:
nothing enters pyplot's global figure registry (so there is nothing to close; each figure is
cleared once saved), and a runner that calls build_report at the end of a long multirun leaks no
figures. The count is fixed (one file per figure) whatever the size of the sweep; the callers
choose which groups are drawn.

Every figure is at most FIGURE_WIDTH inches wide, with panels stacked rather than side by side and
legends below, and no text smaller than MIN_FONT_PT: scaled to a 420 px phone screen, its text
stays at least 9 px tall. Each PNG records its smallest text size (in pixels) under the key
MIN_FONT_KEY so that a test can check this.
"""

from __future__ import annotations

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
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure as MplFigure  # noqa: E402

PALETTE = sns.color_palette("colorblind", 10)
# Groups differ by line style and marker too, so they stay apart without colour (or in grey print).
LINESTYLES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "D", "v", "P", "X")
METRIC_UNITS = {"accuracy": "fraction correct", "mse": "mean squared error", "bpc": "bits per character"}
# A t-band from two seeds can reach past what the metric can be; drawn, it is clipped to this range.
METRIC_RANGE = {"accuracy": (0.0, 1.0), "mse": (0.0, None), "bpc": (0.0, None)}
FIGURE_WIDTH = 6.2  # inches; at _DPI that is about 620 px
MIN_FONT_PT = 10.5
MIN_FONT_KEY = "normbench:min_font_px"
_STYLE = {**sns.axes_style("whitegrid"), **sns.plotting_context("notebook"),
          "font.size": 11, "axes.labelsize": 11, "axes.titlesize": 12, "xtick.labelsize": MIN_FONT_PT,
          "ytick.labelsize": MIN_FONT_PT, "legend.fontsize": MIN_FONT_PT, "legend.title_fontsize": 11,
          "figure.titlesize": 12}
_DPI = 100
_MAX_TASK_PANELS = 4
_SINGLE_PANEL_GROUPS = 5  # beyond this many groups a task's curves become small multiples


@dataclass(frozen=True)
class Figure:
    name: str  # file stem under figures/
    title: str
    caption: str

    @property
    def relative_path(self) -> str:
        return f"figures/{self.name}.png"


def text(label: object, width: int = 60) -> str:
    """A label safe for matplotlib: '$' would start mathtext, and config strings may hold one."""
    label = str(label)
    if len(label) > width:
        label = label[: width - 1] + "…"
    return label.replace("$", r"\$")


def metric_label(metric: str, higher_is_better: bool | None = None) -> str:
    unit = METRIC_UNITS.get(metric, metric)
    direction = "" if higher_is_better is None else (", higher is better" if higher_is_better else ", lower is better")
    return f"best val {metric} ({unit}{direction})"


def _spans_decades(values: pd.Series | np.ndarray, ratio: float = 100.0) -> bool:
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    return values.size > 0 and values.min() > 0 and values.max() / values.min() >= ratio


def _new(n_panels: int, height: float = 3.6, ncols: int = 1) -> tuple[MplFigure, list]:
    """Panels stacked in `ncols` columns, each about `height` inches tall, FIGURE_WIDTH wide in all."""
    nrows = -(-n_panels // ncols)
    figure = MplFigure(figsize=(FIGURE_WIDTH, height * nrows), dpi=_DPI, layout="constrained")
    FigureCanvasAgg(figure)
    panels = list(figure.subplots(nrows, ncols, squeeze=False).flat)
    for extra in panels[n_panels:]:
        extra.set_visible(False)
    return figure, panels[:n_panels]


def _smallest_text_px(figure: MplFigure) -> float:
    sizes = [t.get_fontsize() for t in figure.findobj(matplotlib.text.Text)
             if t.get_visible() and t.get_text().strip() and
             (t.axes is None or t.axes.get_visible())]
    return min(sizes, default=MIN_FONT_PT) * _DPI / 72


def _save(figure: MplFigure, out: Path, name: str) -> None:
    (out / "figures").mkdir(parents=True, exist_ok=True)
    figure.savefig(out / "figures" / f"{name}.png", dpi=_DPI, bbox_inches="tight",
                   metadata={MIN_FONT_KEY: f"{_smallest_text_px(figure):.2f}"})
    figure.clear()


def _line_style(index: int) -> dict:
    """Colour, dash and marker all change with the index, so neighbours differ in all three."""
    return {"color": PALETTE[index % len(PALETTE)], "linestyle": LINESTYLES[index % len(LINESTYLES)],
            "marker": MARKERS[index % len(MARKERS)]}


def _legend_below(figure: MplFigure, handles: list, labels: list, title: str = "group") -> None:
    if handles:
        labels = ["\n".join(textwrap.wrap(str(label), 48)) or str(label) for label in labels]
        figure.legend(handles, labels, loc="outside lower center", ncols=1, title=title, frameon=False)


def tradeoff(summary: pd.DataFrame, metrics: dict[str, tuple[str, bool]], out: Path) -> Figure | None:
    """The answer's trade-off: each group's best val (mean, 95% CI) against its throughput, one panel
    per task; ★ groups drawn as stars (the answer names them), groups with a diverged run crossed, the Pareto front
    (no other group both faster and better) joined by a line."""
    rows = summary.dropna(subset=["best_val_mean", "samples_per_s_median"])
    if rows.empty:
        return None
    all_tasks = list(dict.fromkeys(rows["task"]))
    tasks = all_tasks[:_MAX_TASK_PANELS]
    with matplotlib.rc_context(_STYLE):
        figure, panels = _new(len(tasks), height=3.4)
        for ax, task in zip(panels, tasks):
            mine = rows[rows["task"] == task]
            metric_name, higher = metrics.get(task, ("metric", True))
            floor, ceiling = METRIC_RANGE.get(metric_name, (None, None))
            low = mine["best_val_ci_low"].clip(lower=floor, upper=ceiling).fillna(mine["best_val_mean"])
            high = mine["best_val_ci_high"].clip(lower=floor, upper=ceiling).fillna(mine["best_val_mean"])
            error = np.vstack([(mine["best_val_mean"] - low).clip(lower=0), (high - mine["best_val_mean"]).clip(lower=0)])
            star = mine["best"].astype(bool).to_numpy()
            ax.errorbar(mine["samples_per_s_median"], mine["best_val_mean"], yerr=error, fmt="none",
                        ecolor="0.7", elinewidth=0.8, zorder=1)
            ax.scatter(mine["samples_per_s_median"][~star], mine["best_val_mean"][~star], s=22,
                       facecolors="none", edgecolors="0.45", label="other groups", zorder=2)
            ax.scatter(mine["samples_per_s_median"][star], mine["best_val_mean"][star], s=48, marker="*",
                       color=PALETTE[2], edgecolors="black", linewidths=0.5, label="★ not shown worse", zorder=3)
            unstable = (mine["divergence_rate"] > 0).to_numpy()
            if unstable.any():
                ax.scatter(mine["samples_per_s_median"][unstable], mine["best_val_mean"][unstable], s=60,
                           marker="x", color=PALETTE[3], label="≥ 1 run diverged", zorder=4)
            front = _pareto_front(mine, higher)
            ax.plot(front["samples_per_s_median"], front["best_val_mean"], color=PALETTE[0], linewidth=1,
                    linestyle="--", label="Pareto front", zorder=1)
            if _spans_decades(mine["samples_per_s_median"], 10):
                ax.set_xscale("log")
            ax.set_ylabel(text(f"best val {metric_name} ({'higher' if higher else 'lower'} is better)", 40))
            ax.set_title(text(f"task {task}", 40))
        panels[-1].set_xlabel("training throughput (samples/s, median over seeds)")
        handles, labels = panels[0].get_legend_handles_labels()
        for ax in panels[1:]:
            for handle, label in zip(*ax.get_legend_handles_labels()):
                if label not in labels:
                    handles.append(handle)
                    labels.append(label)
        _legend_below(figure, handles, labels, title="")
        _save(figure, out, "tradeoff")
    caption = ("Each point is a group: mean best validation metric (bars: 95% t-interval, clipped to the "
               "metric's range) against median throughput. The dashed line joins the groups no other group "
               "beats on both. Throughput is only as steady as the machine it was timed on (see Throughput).")
    return Figure("tradeoff", "Metric against speed", caption + _task_cut_note(len(all_tasks)))


def _pareto_front(groups: pd.DataFrame, higher_is_better: bool) -> pd.DataFrame:
    """Groups no other group beats on both throughput and metric, fastest first."""
    ordered = groups.sort_values("samples_per_s_median", ascending=False)
    score = ordered["best_val_mean"] if higher_is_better else -ordered["best_val_mean"]
    keep = score > score.cummax().shift(fill_value=-np.inf)
    return ordered[keep.to_numpy()]


def heatmaps(grids: dict, row: str, col: str, metric: dict[str, tuple[str, bool]], out: Path,
             note: str) -> list[Figure]:
    """Primary-metric mean and divergence rate over (row, col), one panel per task, stacked.

    `grids` maps each task to its aggregate.AxisGrid. Metric cells read "mean, ±95% half-width,
    n"; the colour range spans the cells' intervals (not only their means), so differences
    smaller than the noise do not look dramatic. The caption states each task's range.
    """
    tasks = list(grids)[:_MAX_TASK_PANELS]
    note += _task_cut_note(len(grids))
    figures = []
    with matplotlib.rc_context(_STYLE):
        for name, title in (("heatmap_primary", "Best validation metric (mean over ok runs)"),
                            ("heatmap_divergence", "Divergence rate (diverged / runs)")):
            shape = grids[tasks[0]].metric.shape
            figure, panels = _new(len(tasks), height=max(2.4, 0.75 * shape[0] + 1.6))
            ranges = []
            for ax, task in zip(panels, tasks):
                grid = grids[task]
                table = (grid.metric if name == "heatmap_primary" else grid.diverged).astype(float)
                annotations = None
                if name == "heatmap_primary":
                    metric_name, higher = metric[task]
                    cmap = "viridis" if higher else "viridis_r"
                    label = f"best val {metric_name} ({'higher' if higher else 'lower'} is better)"
                    vmin, vmax = _interval_range(grid, metric_name)
                    ranges.append(f"{task}: {vmin:.3g} to {vmax:.3g}")
                    annotations = _cell_text(grid)
                else:
                    cmap, label, vmin, vmax = "cividis", "divergence rate", 0.0, 1.0
                    annotations = table.map(lambda v: "" if np.isnan(v) else f"{v:.2g}")
                display = table.copy()
                display.index = [text(v, 14) for v in table.index]
                display.columns = [text(v, 14) for v in table.columns]
                if display.notna().to_numpy().any():
                    show = table.size <= 48
                    sns.heatmap(display, ax=ax, cmap=cmap, vmin=vmin, vmax=vmax,
                                annot=annotations.to_numpy() if show else False, fmt="",
                                annot_kws={"fontsize": MIN_FONT_PT}, linewidths=0.5,
                                cbar_kws={"label": text(label, 40)})
                ax.grid(False)
                ax.set_xlabel(text(col.removeprefix("axes.")))
                ax.set_ylabel(text(row.removeprefix("axes.")))
                ax.set_title(text(f"task {task}" if len(grids) > 1 else title, 50))
            caption = note
            if ranges:
                caption = (f"Each cell: mean, ± half-width of its 95% t-interval, n = ok runs pooled in the "
                           f"cell. Colour range (the span of the cells' intervals, clipped to the metric's "
                           f"range): {'; '.join(ranges)}. " + note)
            _save(figure, out, name)
            figures.append(Figure(name, title, caption))
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


def _task_cut_note(n_tasks: int) -> str:
    return f" Only the first {_MAX_TASK_PANELS} of {n_tasks} tasks are drawn." if n_tasks > _MAX_TASK_PANELS else ""


def _curve_panels(bands: pd.DataFrame, groups: dict[str, str], x: str, ylabel: Callable[[str], str],
                  xlabel: str, log_y: Callable[[pd.DataFrame], bool], out: Path, name: str, title: str,
                  caption: str) -> Figure | None:
    """Per task, one line (mean) and band (low..high) per group, x against mean.

    A task with up to _SINGLE_PANEL_GROUPS groups gets one panel; beyond that, small multiples: one
    panel per group, its line and band in colour over the other groups' lines in light grey, so
    overlapping bands never hide each other. Each group keeps one colour, dash and marker throughout.
    """
    if bands.empty:
        return None
    all_tasks = list(dict.fromkeys(bands["task"]))
    tasks = all_tasks[:_MAX_TASK_PANELS]
    caption += _task_cut_note(len(all_tasks))
    style_of = {group: _line_style(i) for i, group in enumerate(groups)}
    layout = []  # (task, groups drawn in colour in this panel)
    for task in tasks:
        present = [g for g in groups if (bands["group"][bands["task"] == task] == g).any()]
        if len(present) <= _SINGLE_PANEL_GROUPS:
            layout.append((task, present, present))
        else:
            layout += [(task, [g], present) for g in present]
    small_multiples = len(layout) > len(tasks)
    with matplotlib.rc_context(_STYLE):
        figure, panels = _new(len(layout), height=2.6 if small_multiples else 3.6, ncols=2 if small_multiples else 1)
        handles: dict[str, object] = {}
        for ax, (task, coloured, context) in zip(panels, layout):
            mine = bands[bands["task"] == task]
            if len(coloured) < len(context):
                for group in context:
                    curve = mine[mine["group"] == group].sort_values(x)
                    ax.plot(curve[x], curve["mean"], color="0.8", linewidth=0.9, zorder=1)
            for group in coloured:
                curve = mine[mine["group"] == group].sort_values(x)
                style = style_of[group]
                (line,) = ax.plot(curve[x], curve["mean"], linewidth=1.6, markersize=4,
                                  markevery=max(1, len(curve) // 8), zorder=3, **style)
                ax.fill_between(curve[x], curve["low"], curve["high"], color=style["color"], alpha=0.15,
                                linewidth=0, zorder=2)
                handles.setdefault(group, line)
            ax.set_xlabel(xlabel)
            if not small_multiples or ax.get_subplotspec().is_first_col():  # one y label per row
                ax.set_ylabel("\n".join(textwrap.wrap(text(ylabel(task), 60), 30 if small_multiples else 50)))
            if log_y(mine):
                ax.set_yscale("log")
            heading = f"task {task}" if len(all_tasks) > 1 else ""
            if len(coloured) < len(context):
                heading = f"{heading}: {groups[coloured[0]]}" if heading else groups[coloured[0]]
            if heading:
                ax.set_title("\n".join(textwrap.wrap(text(heading, 70), 30)), fontsize=MIN_FONT_PT)
        if not small_multiples:
            _legend_below(figure, list(handles.values()), [text(groups[g], 60) for g in handles])
        _save(figure, out, name)
    if small_multiples:
        caption += (f" Tasks with more than {_SINGLE_PANEL_GROUPS} groups: one panel per group, the other "
                    f"groups in grey.")
    return Figure(name, title, caption)


def learning_curves(bands: pd.DataFrame, groups: dict[str, str], metrics: dict[str, tuple[str, bool]],
                    out: Path, note: str) -> list[Figure]:
    def ylabel(task: str) -> str:
        metric, _ = metrics.get(task, ("metric", True))
        return f"validation {metric} ({METRIC_UNITS.get(metric, metric)})"

    def log_y(frame: pd.DataFrame) -> bool:
        return _spans_decades(frame["mean"])

    metric_of = bands["task"].map(lambda task: metrics.get(task, ("metric", True))[0])
    low_bound = metric_of.map(lambda m: METRIC_RANGE.get(m, (None, None))[0]).astype(float)
    high_bound = metric_of.map(lambda m: METRIC_RANGE.get(m, (None, None))[1]).astype(float)
    bands = bands.assign(low=bands["low"].clip(lower=low_bound), high=bands["high"].clip(upper=high_bound))
    band = ("Line: mean over seeds; band: 95% t-interval, clipped to the metric's range (no band where a step "
            "has a single run).")
    figures = [
        _curve_panels(bands, groups, "step", ylabel, "training step", log_y, out, "curves_val_vs_step",
                      "Validation metric vs step", f"{band} {note}"),
        _curve_panels(bands.dropna(subset=["time_s"]), groups, "time_s", ylabel,
                      "training time (s, train steps only)", log_y, out, "curves_val_vs_seconds",
                      "Validation metric vs training seconds",
                      f"{band} x: mean train seconds over seeds at each evaluated step. {note}"),
    ]
    return [f for f in figures if f is not None]


def grad_norm_curves(bands: pd.DataFrame, groups: dict[str, str], out: Path, note: str) -> Figure | None:
    return _curve_panels(bands, groups, "step", lambda task: "gradient L2 norm before clipping (log scale)",
                         "training step", lambda frame: True, out, "grad_norm_vs_step", "Gradient norm vs step",
                         f"Geometric mean over seeds with a 95% t-band on log10. {note}")


def grad_flow(profiles: pd.DataFrame, groups: dict[str, str], out: Path, note: str) -> Figure | None:
    """||dL/dh_t|| against t at init and at the end of training, recurrent runs only."""
    if profiles.empty:
        return None
    with matplotlib.rc_context(_STYLE):
        figure, panels = _new(2)
        for ax, moment in zip(panels, ("init", "final")):
            mine = profiles[profiles["moment"] == moment]
            for index, (group, label) in enumerate(groups.items()):
                curve = mine[mine["group"] == group]
                if not curve.empty:
                    ax.plot(curve["t"], curve["norm"], label=text(label, 60), linewidth=1.4, markersize=4,
                            markevery=max(1, len(curve) // 8), **_line_style(index))
            ax.set_yscale("log")
            ax.set_xlabel("time step t")
            ax.set_ylabel("‖∂L/∂h_t‖ (log scale)")
            ax.set_title("at initialization" if moment == "init" else "after training")
        handles, labels = panels[0].get_legend_handles_labels()
        if not handles:
            handles, labels = panels[1].get_legend_handles_labels()
        _legend_below(figure, handles, labels)
        _save(figure, out, "grad_flow_through_time")
    return Figure("grad_flow_through_time", "Gradient flow through time",
                  "Geometric mean over seeds. A flat line is perfect flow; falling toward t = 1 is vanishing. "
                  + note)


def _bars(bars: pd.DataFrame, value: str, low: str | None, high: str | None, xlabel: str,
          out: Path, name: str, title: str, caption: str, flag_noise: bool = True) -> Figure | None:
    """Horizontal bars, one panel per task (stacked), labelled by bars["label"]; bars whose
    bars["noisy"] is true are hatched and marked "(noisy timing)"."""
    rows = bars.dropna(subset=[value])
    if rows.empty:
        return None
    all_tasks = list(dict.fromkeys(rows["task"]))
    tasks = all_tasks[:_MAX_TASK_PANELS]
    caption += _task_cut_note(len(all_tasks))
    values = rows[value].to_numpy(dtype=float)
    if low:
        values = np.concatenate([values, rows[low].to_numpy(dtype=float)])
    log_x = _spans_decades(values)
    with matplotlib.rc_context(_STYLE):
        def label_of(label: object, noisy: bool) -> str:
            return "\n".join(textwrap.wrap(text(label, 60), 26)) + ("\n(noisy timing)" if noisy else "")

        flags = (rows["noisy"].fillna(False).astype(bool) if flag_noise and "noisy" in rows
                 else pd.Series(False, index=rows.index))
        lines = pd.Series([label_of(lab, n).count("\n") + 1 for lab, n in zip(rows["label"], flags)], index=rows.index)
        heights = [0.2 * lines[rows["task"] == t].clip(lower=2).sum() + 1.1 for t in tasks]
        figure = MplFigure(figsize=(FIGURE_WIDTH, sum(heights)), dpi=_DPI, layout="constrained")
        FigureCanvasAgg(figure)
        panels = list(figure.subplots(len(tasks), 1, squeeze=False, height_ratios=heights).flat)
        for ax, task in zip(panels, tasks):
            mine = rows[rows["task"] == task]
            positions = np.arange(len(mine))
            error = None
            if low and high:
                error = np.vstack([(mine[value] - mine[low]).clip(lower=0), (mine[high] - mine[value]).clip(lower=0)])
            noisy = flags[mine.index].to_numpy()
            ax.barh(positions, mine[value], xerr=error, color=[PALETTE[7] if n else PALETTE[0] for n in noisy],
                    hatch=["//" if n else "" for n in noisy], ecolor="0.25", capsize=2)
            labels = [label_of(label, n) for label, n in zip(mine["label"], noisy)]
            ax.set_yticks(positions, labels)
            ax.invert_yaxis()
            if log_x:
                ax.set_xscale("log")
            if len(all_tasks) > 1:
                ax.set_title(text(f"task {task}", 40))
        panels[-1].set_xlabel("\n".join(textwrap.wrap(text(xlabel, 120), 50)))
        _save(figure, out, name)
    return Figure(name, title, caption)


_NOISE_NOTE = ("Hatched grey bars, \"(noisy timing)\": the median run's slowest tenth of steps took more than "
               "{limit:g}× its fastest tenth (step_ms p90/p10), or the seeds' throughputs differ by more than "
               "{limit:g}×: the machine's load changed during timing, so treat those numbers as rough.")


def throughput(bars: pd.DataFrame, out: Path, note: str, noisy_limit: float) -> Figure | None:
    return _bars(bars, "samples_per_s_median", "samples_per_s_min", "samples_per_s_max",
                 "samples/s (median over seeds; whiskers: min–max)", out,
                 "throughput", "Throughput",
                 f"Training samples per second, per task. {_NOISE_NOTE.format(limit=noisy_limit)} {note}")


MEMORY_KINDS = {
    "cuda_max_allocated": "peak GPU memory allocated by tensors",
    "process_rss_sampled": "peak process resident memory, includes the interpreter",
    "process_max_rss": "peak process resident memory, includes the interpreter",
}


def memory_label(kinds: list[str]) -> str:
    return "; ".join(MEMORY_KINDS.get(k, k) for k in kinds) if kinds else "peak memory (kind not recorded)"


def peak_memory(bars: pd.DataFrame, out: Path, note: str) -> Figure | None:
    kinds = sorted({k for value in bars.get("memory_kind", pd.Series(dtype=str)).dropna()
                    for k in str(value).split("/") if k})
    honest = ("On the CPU this is the whole Python process (interpreter, libraries, data), so differences "
              "between norms are small against a large shared base. " if any(k.startswith("process") for k in kinds)
              else "")
    return _bars(bars, "peak_memory_mb_median", None, None, f"MB, median over seeds: {memory_label(kinds)}",
                 out, "peak_memory", "Peak memory",
                 f"{memory_label(kinds).capitalize()}, per task. {honest}GPU tensor memory and process resident "
                 f"memory are not comparable. {note}", flag_noise=False)


def lr_sensitivity(points: pd.DataFrame, arms: pd.DataFrame, metrics: dict[str, tuple[str, bool]], out: Path,
                   note: str) -> Figure | None:
    """Final validation metric against lr (log x), one line per arm, one panel per task.

    Point: mean of the finished runs, bar: 95% t-interval clipped to the metric's range (none with
    one run). Diverged runs are
    never dropped: a triangle at the panel's bottom, labelled with their count, at each lr where any
    diverged; ★ marks each arm's best lr."""
    if points.empty:
        return None
    all_tasks = list(dict.fromkeys(points["task"]))
    tasks = all_tasks[:_MAX_TASK_PANELS]
    caption = note + _task_cut_note(len(all_tasks))
    with matplotlib.rc_context(_STYLE):
        figure, panels = _new(len(tasks))
        for ax, task in zip(panels, tasks):
            mine = points[points["task"] == task]
            metric, higher = metrics.get(task, ("metric", True))
            floor, ceiling = METRIC_RANGE.get(metric, (None, None))
            labels = list(dict.fromkeys(mine["arm_label"]))
            for index, label in enumerate(labels):
                # arms side by side at each lr (a small shift on the log axis), so their bars stay apart
                shift = 10.0 ** (0.012 * (index - (len(labels) - 1) / 2))
                curve = mine[mine["arm_label"] == label].sort_values("lr")
                curve = curve.assign(lr=curve["lr"] * shift, low=curve["low"].clip(lower=floor, upper=ceiling),
                                     high=curve["high"].clip(lower=floor, upper=ceiling))
                style = _line_style(index)
                shown = curve[curve["finished"] > 0]
                error = np.vstack([(shown["mean"] - shown["low"]).clip(lower=0).fillna(0),
                                   (shown["high"] - shown["mean"]).clip(lower=0).fillna(0)])
                ax.errorbar(shown["lr"], shown["mean"], yerr=error, markersize=4, capsize=2,
                            linewidth=1.3, label=text(label, 90), **style)
                best = arms[(arms["task"] == task) & (arms["arm_label"] == label)]["best_lr"]
                if len(best) and best.notna().iloc[0]:
                    at = shown[np.isclose(shown["lr"], float(best.iloc[0]) * shift)]
                    ax.scatter(at["lr"], at["mean"], marker="*", s=140, color=style["color"], zorder=5,
                               edgecolors="black", linewidths=0.5)
                failed = curve[curve["diverged"] > 0]
                height = 0.03 + 0.05 * (index % 6)  # stacked, so arms diverging at one lr stay apart
                ax.scatter(failed["lr"], [height] * len(failed), marker="v", s=45, color=style["color"],
                           transform=ax.get_xaxis_transform(), clip_on=False, zorder=6)
                for lr, count, runs in zip(failed["lr"], failed["diverged"], failed["runs"]):
                    ax.annotate(f"{int(count)}/{int(runs)} div.", (lr, height), xycoords=ax.get_xaxis_transform(),
                                xytext=(5, -3), textcoords="offset points", color=style["color"])
            ax.set_xscale("log")
            ax.set_xlabel("learning rate (log scale; arms shifted slightly apart)")
            ax.set_ylabel(f"final val {metric}")  # short: stacked panels share the figure's height
            ax.set_title(text(f"{'task ' + str(task) + ': ' if len(tasks) > 1 else ''}"
                              f"{'higher' if higher else 'lower'} is better"))
        _legend_below(figure, *panels[0].get_legend_handles_labels(), title="arm")
        _save(figure, out, "lr_sensitivity")
    return Figure("lr_sensitivity", "Learning-rate sensitivity", caption)


def performance_profile(ratios: pd.DataFrame, tau_max: float, out: Path, note: str) -> Figure | None:
    """ρ_a(τ), the share of tasks on which arm a needs ≤ τ × the fewest steps to target (log τ)."""
    if ratios.empty:
        return None
    finite = ratios.to_numpy(dtype=float)
    finite = finite[np.isfinite(finite)]
    right = max(tau_max, float(finite.max()) * 1.25 if finite.size else tau_max)
    with matplotlib.rc_context(_STYLE):
        figure, (ax,) = _new(1)
        for index, arm in enumerate(ratios.columns):
            r = np.sort(ratios[arm].to_numpy(dtype=float))
            taus = np.concatenate([[1.0], r[np.isfinite(r) & (r > 1.0)], [right]])
            taus = np.unique(taus)
            rho = [(r <= t * (1 + 1e-12)).mean() for t in taus]
            # earlier arms drawn wider, so arms with the same profile show as nested lines, not one
            width = 1.5 + 3.0 * (len(ratios.columns) - 1 - index) / max(len(ratios.columns) - 1, 1)
            ax.step(taus, rho, where="post", linewidth=width, alpha=0.85, label=text(arm, 90), **_line_style(index))
        ax.set_xscale("log")
        plain = matplotlib.ticker.FuncFormatter(lambda value, _: f"{value:g}")
        ax.xaxis.set_major_formatter(plain)
        ax.xaxis.set_minor_formatter(plain)
        ax.set_xlim(1.0, right)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("τ: steps to target ÷ the fastest arm's on that task (log scale)")
        ax.set_ylabel("ρ(τ): share of tasks")
        _legend_below(figure, *ax.get_legend_handles_labels(), title="arm")
        _save(figure, out, "performance_profile")
    return Figure("performance_profile", "Performance profile (steps to target)",
                  note + " Arms with the same profile overlap; the wider line underneath is the earlier arm in the legend.")
