"""records -> frames -> CSVs, figures, claims -> report.md and report.html. The whole pipeline.

Each stage reads only what the previous one produced; build_report is the single entry point,
used by `python -m normbench.report` and by the runner at the end of a multirun. It replaces only
files an earlier report wrote and left unchanged, and deletes nothing else (see output.py).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import shlex
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable

import pandas as pd

from normbench.analysis import aggregate, profiles, sequential, speed, tuning
from normbench.report import answers, figures, sections, study_plan, synthesis, tables
from normbench.analysis.claims import CLAIMS, evaluate_claims
from normbench.analysis.intervals import METHOD
from normbench.report.output import OutputError, ReportOutput, spreadsheet_safe
from normbench.report.records import Records, find_records, quiet_numerics, read_curves
from normbench.report.render import write_report
from normbench.schema import TASK_CONFIGS, TaskConfig

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
        rows.append({"claim": c.id, "study": c.study, "verdict": c.status,
                     "parts": " | ".join(f"{i}: {v.split(' (leans ')[0]}" for i, v in enumerate(verdicts, 1)),
                     "regime": regime, "scale": c.scale, "source": c.where or c.citation})
    return pd.DataFrame(rows, columns=["claim", "study", "verdict", "parts", "regime", "scale", "source"])


def _write(records: Records, runs: pd.DataFrame, copies: pd.DataFrame, summary: pd.DataFrame, axes: list[str],
           paths: list[Path], out: Path, staging: Path, alpha: float | None = None, timing: str = "",
           designs: dict | None = None) -> None:
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
        "bn_gaps": tables.bn_gap_table(summary),
        "timing": timing,  # which step time the throughput figures show (paired or per-run)
        **_figure_sections(records, runs, summary, axes, staging, timing),
        **_tuning_sections(runs, summary, axes, staging),
        "divergences": tables.divergence_table(runs, axes, out),
        "claims": [tables.claim_view(c, v, aggregate.study_titles(runs))
                   for c, v in _claims(runs, paths, alpha, designs if alpha is None else None)],
    }
    context["claim_counts"] = pd.Series([c.status for c in context["claims"]]).value_counts().to_dict()
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
    context["reproduce"] = _reproduce(records, runs, paths, out, staging, runner)
    context.update(_by_study(runs, summary, axes, context, out, runner))
    write_report(context, staging)


def _runner_commands(paths: list[Path], runs: pd.DataFrame) -> dict[str, str]:
    """Study id -> the normbench.study command its plan file (the one study_designs applies) describes."""
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
    studies = _studies(summary)
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
            "memory": _memory_table(runs, summary), "unjudged": unjudged,
            "gradient_table": context["gradients"]["table"],
            "glossary": [*context["reproduce"]["glossary"], *getattr(figures, "GLOSSARY", {}).items()],
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


def _memory_table(runs: pd.DataFrame, summary: pd.DataFrame) -> tables.Table | None:
    """One table of peak memory for every study's arms (figures.memory_table where figures.py has it)."""
    if hasattr(figures, "memory_table"):
        frame = figures.memory_table(runs)
    elif summary.empty or "peak_memory_mb_median" not in summary:
        return None
    else:
        frame = summary[["study_name", "task", "arm", "peak_memory_mb_median", "memory_kind"]].rename(columns={
            "study_name": "study", "peak_memory_mb_median": "peak MB (median over seeds)", "memory_kind": "measured as"})
        frame = frame[frame["peak MB (median over seeds)"].notna()]
    if frame is None or frame.empty:
        return None
    columns = [str(c) for c in frame.columns]
    rows = [[tables.number(v) if isinstance(v, float) else str(v) for v in row]
            for row in frame.itertuples(index=False, name=None)]
    note = f"First {tables.MAX_ROWS} of {len(rows)} arms; all are in summary.csv." if len(rows) > tables.MAX_ROWS else ""
    rows = rows[:tables.MAX_ROWS]
    return tables.Table(columns, rows, note, wrap=tuple(c for c in columns if c in ("study", "arm")),
                        keep=tuple(c for c in columns if c == "arm"), lead=min(3, len(columns)))


def sequential_levels(paths: list[Path], say: bool = True) -> list[study_plan.Level]:
    """The sequential.json files (normbench.study) under ``paths`` that apply, each to its own study's
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
    position = {c.id: i for i, c in enumerate(CLAIMS)}
    return sorted(kept, key=lambda cv: position.get(cv[0].id, len(position)))


def _answer_section(runs: pd.DataFrame, summary: pd.DataFrame, axes: list[str], staging: Path,
                    timing: str = "", designs: dict | None = None) -> dict:
    """The first section: per task the ★ set in sentences, and the metric-against-speed figure."""
    if summary.empty:
        return {"tasks": [], "blocks": [], "figures": [], "rule": tables.RANKING_RULE, "note": ""}
    note = ""
    if "axes.role" in runs and (runs["axes.role"] == "evaluation").any():
        # A tuned study: selection runs chose each arm's lr, so their scores flatter it; its answer
        # rests on the evaluation runs alone (the tuned comparison ranks them on the test metric). Other studies stay.
        tuned = runs.loc[runs["axes.role"] == "evaluation", "study"].unique()
        runs = runs[~runs["study"].isin(tuned) | (runs["axes.role"] == "evaluation")]
        summary = summary[summary["group"].isin(runs["group"])]
        note = ("Tuned study: answered from the evaluation runs only (each arm at the lr chosen on the "
                "selection runs, fresh seeds); the tuned comparison below ranks them on the test metric.")
    metrics = _metrics(summary)
    tasks = answers.answers(runs, summary, axes, designs)  # per study and task, in summary order
    blocks, start = [], 0
    for study in _studies(summary):
        count = study.rows["comparison" if "comparison" in study.rows else "task"].nunique()  # one answer each
        figure = figures.tradeoff(study.rows.assign(label=study.rows["arm"].astype(str)), metrics, staging,
                                  f"tradeoff{study.suffix}", study.title)
        if figure is not None and timing:  # which step time the x axis shows (paired or per-run)
            figure = dataclasses.replace(figure, caption=f"{figure.caption} {timing}")
        blocks.append({"study": study.id, "tasks": tasks[start:start + count], "figure": figure})
        start += count
    return {"tasks": tasks, "blocks": blocks, "figures": [b["figure"] for b in blocks if b["figure"]],
            "rule": tables.RANKING_RULE, "note": note}


CONDITION_KEYS = ("load_1m", "parallel_jobs", "cpu_pressure")  # environment fields on the machine's load


def _machine_condition(records: Records, finished: pd.DataFrame) -> tables.Table:
    """The machine's condition the runs recorded (environment.load_1m ...): numbers as median and
    range over the runs, anything else counted by value. Empty when no record has them."""
    kept = set(finished["run_dir"].astype(str))
    values: dict[str, list] = {}
    for record in records.runs:
        environment = record.summary.get("environment")
        if str(record.run_dir) not in kept or not isinstance(environment, dict):
            continue
        for key in CONDITION_KEYS:
            value = environment.get(key)
            items = value.items() if isinstance(value, dict) else [("", value)]
            for sub, item in items:
                if item is not None and not isinstance(item, (dict, list)):
                    values.setdefault(f"{key}.{sub}" if sub else key, []).append(item)
    rows = []
    for key, seen in values.items():
        numbers = pd.to_numeric(pd.Series(seen), errors="coerce")
        if numbers.notna().all() and not any(isinstance(v, bool) for v in seen):
            shown = (tables.number(numbers.iloc[0], 3) if numbers.nunique() == 1 else
                     f"median {tables.number(numbers.median(), 3)} (range {tables.number(numbers.min(), 3)}–"
                     f"{tables.number(numbers.max(), 3)})")
        else:
            shown = ", ".join(f"{v} ({n})" for v, n in pd.Series(seen).astype(str).value_counts().items())
        rows.append([key, shown, str(len(seen))])
    return tables.Table(["condition", "value over the runs", "runs"], rows, wrap=("value over the runs",))


GLOSSARY = [
    ("final val", "the validation metric at the last evaluation of a run: the primary score (unless the runs set "
                  "optimized_metric=best_val); arms are ranked on its mean over seeds."),
    ("best val", "the best validation metric over a run's evaluations; it flatters arms evaluated often, so it is "
                 "shown as the secondary score, not ranked."),
    ("test", "the metric on the test split, measured once on the final model."),
    ("rank, ★", "the leaderboard's rule (see the legend): rank 1 = best mean primary score, fewest failed runs first, "
                "\"1=\" a tie; ★ = the arms that could be the best (multiple comparisons with the best at the "
                "study's level: the best is outside the ★ set with probability at most α), given only when some arm "
                "is shown worse."),
    ("did not train", "a finished run whose best evaluation never left the task metric's chance band "
                      "(normbench/metrics.py): a failure, counted like a divergence."),
    ("95% CI / band", f"a t-interval over seeds, clipped to the metric's range; figures draw bands only where "
                      f"≥ {figures.MIN_BAND_SEEDS} seeds stand behind a point."),
    ("diverged", "a run whose loss became NaN or infinite (or exploded): counted, never scored; it ranks below "
                 "every finished run."),
    ("steps to target", "the first evaluated step whose validation metric reaches the task's target (so it moves "
                        "in steps of eval_every); a group's value is the lower median over seeds, with runs that "
                        "never reached it counted as infinite."),
    ("seconds to target", "training seconds (train steps only) at that step."),
    ("samples/s", "training examples per second over the timed steps (warm-up steps excluded), median over seeds."),
    ("timing p90/p10", f"a run's slowest tenth of step times over its fastest tenth; above {aggregate.TIMING_NOISY:g} "
                       f"(⚠, hatched bars) the machine's load changed while it was timed."),
    ("grad_time_ratio", "log10(‖∂L/∂h_1‖ / ‖∂L/∂h_T‖) of a recurrent run, at init and at the end: 0 = gradients "
                        "reach the first step as strongly as the last, below 0 = vanishing, above 0 = exploding."),
    ("flow score", "−|grad_time_ratio_init|: 0 is perfect flow through time, more negative is worse (the "
                   "gamma-init claim tests it)."),
    ("gradient flow through time", "‖∂L/∂h_t‖ against t, the norm of the loss's gradient with respect to the "
                                   "hidden state at step t."),
    ("grad norm", "the global L2 norm of the gradient before clipping, per logged step."),
    ("grad kurtosis", "Pearson's kurtosis of all gradient entries at a probe (normal = 3; larger = heavy tails)."),
    ("bn_train_eval_gap", "BatchNorm runs only: validation loss in train mode (batch statistics) minus eval mode "
                          "(the statistics the run evaluates with: population statistics of the evaluated weights "
                          "with norm.bn_reestimate, else the running averages); far from 0 = evaluation does not "
                          "see what training saw."),
    ("peak MB", "peak memory: GPU tensor memory on a GPU, the whole process's resident memory on a CPU."),
    ("MDE", "the smallest difference a comparison's design detects (α = 0.05, power 0.8) at its seeds."),
    ("stable range", "the largest learning rate at which an arm works (no divergence, near its best) ÷ the smallest."),
    ("ρ(τ), area", "performance profile: the share of tasks on which an arm needs at most τ × the fewest steps to "
                   "target; area = ∫ρ d(log τ) over [1, 4] ÷ log 4."),
]


def _reproduce(records: Records, runs: pd.DataFrame, paths: list[Path], out: Path, staging: Path,
               runner: dict[str, str] | None = None) -> dict:
    """How to get this report again: the commands, the code version, its files, the data, the terms."""
    commands = []
    finished = runs[runs["status"] != "incomplete"]
    if "study.command" in finished:
        for _, row in finished.drop_duplicates("study").iterrows():
            name = str(row.get("study.name") or "")
            # the command its runs recorded, with every seed they hold (not the pilot's seeds)
            if str(row["study"]) in (runner or {}):  # the study runner made it: its command, with its budget
                commands.append({"what": f"Run the study \u201c{name}\u201d as it was run (its sequential.json):",
                                 "command": runner[str(row["study"])]})
                continue
            for command in sections.reproduce_commands(finished[finished["study"] == row["study"]]):
                commands.append({"what": f"Run the study \u201c{name}\u201d (the command its runs recorded, with "
                                         f"every seed reported; python -m normbench.study with the same settings "
                                         f"adds seeds):", "command": command})
    if not commands:
        commands.append({"what": "These runs were started one at a time; each run's settings are in its "
                                 "summary.json (config, overrides) and in runs.csv.",
                         "command": "python -m normbench <the overrides in the run's summary.json>"})
    inputs = " ".join(shlex.quote(str(p)) for p in paths)
    same = len(paths) == 1 and Path(paths[0]).resolve() == Path(out).resolve()
    commands.append({"what": "Then build this report from the run records:",
                     "command": f"python -m normbench.report {inputs}" + ("" if same else f" --out {shlex.quote(str(out))}")})
    commits = (finished["environment.git_commit"].dropna().astype(str).value_counts()
               if "environment.git_commit" in finished else pd.Series(dtype=int))
    versions = (finished["environment.normbench_version"].dropna().astype(str).unique()
                if "environment.normbench_version" in finished else [])
    code = (", ".join(f"git commit {c} ({n} runs)" if len(commits) > 1 else f"git commit {c}" for c, n in commits.items())
            or "git commit not recorded")
    if len(versions):
        code += f"; normbench {', '.join(versions)}"
    files = [{"path": "runs.csv", "what": "one row per run"}]
    if (staging / "runs.parquet").is_file():
        files.append({"path": "runs.parquet", "what": "the same, with types kept"})
    files.append({"path": "summary.csv", "what": "one row per arm: every number in the tables"})
    files.append({"path": "claims.csv", "what": "one row per claim and study: verdict, each part's verdict, regime, scale"})
    paths_of: dict[str, set[str]] = {}
    for record in records.runs:
        config = record.config or {}
        task = config.get("task") if isinstance(config.get("task"), dict) else {}
        name = str((record.summary.get("task") or {}).get("name") or task.get("name") or "")
        if name:
            paths_of.setdefault(name, set())
            if task.get("path"):
                paths_of[name].add(str(task["path"]))
    datasets = []
    for task in sorted(set(finished["task.name"].astype(str)) if "task.name" in finished else []):
        where = sorted(paths_of.get(task, ()))
        what = TASK_CONFIGS.get(task, TaskConfig).describe_data(where)  # each task says what it reads
        if where:
            what += f", at task.path = {', '.join(where)}"
        datasets.append({"task": task, "what": what})
    return {"commands": commands, "code": code, "files": files, "datasets": datasets, "glossary": GLOSSARY}


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
        "condition": _machine_condition(records, finished),
        "dates": tables.date_range(runs),
    }


def _figure_sections(records: Records, runs: pd.DataFrame, summary: pd.DataFrame, axes: list[str],
                     staging: Path, timing: str = "") -> dict:
    """Heatmaps, curves, gradients and bars: one set of figures per study (arms compared only there)."""
    metrics = _metrics(summary)
    studies = _studies(summary)
    return {"heatmaps": _heatmap_section(runs, studies, metrics, staging),
            **_curve_sections(records, runs, summary, axes, studies, metrics, staging),
            "throughput": _throughput_section(studies, staging, timing)}


@dataclass(frozen=True)
class _Study:
    """One study's rows of summary.csv, as its figures see them."""

    id: str
    title: str  # the heading its figures are shown under ("" when the report holds one study)
    suffix: str  # of its figure files: "" for the first, "-2", "-3" ... after it
    rows: pd.DataFrame

    @property
    def labels(self) -> dict[str, str]:
        """group -> its arm: the study's arm settings only (the study is the heading)."""
        return dict(zip(self.rows["group"], self.rows["arm"].astype(str)))


def _studies(summary: pd.DataFrame) -> list[_Study]:
    if summary.empty:
        return []
    key = "study" if "study" in summary else None
    ids = list(dict.fromkeys(summary[key])) if key else [""]
    studies = []
    for index, sid in enumerate(ids):
        rows = summary[summary[key] == sid] if key else summary
        name = str(rows["study_name"].iloc[0]) if "study_name" in rows else ""
        title = "" if len(ids) == 1 else ("runs without a study" if name == aggregate.NO_STUDY else f"Study {name}")
        studies.append(_Study(str(sid), title, "" if index == 0 else f"-{index + 1}", rows))
    return studies


def _metrics(summary: pd.DataFrame) -> dict[str, tuple[str, bool]]:
    return ({} if summary.empty else
            {str(t): (str(m), bool(h)) for t, m, h in
             summary[["task", "metric", "higher_is_better"]].drop_duplicates("task").itertuples(index=False)})


MAX_FACETS = 6  # heatmap panels per task beyond which a study's grid is left to its leaderboard


def _natural(value) -> tuple:
    """Numbers in numeric order, then text."""
    number = pd.to_numeric(pd.Series([value]), errors="coerce").iloc[0]
    return (0, float(number), "") if pd.notna(number) and not isinstance(value, bool) else (1, 0.0, str(value))


def _heatmap_section(runs: pd.DataFrame, studies: list["_Study"], metrics: dict, staging: Path) -> dict:
    """Per study, heatmaps over its two main arm settings, one panel per task; further arm settings
    get a panel per value (never pooled), up to MAX_FACETS per task. Cells pool seeds only."""
    trained = runs[runs["status"].isin(aggregate.TRAINED)]
    figures_out, skipped = [], []
    for study in studies:
        mine = trained[trained["group"].isin(study.rows["group"])]
        varying = [a for a in aggregate.varying_axes(mine) if a != "axes.task"]
        named = f"{study.title}: " if study.title else ""
        if len(varying) < 2:
            shown = ", ".join(a.removeprefix("axes.") for a in varying) or "none"
            skipped.append(f"{named}Fewer than 2 axes vary (varying: {shown}), so there is no grid to draw.")
            continue
        row, col = aggregate.main_axes(mine, varying)
        rest = [a for a in varying if a not in (row, col)]
        panels = []
        for task, task_runs in mine.groupby("task.name", sort=True):
            combos = (sorted(task_runs[rest].drop_duplicates().to_dict("records"),
                             key=lambda combo: tuple(_natural(v) for v in combo.values())) if rest else [{}])
            if len(combos) > MAX_FACETS:
                panels = None
                break
            for combo in combos:
                cell_runs = task_runs
                for axis, value in combo.items():
                    cell_runs = cell_runs[cell_runs[axis].map(aggregate.format_value) == aggregate.format_value(value)]
                fixed = ", ".join(f"{a.removeprefix('axes.')}={aggregate.format_value(v)}" for a, v in combo.items())
                heading = " · ".join(p for p in (f"task {task}" if study.rows["task"].nunique() > 1 else "", fixed) if p)
                panels.append(figures.HeatmapPanel(str(task), heading, aggregate.axis_grid(cell_runs, row, col)))
        if panels is None:
            skipped.append(f"{named}{len(varying)} settings vary ({', '.join(a.removeprefix('axes.') for a in varying)}); "
                           f"a grid over two of them would pool the others, so see its leaderboard instead.")
            continue
        note = (f"Rows: {row.removeprefix('axes.')}; columns: {col.removeprefix('axes.')}."
                + (f" One panel per value of {', '.join(a.removeprefix('axes.') for a in rest)}." if rest else "")
                + " Each cell pools its runs over seeds only. Empty cells: no run (or no ok run) there.")
        figures_out += figures.heatmaps(panels, row, col, metrics, staging, note, study.suffix, study.title)
    return {"figures": figures_out, "skipped": " ".join(skipped)}


def _curve_sections(records: Records, runs: pd.DataFrame, summary: pd.DataFrame, axes: list[str],
                    studies: list["_Study"], metrics: dict, staging: Path) -> dict:
    """Per study, training loss and validation curves and gradient norms of its best arms, gradient
    flow through time; the gradient table."""
    trained = runs[runs["status"].isin(aggregate.TRAINED)]
    chosen = {s.id: aggregate.plotted_groups(s.rows, CURVE_GROUPS) for s in studies}
    shown = trained[trained["group"].isin([g for groups in chosen.values() for g in groups])]
    curves = read_curves(shown["run_dir"])
    learning, gradient_figures = [], []
    for study in studies:
        groups = chosen[study.id]
        labels = {g: study.labels[g] for g in groups}
        mine = shown[shown["group"].isin(groups)]
        note = _shown_note(len(groups), len(study.rows))
        eval_bands = aggregate.curve_bands(curves, mine, "eval", "val_metric")
        loss_bands = aggregate.curve_bands(curves, mine, "train", "loss")
        grad_bands = aggregate.curve_bands(curves, mine, "train", "grad_norm", log=True)
        loss = figures.loss_curves(loss_bands, labels, staging, note, study.suffix, study.title)
        learning += [f for f in (loss, *figures.learning_curves(eval_bands, labels, metrics, staging, note,
                                                                 study.suffix, study.title)) if f is not None]
        grad_norm = figures.grad_norm_curves(grad_bands, labels, staging, note, study.suffix, study.title)
        flow = _gradient_flow_figure(records, runs, study, staging)
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


def _gradient_flow_figure(records: Records, runs: pd.DataFrame, study: "_Study", staging: Path):
    """Flow through time exists for recurrent groups only; they get their own pick of the best."""
    recurrent = study.rows[study.rows["grad_time_ratio_init_mean"].notna()]
    flow_groups = aggregate.plotted_groups(recurrent, CURVE_GROUPS)
    if not flow_groups:
        return None
    flow_runs = runs[runs["group"].isin(flow_groups) & runs["status"].isin(aggregate.TRAINED)]
    profiles = aggregate.grad_time_profiles(records.runs, flow_runs)
    return figures.grad_flow(profiles, {g: study.labels[g] for g in flow_groups}, staging,
                             _shown_note(len(flow_groups), len(recurrent), "recurrent "), study.suffix, study.title)


def _throughput_section(studies: list["_Study"], staging: Path, timing: str = "") -> dict:
    """Speed and memory bars per study. Every task gets its own panel: its first arms in leaderboard order."""
    out = []
    for study in studies:
        rows = study.rows.assign(label=study.rows["arm"].astype(str))
        bars = rows.groupby("task", sort=False).head(BAR_GROUPS)
        bars = bars.assign(noisy=(bars["timing_noise_median"] > aggregate.TIMING_NOISY)
                           | (bars["samples_per_s_spread"] > aggregate.TIMING_NOISY))
        cut = rows.groupby("task").size().gt(BAR_GROUPS).any()
        note = (f"At most {BAR_GROUPS} arms per task, in leaderboard order; all are in summary.csv." if cut
                else "Arms in leaderboard order.")
        speed = figures.throughput(bars, staging, note + (f" {timing}" if timing else ""), aggregate.TIMING_NOISY,
                                   study.suffix, study.title)
        memory = figures.peak_memory(bars, staging, note, study.suffix, study.title)
        out += [f for f in (speed, memory) if f is not None]
    return {"figures": out, "timing": timing, "skipped": "" if out else "No run recorded throughput or memory."}


def _shown_note(shown: int, total: int, kind: str = "") -> str:
    if shown >= total:
        return ""
    return (f"Showing {shown} of {total} {kind}arms (the best of each task in leaderboard order); "
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
