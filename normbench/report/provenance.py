"""Where the report's numbers came from and how to get them again: what was run (the settings
that vary and those fixed, the tasks, statuses, records set aside, the environment and the
machine's condition), the commands, code version, files and data that reproduce it, and the
glossary of the report's terms."""

from __future__ import annotations

import shlex
from pathlib import Path

import pandas as pd

from normbench.analysis.result import StudyResult
from normbench.configuration.schema import TASK_CONFIGS, TaskConfig
from normbench.records.metrics import TIMING_NOISY
from normbench.records.published import CURVES, PAIRED_TIMING
from normbench.records.reading import Records
from normbench.records.values import format_value
from normbench.report import figures, sections, tables

CONDITION_KEYS = ("load_1m", "parallel_jobs", "cpu_pressure")  # environment fields on the machine's load


def machine_condition(records: Records, finished: pd.DataFrame) -> tables.Table:
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
                  "optimized_metric=best_val); arms are ranked on its mean over seeds, except in a study run at a "
                  "constant lr, read on final (mean of the last 3 evaluations) on every surface of that study."),
    ("best val", "the best validation metric over a run's evaluations; it flatters arms evaluated often, so it is "
                 "shown as the secondary score, not ranked."),
    ("test", "the metric on the test split, measured once on the final model."),
    ("rank, ★", "the leaderboard's rule (see the legend): rank 1 = best mean primary score, fewest failed runs first, "
                "\"1=\" a tie; ★ = the arms that could be the best (multiple comparisons with the best at the "
                "study's level: the best is outside the ★ set with probability at most α), given only when some arm "
                "is shown worse."),
    ("at chance", "a finished run whose best evaluation never left the task metric's chance band "
                  "(normbench/records/metrics.py): a failure, counted like a divergence; runs.csv's "
                  "metrics.at_chance (1 or 0), summary.csv's at_chance (runs per arm)."),
    ("did not train", "the claims' and the untrained-arm gate's one rule: a run that diverged, stayed at chance, or "
                      "is held at one of the task's trivial solutions (task.trivial.*: the unigram or bigram "
                      "model, the majority class, any value from the context) within the chance band; runs.csv's "
                      "metrics.failed_to_learn (1 or 0) and metrics.held_at (the trivial solution a finished run "
                      "did not get beyond), summary.csv's failed_to_learn (runs per arm)."),
    ("95% CI / band", f"a t-interval over seeds, clipped to the metric's range; figures draw bands only where "
                      f"≥ {figures.MIN_BAND_SEEDS} seeds stand behind a point."),
    ("diverged", "a run whose loss became NaN or infinite (or exploded): counted, never scored; it ranks below "
                 "every finished run."),
    ("steps to target", "the first evaluated step whose validation metric reaches the task's target (so it moves "
                        "in steps of eval_every); a group's value is the lower median over seeds, with runs that "
                        "never reached it counted as infinite."),
    ("seconds to target", "training seconds (train steps only) at that step."),
    ("samples/s", "training examples per second over the timed steps (warm-up steps excluded), median over seeds."),
    ("timing p90/p10", f"a run's slowest tenth of step times over its fastest tenth; above {TIMING_NOISY:g} "
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


def reproduce(records: Records, runs: pd.DataFrame, paths: list[Path], out: Path, staging: Path,
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
                                         f"every seed reported; python -m normbench study with the same settings "
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
    for name in (CURVES, f"{CURVES}.gz"):  # the validation curves the gates read (plateau, still improving)
        if (staging / name).is_file():
            files.append({"path": name, "what": "each run's validation curve and training loss, by step and examples seen"})
    if (staging / PAIRED_TIMING).is_file():
        files.append({"path": PAIRED_TIMING, "what": "bench arms' paired, interleaved step times behind the speed claims"})
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



def what_was_run(result: StudyResult, out: Path) -> dict:
    records, runs, copies, axes, finished = result.records, result.runs, result.copies, result.axes, result.finished
    varying = tables.Table(["axis", "values"], [
        [a.removeprefix("axes."), ", ".join(format_value(v)
                                            for v in result.axis_values[a])]
        for a in axes], wrap=("values",))
    fixed = tables.Table(["setting", "value"], [[k, format_value(v)]
                                                for k, v in result.fixed.items()])
    task_rows = []
    for task, mine in finished.groupby("task.name", sort=True):
        first = mine.iloc[0]
        task_rows.append([str(task), format_value(first.get("task.metric")),
                          "higher is better" if first["task.higher_is_better"] else "lower is better",
                          format_value(first.get("task.target")),
                          format_value(first.get("task.chance")), str(len(mine))])
    return {
        "n_records": len(runs),
        "n_trained": tables.trained_count(runs),
        "varying": varying,
        "fixed": fixed,
        "tasks": tables.Table(["task", "metric", "direction", "target", "chance", "runs"], task_rows),
        "statuses": tables.status_table(runs),
        "unfinished": tables.unfinished_table(runs, axes, out),
        "unfinished_reasons": tables.unfinished_reasons(runs),
        "set_aside": [f"{tables.display_path(r.path, out)}: {r.why}" for r in records.set_aside]
                     + [f"{p}: path does not exist" for p in records.missing_paths],
        "copies": [f"{tables.display_path(c.run_dir, out)}: "
                   f"{'a rerun' if isinstance(c.rerun_of, str) else 'another record'} of the run in "
                   f"{tables.display_path(c.copy_of, out)} (same config and seed), not counted again"
                   for c in copies.itertuples()],
        "environment": tables.environment_table(finished, result.machine_rows),
        "condition": machine_condition(records, finished),
        "dates": tables.date_range(runs),
    }
