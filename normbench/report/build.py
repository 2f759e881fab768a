"""records -> frames -> CSVs, figures, claims -> report.md and report.html. The whole pipeline.

Each stage reads only what the previous one produced; build_report is the single entry point,
used by `python -m normbench.report` and by the runner at the end of a multirun. It replaces only
files an earlier report wrote and left unchanged, and deletes nothing else (see output.py).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable

import pandas as pd

from normbench.report import aggregate, answers, figures, profiles, speed, tables, tuning
from normbench.report.claims import evaluate_claims
from normbench.report.intervals import METHOD
from normbench.report.output import OutputError, ReportOutput, spreadsheet_safe
from normbench.report.records import Records, find_records, quiet_numerics, read_curves
from normbench.report.render import write_report

CURVE_GROUPS = 12  # most groups drawn in the curve figures
BAR_GROUPS = 12  # most groups of each task drawn in the throughput and memory bars


class ReportError(Exception):
    """The report cannot be built; the message is one line. Callers print it instead of a traceback."""


class NoUsableRecords(ReportError):
    """Nothing under the given paths can be reported on."""


class OutputNotWritable(ReportError):
    """`out` cannot take the report: not a folder, not writable, or a file there is not the report's own."""


def build_report(paths: Iterable[Path], out: Path | None = None, alpha: float | None = None) -> Path:
    """Writes the report for the run records under `paths` into `out`; returns report.html's path.

    `out` defaults to the first path. Unreadable, foreign and incomplete records are named in one
    warning line on stderr and in the report; they never stop it. Raises NoUsableRecords when no
    record is left, and OutputNotWritable, before anything in `out` is replaced, when `out` cannot
    take the report or holds a file of that name that no earlier report wrote. ``alpha``: the level
    the claims are tested at (a sequential study's last look, normbench.study); the claims' default otherwise.
    """
    with quiet_numerics():
        return _build_report(paths, out, alpha)


def _build_report(paths: Iterable[Path], out: Path | None, alpha: float | None) -> Path:
    paths = [Path(p) for p in paths]
    if not paths:
        raise ValueError("build_report needs at least one path")
    out = Path(out) if out is not None else paths[0]
    records = find_records(paths)
    runs, copies = aggregate.distinct_runs(aggregate.runs_frame(records.runs))
    if not (runs["status"] != "incomplete").any():
        where = ", ".join(str(p) for p in paths)
        aside = len(records.set_aside) + len(runs) + len(records.missing_paths)
        raise NoUsableRecords(f"no usable run records under {where} ({aside} unreadable, foreign, "
                              f"incomplete or missing)")
    _warn_set_aside(records, runs)

    axes = aggregate.varying_axes(runs)
    runs = aggregate.label_groups(runs, axes)
    summary = aggregate.summarize_groups(runs, axes)
    # a group's throughput is its paired timing (bench arms) where one lies beside its records
    summary, timing = speed.prefer_paired(summary, speed.paired_timing(runs))
    try:
        with ReportOutput(out) as output:
            _write(records, runs, copies, summary, axes, paths, out, output.staging, alpha, timing)
            output.commit()
    except OutputError as error:
        raise OutputNotWritable(str(error)) from None
    except OSError as error:  # a full disk, a folder that turned read-only mid-way
        raise OutputNotWritable(f"cannot write the report to {out}: {error}") from None
    return out / "report.html"


def _write(records: Records, runs: pd.DataFrame, copies: pd.DataFrame, summary: pd.DataFrame, axes: list[str],
           paths: list[Path], out: Path, staging: Path, alpha: float | None = None, timing: str = "") -> None:
    """Every report file into `staging`; paths shown in the report are relative to `out`, where they end up."""
    spreadsheet_safe(runs).to_csv(staging / "runs.csv", index=False)
    if importlib.util.find_spec("pyarrow") is not None:  # the same table with its types kept
        _parquet_ready(runs).to_parquet(staging / "runs.parquet", index=False)
    spreadsheet_safe(summary).to_csv(staging / "summary.csv", index=False)
    context = {
        "title": "normbench report",
        "generated": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "inputs": [str(p) for p in paths],
        "method": METHOD,
        "timing_noisy": f"{aggregate.TIMING_NOISY:g}",
        "what_was_run": _what_was_run(records, runs, copies, axes, out),
        "leaderboards": tables.leaderboards(summary, axes),
        "timing": timing,  # which step time the throughput figures show (paired or per-run)
        **_figure_sections(records, runs, summary, axes, staging, timing),
        **_tuning_sections(runs, summary, axes, staging),
        "divergences": tables.divergence_table(runs, axes, out),
        "claims": [tables.claim_view(c, v, aggregate.study_titles(runs))
                   for c, v in evaluate_claims(runs, **({} if alpha is None else {"alpha": alpha}))],
    }
    context["claim_counts"] = pd.Series([c.status for c in context["claims"]]).value_counts().to_dict()
    # The first screen lists the claims the runs address; those they cannot are counted, not listed.
    context["claims_addressed"] = [c for c in context["claims"] if c.status != "not applicable"]
    context["answer"] = _answer_section(runs, summary, axes, staging, timing)
    write_report(context, staging)


def _answer_section(runs: pd.DataFrame, summary: pd.DataFrame, axes: list[str], staging: Path,
                    timing: str = "") -> dict:
    """The first section: per task the ★ set in sentences, and the metric-against-speed figure."""
    if summary.empty:
        return {"tasks": [], "figure": None, "rule": tables.RANKING_RULE, "note": ""}
    note = ""
    if "axes.role" in runs and (runs["axes.role"] == "evaluation").any():
        # A tuned study: selection runs chose each arm's lr, so their scores flatter it; the answer
        # rests on the evaluation runs alone (section 9 ranks them on the test metric).
        runs = runs[runs["axes.role"] == "evaluation"]
        summary = summary[summary["group"].isin(runs["group"])]
        note = ("Tuned study: answered from the evaluation runs only (each arm at the lr chosen on the "
                "selection runs, fresh seeds); section 9 ranks them on the test metric.")
    labelled = _with_task_labels(summary, axes)
    metrics = {str(t): (str(m), bool(h)) for t, m, h in
               summary[["task", "metric", "higher_is_better"]].drop_duplicates("task").itertuples(index=False)}
    figure = figures.tradeoff(labelled, metrics, staging)
    if figure is not None and timing:
        figure = dataclasses.replace(figure, caption=f"{figure.caption} {timing}")
    return {"tasks": answers.answers(runs, summary, axes), "figure": figure, "rule": tables.RANKING_RULE,
            "note": note}


def _with_task_labels(summary: pd.DataFrame, axes: list[str]) -> pd.DataFrame:
    """summary plus `label`: each group named by the settings that differ within its own task."""
    labels: dict[str, str] = {}
    for _, rows in summary.groupby("task", sort=False):
        labels.update(aggregate.legend_labels(rows, rows["group"].tolist(), axes))
    return summary.assign(label=summary["group"].map(labels))


def _parquet_ready(runs: pd.DataFrame) -> pd.DataFrame:
    """Columns that mix Python types (an axis that is a number in one run, text in another) as text;
    missing stays missing. Every other column keeps its type."""
    def mixed(column: pd.Series) -> bool:
        return column.dtype == object and column.dropna().map(type).nunique() > 1
    return runs.assign(**{c: runs[c].map(lambda v: v if pd.isna(v) else str(v)) for c in runs.columns if mixed(runs[c])})


def _warn_set_aside(records: Records, runs: pd.DataFrame) -> None:
    aside = [f"{p} (missing)" for p in records.missing_paths]
    aside += [f"{r.path} ({r.why})" for r in records.set_aside]
    aside += [f"{d} (incomplete: status running)" for d in runs.loc[runs["status"] == "incomplete", "run_dir"]]
    if aside:
        print(f"normbench.report: warning: set aside {len(aside)} record(s): {'; '.join(aside)}",
              file=sys.stderr)


def _what_was_run(records: Records, runs: pd.DataFrame, copies: pd.DataFrame, axes: list[str], out: Path) -> dict:
    finished = runs[runs["status"] != "incomplete"]
    varying = tables.Table(["axis", "values"], [
        [a.removeprefix("axes."), ", ".join(aggregate.format_value(v)
                                            for v in aggregate.sorted_values(finished[a]))]
        for a in axes], wrap=("values",))
    fixed = tables.Table(["setting", "value"], [[k, aggregate.format_value(v)]
                                                for k, v in aggregate.fixed_settings(runs).items()])
    task_rows = []
    for task, mine in finished.groupby("task.name", sort=True):
        first = mine.iloc[0]
        task_rows.append([str(task), aggregate.format_value(first.get("task.metric")),
                          "higher is better" if first["task.higher_is_better"] else "lower is better",
                          aggregate.format_value(first.get("task.target")),
                          aggregate.format_value(first.get("task.chance")), str(len(mine))])
    return {
        "n_records": len(runs),
        "n_trained": tables.trained_count(runs),
        "varying": varying,
        "fixed": fixed,
        "tasks": tables.Table(["task", "metric", "direction", "target", "chance", "runs"], task_rows),
        "statuses": tables.status_table(runs),
        "unfinished": tables.unfinished_table(runs, axes, out),
        "unfinished_reasons": tables.unfinished_reasons(runs),
        "set_aside": [f"{aggregate.display_path(r.path, out)}: {r.why}" for r in records.set_aside]
                     + [f"{p}: path does not exist" for p in records.missing_paths],
        "copies": [f"{aggregate.display_path(c.run_dir, out)}: "
                   f"{'a rerun' if isinstance(c.rerun_of, str) else 'another record'} of the run in "
                   f"{aggregate.display_path(c.copy_of, out)} (same config and seed), not counted again"
                   for c in copies.itertuples()],
        "environment": tables.environment_table(finished),
        "dates": tables.date_range(runs),
    }


def _figure_sections(records: Records, runs: pd.DataFrame, summary: pd.DataFrame, axes: list[str],
                     staging: Path, timing: str = "") -> dict:
    metrics = ({} if summary.empty else
               {str(t): (str(m), bool(h)) for t, m, h in
                summary[["task", "metric", "higher_is_better"]].drop_duplicates("task").itertuples(index=False)})
    return {"heatmaps": _heatmap_section(runs, summary, axes, metrics, staging),
            **_curve_sections(records, runs, summary, axes, metrics, staging),
            "throughput": _throughput_section(summary, axes, staging, timing)}


def _heatmap_section(runs: pd.DataFrame, summary: pd.DataFrame, axes: list[str], metrics: dict,
                     staging: Path) -> dict:
    """Heatmaps over the two main axes, one panel per task."""
    grid_axes = aggregate.main_axes(runs, axes)
    if len(grid_axes) < 2 or summary.empty:
        varying = ", ".join(a.removeprefix("axes.") for a in axes if a != "axes.task") or "none"
        return {"figures": [], "skipped": f"Fewer than 2 axes vary (varying: {varying}), "
                                          f"so there is no grid to draw."}
    row, col = grid_axes
    trained = runs[runs["status"].isin(aggregate.TRAINED)]
    grids = {str(t): aggregate.axis_grid(mine, row, col) for t, mine in trained.groupby("task.name", sort=True)}
    others = [a.removeprefix("axes.") for a in axes if a not in (row, col, "axes.task")]
    note = (f"Rows: {row.removeprefix('axes.')}; columns: {col.removeprefix('axes.')}. Each cell pools "
            f"its runs over seeds" + (f" and over {', '.join(others)}." if others else ".")
            + " Empty cells: no run (or no ok run) there.")
    return {"figures": figures.heatmaps(grids, row, col, metrics, staging, note), "skipped": ""}


def _curve_sections(records: Records, runs: pd.DataFrame, summary: pd.DataFrame, axes: list[str], metrics: dict,
                    staging: Path) -> dict:
    """Learning and gradient-norm curves of the best groups, gradient flow through time, the gradient table."""
    # The best groups only, so the figure count and the metrics.jsonl reading stay bounded.
    groups = aggregate.plotted_groups(summary, CURVE_GROUPS)
    labels = aggregate.legend_labels(summary, groups, axes)
    shown = runs[runs["group"].isin(groups) & runs["status"].isin(aggregate.TRAINED)]
    note = _shown_note(len(groups), len(summary))
    curves = read_curves(shown["run_dir"])
    eval_bands = aggregate.curve_bands(curves, shown, "eval", "val_metric")
    grad_bands = aggregate.curve_bands(curves, shown, "train", "grad_norm", log=True)
    learning = {"figures": figures.learning_curves(eval_bands, labels, metrics, staging, note),
                "skipped": "" if not eval_bands.empty else "No eval lines in the runs' metrics.jsonl."}
    grad_norm = figures.grad_norm_curves(grad_bands, labels, staging, note)
    flow = _gradient_flow_figure(records, runs, summary, axes, staging)
    gradients = {
        "figures": [f for f in (grad_norm, flow) if f is not None],
        "skipped": " ".join(s for s in (
            "" if grad_norm else "No train lines with grad_norm in the runs' metrics.jsonl.",
            "" if flow else "No recurrent runs with grad_time profiles, so no gradient flow through time.")
            if s),
        "table": tables.gradient_table(summary, axes) if not summary.empty else None,
    }
    return {"curves": learning, "gradients": gradients}


def _gradient_flow_figure(records: Records, runs: pd.DataFrame, summary: pd.DataFrame, axes: list[str],
                          staging: Path):
    """Flow through time exists for recurrent groups only; they get their own pick of the best."""
    recurrent = summary[summary["grad_time_ratio_init_mean"].notna()] if not summary.empty else summary
    flow_groups = aggregate.plotted_groups(recurrent, CURVE_GROUPS)
    flow_runs = runs[runs["group"].isin(flow_groups) & runs["status"].isin(aggregate.TRAINED)]
    profiles = aggregate.grad_time_profiles(records.runs, flow_runs)
    return figures.grad_flow(profiles, aggregate.legend_labels(summary, flow_groups, axes), staging,
                             _shown_note(len(flow_groups), len(recurrent), "recurrent "))


def _throughput_section(summary: pd.DataFrame, axes: list[str], staging: Path, timing: str = "") -> dict:
    """Speed and memory bars. Every task gets its own panel: its first groups in leaderboard order (★ groups lead)."""
    bars = _with_task_labels(summary, axes).groupby("task", sort=False).head(BAR_GROUPS)
    bars = bars.assign(noisy=(bars["timing_noise_median"] > aggregate.TIMING_NOISY)
                       | (bars["samples_per_s_spread"] > aggregate.TIMING_NOISY)) if not bars.empty else bars
    cut = summary.groupby("task").size().gt(BAR_GROUPS).any() if not summary.empty else False
    bar_note = (f"At most {BAR_GROUPS} groups per task, in leaderboard order; all are in summary.csv." if cut
                else "Groups in leaderboard order.")
    speed_note = bar_note + (f" {timing}" if timing else "")
    speed = figures.throughput(bars, staging, speed_note, aggregate.TIMING_NOISY) if not bars.empty else None
    memory = figures.peak_memory(bars, staging, bar_note) if not bars.empty else None
    return {"figures": [f for f in (speed, memory) if f is not None], "timing": timing,
            "skipped": "" if speed or memory else "No run recorded throughput or memory."}


def _shown_note(shown: int, total: int, kind: str = "") -> str:
    if shown >= total:
        return ""
    return (f"Showing {shown} of {total} {kind}groups (the best of each task by the primary metric); "
            f"all are in summary.csv.")


def _tuning_sections(runs: pd.DataFrame, summary: pd.DataFrame, axes: list[str], staging: Path) -> dict:
    """Learning-rate sensitivity, the tuned comparison and performance profiles (tuning.py, profiles.py)."""
    metrics = ({} if summary.empty else
               {str(t): (str(m), bool(h)) for t, m, h in
                summary[["task", "metric", "higher_is_better"]].drop_duplicates("task").itertuples(index=False)})
    points, arms = tuning.sensitivity(runs)
    if arms.empty:
        lr = {"figures": [], "table": None, "tolerance": tuning.TOLERANCE_TEXT,
              "skipped": "No arm was run at 2 or more learning rates."}
    else:
        note = ("One line per arm (every setting but lr and seed). Point: mean final validation metric of the "
                "finished runs; bar: 95% t-interval, clipped to the metric's range; ★: the arm's best lr (ranking rule, diverged runs ranked "
                "worst). Triangles at the bottom: diverged runs at that lr (count / runs), never dropped.")
        figure = figures.lr_sensitivity(points, arms, metrics, staging, note)
        lr = {"figures": [figure] if figure else [], "table": tables.sensitivity_table(arms, points),
              "tolerance": tuning.TOLERANCE_TEXT, "skipped": ""}
    boards = tuning.tuned_leaderboards(runs)
    has_selection = "axes.role" in runs and (runs["axes.role"] == tuning.SELECTION).any()
    tuned = {"boards": tables.tuned_leaderboard_tables(boards),
             "skipped": "" if boards else (
                 "Selection runs but no evaluation runs: `python -m normbench.tune` runs both stages."
                 if has_selection else "No tuned study (no runs with role selection and evaluation).")}
    evaluated = bool(boards)
    table, used = profiles.arm_table(summary, axes, tuned=evaluated)
    profile = {"figures": [], "table": None, "used": used, "skipped": ""}
    if table.empty or len(table.index) < 2:
        profile["skipped"] = (f"Performance profiles need at least 2 tasks; the runs have "
                              f"{0 if table.empty else len(table.index)} ({used}).")
    else:
        ratios, rows, left_out = profiles.performance_profiles(table)
        if len(ratios.index) < 2:
            profile["skipped"] = f"Fewer than 2 tasks on which every arm ran (left out: {', '.join(left_out)})."
        else:
            note = (f"From {used}: steps to target, the group's lower median with not reached = ∞; "
                    f"{len(ratios.index)} tasks" + (f" (left out, not run by every arm: {', '.join(left_out)})"
                                                    if left_out else "")
                    + ". Steps only: the runs were not timed side by side, so seconds would measure the "
                      "machine's load as much as the arm.")
            figure = figures.performance_profile(ratios, profiles.AREA_TAU, staging, note)
            profile.update(figures=[figure] if figure else [], table=tables.profile_table(rows, profiles.TAUS))
    return {"lr_sensitivity": lr, "tuned": tuned, "performance_profiles": profile}
