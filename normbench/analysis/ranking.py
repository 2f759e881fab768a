"""Which group of a comparison is best, and which are "not shown to be worse" than it: the ★.

A comparison is the groups of one study and task (studies.py): arms that differ only in what the
study varies. Its ranking follows one stated rule (RULE below), the same in the answer, the
leaderboard and summary.csv:

1. The score is the final validation metric (the leaderboard's column), oriented so higher =
   better. A diverged run has no score and counts against its group: groups are ordered by their
   share of diverged runs first (fewest first), then by the mean score of their finished runs. A
   mostly-diverged group can therefore never be best on the strength of one surviving run.
2. Only groups with at least 2 runs (distinct seeds) and one finished run are ranked: one run has
   no spread to compare. The others are listed below the ranking with what they scored.
3. The best group is rank 1. Each other ranked group is compared with it by a one-sided test of
   "worse than the best": Welch's t-test on the scores when neither group has a diverged run;
   otherwise the Mann–Whitney U test on the scores with diverged runs ranked worst, and Fisher's
   exact test on the divergence counts, combined by Bonferroni (p = twice the smaller). Two
   groups whose runs all score one identical value are tied (p = 1); two constant groups with
   different values differ with certainty (p = 0). A group more than half of whose runs diverged,
   against a best group most of whose runs finished, is worse by definition, untested.
4. Holm's step-down correction over those m comparisons at α = 0.05. A group is "shown worse" when
   Holm rejects its p-value. The ★ marks the best group and every group not shown worse, but only
   when at least one group is shown worse: when none is, a ★ on every row would say nothing, and
   the answer says in words that the arms cannot be told apart at the seeds run.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from normbench.metrics import path

ALPHA = 0.05
_EXACT_LIMIT = 9999  # arrangements of two groups' runs up to which the rank test is exact
RULE = (
    "Ranked within each study and task on the mean final validation metric of the finished runs, "
    "fewest diverged runs first (a diverged run counts against its group); only groups with 2 or more "
    "seeds are ranked, and rank 1 is the best. ★ = the best and every group not shown worse than it: "
    "a one-sided Welch t-test against the best (Mann–Whitney U with diverged runs ranked worst plus "
    "Fisher's exact test on divergence counts, Bonferroni-combined, when a group has a diverged run), "
    f"Holm-corrected at α = {ALPHA:g}. No ★ is given when no group is shown worse."
)


@dataclass
class BestSet:
    """The outcome of the rule for one task."""

    best: str | None            # rank 1, which the others are compared with; None when no group is eligible
    members: list[str]          # the best and the groups not shown worse, best first
    order: list[str]            # the ranked (eligible) groups, rank 1 first
    comparisons: pd.DataFrame   # group, eligible, test, p, holm_threshold, shown_worse, why
    rule: str = RULE

    @property
    def informative(self) -> bool:
        """Whether a ★ says anything: some ranked group is shown worse than the best."""
        return len(self.members) < len(self.order)


def _oriented(scores: pd.Series, higher_is_better: bool) -> pd.Series:
    return scores.astype(float) if higher_is_better else -scores.astype(float)


def _worse_p(best: np.ndarray, other: np.ndarray, best_diverged: int, other_diverged: int) -> tuple[str, float]:
    """One-sided p-value of "other is worse than best"; finished scores oriented higher = better."""
    if best_diverged == 0 and other_diverged == 0:
        if np.ptp(best) == 0 and np.ptp(other) == 0:  # both constant: the difference is exact
            return "exact (both groups constant)", 0.0 if best[0] > other[0] else 1.0
        with warnings.catch_warnings():  # near-identical scores: scipy warns, the p-value is still right
            warnings.simplefilter("ignore", RuntimeWarning)
            result = stats.ttest_ind(best, other, equal_var=False, alternative="greater")
        return "Welch t (one-sided)", float(result.pvalue)
    floor = min(np.min(best, initial=0.0), np.min(other, initial=0.0)) - 1.0  # below every finished run
    ranked_best = np.concatenate([best, np.full(best_diverged, floor)])
    ranked_other = np.concatenate([other, np.full(other_diverged, floor)])
    if np.ptp(np.concatenate([ranked_best, ranked_other])) == 0:
        return "Mann–Whitney U (one-sided, all tied)", 1.0
    n1, n2 = len(ranked_best), len(ranked_other)
    # The exact permutation distribution when it is small enough to enumerate (ties handled);
    # the normal approximation beyond that.
    method = (stats.PermutationMethod(n_resamples=_EXACT_LIMIT) if math.comb(n1 + n2, n1) <= _EXACT_LIMIT
              else "asymptotic")
    ranks = float(stats.mannwhitneyu(ranked_best, ranked_other, alternative="greater", method=method).pvalue)
    # Rank tests are weak on a few runs; the divergence counts alone can be stronger evidence.
    counts = float(stats.fisher_exact([[other_diverged, len(other)], [best_diverged, len(best)]],
                                      alternative="greater").pvalue)
    return ("Mann–Whitney U (one-sided, diverged ranked worst) and Fisher's exact test on divergence counts, "
            "Bonferroni-combined"), min(1.0, 2 * min(ranks, counts))


def holm(p_values: list[float], alpha: float = ALPHA) -> tuple[list[bool], list[float]]:
    """Holm's step-down: sort p ascending, reject the i-th smallest while p ≤ α / (m − i); stop at
    the first that is not rejected. Returns (rejected, threshold) in the input order."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    rejected, thresholds = [False] * m, [math.nan] * m
    still = True
    for step, i in enumerate(order):
        thresholds[i] = alpha / (m - step)
        still = still and p_values[i] <= thresholds[i]
        rejected[i] = still
    return rejected, thresholds


def best_set(runs: pd.DataFrame, higher_is_better: bool, *, group: str = "group", status: str = "status",
             score: str = path("best_val"), alpha: float = ALPHA) -> BestSet:
    """The ★ groups of one task's runs (one row per run) under the rule in the module docstring.

    Runs whose status is neither "ok" nor "diverged" (failed, interrupted, ...) have no score and
    are left out; an "ok" run without a finite score is left out too.
    """
    finished = (runs[status] == "ok") & np.isfinite(pd.to_numeric(runs[score], errors="coerce"))
    diverged = runs[status] == "diverged"
    used = runs[finished | diverged]
    oriented = _oriented(pd.to_numeric(used[score], errors="coerce"), higher_is_better)
    is_diverged = used[status] == "diverged"

    rows, eligible = [], []
    for name, part in used.groupby(group, sort=False):
        n, n_finished = len(part), int((~is_diverged[part.index]).sum())
        why = ("fewer than 2 seeds" if n < 2 else "no finished run" if n_finished == 0 else "")
        rows.append({"group": name, "runs": n, "diverged": n - n_finished, "eligible": not why, "why": why})
        if not why:
            eligible.append(name)
    table = pd.DataFrame(rows, columns=["group", "runs", "diverged", "eligible", "why"])
    if not eligible:
        return BestSet(None, [], [], table.assign(test="", p=math.nan, holm_threshold=math.nan, shown_worse=False))

    pool = used[used[group].isin(eligible)]
    diverged_share = is_diverged[pool.index].groupby(pool[group]).mean()
    finished_mean = oriented[pool.index][~is_diverged[pool.index]].groupby(pool[group]).mean()
    order = sorted(eligible, key=lambda g: (diverged_share[g], -finished_mean.get(g, -math.inf)))
    best = order[0]

    def arm(name: str) -> tuple[np.ndarray, int]:
        mine = pool[pool[group] == name].index
        return oriented[mine][~is_diverged[mine]].to_numpy(), int(is_diverged[mine].sum())

    best_scores, best_diverged = arm(best)
    majority = best_diverged * 2 <= best_diverged + len(best_scores)  # the best's median run finished
    outcome: dict[str, tuple[str, float, float, bool]] = {}
    for name in order[1:]:
        scores, n_diverged = arm(name)
        if majority and n_diverged * 2 > n_diverged + len(scores):
            outcome[name] = ("most runs diverged (median run diverged)", math.nan, math.nan, True)
    others = [g for g in order if g != best and g not in outcome]
    tests, p_values = [], []
    for name in others:
        scores, n_diverged = arm(name)
        test, p = _worse_p(best_scores, scores, best_diverged, n_diverged)
        tests.append(test)
        p_values.append(p)
    rejected, thresholds = holm(p_values, alpha)
    outcome.update({name: (t, p, h, r) for name, t, p, h, r in zip(others, tests, p_values, thresholds, rejected)})
    table["test"] = table["group"].map(lambda g: "best" if g == best else outcome.get(g, ("",))[0])
    table["p"] = table["group"].map(lambda g: outcome[g][1] if g in outcome else math.nan)
    table["holm_threshold"] = table["group"].map(lambda g: outcome[g][2] if g in outcome else math.nan)
    table["shown_worse"] = table["group"].map(lambda g: bool(outcome[g][3]) if g in outcome else False)
    members = [best] + [g for g in order[1:] if not outcome[g][3]]
    return BestSet(best, members, order, table)


COMPARISON = ["study", "axes.role", "task.name"]  # the runs columns that make one comparison
EVALUATION = "evaluation"  # a tuned study's evaluation runs: ranked on the test split (tuning.py)


def comparisons(runs: pd.DataFrame):
    """(study, task, runs) for each comparison: the groups of one study on one task (a tuned
    study's selection and evaluation runs are two comparisons: the first chose the second's lrs)."""
    keys = [c for c in COMPARISON if c in runs]
    if runs.empty:
        return
    for key, mine in runs.groupby(keys, sort=False, dropna=False):
        values = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        yield str(values.get("study", "")), str(values["task.name"]), mine


def comparison_score(runs: pd.DataFrame, score: str) -> str:
    """The metric a comparison ranks on: the test split for a tuned study's evaluation runs."""
    if "axes.role" in runs and (runs["axes.role"] == EVALUATION).all() and path("test") in runs:
        return path("test")
    return score


def rank_groups(trained: pd.DataFrame, summary: pd.DataFrame, *, score: str = path("final_val")) -> pd.DataFrame:
    """summary.csv's `rank`, `best` (★) and `shown_worse` columns, by RULE within each comparison.

    ``trained`` is the runs table (one row per run, with study, group, status, task.name,
    task.higher_is_better and the score); ``summary`` has one row per group. Unranked groups
    (fewer than 2 seeds, no finished run) have no rank; ★ only where it informs (BestSet.informative).
    """
    columns = pd.DataFrame({"rank": math.nan, "best": False, "shown_worse": False}, index=summary.index)
    if score not in trained or trained.empty:
        return columns
    for _, _, runs in comparisons(trained):
        higher = bool(runs["task.higher_is_better"].iloc[0])
        result = best_set(runs, higher, score=comparison_score(runs, score))
        rows = summary["group"].isin(runs["group"].unique())
        position = {g: i + 1 for i, g in enumerate(result.order)}
        columns.loc[rows, "rank"] = summary.loc[rows, "group"].map(position)
        if result.informative:
            columns.loc[rows, "best"] = summary.loc[rows, "group"].isin(result.members)
        worse = set(result.comparisons.loc[result.comparisons["shown_worse"].astype(bool), "group"])
        columns.loc[rows, "shown_worse"] = summary.loc[rows, "group"].isin(worse)
    return columns
