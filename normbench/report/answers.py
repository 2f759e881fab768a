"""The report's first section: per study and task, which arm to use, in sentences a reader can quote.

The answer is the leaderboard's ranking (ranking.RULE), never a new statistic: rank 1 with its
final-validation and test values, chance level and split sizes; then either the arms shown worse
than it, or, when none is, the plain statement that the arms cannot be told apart at the seeds run,
with the smallest difference the design detects, the seeds that would detect the largest difference
seen and the command that adds them. Arms with one seed are listed with what they scored and are
never ranked.

A comparison whose arms cannot differ here (analysis/regime.py: every arm at chance, every arm at the
ceiling, or still improving at the end; analysis/decisions.py: an arm at its tuned lr that did not train, by
the claims' rule) says so instead, "not testable here: REASON — testable with
WHAT", with no seeds and no command: more seeds of such a setup decide nothing. Every answer states
the scale its runs were measured at (its caveat).
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from normbench.analysis.result import (
    ALPHA,
    AT_CHANCE_RUN,
    EVALUATION,
    NO_STUDY,
    POWER,
    PRIMARY,
    Comparison,
    Power,
    StudyResult,
    score_words,
)
from normbench.analysis.result import MAX_SEEDS as _MAX_SEEDS
from normbench.records import metrics as metric_table
from normbench.records.metrics import TIMING_NOISY
from normbench.report.figures import METRIC_RANGE
from normbench.report.tables import interval, number

_LISTED = 5  # arms named in a sentence before "and N more"


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
    design: str = ""              # the study's sequential design: looks, levels, stop reason
    regime: str = ""              # "not testable here: REASON — testable with WHAT" (analysis/regime.py), "" when testable
    scale: str = ""               # what it was measured at (regime.scale_text)
    lr: str = ""                  # how the arms' lrs were set: tuned per arm, shared or fixed (analysis/lr_protocol.py)


def _interval(low: float, high: float, metric: str) -> str:
    """The 95% interval, clipped to what the metric can be (a t-interval on 3 seeds can reach below 0 MSE)."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return "interval undefined"
    floor, ceiling = METRIC_RANGE.get(metric, (None, None))
    low = low if floor is None else max(low, floor)
    high = high if ceiling is None else min(high, ceiling)
    return f"95% CI {interval(low, high)}"


def _value(row: pd.Series, name: str, metric: str) -> str:
    if pd.isna(row.get(f"{name}_mean")):
        return "not recorded"
    text = number(row[f"{name}_mean"], 3)
    if (row.get(f"{name}_n") or 0) >= 2:
        text += f" ({_interval(row[f'{name}_ci_low'], row[f'{name}_ci_high'], metric)})"
    return text


def seeds_words(n) -> str:
    """"3 seeds", "1 seed"."""
    n = int(n)
    return f"{n} seed{'s' if n != 1 else ''}"


def _score(row: pd.Series) -> str:
    """The score a summary row's study is read on (its ``score`` column; the primary for older summaries)."""
    return str(row.get("score") or PRIMARY)


def _task_facts(runs: pd.DataFrame) -> str:
    """Chance level and split sizes, as recorded by the runs."""
    first = runs.iloc[0]
    parts = [f"chance {number(first.get('task.chance'), 3)}"]
    sizes = [f"{number(first.get(f'task.n_{s}'))} {s}" for s in ("train", "val", "test")
             if pd.notna(first.get(f"task.n_{s}"))]
    if sizes:
        parts.append("examples: " + ", ".join(sizes))
    return "; ".join(parts)


def _difference_text(value: float, metric: str, ratio: bool) -> str:
    """A difference on the compared scale in the metric's words: ×ratio for a ratio metric."""
    return f"×{number(math.exp(value), 3)}" if ratio else f"{number(value, 2)} {metric}"


def _failures(row: pd.Series) -> str:
    """" (1 of 3 diverged, 1 stayed at chance)": what counts against an arm, beside its mark."""
    parts = [f"{int(row.get('n_diverged') or 0)} diverged" if int(row.get("n_diverged") or 0) else "",
             f"{int(row.get('at_chance') or 0)} {AT_CHANCE_RUN}" if int(row.get("at_chance") or 0) else ""]
    parts = [p for p in parts if p]
    return f" ({', '.join(parts)} of {int(row['n'])})" if parts else ""


def study_command(summary_rows: pd.DataFrame, runs: pd.DataFrame | None = None) -> str:
    """The command that would add seeds to this study until it is decided: the study runner's, at
    the lr an Optuna sweep found (its sweep folder's optimization_results.yaml) where one did; for a
    tuned study (normbench.studies.tune) tune's own, into its folder with more evaluation seeds, so that the
    lrs chosen on the selection seeds are carried on and never judged on the seeds that chose them."""
    command = str(summary_rows["study_command"].iloc[0]) if "study_command" in summary_rows else ""
    overrides = command.removeprefix("python -m normbench -m").strip()
    if not overrides:
        return ""
    from normbench.configuration.contract import HARNESS  # how the runs ran is the runner's choice, not the question's

    kept = [o for o in shlex.split(overrides)
            if o.split("=", 1)[0].lstrip("+~") not in ("seed", *HARNESS) and not o.startswith("hydra")]
    run_dirs = [Path(str(d)) for d in runs["run_dir"]] if runs is not None and "run_dir" in runs else []
    folders = {d.parent.parent for d in run_dirs}  # tune's DIR: DIR/selection/N and DIR/evaluation/N
    if run_dirs and "study.name" in runs and set(runs["study.name"].astype(str)) == {"tuned"} and len(folders) == 1:
        roles = runs["axes.role"] if "axes.role" in runs else pd.Series("", index=runs.index)
        evaluated = sorted({int(seed) for seed in runs.loc[roles == EVALUATION, "seed"].dropna()})
        more = [*evaluated, *range(evaluated[-1] + 1, evaluated[-1] + 1 + len(evaluated))] if evaluated else []
        return " ".join(["python -m normbench tune", "--out", shlex.quote(str(folders.pop())),
                         *(["--evaluation-seeds", ",".join(map(str, more))] if more else []),
                         *(shlex.quote(o) for o in kept)])
    found = {_optuna_lr(folder) for folder in {d.parent for d in run_dirs}} - {None}
    if len(found) == 1:  # the lr the sweep's Optuna study found replaces the one it searched from
        kept = [o for o in kept if o.split("=", 1)[0].lstrip("+~") != "lr"] + [f"lr={found.pop()!r}"]
    return "python -m normbench study " + " ".join(shlex.quote(o) for o in kept) + " --budget 30m"


def _optuna_lr(sweep_dir: Path) -> float | None:
    """best_params.lr of an Optuna sweep's optimization_results.yaml, read as data (a regular file, at
    most 1 MiB, safe YAML); None when there is none or it holds no positive finite lr."""
    import yaml

    from normbench.records.record import Unreadable, read_run_file

    try:
        results = yaml.safe_load(read_run_file(sweep_dir / "optimization_results.yaml", 1 << 20))
    except (Unreadable, yaml.YAMLError, UnicodeDecodeError, RecursionError):
        return None
    best = results.get("best_params") if isinstance(results, dict) else None
    lr = best.get("lr") if isinstance(best, dict) else None
    if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not math.isfinite(lr) or lr <= 0:
        return None
    return float(lr)


def comparison_answer(comparison: Comparison, runs: pd.DataFrame) -> TaskAnswer:
    """The answer for one comparison (analysis/result.py: its summary rows, ranked first, and what was
    decided on them); ``runs`` its runs."""
    rows, design = comparison.rows, comparison.design
    first = rows.iloc[0]
    task, metric, higher = str(first["task"]), str(first["metric"]), bool(first["higher_is_better"])
    if str(first.get("condition") or ""):  # ranked within this condition only (analysis/conditions.py)
        task = f"{task} at {first['condition']}"
    title = str(first.get("study_name", "") or "")
    title = "" if title == NO_STUDY else title
    purpose = str(first.get("study_purpose", "") or "")
    study = title + (f": {purpose}" if purpose else "")
    ranked, single = rows[rows["rank"].notna()].sort_values("rank"), rows[rows["rank"].isna()]
    lone = [f"{row['arm']}: " + (f"all {int(row['n'])} runs diverged" if int(row["n_ok"]) == 0 and int(row["n_diverged"])
                                else f"all {int(row['n'])} runs failed{_failures(row)}"
                                if int(row.get("failed") or 0) >= int(row["n"]) > 0
                                else f"{number(row[_score(row) + '_mean'], 3)} ({seeds_words(row['seeds'])})")
            for _, row in single.iterrows()]
    command = study_command(rows, runs)
    facts = _task_facts(runs) if len(runs) else ""
    if ranked.empty:
        headline = (f"On {task}, no arm is ranked yet: every arm ran 1 seed (or none trained), so none can be "
                    f"compared ({facts}).")
        gate, measured = comparison.gate, comparison.scale
        return TaskAnswer(task, metric, higher, headline, study, also=gate.text[0].upper() + gate.text[1:] + "."
                          if gate is not None else "", single=lone, command="" if gate is not None else command,
                          caveat=_scale_caveat(measured), design=design.text() if design is not None else "",
                          regime=gate.text if gate is not None else "", scale=measured)
    best = ranked.iloc[0]
    headline = _winner_headline(first, ranked, best, task, metric, facts)
    also = _others_text(rows, comparison.power, ranked, first, metric)
    decided = bool(rows["best"].any()) and not len(single)  # a ranking that informs, every arm compared
    gate, measured = comparison.gate, comparison.scale
    if gate is not None:  # the setup cannot tell the arms apart: no seeds, no budget would
        # the bold line is the gate, never a "ranks first" the gate voids; the ranking follows as what it is
        also = f"As the scores stand (this answers nothing here), {headline.removeprefix(f'On {task}, ')}"
        headline, command = f"On {task}: {gate.text}.", ""
    return TaskAnswer(task, metric, higher, headline, study, also, _tradeoff(best, ranked), lone,
                      "" if decided else command, _scale_caveat(measured),
                      design=design.text() if design is not None else "",
                      regime=gate.text if gate is not None else "", scale=measured)


def _winner_headline(first: pd.Series, ranked: pd.DataFrame, best: pd.Series, task: str, metric: str,
                     facts: str) -> str:
    """The answer's first sentence: the arm ranked first (or the arms tied for it), its scores and seeds."""
    score = str(first.get("score") or PRIMARY)
    read_on = score_words(score)  # the score the study is read on, named (rules.score_words)
    tied = ranked[ranked["rank"] == best["rank"]] if "tie" in ranked and bool(best.get("tie")) else ranked.iloc[:1]
    if len(tied) > 1:
        arms = [str(a) for a in tied["arm"]]
        names = "; ".join(arms[:-1]) + " and " + arms[-1]  # labels hold commas themselves
        return (f"On {task}, {names} tie for first: {read_on} {metric} {_value(best, score, metric)}, "
                f"test {_value(best, 'test', metric)} ({best['arm']}), {seeds_words(best['seeds'])} each ({facts}); "
                f"the ranking's rule does not separate them.")
    if str(first.get("study_role")) == EVALUATION:  # a tuned study: each arm at its chosen lr, ranked on test
        return (f"On {task}, each arm at its tuned lr, {best['arm']} ranks first: test {metric} "
                f"{_value(best, 'test', metric)}, final val {_value(best, 'final_val', metric)}, "
                f"{seeds_words(best['seeds'])} ({facts}).")
    return (f"On {task}, {best['arm']} ranks first{_failures(best)}: {read_on} {metric} "
            f"{_value(best, score, metric)}, test {_value(best, 'test', metric)}, {seeds_words(best['seeds'])} ({facts}).")


def _others_text(rows: pd.DataFrame, power: Power | None, ranked: pd.DataFrame, first: pd.Series,
                 metric: str) -> str:
    """What the other ranked arms are: could also be the best (★), shown worse, or not told apart
    (then the smallest difference the design detects and the seeds that would decide: ``power``)."""
    score = str(first.get("score") or PRIMARY)
    others = ranked.iloc[1:]
    if others.empty:
        return "No other arm ran 2 or more seeds, so nothing was compared with it."
    if bool(rows["best"].any()):
        worse = others[others["shown_worse"].astype(bool)]
        kept = others[~others["shown_worse"].astype(bool)]
        listed = ", ".join(f"{r['arm']} {number(r[f'{score}_mean'], 3)}{_failures(r)}" for _, r in kept.head(_LISTED).iterrows())
        more = f" and {len(kept) - _LISTED} more" if len(kept) > _LISTED else ""
        also = (f"Could also be the best (★): {listed}{more}. " if len(kept) else "Every other arm is shown worse. ")
        if len(kept):
            also += f"Shown worse: {len(worse)} of {len(others)} other arms."
        return also
    level = float(first.get("level") or ALPHA)
    mde, needed, largest, ratio = power.mde, power.needed, power.largest, power.ratio
    n = int(ranked["seeds"].min())
    delta, delta_text = power.delta, power.delta_text
    alike = (f"the largest difference seen ({_difference_text(largest, metric, ratio)}) is smaller than the smallest "
             f"effect of interest ({delta_text}): no difference that matters was seen, none is excluded."
             if math.isfinite(largest) and largest < delta else "")
    return (f"The {len(ranked)} arms cannot be told apart at {n} seeds: no arm is shown worse (level {level:.3g}). "
            + (f"The smallest difference this design detects is {_difference_text(mde, metric, ratio)} (one-sided at "
               f"{level:.3g}/{len(ranked) - 1}, power {POWER:g}); " if math.isfinite(mde) else "")
            + (alike or (f"about {needed} seeds per arm would detect the largest difference seen "
                         f"({_difference_text(largest, metric, ratio)})." if needed else
                         f"the largest difference seen ({_difference_text(largest, metric, ratio)}) would need more "
                         f"than {_MAX_SEEDS} seeds per arm." if math.isfinite(largest) else "")))


def _scale_caveat(measured: str) -> str:
    return measured[0].upper() + measured[1:] + "." if measured else ""


def _tradeoff(best: pd.Series, ranked: pd.DataFrame) -> str:
    parts = []
    diverged, stuck = int(best["n_diverged"]), int(best.get("at_chance") or 0)
    parts.append(f"{diverged} of {int(best['n'])} of its runs diverged" if diverged
                 else f"none of its {int(best['n'])} runs diverged")
    if stuck:
        parts.append(f"{stuck} of its runs {AT_CHANCE_RUN} (never left the chance band)")
    unstable = ranked[(ranked["divergence_rate"] > 0) | (ranked.get("at_chance", 0) > 0)]
    if len(unstable):
        parts.append(f"{len(unstable)} arm(s) had a run that diverged or {AT_CHANCE_RUN}")
    speed = best.get("samples_per_s_median")
    if speed is not None and pd.notna(speed):
        noisy = best.get("timing_noise_median")
        flag = ("paired timing of the arms" if best.get("timing") == "paired" else
                "per-run timing, noisy" + (f": p90/p10 {noisy:.2g}" if pd.notna(noisy) and noisy > TIMING_NOISY else ""))
        parts.append(f"it trained at {number(speed, 3)} {metric_table.metric('samples_per_s').unit} ({flag})")
    text = "; ".join(parts)
    return text[0].upper() + text[1:] + "."


def answers(result: StudyResult) -> list[TaskAnswer]:
    """One answer per comparison (study and task), in the leaderboard's order (result.comparisons: each
    with its study's sequential design, whose looks, levels and stop reason its answer states, and its
    lr protocol, read from every run, a tuned study's selection runs too)."""
    runs = result.answered[0]
    out = []
    for comparison in result.comparisons:
        answer = comparison_answer(comparison, runs[runs["group"].isin(comparison.rows["group"])])
        answer.lr = comparison.lr
        out.append(answer)
    return out
