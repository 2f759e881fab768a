"""The report's first section: per study and task, which arm to use, in sentences a reader can quote.

The answer is the leaderboard's ranking (ranking.RULE), never a new statistic: rank 1 with its
final-validation and test values, chance level and split sizes; then either the arms shown worse
than it, or, when none is, the plain statement that the arms cannot be told apart at the seeds run,
with the smallest difference the design detects, the seeds that would detect the largest difference
seen and the command that adds them. Arms with one seed are listed with what they scored and are
never ranked.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from normbench import metrics as registry
from normbench.metrics import TIMING_NOISY
from normbench.analysis.aggregate import NO_STUDY
from normbench.report.figures import METRIC_RANGE
from normbench.analysis.ranking import ALPHA, EVALUATION
from normbench.report.tables import number

POWER = 0.8
_LISTED = 5  # arms named in a sentence before "and N more"
_MAX_SEEDS = 200  # beyond this "about K seeds" is no plan anyone would run


@dataclass
class TaskAnswer:
    task: str
    metric: str
    higher_is_better: bool
    headline: str                 # the sentence to quote
    study: str = ""               # the study's title and question
    also: str = ""                # shown worse / cannot be told apart
    tradeoff: str = ""            # speed and stability of the choice
    single: list[str] = field(default_factory=list)  # one-seed arms: what they scored, not comparable yet
    command: str = ""             # what would decide it
    caveat: str = ""


def _interval(low: float, high: float, metric: str) -> str:
    """The 95% interval, clipped to what the metric can be (a t-interval on 3 seeds can reach below 0 MSE)."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return "interval undefined"
    floor, ceiling = METRIC_RANGE.get(metric, (None, None))
    low = low if floor is None else max(low, floor)
    high = high if ceiling is None else min(high, ceiling)
    return f"95% CI {number(low, 3)}–{number(high, 3)}"


def _value(row: pd.Series, name: str, metric: str) -> str:
    if pd.isna(row.get(f"{name}_mean")):
        return "not recorded"
    text = number(row[f"{name}_mean"], 3)
    if (row.get(f"{name}_n") or 0) >= 2:
        text += f" ({_interval(row[f'{name}_ci_low'], row[f'{name}_ci_high'], metric)})"
    return text


def _seeds(n) -> str:
    n = int(n)
    return f"{n} seed{'s' if n != 1 else ''}"


def _task_facts(runs: pd.DataFrame) -> str:
    """Chance level and split sizes, as recorded by the runs."""
    first = runs.iloc[0]
    parts = [f"chance {number(first.get('task.chance'), 3)}"]
    sizes = [f"{number(first.get(f'task.n_{s}'))} {s}" for s in ("train", "val", "test")
             if pd.notna(first.get(f"task.n_{s}"))]
    if sizes:
        parts.append("examples: " + ", ".join(sizes))
    return "; ".join(parts)


def design_power(ranked: pd.DataFrame, alpha: float = ALPHA, power: float = POWER,
                 name: str = "final_val") -> tuple[float, int | None, float]:
    """(MDE, seeds per arm to detect the largest difference seen, that difference) of a comparison.

    MDE = (t_{1−α/2} + t_{power}) · s · √(2/n) on 2n − 2 degrees of freedom, with s the pooled
    standard deviation of the ranked groups' final val and n their smallest seed count (EVIDENCE.md).
    """
    usable = ranked[ranked[f"{name}_n"] >= 2]
    if len(usable) < 2:
        return math.nan, None, math.nan
    s = math.sqrt(float(np.nanmean(usable[f"{name}_std"].astype(float) ** 2)))
    n = int(usable[f"{name}_n"].min())
    largest = float(usable[f"{name}_mean"].max() - usable[f"{name}_mean"].min())

    def mde(k: int) -> float:
        df = 2 * k - 2
        return (stats.t.ppf(1 - alpha / 2, df) + stats.t.ppf(power, df)) * s * math.sqrt(2 / k)

    if s == 0:
        return 0.0, n, largest
    needed = next((k for k in range(2, _MAX_SEEDS + 1) if mde(k) <= largest), None) if largest > 0 else None
    return mde(n), needed, largest


def study_command(summary_rows: pd.DataFrame, runs: pd.DataFrame | None = None) -> str:
    """The command that would add seeds to this study until it is decided: the study runner's, at
    the lr an Optuna sweep found (its sweep folder's optimization_results.yaml) where one did; for a
    tuned study (normbench.tune) tune's own, into its folder with more evaluation seeds, so that the
    lrs chosen on the selection seeds are carried on and never judged on the seeds that chose them."""
    command = str(summary_rows["study_command"].iloc[0]) if "study_command" in summary_rows else ""
    overrides = command.removeprefix("python -m normbench -m").strip()
    if not overrides:
        return ""
    from normbench.contract import HARNESS  # how the runs ran is the runner's choice, not the question's

    kept = [o for o in shlex.split(overrides)
            if o.split("=", 1)[0].lstrip("+~") not in ("seed", *HARNESS) and not o.startswith("hydra")]
    run_dirs = [Path(str(d)) for d in runs["run_dir"]] if runs is not None and "run_dir" in runs else []
    folders = {d.parent.parent for d in run_dirs}  # tune's DIR: DIR/selection/N and DIR/evaluation/N
    if run_dirs and "study.name" in runs and set(runs["study.name"].astype(str)) == {"tuned"} and len(folders) == 1:
        roles = runs["axes.role"] if "axes.role" in runs else pd.Series("", index=runs.index)
        evaluated = sorted({int(seed) for seed in runs.loc[roles == EVALUATION, "seed"].dropna()})
        more = [*evaluated, *range(evaluated[-1] + 1, evaluated[-1] + 1 + len(evaluated))] if evaluated else []
        return " ".join(["python -m normbench.tune", "--out", shlex.quote(str(folders.pop())),
                         *(["--evaluation-seeds", ",".join(map(str, more))] if more else []),
                         *(shlex.quote(o) for o in kept)])
    found = {_optuna_lr(folder) for folder in {d.parent for d in run_dirs}} - {None}
    if len(found) == 1:  # the lr the sweep's Optuna study found replaces the one it searched from
        kept = [o for o in kept if o.split("=", 1)[0].lstrip("+~") != "lr"] + [f"lr={found.pop()!r}"]
    return "python -m normbench.study " + " ".join(shlex.quote(o) for o in kept) + " --budget 30m"


def _optuna_lr(sweep_dir: Path) -> float | None:
    """best_params.lr of an Optuna sweep's optimization_results.yaml, read as data (a regular file, at
    most 1 MiB, safe YAML); None when there is none or it holds no positive finite lr."""
    import yaml

    from normbench.record import Unreadable, read_run_file

    try:
        results = yaml.safe_load(read_run_file(sweep_dir / "optimization_results.yaml", 1 << 20))
    except (Unreadable, yaml.YAMLError, UnicodeDecodeError, RecursionError):
        return None
    best = results.get("best_params") if isinstance(results, dict) else None
    lr = best.get("lr") if isinstance(best, dict) else None
    if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not math.isfinite(lr) or lr <= 0:
        return None
    return float(lr)


def comparison_answer(rows: pd.DataFrame, runs: pd.DataFrame) -> TaskAnswer:
    """The answer for one comparison: ``rows`` its summary rows (ranked first), ``runs`` its runs."""
    first = rows.iloc[0]
    task, metric, higher = str(first["task"]), str(first["metric"]), bool(first["higher_is_better"])
    title = str(first.get("study_name", "") or "")
    title = "" if title == NO_STUDY else title
    purpose = str(first.get("study_purpose", "") or "")
    study = title + (f": {purpose}" if purpose else "")
    ranked, single = rows[rows["rank"].notna()].sort_values("rank"), rows[rows["rank"].isna()]
    lone = [f"{row['arm']}: " + (f"all {int(row['n'])} runs diverged" if int(row["n_ok"]) == 0 and int(row["n_diverged"])
                                else f"{number(row['final_val_mean'], 3)} ({_seeds(row['seeds'])})")
            for _, row in single.iterrows()]
    command = study_command(rows, runs)
    facts = _task_facts(runs) if len(runs) else ""
    if ranked.empty:
        headline = (f"On {task}, no arm is ranked yet: every arm ran 1 seed (or none finished), so none can be "
                    f"compared ({facts}).")
        return TaskAnswer(task, metric, higher, headline, study, single=lone, command=command)
    best = ranked.iloc[0]
    if str(first.get("study_role")) == EVALUATION:  # a tuned study: each arm at its chosen lr, ranked on test
        headline = (f"On {task}, each arm at its tuned lr, {best['arm']} ranks first: test {metric} "
                    f"{_value(best, 'test', metric)}, final val {_value(best, 'final_val', metric)}, "
                    f"{_seeds(best['seeds'])} ({facts}).")
    else:
        headline = (f"On {task}, {best['arm']} ranks first: final val {metric} {_value(best, 'final_val', metric)}, "
                    f"test {_value(best, 'test', metric)}, {_seeds(best['seeds'])} ({facts}).")
    others = ranked.iloc[1:]
    if others.empty:
        also = "No other arm ran 2 or more seeds, so nothing was compared with it."
    elif bool(rows["best"].any()):
        worse = others[others["shown_worse"].astype(bool)]
        kept = others[~others["shown_worse"].astype(bool)]
        listed = ", ".join(f"{r['arm']} {number(r['final_val_mean'], 3)}" for _, r in kept.head(_LISTED).iterrows())
        more = f" and {len(kept) - _LISTED} more" if len(kept) > _LISTED else ""
        also = (f"Not shown worse (★): {listed}{more}. " if len(kept) else "Every other arm is shown worse. ")
        if len(kept):
            also += f"Shown worse: {len(worse)} of {len(others)} other arms."
    else:
        mde, needed, largest = design_power(ranked, name="test" if str(first.get("study_role")) == EVALUATION else "final_val")
        n = int(ranked["seeds"].min())
        also = (f"The {len(ranked)} arms cannot be told apart at {n} seeds: no arm is shown worse than the first. "
                + (f"The smallest difference this design detects is {number(mde, 2)} {metric} (α = {ALPHA:g}, "
                   f"power {POWER:g}); " if math.isfinite(mde) else "")
                + (f"about {needed} seeds per arm would detect the largest difference seen ({number(largest, 2)})."
                   if needed else f"the largest difference seen ({number(largest, 2)}) would need more than "
                                  f"{_MAX_SEEDS} seeds per arm: for practical purposes the arms are alike."
                   if math.isfinite(largest) else ""))
    decided = bool(rows["best"].any()) and not len(single)  # a ranking that informs, every arm compared
    return TaskAnswer(task, metric, higher, headline, study, also, _tradeoff(best, ranked), lone,
                      "" if decided else command)


def _tradeoff(best: pd.Series, ranked: pd.DataFrame) -> str:
    parts = []
    diverged = int(best["n_diverged"])
    parts.append(f"{diverged} of {int(best['n'])} of its runs diverged" if diverged
                 else f"none of its {int(best['n'])} runs diverged")
    unstable = ranked[ranked["divergence_rate"] > 0]
    if len(unstable):
        parts.append(f"{len(unstable)} arm(s) had a diverged run")
    speed = best.get("samples_per_s_median")
    if speed is not None and pd.notna(speed):
        noisy = best.get("timing_noise_median")
        flag = ("paired timing of the arms" if best.get("timing") == "paired" else
                "per-run timing, noisy" + (f": p90/p10 {noisy:.2g}" if pd.notna(noisy) and noisy > TIMING_NOISY else ""))
        parts.append(f"it trained at {number(speed, 3)} {registry.metric('samples_per_s').unit} ({flag})")
    text = "; ".join(parts)
    return text[0].upper() + text[1:] + "."


def answers(runs: pd.DataFrame, summary: pd.DataFrame, axes: list[str]) -> list[TaskAnswer]:
    """One answer per comparison (study and task), in the leaderboard's order."""
    if summary.empty:
        return []
    result = []
    for _, rows in summary.groupby("comparison" if "comparison" in summary else "task", sort=False):
        result.append(comparison_answer(rows, runs[runs["group"].isin(rows["group"])]))
    return result

