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

from normbench.analysis import aggregate, multiplicity, rules, sequential, speed
from normbench.records import study_plan
from normbench.report import answers, figures, provenance, sections, study_figures, synthesis, tables
from normbench.analysis.claims import SHIPPED, evaluate_claims, shown_status
from normbench.analysis.intervals import METHOD
from normbench.report.output import OutputError, ReportOutput, spreadsheet_safe
from normbench.records.reading import MAX_REPORT_RECORDS, Records, count_records, find_records, quiet_numerics
from normbench.report.render import write_report


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
    the claims are tested at (a sequential study's last look, normbench.studies.study); the claims' default otherwise.
    """
    with quiet_numerics():
        return _build_report(paths, out, alpha)


def _build_report(paths: Iterable[Path], out: Path | None, alpha: float | None) -> Path:
    paths = [Path(p) for p in paths]
    if not paths:
        raise ValueError("build_report needs at least one path")
    out = Path(out) if out is not None else paths[0]
    if count_records(paths) > MAX_REPORT_RECORDS:
        raise ReportError(f"more than {MAX_REPORT_RECORDS:,} run records under {', '.join(map(str, paths))[:300]}; "
                          f"a report reads at most {MAX_REPORT_RECORDS:,}: report one sweep or study at a time")
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
    # one level per study (analysis/rules.py): the one its sequential design spent, for every verdict
    designs = study_designs(paths, runs)
    levels = ({str(s): float(alpha) for s in runs["study"].unique()} if alpha is not None
              else {study: design.level for study, design in designs.items()})
    summary = aggregate.summarize_groups(runs, axes, levels)
    # a group's throughput is its paired timing (bench arms) where one lies beside its records
    summary, timing = speed.prefer_paired(summary, speed.paired_timing(runs))
    try:
        with ReportOutput(out) as output:
            _write(records, runs, copies, summary, axes, paths, out, output.staging, alpha, timing, designs)
            output.commit()
    except OutputError as error:
        raise OutputNotWritable(str(error)) from None
    except OSError as error:  # a full disk, a folder that turned read-only mid-way
        raise OutputNotWritable(f"cannot write the report to {out}: {error}") from None
    return out / "report.html"


def claims_frame(claims: list[tables.ClaimView]) -> pd.DataFrame:
    """One row per claim judged in a study (and one per claim no study could judge): its verdict, each
    part's verdict, the regime (the gates that held a part back, else "testable here") and the scale."""
    rows = []
    for c in claims:
        verdicts = [row[-1] for row in (c.parts.rows if c.parts else [])]
        gated = sorted({v.split(" — ")[0].removeprefix("not testable here: ") for v in verdicts
                        if v.startswith("not testable here")})
        regime = ("; ".join(gated) if gated else "not testable here" if c.status == "not testable here"
                  else "—" if c.status == "not applicable" else "testable here")
        rows.append({"claim": c.id, "study": c.study if c.status != "not applicable" else "", "verdict": c.status,
                     "parts": " | ".join(f"{i}: {v.split(' (leans ')[0]}" for i, v in enumerate(verdicts, 1)),
                     "regime": regime, "source": c.where or c.citation,
                     **{"effect": "", "effect_low": "", "effect_high": "", "effect_what": "", "seeds": "", "lr": "",
                        **c.figures, "scale": c.scale}})
    # verdict keeps the machine value (contradicted); the page prints it as "not reproduced at this scale"
    return pd.DataFrame(rows, columns=["claim", "study", "verdict", "parts", "regime", "effect", "effect_low",
                                       "effect_high", "effect_what", "seeds", "scale", "lr", "source"])


def _write(records: Records, runs: pd.DataFrame, copies: pd.DataFrame, summary: pd.DataFrame, axes: list[str],
           paths: list[Path], out: Path, staging: Path, alpha: float | None = None, timing: str = "",
           designs: dict | None = None) -> None:
    """Every report file into `staging`; paths shown in the report are relative to `out`, where they end up."""
    spreadsheet_safe(runs).to_csv(staging / "runs.csv", index=False)
    if importlib.util.find_spec("pyarrow") is not None:  # the same table with its types kept
        _parquet_ready(runs).to_parquet(staging / "runs.parquet", index=False)
    spreadsheet_safe(summary).to_csv(staging / "summary.csv", index=False)
    judged = _claims(runs, paths, alpha, designs if alpha is None else None)  # (claim, verdict) pairs
    context = {
        "title": "normbench report",
        "generated": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "inputs": [str(p) for p in paths],
        "method": METHOD,
        "timing_noisy": f"{aggregate.TIMING_NOISY:g}",
        "what_was_run": provenance.what_was_run(records, runs, copies, axes, out),
        "bn_gaps": tables.bn_gap_table(summary),
        "timing": timing,  # which step time the throughput figures show (paired or per-run)
        **study_figures.figure_sections(records, runs, summary, axes, staging, timing),
        **study_figures.tuning_sections(runs, summary, axes, staging),
        "divergences": tables.divergence_table(runs, axes, out),
        "claims": [tables.claim_view(c, v, aggregate.study_titles(runs)) for c, v in judged],
    }
    # beside the claims line: multiplicity across the claims, and what differs from the papers (analysis/multiplicity.py)
    context["claims_multiplicity"] = multiplicity.claims_line(judged, alpha if alpha is not None else rules.ALPHA)
    context["external_validity"] = multiplicity.external_validity(judged)
    context["claim_counts"] = pd.Series([shown_status(c.status) for c in context["claims"]]).value_counts().to_dict()
    spreadsheet_safe(claims_frame(context["claims"])).to_csv(staging / "claims.csv", index=False)
    # The first screen lists the claims the runs address; those they cannot are counted, not listed.
    context["claims_addressed"] = [c for c in context["claims"] if c.status != "not applicable"]
    context["answer"] = _answer_section(runs, summary, axes, staging, timing, designs or {})
    # Sections with nothing to show are left out, from the contents too.
    context["show_lr"] = bool(context["lr_sensitivity"]["figures"] or context["lr_sensitivity"]["table"]
                              or context["tuned"]["boards"])
    context["show_profiles"] = bool(context["performance_profiles"]["figures"] or context["performance_profiles"]["table"])
    runner = _runner_commands(paths, runs)
    context["staging"] = staging  # where the figures are, for their weight on the page
    context["reproduce"] = provenance.reproduce(records, runs, paths, out, staging, runner)
    context.update(_by_study(runs, summary, axes, context, out, runner))
    write_report(context, staging)


def _runner_commands(paths: list[Path], runs: pd.DataFrame) -> dict[str, str]:
    """Study id -> the normbench.studies.study command its plan file (the one study_designs applies) describes."""
    plans = sequential_levels(paths, say=False)
    commands = {}
    for study, run_dir in (runs.groupby("study")["run_dir"].first().items() if plans and not runs.empty else []):
        here = Path(str(run_dir)).resolve()
        plan = next((p for p in plans if p.study == str(study) and (p.folder == here or p.folder in here.parents)),
                    None)
        command = sections.study_runner_command(plan.data) if plan is not None and isinstance(plan.data, dict) else ""
        if command:
            commands[str(study)] = command
    return commands


def _by_study(runs: pd.DataFrame, summary: pd.DataFrame, axes: list[str], context: dict, out: Path,
              runner: dict[str, str] | None = None) -> dict:
    """The page's study sections (sections.py), the synthesis over them, the legend's figure notes
    and the one memory table: from the pieces _write already computed."""
    studies = study_figures.studies_of(summary)
    drawn = [f for key in ("heatmaps", "curves", "gradients", "throughput") for f in context[key]["figures"]]
    drawn += context["answer"]["figures"]
    blocks = {b["study"]: b["tasks"] for b in context["answer"]["blocks"]}
    anchors: set[str] = set()
    out_sections = []
    for study in studies:
        mine = runs[runs["group"].isin(study.rows["group"])]
        name = str(study.rows["study_name"].iloc[0]) if "study_name" in study.rows else ""
        title = "runs without a study" if name in ("", aggregate.NO_STUDY) else name
        anchor = sections.anchor(title)
        while anchor in anchors:
            anchor += "-2"
        anchors.add(anchor)
        choices, conditions = sections.roles(mine)
        shown, left = sections.pick_figures([f for f in drawn if f.study == study.title])
        purpose = str(study.rows["study_purpose"].iloc[0] or "") if "study_purpose" in study.rows else ""
        out_sections.append(sections.StudySection(
            study.id, anchor, title, purpose, choices, conditions, blocks.get(study.id, []),
            tables.leaderboards(study.rows, axes), shown, left,
            [c for c in context["claims"] if c.study_id == study.id and c.status != "not applicable"],
            [runner[study.id]] if study.id in (runner or {}) else sections.reproduce_commands(mine)))
    staging = context["staging"]
    sections.fit_page(out_sections, lambda f: sum(
        (staging / path).stat().st_size * 4 // 3 for path in (f.relative_path, f.narrow_path) if (staging / path).is_file()))
    notes = sections.written_once(out_sections)
    lines = synthesis.synthesis(summary, runs, out_sections) if not summary.empty else []
    unjudged = [c for c in context["claims"] if c.status == "not applicable"]
    return {"studies": out_sections, "figure_notes": notes, "synthesis": synthesis.synthesis_table(lines),
            "recommend": synthesis.recommendation_table(lines),
            "memory": _memory_table(runs), "unjudged": unjudged,
            "gradient_table": context["gradients"]["table"],
            "glossary": [*context["reproduce"]["glossary"], *figures.GLOSSARY.items()],
            "make_sh": (out / "make.sh").is_file(), "legend_rules": LEGEND_RULES}


LEGEND_RULES = [
    ("Leaderboards", "one table per study and task: arms are compared only with the arms of their own study, "
                     "named by the settings the study varies; the setup they share is named above the table. Seeds = "
                     "distinct seeds; mean ± half-width of the 95% interval over the group's finished runs (\"n=1\" when "
                     "undefined) of final val (the last evaluation), test and, where room is left, best val (best of the "
                     "evaluations: it flatters); diverged = diverged runs / runs that trained; ⚠ beside samples/s: the "
                     f"run's timing p90/p10 exceeded {aggregate.TIMING_NOISY:g} (a busy machine); steps to target are "
                     "lower medians with runs that never reached it counted as infinite. A table wider than "
                     f"{tables.MAX_COLUMNS} columns is split, each part led by the arm."),
    ("Choices and conditions", "a study's choices are the settings a user picks (its arms); its conditions (task, "
                               "length, budget) change the problem, so arms are compared within a condition and the "
                               "answer is read across them, never as a ranking of conditions."),
    ("Claims", "a claim is judged within each study, never pooling two, and split into the parts it asserts, each "
               "tested on its own; it is supported only when every part is, contradicted when a part is shown false, "
               "inconclusive otherwise (or when an arm has fewer than 2 seeds), not applicable when the runs lack "
               "the arms it needs, and not testable here when its arms cannot differ in this setup (all at chance, all "
               "at the ceiling, still improving at the end, or differing in steps or data: the reason and what would "
               "make it testable are stated, never seeds to add). Every directional part is a one-sided test at α in "
               "each direction, so one (1 − 2α) interval decides both \"supported\" (wholly on the claimed side) and "
               "\"contradicted\" (wholly on the other); \"equal\", \"insensitive\" and \"does not depend\" parts are "
               "equivalence tests (TOST at α: the same interval inside ±δ, δ stated per claim and fixed before the "
               "data). A diverged run is never scored: divergence rates (Newcombe intervals) and the scores of "
               "finished runs are tested apart. Other settings are pooled only when both arms cover them equally, "
               "else compared within each level and combined. An inconclusive part says which way it leans, the "
               "smallest effect its design could detect and the seeds per arm that would decide it."),
]


def _memory_table(runs: pd.DataFrame) -> tables.Table | None:
    """One table of peak memory for every study's arms (figures.memory_table)."""
    frame = figures.memory_table(runs)
    if frame.empty:
        return None
    columns = [str(c) for c in frame.columns]
    rows = [[tables.number(v) if isinstance(v, float) else str(v) for v in row]
            for row in frame.itertuples(index=False, name=None)]
    note = f"First {tables.MAX_ROWS} of {len(rows)} arms; all are in summary.csv." if len(rows) > tables.MAX_ROWS else ""
    rows = rows[:tables.MAX_ROWS]
    return tables.Table(columns, rows, note, wrap=tuple(c for c in columns if c in ("study", "arm")),
                        keep=tuple(c for c in columns if c == "arm"), lead=min(3, len(columns)))


def sequential_levels(paths: list[Path], say: bool = True) -> list[study_plan.Level]:
    """The sequential.json files (normbench.studies.study) under ``paths`` that apply, each to its own study's
    records; the others (another schema, no study id, a planted file) are named in one line on stderr."""
    plans, ignored = study_plan.levels(paths)
    if ignored and say:
        more = f" (and {len(ignored) - 1} more)" if len(ignored) > 1 else ""
        print(f"normbench report: ignored {len(ignored)} sequential plan file(s): {ignored[0][:300]}{more}",
              file=sys.stderr)
    return plans


def study_designs(paths: list[Path], runs: pd.DataFrame, say: bool = True) -> dict[str, sequential.Design]:
    """Study id -> its sequential design: the plan file of that study (study_plan: its id, its schema,
    read by the one reader) whose folder holds the study's runs. The one source of a study's level."""
    plans = sequential_levels(paths, say)
    if not plans or runs.empty:
        return {}
    designs = {}
    for study, run_dir in runs.groupby("study")["run_dir"].first().items():
        here = Path(str(run_dir)).resolve()
        plan = next((p for p in plans if p.study == str(study) and (p.folder == here or p.folder in here.parents)),
                    None)
        design = sequential.read_design(plan.data) if plan is not None else None
        if design is not None:
            designs[str(study)] = design
    return designs


def _claims(runs: pd.DataFrame, paths: list[Path], alpha: float | None, designs: dict | None = None) -> list:
    """The claims, each study's at the level its sequential plan reached (its last look), the others at
    ``alpha`` (or the claims' default): a study that peeked may not test its final data at the full α."""
    if alpha is None and designs is None:
        designs = study_designs(paths, runs)
    if alpha is not None or not designs:
        return evaluate_claims(runs, **({} if alpha is None else {"alpha": alpha}))

    study_level = {study: design.level for study, design in designs.items()}
    verdicts = []
    for level, mine in runs.groupby(runs["study"].astype(str).map(study_level).fillna(-1.0), sort=False):
        verdicts += evaluate_claims(mine, **({} if level < 0 else {"alpha": float(level)}))
    # one "not applicable" per claim that applies in no study
    decided = {c.id for c, v in verdicts if v.status != "not applicable"}
    seen, kept = set(), []
    for c, v in verdicts:
        if v.status == "not applicable":
            if c.id in decided or c.id in seen:
                continue
            seen.add(c.id)
        kept.append((c, v))
    position = {c.id: i for i, c in enumerate(SHIPPED)}
    return sorted(kept, key=lambda cv: position.get(cv[0].id, len(position)))


def _answer_section(runs: pd.DataFrame, summary: pd.DataFrame, axes: list[str], staging: Path,
                    timing: str = "", designs: dict | None = None) -> dict:
    """The first section: per task the ★ set in sentences, and the metric-against-speed figure."""
    if summary.empty:
        return {"tasks": [], "blocks": [], "figures": [], "rule": tables.RANKING_RULE, "note": ""}
    note, every_run = "", runs  # the selection runs still name a tuned study's lr grid and choices
    if "axes.role" in runs and (runs["axes.role"] == "evaluation").any():
        # A tuned study: selection runs chose each arm's lr, so their scores flatter it; its answer
        # rests on the evaluation runs alone (the tuned comparison ranks them on the test metric). Other studies stay.
        tuned = runs.loc[runs["axes.role"] == "evaluation", "study"].unique()
        runs = runs[~runs["study"].isin(tuned) | (runs["axes.role"] == "evaluation")]
        summary = summary[summary["group"].isin(runs["group"])]
        note = ("Tuned study: answered from the evaluation runs only (each arm at the lr chosen on the "
                "selection runs, fresh seeds); the tuned comparison below ranks them on the test metric.")
    metrics = study_figures.task_metrics(summary)
    tasks = answers.answers(runs, summary, axes, designs, every_run)  # per study and task, in summary order
    blocks, start = [], 0
    for study in study_figures.studies_of(summary):
        count = study.rows["comparison" if "comparison" in study.rows else "task"].nunique()  # one answer each
        figure = figures.tradeoff(study.rows.assign(label=study.rows["arm"].astype(str)), metrics, staging,
                                  f"tradeoff{study.suffix}", study.title)
        if figure is not None and timing:  # which step time the x axis shows (paired or per-run)
            figure = dataclasses.replace(figure, caption=f"{figure.caption} {timing}")
        blocks.append({"study": study.id, "tasks": tasks[start:start + count], "figure": figure})
        start += count
    return {"tasks": tasks, "blocks": blocks, "figures": [b["figure"] for b in blocks if b["figure"]],
            "rule": tables.RANKING_RULE, "note": note}


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
