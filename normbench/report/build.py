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

from normbench.analysis import result as study_result
from normbench.analysis.result import ALPHA, METHOD, NOT_APPLICABLE, StudyResult
from normbench.checks import one_line
from normbench.records.metrics import TIMING_NOISY
from normbench.records.published import PAIRED_TIMING, write_curves
from normbench.records.reading import (
    MAX_REPORT_RECORDS,
    Records,
    count_records,
    curves_kept,
    find_records,
    quiet_numerics,
)
from normbench.report import answers, figures, provenance, sections, study_figures, synthesis, tables
from normbench.report.figures import png
from normbench.report.output import OutputError, ReportOutput, spreadsheet_safe
from normbench.report.render import write_report


class ReportError(Exception):
    """The report cannot be built; the message is one line. Callers print it instead of a traceback."""


class NoUsableRecords(ReportError):
    """Nothing under the given paths can be reported on."""


class OutputNotWritable(ReportError):
    """`out` cannot take the report: not a folder, not writable, or a file there is not the report's own."""


def build_report(paths: Iterable[Path], out: Path | None = None, alpha: float | None = None,
                 jobs: int | None = None) -> Path:
    """Writes the report for the run records under `paths` into `out`; returns report.html's path.

    `out` defaults to the first path. Unreadable, foreign and incomplete records are named in one
    warning line on stderr and in the report; they never stop it. Raises NoUsableRecords when no
    record is left, and OutputNotWritable, before anything in `out` is replaced, when `out` cannot
    take the report or holds a file of that name that no earlier report wrote. ``alpha``: the level
    the claims are tested at (a sequential study's last look, normbench.studies.study); the claims' default otherwise.
    ``jobs``: processes the figures are drawn in, the report's own counted (png.in_parallel; default the cores
    this process may use, at most 4; 1 draws them in the report's process).
    """
    with quiet_numerics(), curves_kept():  # every curve parsed once in the build
        return _build_report(paths, out, alpha, jobs)


def _build_report(paths: Iterable[Path], out: Path | None, alpha: float | None, jobs: int | None) -> Path:
    paths = [Path(p) for p in paths]
    if not paths:
        raise ValueError("build_report needs at least one path")
    out = Path(out) if out is not None else paths[0]
    if count_records(paths) > MAX_REPORT_RECORDS:
        raise ReportError(f"more than {MAX_REPORT_RECORDS:,} run records under {', '.join(map(str, paths))[:300]}; "
                          f"a report reads at most {MAX_REPORT_RECORDS:,}: report one sweep or study at a time")
    records = find_records(paths)
    runs, copies = study_result.runs_of(records)
    if not (runs["status"] != "incomplete").any():
        where = ", ".join(str(p) for p in paths)
        aside = len(records.set_aside) + len(runs) + len(records.missing_paths)
        raise NoUsableRecords(f"no usable run records under {where} ({aside} unreadable, foreign, "
                              f"incomplete or missing)")
    # the analysis decides once (analysis/result.py); everything below renders what it decided
    result = study_result.build(records, runs, copies, paths, alpha)
    try:
        with ReportOutput(out) as output:
            with png.in_parallel(jobs):  # figures drawn while the report goes on
                _write(result, out, output.staging)
            output.commit()
    except OutputError as error:
        raise OutputNotWritable(str(error)) from None
    except OSError as error:  # a full disk, a folder that turned read-only mid-way
        raise OutputNotWritable(f"cannot write the report to {out}: {error}") from None
    _warn_set_aside(records, runs)  # of a report written; a refused one says the refusal alone (hostile h21 B6)
    return out / "report.html"


def claims_frame(claims: list[tables.ClaimView], not_run: dict[str, str] | None = None) -> pd.DataFrame:
    """One row per claim judged in a study (and one per claim no study could judge): its verdict in the page's
    words (tables.verdict_words; the machine value beside it as verdict_code, for programs), each part's
    verdict, the regime (the gates that held a part back, else "testable here"; for a claim not run here, why
    and where it can be run: ``not_run``, claim id -> that text) and the scale."""
    rows = []
    for c in claims:
        verdicts = [row[-1] for row in (c.parts.rows if c.parts else [])]
        gated = sorted({v.split(" — ")[0].removeprefix("not testable here: ") for v in verdicts
                        if v.startswith("not testable here")})
        unrun = c.status == NOT_APPLICABLE
        if unrun:
            regime = (not_run or {}).get(c.id) or tables.NOT_RUN
        else:
            regime = "; ".join(gated) if gated else "not testable here" if c.status == "not testable here" else "testable here"
        rows.append({"claim": c.id, "study": c.study if not unrun else "",
                     "verdict": c.shown or tables.verdict_words(c.status), "verdict_code": c.status,
                     "parts": " | ".join(f"{i}: {v.split(' (leans ')[0]}" for i, v in enumerate(verdicts, 1)),
                     "regime": regime, "source": c.where or c.citation,
                     **{"effect": "", "effect_low": "", "effect_high": "", "effect_what": "", "seeds": "", "lr": "",
                        **c.figures, "scale": c.scale}})
    return pd.DataFrame(rows, columns=["claim", "study", "verdict", "parts", "regime", "effect", "effect_low",
                                       "effect_high", "effect_what", "seeds", "scale", "lr", "source", "verdict_code"])


def _write(result: StudyResult, out: Path, staging: Path) -> None:
    """Every report file into `staging`; paths shown in the report are relative to `out`, where they end up."""
    records, runs, summary, axes = result.records, result.runs, result.summary, result.axes
    paths, timing = list(result.paths), result.timing
    spreadsheet_safe(runs).to_csv(staging / "runs.csv", index=False)
    if importlib.util.find_spec("pyarrow") is not None:  # the same table with its types kept
        _parquet_ready(runs).to_parquet(staging / "runs.parquet", index=False)
    spreadsheet_safe(summary).to_csv(staging / "summary.csv", index=False)
    # what the gates and verdicts read beyond one number per run, so a committed report can recompute them
    write_curves(spreadsheet_safe(result.published_curves()), staging)
    timed = result.published_timing()
    if not timed.empty:  # only where `bench arms` timed the arms
        spreadsheet_safe(timed).to_csv(staging / PAIRED_TIMING, index=False)
    context = {
        "title": "normbench report",
        "generated": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "inputs": [str(p) for p in paths],
        "method": METHOD,
        "timing_noisy": f"{TIMING_NOISY:g}",
        "what_was_run": provenance.what_was_run(result, out),
        "bn_gaps": tables.bn_gap_table(summary),
        "timing": timing,  # which step time the throughput figures show (paired or per-run)
        **study_figures.figure_sections(result, staging),
        **study_figures.tuning_sections(result, staging),
        "divergences": tables.divergence_table(runs, axes, out),
        "claims": _with_fdr([tables.claim_view(c, result.titles) for c in result.claims], result.not_kept,
                            result.alpha if result.alpha is not None else ALPHA),
    }
    # beside the claims line: multiplicity across the claims, and what differs from the papers (analysis/multiplicity.py)
    context["claims_multiplicity"] = result.claims_multiplicity
    context["external_validity"] = result.external_validity
    counts = pd.Series([c.shown or tables.verdict_words(c.status) for c in context["claims"]]).value_counts().to_dict()
    # the claims not run here are listed nowhere else on the first screen: named beside their count
    unrun = [c.id for c in context["claims"] if c.status == NOT_APPLICABLE]
    context["claim_counts"] = {(f"{word} ({', '.join(unrun)})" if word == tables.NOT_RUN and unrun else word): n
                               for word, n in counts.items()}
    # a claim no study could judge: why, the sweep that runs its arms and a recorded pilot, on the page and in the csv
    context["not_run"] = {claim: _not_run_parts(result, claim) for claim in _not_run(result, context["claims"])}
    spreadsheet_safe(claims_frame(context["claims"], {claim: not_run_text(*parts) for claim, parts
                                                      in context["not_run"].items()})).to_csv(staging / "claims.csv", index=False)
    # The first screen lists the claims the runs address; those they cannot are counted, not listed.
    context["claims_addressed"] = [c for c in context["claims"] if c.status != NOT_APPLICABLE]
    context["answer"] = _answer_section(result, staging)
    # Sections with nothing to show are left out, from the contents too.
    context["show_lr"] = bool(context["lr_sensitivity"]["figures"] or context["lr_sensitivity"]["table"]
                              or context["tuned"]["boards"])
    context["show_profiles"] = bool(context["performance_profiles"]["figures"] or context["performance_profiles"]["table"])
    runner = _runner_commands(result)
    context["staging"] = staging  # where the figures are, for their weight on the page
    context["reproduce"] = provenance.reproduce(records, runs, paths, out, staging, runner)
    context.update(_by_study(result, context, out, runner))
    png.drawn()  # the page carries every figure's file
    _, html = write_report(context, staging)
    over = html.stat().st_size - sections.PAGE_BYTES
    if over > 0:  # the page's text is larger than the figure budget assumed: figures leave until it fits
        size_of = _page_bytes(staging)
        shown = sum(size_of(f) for study in context["studies"] for f in study.figures)
        sections.fit_page(context["studies"], size_of, budget=max(shown - over - sections.PAGE_MARGIN, 0))
        write_report(context, staging)


def _page_bytes(staging: Path):
    """What a figure adds to report.html: both renderings, base64."""
    return lambda f: sum((staging / path).stat().st_size * 4 // 3 for path in (f.relative_path, f.narrow_path)
                         if (staging / path).is_file())


def _runner_commands(result: StudyResult) -> dict[str, str]:
    """Study id -> the normbench.studies.study command its plan file (the one study_designs applies) describes."""
    plans, runs = result.plans, result.runs
    commands = {}
    for study, run_dir in (runs.groupby("study")["run_dir"].first().items() if plans and not runs.empty else []):
        here = Path(str(run_dir)).resolve()
        plan = next((p for p in plans if p.study == str(study) and (p.folder == here or p.folder in here.parents)),
                    None)
        command = sections.study_runner_command(plan.data) if plan is not None and isinstance(plan.data, dict) else ""
        if command:
            commands[str(study)] = command
    return commands


def _by_study(result: StudyResult, context: dict, out: Path, runner: dict[str, str] | None = None) -> dict:
    """The page's study sections (sections.py), the synthesis over them, the legend's figure notes
    and the one memory table: from the pieces _write already computed."""
    runs, summary, axes = result.runs, result.summary, result.axes
    studies = study_figures.studies_of(summary)
    drawn = [f for key in ("heatmaps", "curves", "gradients", "throughput") for f in context[key]["figures"]]
    drawn += context["answer"]["figures"]
    blocks = {b["study"]: b["tasks"] for b in context["answer"]["blocks"]}
    anchors: set[str] = set()
    out_sections = []
    for study in studies:
        mine = runs[runs["group"].isin(study.rows["group"])]
        name = str(study.rows["study_name"].iloc[0]) if "study_name" in study.rows else ""
        title = "runs without a study" if name in ("", study_result.NO_STUDY) else name
        anchor = sections.anchor(title)
        while anchor in anchors:
            anchor += "-2"
        anchors.add(anchor)
        choices, conditions = result.roles.get(study.id, ([], []))
        shown, left = sections.pick_figures([f for f in drawn if f.study == study.title])
        purpose = str(study.rows["study_purpose"].iloc[0] or "") if "study_purpose" in study.rows else ""
        out_sections.append(sections.StudySection(
            study.id, anchor, title, purpose, choices, conditions, blocks.get(study.id, []),
            tables.leaderboards(study.rows, axes), shown, left,
            [c for c in context["claims"] if c.study_id == study.id and c.status != NOT_APPLICABLE],
            [runner[study.id]] if study.id in (runner or {}) else sections.reproduce_commands(mine)))
    # the synthesis reads the sections' studies and claims, not their figures: taken while they are drawn
    lines = synthesis.synthesis(summary, runs, out_sections, result) if not summary.empty else []
    png.drawn()  # what a figure weighs on the page is its files' size
    sections.fit_page(out_sections, _page_bytes(context["staging"]))
    notes = sections.written_once(out_sections)
    unjudged = [(claim, *parts) for claim, parts in context["not_run"].items()]
    return {"studies": out_sections, "figure_notes": notes, "synthesis": synthesis.synthesis_table(lines),
            "recommend": synthesis.recommendation_table(lines),
            "memory": _memory_table(runs), "unjudged": unjudged,
            "gradient_table": context["gradients"]["table"],
            "glossary": [*context["reproduce"]["glossary"], *figures.GLOSSARY.items()],
            "make_sh": (out / "make.sh").is_file(), "legend_rules": LEGEND_RULES}


def _not_run(result: StudyResult, claims: list[tables.ClaimView]) -> list[str]:
    """The ids of the claims no study here could judge (status not applicable, printed "not run here")."""
    specs = {r.claim.id for r in result.claims}
    return [c.id for c in claims if c.status == NOT_APPLICABLE and c.id in specs]


def _not_run_parts(result: StudyResult, claim_id: str) -> tuple[str, list[str], list[str]]:
    """Why a claim is not run here ("not run here: no study in this report has the arms it compares: …"),
    the shipped sweeps that run them, and what a recorded pilot of those sweeps read (docs/claim-sources.md)."""
    spec = next(r.claim for r in result.claims if r.claim.id == claim_id)
    arms = result.needs_text(spec).removeprefix("needs ").rstrip(".")
    return (f"{tables.NOT_RUN}: no study in this report has the arms it needs together: {arms}",
            _sweep_commands(claim_id), _pilots(claim_id))


def not_run_text(why: str, commands: list[str], pilots: list[str]) -> str:
    """A not-run claim's one line for claims.csv: why, where it can be run, and its pilot where one is recorded."""
    return (why + (f"; the shipped sweep that runs them: {', '.join(commands)}" if commands else "")
            + (f"; a pilot of it (not a verdict of this report): {'; '.join(pilots)}" if pilots else ""))


def _with_fdr(views: list, lost: dict[tuple[str, str], float], alpha: float) -> list:
    """Each directional verdict that Benjamini–Hochberg over the judged verdicts does not keep (``lost``:
    StudyResult.not_kept) says so where its status is printed (the multiplicity paragraph named it; the
    claims line and its section did not)."""
    return [dataclasses.replace(v, fdr=f"not kept by Benjamini–Hochberg at {alpha:g} (q {lost[v.id, v.study_id]:.2g})")
            if (v.id, v.study_id) in lost else v for v in views]


def _pilots(claim_id: str) -> list[str]:
    """What a shipped sweep's header records of a pilot that judged the claim (configuration.config.pilots_for)."""
    from normbench.configuration.config import pilots_for

    return pilots_for(claim_id)


def _sweep_commands(claim_id: str) -> list[str]:
    """The shipped sweeps that would judge a claim these runs cannot (imported here: a report without such a
    claim does not load Hydra)."""
    from normbench.configuration.config import commands_for

    return commands_for(claim_id)


LEGEND_RULES = [
    ("Leaderboards", "one table per study and task: arms are compared only with the arms of their own study, "
                     "named by the settings the study varies; the setup they share is named above the table. Seeds = "
                     "distinct seeds; mean ± half-width of the 95% interval over the group's finished runs (\"n=1\" when "
                     "undefined) of the score the study is read on, named in the table's header (one rule for the study's claims, "
                     "leaderboard, answers and synthesis: final val, the last evaluation, or under a constant lr "
                     "final, the mean of the last 3 evaluations, since one iterate there is noise), test and, where "
                     "room is left, the other validation score (best val: best of the evaluations, it flatters); diverged = diverged runs / runs that trained; ⚠ beside samples/s: the "
                     f"run's timing p90/p10 exceeded {TIMING_NOISY:g} (a busy machine); steps to target are "
                     "lower medians with runs that never reached it counted as infinite. A table wider than "
                     f"{tables.MAX_COLUMNS} columns is split, each part led by the arm."),
    ("Choices and conditions", "a study's choices are the settings a user picks (its arms); its conditions (task, "
                               "length, budget) change the problem, so arms are compared within a condition and the "
                               "answer is read across them, never as a ranking of conditions."),
    ("Claims", "a claim is judged within each study, never pooling two, and split into the parts it asserts, each "
               "tested on its own; it is supported only when every part is, not reproduced in this setup when a part is "
               "shown false, "
               "not testable here when a part cannot be tested in this setup (its arms all at chance, all at the "
               "ceiling, still improving at the end, at different lrs where a mechanism is read, at an lr not tuned "
               "per arm where final quality is compared, differing in steps or data, outside the domains the quoted "
               "statement names, or, at initialisation, placements that are identical by construction (a norm on "
               "the output only leaves the recurrence as the unnormalized cell has it): the reason and what would "
               "make it testable are stated, never seeds to add; no seeds "
               "could support the claim then, whatever its other parts read), inconclusive otherwise (or when an arm "
               "has fewer than 2 seeds), and not run here when the runs lack the arms its parts compare (an arm "
               "read only by the verdict's external-validity caveat, such as no norm beside DyT or Derf, is not "
               "required: the caveat says it could not be read). Every directional part is a one-sided test at α in "
               "each direction, so one (1 − 2α) interval decides both \"supported\" (wholly on the claimed side) and "
               "\"not reproduced in this setup\" (wholly on the other); \"equal\", \"insensitive\" and \"does not depend\" parts are "
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


def _answer_section(result: StudyResult, staging: Path) -> dict:
    """The first section: per task the ★ set in sentences, and the metric-against-speed figure."""
    if result.summary.empty:
        return {"tasks": [], "blocks": [], "figures": [], "rule": tables.RANKING_RULE, "note": ""}
    _, summary, tuned = result.answered  # the selection runs still name a tuned study's lr grid and choices
    note = ("Tuned study: answered from the evaluation runs only (each arm at the lr chosen on the "
            "selection runs, fresh seeds); the tuned comparison below ranks them on the test metric." if tuned else "")
    metrics = study_figures.task_metrics(summary)
    tasks = answers.answers(result)  # per study and task, in summary order
    blocks, start = [], 0
    for study in study_figures.studies_of(summary):
        count = study.rows["comparison" if "comparison" in study.rows else "task"].nunique()  # one answer each
        figure = figures.tradeoff(study.rows.assign(label=study.rows["arm"].astype(str)), metrics, staging,
                                  f"tradeoff{study.suffix}", study.title)
        if figure is not None and result.timing:  # which step time the x axis shows (paired or per-run)
            figure = dataclasses.replace(figure, caption=f"{figure.caption} {result.timing}")
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
        said = one_line("; ".join(aside), limit=20_000, longest=1_000)  # a path may hold a newline (hostile R27)
        print(f"normbench.report: warning: set aside {len(aside)} record(s): {said}", file=sys.stderr)
