"""Curves over training: validation metric against step and seconds, training loss, gradient
norm, and gradient flow through time (‖∂L/∂h_t‖ against t); one panel per task, or small
multiples beyond drawing.SINGLE_PANEL_GROUPS arms."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
from matplotlib.figure import Figure as MplFigure

from normbench.report.figures import drawing, png
from normbench.report.figures.drawing import METRIC_RANGE, METRIC_UNITS, MIN_FONT_PT, PALETTE, Figure, Layout, wrap


def _curve_panels(bands: pd.DataFrame, groups: dict[str, str], x: str, ylabel: Callable[[str], str],
                  xlabel: str, metric_of: Callable[[str], str], log_y: bool | None, out: Path, name: str,
                  title: str, caption: str, study: str) -> Figure | None:
    """Per task, one line (mean) and band (low..high) per group, x against mean.

    When every task has up to drawing.SINGLE_PANEL_GROUPS groups, one panel per task with a legend below;
    otherwise small multiples: one panel per group (titled by it), its line and band in colour over
    the other groups' lines in light grey, so overlapping bands never hide each other. Panels of one
    metric share one y-range (log when the metric spans decades, or when log_y says so)."""
    if bands.empty:
        return None
    tasks = list(dict.fromkeys(bands["task"]))
    style_of = {group: drawing.line_style(i) for i, group in enumerate(groups)}
    present = {t: [g for g in groups if (bands["group"][bands["task"] == t] == g).any()] for t in tasks}
    small = any(len(p) > drawing.SINGLE_PANEL_GROUPS for p in present.values())
    layout_rows = ([(t, [g], present[t]) for t in tasks for g in present[t]] if small
                   else [(t, present[t], present[t]) for t in tasks])
    log_of, limits = _y_scales(bands, tasks, metric_of, log_y)

    def draw(layout: Layout) -> MplFigure:
        ncols = min(layout.small_columns if small else layout.columns, len(layout_rows))
        panel_width = drawing.panel_width(layout, ncols)
        title_chars = int((panel_width - 0.4) / drawing.CHAR_IN)
        plan = drawing.legend_plan(list(dict.fromkeys(groups[g] for t in tasks for g in present[t])) if not small else [], layout)
        heading_lines = max((wrap(_heading(tasks, t, coloured, context, groups), title_chars).count("\n") + 1
                             for t, coloured, context in layout_rows), default=1)
        figure, panels = drawing.grid(layout, len(layout_rows), (2.5 if small else 3.4) + 0.2 * heading_lines,
                                      columns=ncols, extra_height=plan.height)
        handles: dict[str, object] = {}
        for index, (ax, (task, coloured, context)) in enumerate(zip(panels, layout_rows)):
            for group, line in _draw_curves(ax, bands[bands["task"] == task], x, coloured, context, style_of):
                handles.setdefault(groups[group], line)
            kind = metric_of(task)
            if log_of[kind]:
                ax.set_yscale("log")
            if limits[kind]:
                ax.set_ylim(*limits[kind])
            if index >= len(layout_rows) - ncols:  # the bottom row names x
                ax.set_xlabel(xlabel)
            if index % ncols == 0 or len({metric_of(t) for t in tasks}) > 1:
                ax.set_ylabel(wrap(ylabel(task), int(3.0 / drawing.CHAR_IN) if small else 40))
            heading = _heading(tasks, task, coloured, context, groups)
            if heading:
                ax.set_title(wrap(heading, title_chars), fontsize=MIN_FONT_PT)
            drawing.tidy_ticks(ax, panel_width)
        if not small:
            drawing.legend(figure, list(handles.values()), drawing.legend_plan(list(handles), layout), "arm")
        return figure

    png.render(out, name, draw)
    if small:
        caption += " One panel per arm (see the glossary: small multiples)."
    return Figure(name, title, caption, study)


def _y_scales(bands: pd.DataFrame, tasks: list[str], metric_of: Callable[[str], str],
              log_y: bool | None) -> tuple[dict[str, bool], dict[str, tuple[float, float] | None]]:
    """Per metric: whether its y axis is log (log_y, else when its means span decades) and the one
    y-range every panel of it shares."""
    kinds = {metric_of(t) for t in tasks}
    log_of = {k: (log_y if log_y is not None else
                  drawing.spans_decades(bands.loc[bands["task"].map(metric_of) == k, "mean"])) for k in kinds}
    limits = {}
    for kind in kinds:
        mine = bands[bands["task"].map(metric_of) == kind]
        limits[kind] = drawing.limits(np.concatenate([mine["mean"], mine["low"].dropna(), mine["high"].dropna()]),
                                      kind, log_of[kind])
    return log_of, limits


def _draw_curves(ax, mine: pd.DataFrame, x: str, coloured: list[str], context: list[str],
                 style_of: dict[str, dict]) -> list[tuple[str, object]]:
    """One panel's lines: the context groups in light grey (small multiples), then each coloured
    group's mean and band; returns (group, line) for the legend."""
    if len(coloured) < len(context):
        for group in context:
            curve = mine[mine["group"] == group].sort_values(x)
            ax.plot(curve[x], curve["mean"], color="0.82", linewidth=0.9, zorder=1)
    drawn = []
    for group in coloured:
        curve = mine[mine["group"] == group].sort_values(x)
        style = style_of[group]
        (line,) = ax.plot(curve[x], curve["mean"], linewidth=1.6, markersize=4,
                          markevery=max(1, len(curve) // 8), zorder=3, **style)
        ax.fill_between(curve[x], curve["low"], curve["high"], color=style["color"], alpha=0.15,
                        linewidth=0, zorder=2)
        drawn.append((group, line))
    return drawn

def _heading(tasks: list[str], task: str, coloured: list[str], context: list[str], groups: dict[str, str]) -> str:
    heading = drawing.task_of(tasks, task)
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
    bands = drawing.banded(_clipped(bands, metrics))
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
    return _curve_panels(drawing.banded(bands.assign(low=bands["low"].clip(lower=0))), groups, "step",
                         lambda task: "training loss (task loss, per logged step)", "training step",
                         lambda task: "loss", None, out, f"curves_loss_vs_step{suffix}", "Training loss vs step",
                         f"{BAND_TEXT} One batch's loss at each logged step. {note}", study)


def grad_norm_curves(bands: pd.DataFrame, groups: dict[str, str], out: Path, note: str, suffix: str = "",
                     study: str = "") -> Figure | None:
    if bands.empty:
        return None
    return _curve_panels(drawing.banded(bands), groups, "step", lambda task: "gradient L2 norm before clipping",
                         "training step", lambda task: "grad_norm", True, out, f"grad_norm_vs_step{suffix}",
                         "Gradient norm vs step",
                         f"Geometric mean over seeds (log scale); band: 95% t-interval on log10 (see the "
                         f"glossary: interval). {note}",
                         study)


def grad_flow(gradient_profiles: pd.DataFrame, groups: dict[str, str], out: Path, note: str, suffix: str = "",
              study: str = "") -> Figure | None:
    """||dL/dh_t|| against t at init and at the end of training, recurrent runs only. Up to
    drawing.SINGLE_PANEL_GROUPS arms: two panels (init, final) with every arm; more: one panel per arm with
    its two profiles. One log y-range for every panel."""
    gradient_profiles = gradient_profiles[drawing.plottable(gradient_profiles["norm"].to_numpy(dtype=float), True)]
    if gradient_profiles.empty:
        return None
    shown = [g for g in groups if (gradient_profiles["group"] == g).any()]
    small = len(shown) > drawing.SINGLE_PANEL_GROUPS
    limits = drawing.limits(gradient_profiles["norm"].to_numpy(dtype=float), None, True)

    def draw(layout: Layout) -> MplFigure:
        if not small:
            plan = drawing.legend_plan([groups[g] for g in shown], layout)
            figure, panels = drawing.grid(layout, 2, 3.4, extra_height=plan.height)
            for ax, moment in zip(panels, ("init", "final")):
                mine = gradient_profiles[gradient_profiles["moment"] == moment]
                for index, group in enumerate(shown):
                    curve = mine[mine["group"] == group]
                    ax.plot(curve["t"], curve["norm"], label=groups[group], linewidth=1.4, markersize=4,
                            markevery=max(1, len(curve) // 8), **drawing.line_style(index))
                ax.set_title("at initialization" if moment == "init" else "after training")
            handles = {}
            for ax in panels:
                for handle, label in zip(*ax.get_legend_handles_labels()):
                    handles.setdefault(label, handle)
            drawing.legend(figure, list(handles.values()), drawing.legend_plan(list(handles), layout), "arm")
        else:
            ncols = layout.small_columns
            chars = int((drawing.panel_width(layout, ncols) - 0.4) / drawing.CHAR_IN)
            lines = max(wrap(groups[g], chars).count("\n") + 1 for g in shown)
            legend = ["at initialization", "after training"]
            figure, panels = drawing.grid(layout, len(shown), 2.4 + 0.2 * lines, columns=ncols,
                                          extra_height=drawing.legend_plan(legend, layout, False).height)
            for ax, group in zip(panels, shown):
                for moment, style in (("init", {"color": "0.55", "linestyle": "--"}),
                                      ("final", {"color": PALETTE[0], "linestyle": "-"})):
                    curve = gradient_profiles[(gradient_profiles["moment"] == moment) & (gradient_profiles["group"] == group)]
                    ax.plot(curve["t"], curve["norm"], linewidth=1.4, label=legend[moment == "final"], **style)
                ax.set_title(wrap(groups[group], chars), fontsize=MIN_FONT_PT)
            drawing.legend(figure, panels[0].get_legend_handles_labels()[0], drawing.legend_plan(legend, layout, False))
        ncols = min(len(panels), layout.small_columns if small else layout.columns)
        for index, ax in enumerate(panels):
            ax.set_yscale("log")
            if limits:
                ax.set_ylim(*limits)
            if index >= len(panels) - ncols:
                ax.set_xlabel("time step t")
            if index % ncols == 0:
                ax.set_ylabel("‖∂L/∂h_t‖")
            drawing.tidy_ticks(ax, drawing.panel_width(layout, ncols))
        return figure

    png.render(out, f"grad_flow_through_time{suffix}", draw)
    return Figure(f"grad_flow_through_time{suffix}", "Gradient flow through time",
                  "See the glossary: gradient flow. Log scale, one range for every panel."
                  + (" One panel per arm." if small else "")
                  + (f" {note}" if note else ""), study)
