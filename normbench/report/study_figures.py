"""The report's figures, study by study: each study's heatmaps, curves, gradient figures,
throughput and memory bars, and the learning-rate, tuned-comparison and performance-profile
sections, with what was left out and why. Arms are compared only within their own study."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from normbench.analysis.result import AREA_TAU, NO_STUDY, TAUS, TOLERANCE_TEXT, StudyResult
from normbench.records.metrics import TIMING_NOISY
from normbench.records.values import format_value
from normbench.report import figures, tables

CURVE_GROUPS = 12  # most groups drawn in the curve figures
BAR_GROUPS = 12  # most groups of each task drawn in the throughput and memory bars


def figure_sections(result: StudyResult, staging: Path) -> dict:
    """Heatmaps, curves, gradients and bars: one set of figures per study (arms compared only there)."""
    metrics = task_metrics(result.summary)
    studies = studies_of(result.summary)
    return {"heatmaps": _heatmap_section(result, studies, metrics, staging),
            **_curve_sections(result, studies, metrics, staging),
            "throughput": _throughput_section(studies, staging, result.timing)}


@dataclass(frozen=True)
class Study:
    """One study's rows of summary.csv, as its figures see them."""

    id: str
    title: str  # the heading its figures are shown under ("" when the report holds one study)
    suffix: str  # of its figure files: "" for the first, "-2", "-3" ... after it
    rows: pd.DataFrame

    @property
    def labels(self) -> dict[str, str]:
        """group -> its arm: the study's arm settings only (the study is the heading)."""
        return dict(zip(self.rows["group"], self.rows["arm"].astype(str)))


def studies_of(summary: pd.DataFrame) -> list[Study]:
    if summary.empty:
        return []
    key = "study" if "study" in summary else None
    ids = list(dict.fromkeys(summary[key])) if key else [""]
    studies = []
    for index, sid in enumerate(ids):
        rows = summary[summary[key] == sid] if key else summary
        name = str(rows["study_name"].iloc[0]) if "study_name" in rows else ""
        title = "" if len(ids) == 1 else ("runs without a study" if name == NO_STUDY else f"Study {name}")
        studies.append(Study(str(sid), title, "" if index == 0 else f"-{index + 1}", rows))
    return studies


def task_metrics(summary: pd.DataFrame) -> dict[str, tuple[str, bool]]:
    return ({} if summary.empty else
            {str(t): (str(m), bool(h)) for t, m, h in
             summary[["task", "metric", "higher_is_better"]].drop_duplicates("task").itertuples(index=False)})


MAX_FACETS = 6  # heatmap panels per task beyond which a study's grid is left to its leaderboard


def _heatmap_section(result: StudyResult, studies: list["Study"], metrics: dict, staging: Path) -> dict:
    """Per study, heatmaps over its two main arm settings, one panel per task; further arm settings
    get a panel per value (never pooled), up to MAX_FACETS per task. Cells pool seeds only (StudyResult.heatmap)."""
    figures_out, skipped = [], []
    for study in studies:
        grid = result.heatmap(study.rows["group"], MAX_FACETS)
        varying, row, col, rest = grid.varying, grid.row, grid.col, grid.rest
        named = f"{study.title}: " if study.title else ""
        if len(varying) < 2:
            shown = ", ".join(a.removeprefix("axes.") for a in varying) or "none"
            skipped.append(f"{named}Fewer than 2 axes vary (varying: {shown}), so there is no grid to draw.")
            continue
        if grid.panels is None:
            skipped.append(f"{named}{len(varying)} settings vary ({', '.join(a.removeprefix('axes.') for a in varying)}); "
                           f"a grid over two of them would pool the others, so see its leaderboard instead.")
            continue
        panels = []
        for task, combo, cells in grid.panels:
            fixed = ", ".join(f"{a.removeprefix('axes.')}={format_value(v)}" for a, v in combo.items())
            heading = " · ".join(p for p in (f"task {task}" if study.rows["task"].nunique() > 1 else "", fixed) if p)
            panels.append(figures.HeatmapPanel(str(task), heading, cells))
        note = (f"Rows: {row.removeprefix('axes.')}; columns: {col.removeprefix('axes.')}."
                + (f" One panel per value of {', '.join(a.removeprefix('axes.') for a in rest)}." if rest else "")
                + " Each cell pools its runs over seeds only. Empty cells: no run (or no ok run) there.")
        figures_out += figures.heatmaps(panels, row, col, metrics, staging, note, study.suffix, study.title)
    return {"figures": figures_out, "skipped": " ".join(skipped)}


def _shared_cores(runs: pd.DataFrame, groups) -> bool:
    """Whether some of ``groups``' runs trained beside other jobs of their sweep (environment.parallel_jobs > 1):
    their training seconds then measure how the jobs shared the cores as much as the arm, so no curve is drawn
    against them (speed is compared by `bench arms`, paired and interleaved)."""
    column = "environment.parallel_jobs"
    if column not in runs:
        return False
    jobs = pd.to_numeric(runs.loc[runs["group"].isin(list(groups)), column], errors="coerce")
    return bool((jobs > 1).any())


def _curve_sections(result: StudyResult, studies: list["Study"], metrics: dict, staging: Path) -> dict:
    """Per study, training loss and validation curves and gradient norms of its best arms, gradient
    flow through time; the gradient table."""
    summary, axes = result.summary, result.axes
    chosen = {s.id: result.plotted_groups(s.rows, CURVE_GROUPS) for s in studies}
    bands = result.curve_bands(chosen)
    learning, gradient_figures = [], []
    for study in studies:
        groups = chosen[study.id]
        labels = {g: study.labels[g] for g in groups}
        note = _shown_note(len(groups), len(study.rows))
        eval_bands, loss_bands, grad_bands = bands[study.id]
        loss = figures.loss_curves(loss_bands, labels, staging, note, study.suffix, study.title)
        curves = figures.learning_curves(eval_bands, labels, metrics, staging, note, study.suffix, study.title)
        if _shared_cores(result.runs, groups):  # seconds of jobs that shared the cores are the machine's, not the arm's
            curves = [f for f in curves if not f.name.startswith("curves_val_vs_seconds")]
        learning += [f for f in (loss, *curves) if f is not None]
        grad_norm = figures.grad_norm_curves(grad_bands, labels, staging, note, study.suffix, study.title)
        flow = _gradient_flow_figure(result, study, staging)
        gradient_figures += [f for f in (grad_norm, flow) if f is not None]
    has_flow = any(f.name.startswith("grad_flow") for f in gradient_figures)
    has_norm = any(f.name.startswith("grad_norm") for f in gradient_figures)
    gradients = {
        "figures": gradient_figures,
        "skipped": " ".join(s for s in (
            "" if has_norm else "No train lines with grad_norm in the runs' metrics.jsonl.",
            "" if has_flow else "No recurrent runs with grad_time profiles, so no gradient flow through time.")
            if s),
        "table": tables.gradient_table(summary, axes) if not summary.empty else None,
    }
    return {"curves": {"figures": learning,
                       "skipped": "" if learning else "No train or eval lines in the runs' metrics.jsonl."},
            "gradients": gradients}


def _gradient_flow_figure(result: StudyResult, study: "Study", staging: Path):
    """Flow through time exists for recurrent groups only; they get their own pick of the best."""
    recurrent = study.rows[study.rows["grad_time_ratio_init_mean"].notna()]
    flow_groups = result.plotted_groups(recurrent, CURVE_GROUPS)
    if not flow_groups:
        return None
    gradient_profiles = result.grad_flow(flow_groups)
    return figures.grad_flow(gradient_profiles, {g: study.labels[g] for g in flow_groups}, staging,
                             _shown_note(len(flow_groups), len(recurrent), "recurrent "), study.suffix, study.title)


def _throughput_section(studies: list["Study"], staging: Path, timing: str = "") -> dict:
    """Speed and memory bars per study. Every task gets its own panel: its first arms in leaderboard order."""
    out = []
    for study in studies:
        rows = study.rows.assign(label=study.rows["arm"].astype(str))
        bars = rows.groupby("task", sort=False).head(BAR_GROUPS)
        bars = bars.assign(noisy=(bars["timing_noise_median"] > TIMING_NOISY)
                           | (bars["samples_per_s_spread"] > TIMING_NOISY))
        cut = rows.groupby("task").size().gt(BAR_GROUPS).any()
        note = (f"At most {BAR_GROUPS} arms per task, in leaderboard order; all are in summary.csv." if cut
                else "Arms in leaderboard order.")
        speed = figures.throughput(bars, staging, note + (f" {timing}" if timing else ""), TIMING_NOISY,
                                   study.suffix, study.title)
        memory = figures.peak_memory(bars, staging, note, study.suffix, study.title)
        out += [f for f in (speed, memory) if f is not None]
    return {"figures": out, "timing": timing, "skipped": "" if out else "No run recorded throughput or memory."}


def _shown_note(shown: int, total: int, kind: str = "") -> str:
    if shown >= total:
        return ""
    return (f"Showing {shown} of {total} {kind}arms (the best of each task in leaderboard order); "
            f"all are in summary.csv.")


def tuning_sections(result: StudyResult, staging: Path) -> dict:
    """Learning-rate sensitivity, the tuned comparison and performance profiles (StudyResult.tuning:
    analysis/tuning.py, performance_profiles.py)."""
    metrics = task_metrics(result.summary)
    tuned_result = result.tuning
    points, arms = tuned_result.points, tuned_result.arms
    if arms.empty:
        lr = {"figures": [], "table": None, "tolerance": TOLERANCE_TEXT + tuned_result.score_note,
              "skipped": "No arm was run at 2 or more learning rates."}
    else:
        note = ("One line per arm (every setting but lr and seed). Point: mean final validation metric of the "
                "finished runs; bar: 95% t-interval, clipped to the metric's range; ★: the arm's best lr (ranking rule, diverged runs ranked "
                "worst). Triangles at the bottom: diverged runs at that lr (count / runs), never dropped.")
        studies = result.runs["study"].nunique() if "study" in result.runs else 1
        # one figure across studies drew every study's arms on one axis (compare only within a study) and
        # was mostly legend: drawn where the runs are one study's, else the table alone says it
        figure = figures.lr_sensitivity(points, arms, metrics, staging, note) if studies <= 1 else None
        lr = {"figures": [figure] if figure else [], "table": tables.sensitivity_table(arms, points),
              "tolerance": TOLERANCE_TEXT + tuned_result.score_note,
              "skipped": "" if studies <= 1 else (f"No figure: these runs hold {studies} studies, whose arms are "
                                                  f"compared only within their study; the table lists each arm's "
                                                  f"learning rates.")}
    boards, has_selection = tuned_result.boards, tuned_result.has_selection
    tuned = {"boards": tables.tuned_leaderboard_tables(boards),
             "skipped": "" if boards else (
                 "Selection runs but no evaluation runs: `python -m normbench tune` runs both stages."
                 if has_selection else "No tuned study (no runs with role selection and evaluation).")}
    table, used = tuned_result.profile_table, tuned_result.profile_used
    profile = {"figures": [], "table": None, "used": used, "skipped": ""}
    if table.empty or len(table.index) < 2:
        profile["skipped"] = (f"Performance profiles need at least 2 tasks; the runs have "
                              f"{0 if table.empty else len(table.index)} ({used}).")
    else:
        ratios, rows, left_out = tuned_result.ratios, tuned_result.profile_rows, tuned_result.left_out
        if len(ratios.index) < 2:
            profile["skipped"] = f"Fewer than 2 tasks on which every arm ran (left out: {', '.join(left_out)})."
        else:
            note = (f"From {used}: steps to target, the group's lower median with not reached = ∞; "
                    f"{len(ratios.index)} tasks" + (f" (left out, not run by every arm: {', '.join(left_out)})"
                                                    if left_out else "")
                    + ". Steps only: the runs were not timed side by side, so seconds would measure the "
                      "machine's load as much as the arm.")
            figure = figures.performance_profile(ratios, AREA_TAU, staging, note)
            profile.update(figures=[figure] if figure else [], table=tables.profile_table(rows, TAUS))
    return {"lr_sensitivity": lr, "tuned": tuned, "performance_profiles": profile}
