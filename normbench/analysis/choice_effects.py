"""The synthesis' numbers (report/synthesis.py formats them): which settings a comparison's arms vary,
whether an arm sits on its task's trivial plateau, and the effect of the best arm over the best arm
shown worse, paired by seed where they share seeds. Read through the result (analysis/result.py).
"""

from __future__ import annotations

import math

import pandas as pd

from normbench.analysis import lr_protocol, regime, rules, tuning
from normbench.analysis.aggregate import varying_axes
from normbench.analysis.intervals import decision_level, seed_difference
from normbench.analysis.ranking import comparison_level, comparison_score


def varying(runs: pd.DataFrame) -> list[str]:
    return varying_axes(runs if "status" in runs else runs.assign(status="ok"))


def on_plateau(frame: pd.DataFrame, runs: pd.DataFrame) -> bool:
    """Whether one arm's finished runs sit on one of the task's trivial solutions (regime.on_plateau)."""
    # the arm's own task and score, not the first row of ``runs`` (a report holds several tasks: bpc arms were
    # read as accuracy, every one "at or below" a trivial solution)
    return "status" in frame and regime.on_plateau({"arm": frame}, frame) is not None


def grid_end(frame: pd.DataFrame, runs: pd.DataFrame) -> str:
    """"lowest" or "highest" where one arm's lr (a tuned study's evaluation runs) is an end of the grid its study
    selected over, so its best may lie past it (referee 17: LNS recommended at the top of a 3-point grid); ""
    inside the grid, or where no grid was searched."""
    if tuning.LR not in frame or tuning.ROLE not in runs or "study" not in frame or frame.empty:
        return ""
    study = runs[(runs["study"] == frame["study"].iloc[0]) & (runs[tuning.ROLE] == tuning.SELECTION)]
    grid = sorted({float(v) for v in study[tuning.LR].dropna()})
    ends = {lr_protocol.grid_edge(lr, grid) for lr in frame[tuning.LR].dropna()} - {""}
    return " and ".join(sorted(ends))


def _scores(frame: pd.DataFrame, score: str) -> pd.DataFrame:
    finished = frame[(frame["status"] == "ok") & ~rules.at_chance(frame)]
    metric = finished["task.metric"].iloc[0] if "task.metric" in finished and len(finished) else None
    values = rules.to_scale(pd.to_numeric(finished[score], errors="coerce"), metric)
    return pd.DataFrame({"value": values, "seed": finished["seed"] if "seed" in finished else range(len(finished))})


def _difference(best: pd.DataFrame, other: pd.DataFrame, runs: pd.DataFrame, alpha: float = rules.ALPHA,
                arms: int = 2):
    """(estimate, paired seeds, seeds, its interval, the metric, higher is better) of best − other on the compared
    score (on the log scale for a metric spanning decades), paired by seed where they share seeds, the interval at
    the best set's level for one of its comparisons (ranking.comparison_level of ``alpha`` over ``arms`` ranked
    arms: 1 − 2α at 2); None where the runs carry no score."""
    # the two arms' own task, not the first row of ``runs``: a study (rnn_table) or a report holds several
    # tasks, and digits' "accuracy, higher is better" labelled an mse log ratio and a bpc difference
    both = pd.concat([best, other])
    # the score the best set ranks these arms on (ranking.rank_groups): decided by their own runs, one comparison's
    # (a tuned study's evaluation runs: the test split), never by the report's (referee 21: the validation score)
    score = comparison_score(both, rules.score_column(both))
    if score not in runs or "status" not in runs:  # a summary without its runs' scores: no effect to state
        return None
    a, b = _scores(best, score), _scores(other, score)
    estimate, paired = seed_difference(a["value"], a["seed"], b["value"], b["seed"])
    metric = str(both["task.metric"].dropna().iloc[0]) if "task.metric" in both and both["task.metric"].notna().any() \
        else "score"
    interval = estimate.interval(decision_level(comparison_level(alpha, arms)))
    seeds = paired or min(a["seed"].nunique(), b["seed"].nunique())
    found = rules.task_metric(metric)
    higher = (found.higher_is_better if found is not None
              else bool(both["task.higher_is_better"].iloc[0]) if "task.higher_is_better" in both and len(both) else True)
    return estimate, paired, seeds, interval, metric, higher


def shown_worse(other: pd.DataFrame, best: pd.DataFrame, runs: pd.DataFrame, alpha: float = rules.ALPHA,
                arms: int = 2) -> bool:
    """Whether ``other`` is shown worse than ``best`` by the synthesis' own comparison (effect's: paired by seed
    where they share seeds, its interval clear of 0): the "or X" of a recommendation must not offer an
    arm its own effect line would show worse. ``alpha`` and ``arms``: the study's level and its ranked arms,
    read at the best set's level for one comparison (ranking.comparison_level): the leaderboard's own test."""
    found = _difference(best, other, runs, alpha, arms)
    if found is None or found[3] is None:
        return False
    _, _, _, (low, high), _, higher = found
    return low > 0 if higher else high < 0


def effect(best: pd.DataFrame, other: pd.DataFrame, other_name: str, runs: pd.DataFrame,
           alpha: float = rules.ALPHA, arms: int = 2) -> str:
    """The best arm's effect over ``other`` on the compared score: a difference in the metric's units, a
    ratio for a metric spanning decades; its interval; paired by seed where they share seeds. ``alpha``
    and ``arms`` as for shown_worse."""
    found = _difference(best, other, runs, alpha, arms)
    if found is None:
        return ""
    estimate, paired, seeds, interval, metric, higher = found
    level = decision_level(comparison_level(alpha, arms))
    how = f"{'higher' if higher else 'lower'} is better; {seeds} {'paired ' if paired else ''}seeds"
    if rules.ratio_scale(metric):
        shown = f"[×{math.exp(interval[0]):.3g}, ×{math.exp(interval[1]):.3g}]" if interval else "(interval undefined)"
        return f"{metric} ×{math.exp(estimate.value):.3g} vs {other_name} ({level * 100:.3g}% {shown}; {how})"
    shown = f"[{interval[0]:+.3g}, {interval[1]:+.3g}]" if interval else "(interval undefined)"
    return f"{metric} {estimate.value:+.3g} vs {other_name} ({level * 100:.3g}% {shown}; {how})"
