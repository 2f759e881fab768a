"""The report's figures, drawn from the aggregated frames and saved as PNG under figures/.

Figures are built as matplotlib.figure.Figure objects on an Agg canvas, never through pyplot:
nothing enters pyplot's global figure registry (so there is nothing to close; each figure is
cleared once saved), and a runner that calls build_report at the end of a long multirun leaks no
figures. The count is fixed (at most eight files) whatever the size of the sweep; the callers
choose which groups are drawn.
"""

from __future__ import annotations

import sys
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
LINESTYLES = ("-", "--", ":", "-.")
METRIC_UNITS = {"accuracy": "fraction correct", "mse": "mean squared error", "bpc": "bits per character"}
# A t-band from two seeds can reach past what the metric can be; drawn, it is clipped to this range.
METRIC_RANGE = {"accuracy": (0.0, 1.0), "mse": (0.0, None), "bpc": (0.0, None)}
_STYLE = {**sns.axes_style("whitegrid"), **sns.plotting_context("notebook", font_scale=0.85)}
_DPI = 100
_MAX_TASK_PANELS = 4


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


def _new(n_panels: int, width: float = 6.0, height: float = 4.2) -> tuple[MplFigure, list]:
    figure = MplFigure(figsize=(width * n_panels, height), dpi=_DPI)
    FigureCanvasAgg(figure)
    return figure, list(np.atleast_1d(figure.subplots(1, n_panels, squeeze=False)[0]))


def _save(figure: MplFigure, out: Path, name: str) -> None:
    (out / "figures").mkdir(parents=True, exist_ok=True)
    figure.savefig(out / "figures" / f"{name}.png", dpi=_DPI, bbox_inches="tight")
    figure.clear()


def _line_style(index: int) -> dict:
    return {"color": PALETTE[index % len(PALETTE)], "linestyle": LINESTYLES[(index // len(PALETTE)) % len(LINESTYLES)]}


def heatmaps(grids: dict[str, tuple[pd.DataFrame, pd.DataFrame]], row: str, col: str,
             metric: dict[str, tuple[str, bool]], out: Path, note: str) -> list[Figure]:
    """Primary-metric mean and divergence rate over (row, col), one panel per task."""
    tasks = list(grids)[:_MAX_TASK_PANELS]
    note += _task_cut_note(len(grids))
    figures = []
    with matplotlib.rc_context(_STYLE):
        for name, which, title in (("heatmap_primary", 0, "Best validation metric (mean over ok runs)"),
                                   ("heatmap_divergence", 1, "Divergence rate (diverged / runs)")):
            cells = max(grids[t][which].size for t in tasks)
            figure, panels = _new(len(tasks), width=max(4.5, 0.9 * grids[tasks[0]][which].shape[1] + 2.5))
            for ax, task in zip(panels, tasks):
                table = grids[task][which].astype(float)
                table.index = [text(v, 20) for v in table.index]
                table.columns = [text(v, 20) for v in table.columns]
                if which == 0:
                    metric_name, higher = metric[task]
                    cmap, label = ("viridis" if higher else "viridis_r"), metric_label(metric_name, higher)
                    vmin = vmax = None
                else:
                    cmap, label, vmin, vmax = "cividis", "divergence rate (fraction of runs)", 0.0, 1.0
                if table.notna().to_numpy().any():
                    sns.heatmap(table, ax=ax, cmap=cmap, vmin=vmin, vmax=vmax, annot=cells <= 150, fmt=".3g",
                                linewidths=0.5, cbar_kws={"label": text(label, 80)})
                ax.grid(False)
                ax.set_xlabel(text(col.removeprefix("axes.")))
                ax.set_ylabel(text(row.removeprefix("axes.")))
                ax.set_title(text(f"task {task}" if len(grids) > 1 else title, 70))
            if len(grids) > 1:
                figure.suptitle(title)
            _save(figure, out, name)
            figures.append(Figure(name, title, note))
    return figures


def _task_cut_note(n_tasks: int) -> str:
    return f" Only the first {_MAX_TASK_PANELS} of {n_tasks} tasks are drawn." if n_tasks > _MAX_TASK_PANELS else ""


def _curve_panels(bands: pd.DataFrame, groups: dict[str, str], x: str, ylabel: Callable[[str], str],
                  xlabel: str, log_y: Callable[[pd.DataFrame], bool], out: Path, name: str, title: str,
                  caption: str) -> Figure | None:
    """One panel per task, one line (mean) and band (low..high) per group, x against mean."""
    if bands.empty:
        return None
    all_tasks = list(dict.fromkeys(bands["task"]))
    tasks = all_tasks[:_MAX_TASK_PANELS]
    caption += _task_cut_note(len(all_tasks))
    with matplotlib.rc_context(_STYLE):
        figure, panels = _new(len(tasks))
        for ax, task in zip(panels, tasks):
            mine = bands[bands["task"] == task]
            for index, (group, label) in enumerate(groups.items()):
                curve = mine[mine["group"] == group].sort_values(x)
                if curve.empty:
                    continue
                style = _line_style(index)
                ax.plot(curve[x], curve["mean"], label=text(label, 90), linewidth=1.4, **style)
                ax.fill_between(curve[x], curve["low"], curve["high"], color=style["color"], alpha=0.18,
                                linewidth=0)
            ax.set_xlabel(xlabel)
            ax.set_ylabel(text(ylabel(task), 80))
            if log_y(mine):
                ax.set_yscale("log")
            if len(tasks) > 1:
                ax.set_title(text(f"task {task}"))
        handles, labels = panels[0].get_legend_handles_labels()
        for ax in panels[1:]:
            more_handles, more_labels = ax.get_legend_handles_labels()
            for handle, label in zip(more_handles, more_labels):
                if label not in labels:
                    handles.append(handle)
                    labels.append(label)
        figure.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.0, 0.95), fontsize="small",
                      title="group", frameon=False)
        _save(figure, out, name)
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
                    ax.plot(curve["t"], curve["norm"], label=text(label, 90), linewidth=1.4, **_line_style(index))
            ax.set_yscale("log")
            ax.set_xlabel("time step t")
            ax.set_ylabel("‖∂L/∂h_t‖ (log scale)")
            ax.set_title("at initialization" if moment == "init" else "after training")
        handles, labels = panels[0].get_legend_handles_labels()
        if not handles:
            handles, labels = panels[1].get_legend_handles_labels()
        figure.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.0, 0.95), fontsize="small",
                      title="group", frameon=False)
        _save(figure, out, "grad_flow_through_time")
    return Figure("grad_flow_through_time", "Gradient flow through time",
                  "Geometric mean over seeds. A flat line is perfect flow; falling toward t = 1 is vanishing. "
                  + note)


def _bars(summary: pd.DataFrame, value: str, low: str | None, high: str | None, xlabel: str,
          out: Path, name: str, title: str, caption: str) -> Figure | None:
    rows = summary.dropna(subset=[value])
    if rows.empty:
        return None
    labels = [text(f"{g}" if summary["task"].nunique() == 1 else f"{t}: {g}", 70)
              for t, g in zip(rows["task"], rows["group"])]
    with matplotlib.rc_context(_STYLE):
        figure, (ax,) = _new(1, width=7.5, height=0.32 * len(rows) + 1.2)
        positions = np.arange(len(rows))
        error = None
        if low and high:
            error = np.vstack([(rows[value] - rows[low]).clip(lower=0), (rows[high] - rows[value]).clip(lower=0)])
        ax.barh(positions, rows[value], xerr=error, color=PALETTE[0], ecolor="0.25", capsize=2)
        ax.set_yticks(positions, labels)
        ax.invert_yaxis()
        ax.set_xlabel(text(xlabel, 90))
        values = rows[value].to_numpy(dtype=float)
        if low:
            values = np.concatenate([values, rows[low].to_numpy(dtype=float)])
        if _spans_decades(values):
            ax.set_xscale("log")
        _save(figure, out, name)
    return Figure(name, title, caption)


def throughput(summary: pd.DataFrame, out: Path, note: str) -> Figure | None:
    return _bars(summary, "samples_per_s_median", "samples_per_s_min", "samples_per_s_max",
                 "training throughput (samples/s; bar: median over seeds, whiskers: min–max)", out,
                 "throughput", "Throughput", f"Samples per second per group. {note}")


def peak_memory(summary: pd.DataFrame, out: Path, note: str) -> Figure | None:
    kinds = sorted({k for value in summary.get("memory_kind", pd.Series(dtype=str)).dropna()
                    for k in str(value).split("/") if k})
    kind = ", ".join(kinds) if kinds else "kind not recorded"
    return _bars(summary, "peak_memory_mb_median", None, None, f"peak memory (MB, median over seeds; {kind})",
                 out, "peak_memory", "Peak memory",
                 f"cuda_max_allocated counts tensors on the GPU; process_rss_sampled is the CPU process's resident memory sampled during the run, "
                 f"so the two kinds are not comparable. {note}")


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
        figure, panels = _new(len(tasks), width=6.5)
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
                ax.errorbar(shown["lr"], shown["mean"], yerr=error, marker="o", markersize=4, capsize=2,
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
                                xytext=(5, -3), textcoords="offset points", fontsize="x-small", color=style["color"])
            ax.set_xscale("log")
            ax.set_xlabel("learning rate (log scale; arms shifted slightly apart)")
            ax.set_ylabel(text(f"final val {metric} ({METRIC_UNITS.get(metric, metric)}, "
                               f"{'higher' if higher else 'lower'} is better)", 80))
            if len(tasks) > 1:
                ax.set_title(text(f"task {task}"))
        handles, labels = panels[0].get_legend_handles_labels()
        figure.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.0, 0.95), fontsize="small",
                      title="arm", frameon=False)
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
        figure, (ax,) = _new(1, width=7.0)
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
        figure.legend(*ax.get_legend_handles_labels(), loc="upper left", bbox_to_anchor=(1.0, 0.95),
                      fontsize="small", title="arm", frameon=False)
        _save(figure, out, "performance_profile")
    return Figure("performance_profile", "Performance profile (steps to target)",
                  note + " Arms with the same profile overlap; the wider line underneath is the earlier arm in the legend.")
