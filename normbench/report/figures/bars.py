"""Bars per arm: throughput (hatched where the timing was noisy) and peak GPU memory, and the
report's one table of peak memory (memory_table)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure as MplFigure

from normbench.records import metrics as metric_table
from normbench.report.figures import drawing, png
from normbench.report.figures.drawing import PALETTE, WIDE, Figure, Layout, text, wrap


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
    log_x = drawing.spans_decades(values)
    flags = (rows["noisy"].fillna(False).astype(bool) if flag_noise and "noisy" in rows
             else pd.Series(False, index=rows.index))

    def draw(layout: Layout) -> MplFigure:
        chars = 44 if layout is WIDE else 26

        def label_of(label: object, noisy: bool) -> str:
            return wrap(label, chars) + ("\n(noisy timing)" if noisy else "")

        lines = pd.Series([label_of(lab, n).count("\n") + 1 for lab, n in zip(rows["label"], flags)], index=rows.index)
        heights = [0.2 * lines[rows["task"] == t].clip(lower=2).sum() + 1.2 for t in tasks]
        figure = MplFigure(figsize=(layout.width, sum(heights) + 0.4), dpi=drawing.DPI, layout="constrained")
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
            drawing.tidy_ticks(ax, layout.width * 0.55)
        panels[-1].set_xlabel(wrap(xlabel, 60 if layout is WIDE else 40))
        return figure

    png.render(out, name, draw)
    return Figure(name, title, caption, study)


def throughput(bars: pd.DataFrame, out: Path, note: str, noisy_limit: float, suffix: str = "",
               study: str = "") -> Figure | None:
    """Samples per second per arm, one panel per task; labelled unpaired unless every bar is a paired timing."""
    unit = metric_table.metric("samples_per_s").unit
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
    values = values[drawing.plottable(values, True)]
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
    column = metric_table.path("peak_memory_mb")
    kind = metric_table.path("memory_kind")
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
