"""The trade-off figure: each arm's metric against its speed, ranked points labelled where the
label names its own point, the Pareto front joined."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure as MplFigure

from normbench.records import metrics as metric_table
from normbench.report.figures import checks, drawing, png
from normbench.report.figures.drawing import (
    METRIC_RANGE,
    MIN_BAND_SEEDS,
    MIN_FONT_PT,
    PALETTE,
    Figure,
    Layout,
    text,
    wrap,
)


def tradeoff(summary: pd.DataFrame, metrics: dict[str, tuple[str, bool]], out: Path, name: str = "tradeoff",
             study: str = "") -> Figure | None:
    """The answer's trade-off for one study: each arm's mean final val (95% CI where ≥ 3 seeds)
    against its throughput, one panel per task; points labelled by leaderboard rank (and the arm
    where it fits), ★ arms drawn as stars, arms with a diverged run crossed, the Pareto front (no
    other ranked arm both faster and better) joined by a line. `summary` has `label` (the arm)."""
    score = "final_val" if summary.get("final_val_mean", pd.Series(dtype=float)).notna().any() else "best_val"
    rows = summary.dropna(subset=[f"{score}_mean", "samples_per_s_median"])
    rows = rows[drawing.plottable(rows[f"{score}_mean"], False) & drawing.plottable(rows["samples_per_s_median"], True)]
    if rows.empty:
        return None
    tasks = list(dict.fromkeys(rows["task"]))
    legend_entries = ["★ could be the best", "other ranked arms", "1 seed: not ranked",
                      "≥ 1 run diverged", "Pareto front"]
    # Speed is a result only from paired timing (the arms timed side by side, analysis/speed.py);
    # a run's own step time carries the load it met, so without pairing the axis says so.
    paired = bool(len(rows)) and "timing" in rows and (rows["timing"] == "paired").all()
    unit = metric_table.metric("samples_per_s").unit
    speed_axis = (f"training {unit}, paired timing" if paired
                  else f"unpaired per-run throughput ({unit}, median over seeds)")

    def draw(layout: Layout) -> MplFigure:
        plan = drawing.legend_plan(legend_entries, layout, title=False)
        figure, panels = drawing.grid(layout, len(tasks), 3.8, extra_height=plan.height)
        for ax, task in zip(panels, tasks):
            _trade_off_panel(ax, rows[rows["task"] == task], metrics.get(task, ("metric", True)), score, legend_entries)
            ax.set_xlabel(speed_axis)
            ax.set_title(text(drawing.task_of(tasks, task)))
            drawing.tidy_ticks(ax, drawing.panel_width(layout, min(layout.columns, len(tasks))))
        handles = _drawn_handles(panels)
        kept = [e for e in legend_entries if e in handles]
        drawing.legend(figure, [handles[e] for e in kept], drawing.legend_plan(kept, layout, title=False))
        figure.draw_without_rendering()
        for ax, task in zip(panels, tasks):
            label_points(ax, rows[rows["task"] == task], score)
        return figure

    png.render(out, name, draw)
    caption = ("Each point is an arm: mean final validation metric (bars: 95% t-interval, ≥ "
               f"{MIN_BAND_SEEDS} seeds) against {'paired-timing' if paired else 'unpaired per-run'} throughput; "
               "labels: leaderboard rank and arm. See the glossary: interval, rank, Pareto front, "
               + ("paired timing." if paired else "unpaired per-run throughput."))
    return Figure(name, "Metric against speed" if paired else "Metric against unpaired per-run throughput",
                  caption, study, speed="paired" if paired else "unpaired")


def _trade_off_panel(ax, mine: pd.DataFrame, metric: tuple[str, bool], score: str, entries: list[str]) -> None:
    """One task's arms: interval bars (≥ MIN_BAND_SEEDS seeds), ranked, unranked and ★ points, a cross
    on each arm with a diverged run, the Pareto front; the axis ranges and the y label."""
    metric_name, higher = metric
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
               label=entries[1], zorder=2)
    ax.scatter(x[~ranked], y[~ranked], s=14, color="0.65", marker="s", label=entries[2], zorder=2)
    ax.scatter(x[star], y[star], s=70, marker="*", color=PALETTE[2], edgecolors="black", linewidths=0.5,
               label=entries[0], zorder=3)
    unstable = (mine["divergence_rate"] > 0).to_numpy()
    ax.scatter(x[unstable], y[unstable], s=60, marker="x", color=PALETTE[3], label=entries[3], zorder=4)
    front = _pareto_front(mine[ranked], higher, score)
    if len(front) >= 2:  # one arm on the front is a point, not a line: nothing to draw or name
        ax.plot(front["samples_per_s_median"], front[f"{score}_mean"], color=PALETTE[0], linewidth=1,
                linestyle="--", label=entries[4], zorder=1)
    if drawing.spans_decades(x, 10):
        ax.set_xscale("log")
    limits = drawing.limits(np.concatenate([y, banded.get(f"{score}_ci_low", []), banded.get(f"{score}_ci_high", [])]),
                            metric_name, False)
    if limits:
        ax.set_ylim(*limits)
    ax.set_ylabel(wrap(f"final val {metric_name} ({'higher' if higher else 'lower'} is better)", 34))


def _drawn_handles(panels: list) -> dict:
    """Label -> handle, for what the panels draw: a scatter with points, a line through two."""
    handles = {}
    for ax in panels:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            drawn = (len(handle.get_offsets()) if hasattr(handle, "get_offsets") else
                     len(handle.get_xdata()) - 1 if hasattr(handle, "get_xdata") else 1)
            if drawn > 0:
                handles.setdefault(label, handle)
    return handles


def label_points(ax, mine: pd.DataFrame, score: str) -> None:
    """Each point's label: its rank and arm, or the rank alone where the arm does not fit (unranked
    points: the arm), placed where it covers no other label and no point's marker, lies nearer its
    own point than any other (`checks.misplaced`) and stays inside the panel; ★ arms first, then by rank.
    A point whose label fits nowhere keeps its marker only (the leaderboard still names it)."""
    renderer = ax.figure.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    markers = checks.scatter_markers(ax, renderer)
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
                if (inside and not any(checks.overlap(box, other, 0.0) for other in placed)
                        and not checks.misplaced(box, own, markers)):
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
