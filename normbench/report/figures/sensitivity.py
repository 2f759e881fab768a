"""Figures across settings: the final metric against the learning rate (lr_sensitivity) and the
steps-to-target performance profile ρ(τ) over tasks (performance_profile)."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure as MplFigure

from normbench.report.figures import drawing, png
from normbench.report.figures.drawing import METRIC_RANGE, MIN_BAND_SEEDS, Figure, Layout, text


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
    top = float(points["lr"].max())

    def draw(layout: Layout) -> MplFigure:
        plan = drawing.legend_plan(labels, layout)
        figure, panels = drawing.grid(layout, len(tasks), 3.8, extra_height=plan.height)
        for ax, task in zip(panels, tasks):
            mine = points[points["task"] == task]
            metric, higher = metrics.get(task, ("metric", True))
            floor, ceiling = METRIC_RANGE.get(metric, (None, None))
            for index, label in enumerate(labels):
                _draw_arm(ax, mine, arms, task, label, index, len(labels), (floor, ceiling), top)
            ax.set_xscale("log")
            ax.set_xlabel("learning rate (log scale; arms shifted slightly apart)")
            ax.set_ylabel(f"final val {metric}")
            ax.set_title(text(f"{'task ' + str(task) + ': ' if len(tasks) > 1 else ''}"
                              f"{'higher' if higher else 'lower'} is better"))
        handles = {}
        for ax in panels:
            for handle, label in zip(*ax.get_legend_handles_labels()):
                handles.setdefault(label, handle)
        drawing.legend(figure, list(handles.values()), drawing.legend_plan(list(handles), layout), "arm")
        return figure

    png.render(out, "lr_sensitivity", draw)
    return Figure("lr_sensitivity", "Learning-rate sensitivity", note)


def _draw_arm(ax, mine: pd.DataFrame, arms: pd.DataFrame, task: str, label: str, index: int, n_labels: int,
              bounds: tuple, top: float) -> None:
    """One arm's line over lr in one task's panel: means with interval bars (clipped to `bounds`), ★ at
    its best lr, and a triangle with the count of diverged runs at each lr where any diverged."""
    # arms side by side at each lr (a small shift on the log axis), so their bars stay apart
    shift = 10.0 ** (0.012 * (index - (n_labels - 1) / 2))
    curve = mine[mine["arm_label"] == label].sort_values("lr")
    if curve.empty:
        return
    few = curve["finished"] < MIN_BAND_SEEDS
    curve = curve.assign(lr=curve["lr"] * shift,
                         low=curve["low"].clip(lower=bounds[0], upper=bounds[1]).mask(few),
                         high=curve["high"].clip(lower=bounds[0], upper=bounds[1]).mask(few))
    style = drawing.line_style(index)
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
    for lr, count, runs in zip(failed["lr"], failed["diverged"], failed["runs"]):
        at_right = lr >= top / shift  # the largest lr: the note goes to its left, inside the panel
        ax.annotate(f"{int(count)}/{int(runs)} div.", (lr, height), xycoords=ax.get_xaxis_transform(),
                    xytext=(-7 if at_right else 5, -3), textcoords="offset points",
                    ha="right" if at_right else "left", color=style["color"])


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
        plan = drawing.legend_plan(arms, layout)
        figure, (ax,) = drawing.grid(layout, 1, 3.6, extra_height=plan.height)
        for index, arm in enumerate(ratios.columns):
            r = np.sort(ratios[arm].to_numpy(dtype=float))
            taus = np.unique(np.concatenate([[1.0], r[np.isfinite(r) & (r > 1.0)], [right]]))
            rho = [(r <= t * (1 + 1e-12)).mean() for t in taus]
            # earlier arms drawn wider, so arms with the same profile show as nested lines, not one
            width = 1.5 + 3.0 * (len(ratios.columns) - 1 - index) / max(len(ratios.columns) - 1, 1)
            ax.step(taus, rho, where="post", linewidth=width, alpha=0.85, label=text(arm), **drawing.line_style(index))
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda value, _: f"{value:g}"))
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlim(1.0, right)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("τ: steps to target ÷ the fastest arm's on that task (log scale)")
        ax.set_ylabel("ρ(τ): share of tasks")
        drawing.legend(figure, *ax.get_legend_handles_labels()[:1], drawing.legend_plan(arms, layout), "arm")
        return figure

    png.render(out, "performance_profile", draw)
    caption = (note + " See the glossary: steps to target. Arms with the same profile overlap; the wider line "
               "underneath is the earlier arm in the legend.")
    if tied:
        caption += " Here every arm has the same profile: the steps to target do not tell them apart."
    return Figure("performance_profile", "Performance profile (steps to target)", caption)
