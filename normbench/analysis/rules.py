"""The decision rules, written once: what is compared, at which level, on which scale, within which margin.

Every surface that turns numbers into words (a run's last line, the terminal table at the end of a
sweep, the heatmaps, leaderboard, answers, claims, ``compare``, ``tune``, the study runner) takes
these from here:

- **The primary score** is the last validation evaluation (``final_val``) unless the runs'
  ``optimized_metric`` names ``best_val`` or ``final_val_smoothed`` (the mean of the last 3
  evaluations, normbench/records/convergence.py); the secondary stays visible as a labelled value.
  A claim's final-quality verdict reads ``final_quality_score``: the primary, except that a last
  evaluation under a constant lr is replaced by the mean of the last 3 (one iterate is noise there).
  A tuned study's evaluation runs rank on the test split by design (ranking.comparison_score).
- **The level** of a study is the one its design spent: a sequential study's last look
  (normbench.studies.study), ALPHA for a plain sweep. Its ranking, best set, answers, claims, smallest
  detectable difference and seeds-to-decide all use it.
- **The scale**: a task metric the metric table marks ``ratio`` (MSE), and a record metric whose unit is
  ``loss``, are compared on the log scale; their
  differences, intervals and detectable effects are ratios.
- **The margin** of every equivalence, non-inferiority and "alike" statement is the metric's
  declared smallest effect of interest (normbench/records/metrics.py; on the log scale for a ratio metric).
- **Stayed at chance**: a finished run whose best evaluation never left the metric's chance band is
  a failure, counted like a divergence (the leaderboard's "at chance"; runs.csv's ``metrics.at_chance``,
  summary.csv's ``at_chance``).
- **Did not learn the task**: a finished run that trained but whose best evaluation stays at or
  below one of the task's trivial solutions (the record's ``task.trivial``: mqar's any value from the
  context, a character model's unigram or bigram model, a classifier's majority class;
  normbench/tasks/trivial.py), within the metric's chance band of it. It learned a shortcut, not
  the task: not a failure, but a comparison whose arms all sit on one plateau is not testable
  (analysis/regime.py).
- **Did not train**: one rule on every surface that says it (the claims' failure rates, their arm_trains
  check, the answers' and the synthesis' untrained-arm gate): diverged, stayed at chance, or did not learn
  the task (failed_to_learn; runs.csv's ``metrics.failed_to_learn`` and ``metrics.held_at``, summary.csv's
  ``failed_to_learn``). A run held at the bigram model did not train; it did not stay at chance.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from normbench.records import metrics as metric_table

ALPHA = 0.05   # per direction: the level of a plain sweep's ranking, best set and claims
POWER = 0.8    # of the smallest detectable difference and of "about N seeds would decide"
LEVEL = 0.95   # of the intervals shown in tables (a display level, not a test's)
CONFIG_KEY = metric_table.CONFIG_KEY
PRIMARY, SECONDARY = metric_table.PRIMARY_SCORE, metric_table.SECONDARY_SCORE
NOT_TRAINED = "did not train"  # failed_to_learn: diverged, at chance or held at a trivial solution
AT_CHANCE_RUN = "stayed at chance"  # at_chance (the chance band alone): the leaderboard's "at chance"
NOT_LEARNED = "did not learn the task"
TRIVIAL = "task.trivial."  # the runs frame's columns of the task's trivial solutions: task.trivial.<name>


STUDY_SCORE = "study.score"  # the runs frame's column of the score each run's study is read on (study_scores)


def primary(runs: pd.DataFrame | None = None) -> str:
    """The record key of the primary score: the runs' ``optimized_metric`` when they all name one of the other
    scores (best_val, final_val_smoothed); else the score the runs' study is read on where they carry it (their
    ``study.score``, set once per study by study_scores: under a constant lr the mean of the last evaluations)
    and all name one; else final_val. Every consumer asks here (or records/metrics.record_score for one record): the
    leaderboard, the answers, the synthesis, the claims, compare, the sweep's table and objective."""
    named = _one_score(runs, CONFIG_KEY)
    if named is not None and named != PRIMARY:
        return named
    return _one_score(runs, STUDY_SCORE) or named or PRIMARY


def _one_score(runs: pd.DataFrame | None, column: str) -> str | None:
    """The one score the runs' ``column`` names, None when it names none or several."""
    if runs is not None and column in runs:
        named = set(runs[column].dropna().astype(str))
        if len(named) == 1 and (key := named.pop()) in metric_table.SCORES:
            return key
    return None


SCHEDULE = "axes.optim.schedule"  # the lr after warm-up: constant (the default, unrecorded) or a decay (cosine)


def constant_lr(runs: pd.DataFrame) -> pd.Series:
    """Per run: whether it kept one learning rate to the end (optim.schedule constant; a record without the
    setting ran at its default, constant)."""
    if SCHEDULE not in runs:
        return pd.Series(True, index=runs.index, dtype=bool)
    return runs[SCHEDULE].fillna("constant").astype(str) == "constant"


def final_quality_score(runs: pd.DataFrame) -> str:
    """The score a final-quality verdict (a claim part on the task score) reads: primary(runs), except where
    that is the last evaluation and some run kept a constant lr to the end: there the last evaluation is one
    iterate's noise (referee 19: ×0.318 on the last iterate, ×0.56 [0.14, 2.27] on the mean of the last 3), so
    the verdict reads final_val_smoothed, the mean of the last 3 evaluations, which the records hold. A decaying
    schedule (cosine) ends at its settled point and keeps the last evaluation; records without the smoothed
    score (from before it was recorded) keep it too."""
    chosen = primary(runs)
    smoothed = metric_table.path(metric_table.SMOOTHED_SCORE)
    if chosen != PRIMARY or runs.empty or not constant_lr(runs).any() or smoothed not in runs:
        return chosen
    finished = runs[runs["status"] == "ok"] if "status" in runs else runs
    held = pd.to_numeric(finished[smoothed], errors="coerce").notna()
    return metric_table.SMOOTHED_SCORE if len(finished) and held.all() else chosen


def study_scores(runs: pd.DataFrame) -> pd.Series:
    """Per run: the score its study is read on, final_quality_score of the study's runs, decided once per study so
    that every surface (claims, leaderboard, answers, synthesis, figures) reads the same one (the ``study`` column;
    absent: one study)."""
    if runs.empty:
        return pd.Series(dtype=object, index=runs.index)
    if "study" not in runs:
        return pd.Series(final_quality_score(runs.drop(columns=[STUDY_SCORE], errors="ignore")), index=runs.index,
                         dtype=object)
    label = runs["study"].astype(object).where(runs["study"].notna(), "").astype(str)
    out = pd.Series(None, index=runs.index, dtype=object)
    for _, frame in runs.groupby(label, sort=False):
        out[frame.index] = final_quality_score(frame.drop(columns=[STUDY_SCORE], errors="ignore"))
    return out


SCORE_WORDS = {PRIMARY: "final val", SECONDARY: "best val (optimized_metric)",
               metric_table.SMOOTHED_SCORE: "final (mean of the last 3 evaluations: constant lr)"}


def score_words(key: str) -> str:
    """What a reader calls the score ``key`` a study is read on (the page's score lines and table headers)."""
    return SCORE_WORDS.get(key, key)


def score_column(runs: pd.DataFrame) -> str:
    """The runs frame's column the runs are ranked on: primary_column, or the other of final_val and best_val
    for records that lack it (versions before final_val)."""
    score = primary_column(runs)
    main, other = metric_table.path(PRIMARY), metric_table.path(SECONDARY)
    fallback = other if score == main else main
    return score if score in runs and runs[score].notna().any() or fallback not in runs else fallback


def primary_column(runs: pd.DataFrame | None = None) -> str:
    """The runs frame's column of the primary score (metrics.final_val)."""
    return metric_table.path(primary(runs))


def task_metric(name: object) -> metric_table.TaskMetric | None:
    return metric_table.TASK_METRICS.get(str(name)) if isinstance(name, str) else None


def ratio_scale(name: object) -> bool:
    """Whether the task metric ``name`` is compared as a ratio (log scale)."""
    found = task_metric(name)
    return bool(found and found.ratio)


def ratio_record_metric(key: str) -> bool:
    """Whether the record metric ``key`` is compared as a ratio (log scale): a loss (the metric table's unit
    "loss": training losses and their areas span decades, like MSE)."""
    return metric_table.metric(key).unit == "loss"


def to_scale(values, name: object) -> np.ndarray:
    """Scores on the scale they are compared on: log for a ratio metric (non-positive values: NaN)."""
    x = np.asarray(values, dtype=float)
    if not ratio_scale(name):
        return x
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(x > 0, np.log(np.where(x > 0, x, 1.0)), np.nan)


def margin(name: object) -> tuple[float, str]:
    """(δ on the compared scale, its words) for task metric ``name``: the smallest effect of interest."""
    found = task_metric(name)
    if found is None:
        return metric_table.TASK_METRICS["accuracy"].smallest_effect, f"δ = {metric_table.TASK_METRICS['accuracy'].smallest_effect:g}"
    if found.ratio:
        return math.log(found.smallest_effect), f"δ = ×{found.smallest_effect:g} {name}"
    return found.smallest_effect, f"δ = {found.smallest_effect:g} {name}"


def chance_limit(name: object, chance: float | None) -> float | None:
    """The edge of the chance band: a score on chance's side of it (or at it) never trained."""
    found = task_metric(name)
    if found is None or chance is None or not math.isfinite(chance):
        return None
    if found.ratio:
        return chance * found.chance_band if found.higher_is_better else chance / found.chance_band
    return chance + found.chance_band if found.higher_is_better else chance - found.chance_band


def in_chance_band(best: float | None, name: object, chance: float | None) -> bool:
    """Whether a best evaluation ``best`` never left the chance band of the task metric ``name``."""
    limit = chance_limit(name, chance)
    if limit is None or best is None or not math.isfinite(best):
        return False
    higher = task_metric(name).higher_is_better
    return best <= limit if higher else best >= limit


def at_chance(runs: pd.DataFrame) -> pd.Series:
    """Per run: finished ("ok") but its best evaluation never left the chance band (in_chance_band): a
    failure, counted like a divergence. Decided here from what the run measured, whenever records are
    read; a frozen copy in an older record (its metrics.did_not_train, read as metrics.at_chance) is not read:
    a changed band judges old and new records alike."""
    if runs.empty:
        return pd.Series(False, index=runs.index, dtype=bool)
    best = pd.to_numeric(runs.get(metric_table.path(SECONDARY), pd.Series(np.nan, index=runs.index)), errors="coerce")
    chance = pd.to_numeric(runs.get("task.chance", pd.Series(np.nan, index=runs.index)), errors="coerce")
    names = runs.get("task.metric", pd.Series(None, index=runs.index, dtype=object))
    band = pd.Series([in_chance_band(b, n, c) for b, n, c in zip(best, names, chance)], index=runs.index, dtype=bool)
    return band & (runs["status"] == "ok")


def at_chance_column(runs: pd.DataFrame) -> pd.Series:
    """The runs frame's ``metrics.at_chance``: at_chance as 1.0 / 0.0 for a finished run that did not
    diverge, NaN for the others (a diverged run has its own failure; an unfinished one no metrics)."""
    diverged = runs.get(metric_table.path("diverged_at_step"), pd.Series(np.nan, index=runs.index)).notna()
    finished = runs["status"] == "ok" if "status" in runs else pd.Series(False, index=runs.index)
    return at_chance(runs).astype(float).where(finished & ~diverged)


def trivial_columns(runs: pd.DataFrame) -> list[str]:
    """The runs frame's columns of trivial solutions (task.trivial.<name>), in the frame's order."""
    return [column for column in runs.columns if str(column).startswith(TRIVIAL)]


def plateau_band(name: object) -> float | None:
    """How near a trivial solution a score sits on it: the metric's chance band (a ratio when ``ratio``)."""
    found = task_metric(name)
    return None if found is None else found.chance_band


def not_beyond(value: float | None, name: object, plateau: float | None) -> bool:
    """Whether score ``value`` stays at or below the trivial solution ``plateau``: it does not beat it by
    more than the band (plateau_band)."""
    found, band = task_metric(name), plateau_band(name)
    if found is None or value is None or plateau is None or not (math.isfinite(value) and math.isfinite(plateau)):
        return False
    if found.ratio:
        limit = plateau * band if found.higher_is_better else plateau / band
    else:
        limit = plateau + band if found.higher_is_better else plateau - band
    return value <= limit if found.higher_is_better else value >= limit


def sits_on(value: float | None, name: object, plateau: float | None) -> bool:
    """Whether score ``value`` is within the band of the trivial solution ``plateau``, on either side."""
    found, band = task_metric(name), plateau_band(name)
    if found is None or value is None or plateau is None or not (math.isfinite(value) and math.isfinite(plateau)):
        return False
    if found.ratio:
        return value > 0 and plateau > 0 and max(value / plateau, plateau / value) <= band
    return abs(value - plateau) <= band + 1e-12  # a score exactly at the band's edge is on it


def plateaus(runs: pd.DataFrame) -> pd.Series:
    """Per run: the trivial solution its best evaluation is held at: the worst one it does not get beyond
    (not_beyond), None where it gets beyond them all or its task declares none."""
    out = pd.Series(None, index=runs.index, dtype=object)
    columns = trivial_columns(runs)
    if runs.empty or not columns:
        return out
    best = pd.to_numeric(runs.get(metric_table.path(SECONDARY), pd.Series(np.nan, index=runs.index)), errors="coerce")
    names = runs.get("task.metric", pd.Series(None, index=runs.index, dtype=object))
    for index in runs.index:
        name = names[index]
        found = task_metric(name)
        if found is None:
            continue
        held = [(float(v), column.removeprefix(TRIVIAL)) for column in columns
                if math.isfinite(v := pd.to_numeric(runs.at[index, column], errors="coerce"))
                and not_beyond(best[index], name, float(v))]
        if held:  # a run at 4.7 bits/char has not beaten the bigram model either, but it is held at the unigram's
            out[index] = (min(held) if found.higher_is_better else max(held))[1]
    return out


def not_learned(runs: pd.DataFrame) -> pd.Series:
    """Per run: finished ("ok"), trained (left the chance band), but its best evaluation stays at or below a
    trivial solution of its task: it "did not learn the task"."""
    if runs.empty:
        return pd.Series(False, index=runs.index, dtype=bool)
    return plateaus(runs).notna() & (runs["status"] == "ok") & ~at_chance(runs)


def failed(runs: pd.DataFrame) -> pd.Series:
    """Per run: diverged or stayed at chance (at_chance): a run that counts against its arm."""
    return (runs["status"] == "diverged") | at_chance(runs)


def failed_to_learn(runs: pd.DataFrame) -> pd.Series:
    """Per run: the one "did not train" of the failure-rate claims and their regime checks: diverged, left in
    the chance band, or held at one of the task's trivial solutions (not_learned). A Post-LN run that reached
    the bigram model and one that stayed at the unigram model both failed to learn the task; counting only
    the second would call the first "trained" in one verdict while another calls both trivial."""
    return failed(runs) | not_learned(runs)


def failed_to_learn_column(runs: pd.DataFrame) -> pd.Series:
    """The runs frame's ``metrics.failed_to_learn``: failed_to_learn as 1.0 / 0.0 for a run that finished or
    diverged, NaN for the others (failed, interrupted: no verdict on a run that did not end)."""
    ended = runs["status"].isin(("ok", "diverged")) if "status" in runs else pd.Series(False, index=runs.index)
    return failed_to_learn(runs).astype(float).where(ended)


def held_at_column(runs: pd.DataFrame) -> pd.Series:
    """The runs frame's ``metrics.held_at``: the trivial solution (plateaus: its task.trivial.<name>'s name) a
    finished run's best evaluation does not get beyond, None where it gets beyond them all, its task declares
    none, or it did not finish (a diverged run's failure is its divergence)."""
    finished = runs["status"] == "ok" if "status" in runs else pd.Series(False, index=runs.index)
    return plateaus(runs).where(finished, None)


def bonferroni(alpha: float, comparisons: int) -> float:
    """The level of each of ``comparisons`` tests whose union keeps the error at ``alpha``."""
    return alpha / max(1, comparisons)


# --- regimes (analysis/regime.py) ---------------------------------------------------------------
FINAL_SHARE = 0.25    # "still improving": the final share of a run whose evaluations the last one is held against
RATIO_CEILING = 0.01  # a ratio metric (MSE, bound 0) is at its ceiling below this fraction of chance


def best_value(name: object) -> float | None:
    """The best value the task metric ``name`` can take (accuracy 1, MSE and bits/char 0), None when unknown."""
    found = task_metric(name)
    if found is None:
        return None
    return found.bounds[1] if found.higher_is_better else found.bounds[0]


def ceiling_limit(name: object, chance: float | None) -> float | None:
    """The edge of the ceiling: a mean on the bound's side of it is within the smallest effect of interest of
    the best possible value. A ratio metric's margin is a ratio, which no value has to a bound of 0: its
    ceiling is RATIO_CEILING × chance (an MSE a hundredth of chance's)."""
    found, bound = task_metric(name), best_value(name)
    if found is None or bound is None:
        return None
    if found.ratio:
        return chance * RATIO_CEILING if chance is not None and math.isfinite(chance) and chance > 0 else None
    return bound - found.smallest_effect if found.higher_is_better else bound + found.smallest_effect


def ceiling_words(name: object) -> str:
    """How close to the bound the ceiling is, in words."""
    found = task_metric(name)
    if found is not None and found.ratio:
        return f"{RATIO_CEILING:g} × chance"
    return f"the smallest effect of interest ({margin(name)[1]})"
