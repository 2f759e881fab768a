"""The best set's tests, computed faster, give scipy's p-values bit for bit (ranking.py).

The rank test's exact p is a count of the splits whose rank sum reaches the observed one, where scipy's
``PermutationMethod`` enumerates every split; the paired t reads each group's per-seed means taken once, where
it regrouped both groups' runs for every pair. The references below are the old calls, kept here frozen.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from normbench.analysis import ranking
from normbench.analysis.ranking import _EXACT_LIMIT, SEED, _Arm, _rank_greater_p, _t_p, _worse_p


def scipy_rank_p(first: np.ndarray, second: np.ndarray) -> float:
    """The rank test as ranking.py called it before: scipy enumerating every split up to the limit."""
    method = (stats.PermutationMethod(n_resamples=_EXACT_LIMIT)
              if math.comb(len(first) + len(second), len(first)) <= _EXACT_LIMIT else "asymptotic")
    return float(stats.mannwhitneyu(first, second, alternative="greater", method=method).pvalue)


def old_paired(best: pd.Series, other: pd.Series) -> pd.Series | None:
    """ranking._paired before the per-seed means were taken once: both groups regrouped for each pair."""
    shared = best.index.intersection(other.index).dropna() if best.index.name == SEED else []
    if len(shared) < ranking.PAIRED_MIN:
        return None
    return best.loc[shared].groupby(level=0).mean() - other.loc[shared].groupby(level=0).mean()


def old_t_p(best: pd.Series, other: pd.Series) -> tuple[str, float] | None:
    difference = old_paired(best, other)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if difference is not None and np.ptp(difference.to_numpy()) > 0:
            result = stats.ttest_1samp(difference.to_numpy(), 0.0, alternative="greater")
            return f"paired t on {len(difference)} shared seeds (one-sided)", float(result.pvalue)
        a, b = best.to_numpy(float), other.to_numpy(float)
        if len(a) < 1 or len(b) < 1 or len(a) + len(b) < 3:
            return None
        if np.ptp(a) == 0 and np.ptp(b) == 0:
            return "exact (both groups constant)", 0.0 if a[0] > b[0] else 1.0
        if len(a) < 2 or len(b) < 2:
            return None
        return "Welch t (one-sided, unpaired)", float(stats.ttest_ind(a, b, equal_var=False,
                                                                       alternative="greater").pvalue)


def old_worse_p(best: pd.Series, other: pd.Series, best_diverged: int, other_diverged: int) -> tuple[str, float]:
    """ranking._worse_p as it was, scipy's rank and Fisher tests called every time."""
    if best_diverged == 0 and other_diverged == 0:
        found = old_t_p(best, other)
        return found if found is not None else ("no test (too few runs)", 1.0)
    floor = min(np.min(best.to_numpy(float), initial=0.0), np.min(other.to_numpy(float), initial=0.0)) - 1.0
    ranked_best = np.concatenate([best.to_numpy(float), np.full(best_diverged, floor)])
    ranked_other = np.concatenate([other.to_numpy(float), np.full(other_diverged, floor)])
    if np.ptp(np.concatenate([ranked_best, ranked_other])) == 0:
        return "Mann–Whitney U (one-sided, all tied)", 1.0
    ranks = scipy_rank_p(ranked_best, ranked_other)
    counts = float(stats.fisher_exact([[other_diverged, len(other)], [best_diverged, len(best)]],
                                      alternative="greater").pvalue)
    tests = [ranks, counts]
    name = "Mann–Whitney U (one-sided, failed ranked worst) and Fisher's exact test on failure counts"
    finished = old_t_p(best, other) if best_diverged == 0 else None
    if finished is not None:
        tests.append(finished[1])
        name += f", and {finished[0]} on the finished runs"
    return f"{name}, Bonferroni-combined", min(1.0, len(tests) * min(tests))


def sizes():
    """Every pair of group sizes the best set meets (a ranked group has 2 or more runs) whose splits scipy
    enumerates, and two it approximates."""
    exact = [(n1, n2) for n1 in range(2, 12) for n2 in range(2, 12) if math.comb(n1 + n2, n1) <= _EXACT_LIMIT]
    return exact + [(139, 2), (2, 139), (36, 3), (3, 36), (8, 9), (10, 12), (141, 2)]  # edges of the limit


@pytest.mark.parametrize(("n1", "n2"), sizes())
def test_the_rank_test_is_scipys_to_the_bit_with_and_without_ties(n1, n2):
    rng = np.random.default_rng(1000 * n1 + n2)
    for values in (5, 3, 1000):  # few distinct values (many ties), some, none
        first = rng.integers(0, values, n1).astype(float) + 0.5
        second = rng.integers(0, values, n2).astype(float)
        if np.ptp(np.concatenate([first, second])) == 0:
            continue  # the caller answers an all-tied pair itself
        assert _rank_greater_p(first, second) == scipy_rank_p(first, second)
        assert _rank_greater_p(second, first) == scipy_rank_p(second, first)


def test_failed_runs_ranked_worst_give_the_rank_test_scipy_gave():
    floor = -2.0  # failed runs sit below every finished run, all tied with one another
    for first, second in [([0.9, 0.8, 0.85], [0.7, floor, floor]), ([0.5, floor], [0.4, 0.6, floor, floor]),
                          ([1.0] * 4, [1.0, 1.0, floor, floor]), ([0.3, 0.2, 0.1, 0.0, -0.1], [floor] * 5)]:
        first, second = np.array(first), np.array(second)
        assert _rank_greater_p(first, second) == scipy_rank_p(first, second)


def test_every_split_below_the_observed_sum_is_not_counted():
    """At 3 v 3 with no overlap, one split of the 20 reaches the observed rank sum: p = 1/20, not 0 nor 1."""
    assert _rank_greater_p(np.array([4.0, 5, 6]), np.array([1.0, 2, 3])) == 1 / 20
    assert _rank_greater_p(np.array([1.0, 2, 3]), np.array([4.0, 5, 6])) == 1.0


def by_seed(values, seeds) -> pd.Series:
    return pd.Series(np.asarray(values, float), index=pd.Index(seeds, name=SEED))


def test_the_paired_t_reads_per_seed_means_as_before_copies_and_order_included():
    rng = np.random.default_rng(7)
    cases = [
        (by_seed(rng.normal(size=5), [0, 1, 2, 3, 4]), by_seed(rng.normal(size=5), [0, 1, 2, 3, 4])),
        (by_seed(rng.normal(size=5), [4, 2, 0, 3, 1]), by_seed(rng.normal(size=4), [3, 1, 0, 2])),  # unsorted
        (by_seed(rng.normal(size=6), [0, 0, 1, 2, 2, 3]), by_seed(rng.normal(size=4), [0, 1, 2, 3])),  # copies
        (by_seed(rng.normal(size=4), [0, 1, 5, 6]), by_seed(rng.normal(size=4), [5, 6, 7, 8])),  # 2 shared
        (by_seed(rng.normal(size=3), [0, 1, 2]), by_seed(rng.normal(size=3), [2, 3, 4])),  # 1 shared: Welch
        (by_seed(rng.normal(size=3) / 3, [0.0, 1.0, 2.0]), by_seed(rng.normal(size=3), [0, 1, 2])),  # float seeds
        (pd.Series(rng.normal(size=3)), pd.Series(rng.normal(size=3))),  # seeds not known: unpaired
    ]
    for best, other in cases:
        for a, b in [(best, other), (other, best)]:
            assert _t_p(_Arm.of(a), _Arm.of(b)) == old_t_p(a, b)


def test_the_paired_t_still_pairs_and_the_route_is_named():
    best = by_seed([0.90, 0.80, 0.70, 0.95], [0, 1, 2, 3])
    other = by_seed([0.89, 0.78, 0.69, 0.93], [3, 2, 1, 0][::-1])
    test, p = _worse_p(_Arm.of(best), _Arm.of(other))
    assert test == "paired t on 4 shared seeds (one-sided)" and p < 0.01


def test_fisher_on_failure_counts_is_unchanged_by_its_cache():
    best, other = _Arm.of(by_seed([0.9, 0.9, 0.8], [0, 1, 2])), _Arm.of(by_seed([0.9], [0]), failed=4)
    counts = float(stats.fisher_exact([[4, 1], [0, 3]], alternative="greater").pvalue)
    ranks = scipy_rank_p(np.array([0.9, 0.9, 0.8]), np.array([0.9, -1.0, -1.0, -1.0, -1.0]))
    assert _t_p(best, other) is None  # one finished run: no t on the finished runs
    for _ in range(2):  # the second call reads the cache
        assert _worse_p(best, other)[1] == min(1.0, 2 * min(counts, ranks))


def old_worse_outcomes(order: list, arms: dict, threshold: float) -> dict:
    """ranking._worse_outcomes as it was: one old_worse_p per pair, on each group's scores as a Series."""
    def mostly_failed(name) -> bool:
        return arms[name].failed * 2 > arms[name].failed + len(arms[name].scores)

    outcome = {}
    for name in order:
        worst = ("", math.inf, "")
        for other in order:
            if other == name:
                continue
            if mostly_failed(name) and not mostly_failed(other):
                worst = ("most runs failed (median run failed)", 0.0, other)
                break
            test, p = old_worse_p(arms[other].scores, arms[name].scores, arms[other].failed, arms[name].failed)
            if p < worst[1]:
                worst = (test, p, other)
        shown = len(order) > 1 and worst[1] <= threshold
        outcome[name] = (worst[0] if len(order) > 1 else "", worst[1] if len(order) > 1 else math.nan, shown,
                         worst[2] if shown else "")
    return outcome


def crafted_arms(rng: np.random.Generator, k: int, unknown: bool = False) -> dict[str, _Arm]:
    """k groups as a comparison can have them: 2-9 seeds, some shared and some not, a copy of a seed, failed and
    mostly failed groups, constant groups, identical groups (tied p-values); with ``unknown``, groups whose seeds
    are not known (test_a_group_whose_seeds_are_not_known_is_never_paired_by_row: the old code differed there)."""
    arms = {}
    for i in range(k):
        kind = rng.integers(0, 8 if unknown else 5)
        seeds = sorted(rng.choice(12, size=rng.integers(2, 10), replace=False).tolist())
        if kind == 1:
            seeds = seeds + seeds[:1]  # a copy
        values = rng.normal(0.5 + 0.02 * rng.integers(0, 4), 0.01 + 0.03 * rng.random(), size=len(seeds))
        if kind == 2:
            values = np.full(len(seeds), 0.5)  # constant
        failed = int(rng.integers(1, 4)) if kind == 3 else int(rng.integers(len(seeds) + 1, 12)) if kind == 4 else 0
        scores = pd.Series(values) if kind == 5 else by_seed(values, seeds)
        arms[f"g{i}"] = _Arm.of(scores, failed)
    arms[f"g{k}"] = arms["g0"]  # identical to g0: every p against it ties
    return arms


@pytest.mark.parametrize("seed", range(6))
def test_the_paired_t_tests_taken_together_give_each_group_the_outcome_of_one_test_a_pair(seed):
    rng = np.random.default_rng(seed)
    arms = crafted_arms(rng, int(rng.integers(2, 14)))
    order = list(arms)
    rng.shuffle(order)
    for threshold in (0.05 / max(1, len(order) - 1), 0.5):
        assert ranking._worse_outcomes(order, arms, threshold) == old_worse_outcomes(order, arms, threshold)


def test_a_group_whose_seeds_are_not_known_is_never_paired_by_row():
    """One record without a readable seed leaves its group indexed by row (_by_seed). The old code checked only
    the best group's index and so paired the best's seeds 0, 1, 2 with the other's rows 0, 1, 2: a pairing of
    unrelated runs (p 0.037 here, shown worse). Seeds that are not known are not paired: Welch's t."""
    best = by_seed([0.90, 0.80, 0.70], [0, 1, 2])
    other = pd.Series([0.88, 0.77, 0.69])  # seeds 0, 1 and one not known
    assert old_t_p(best, other)[0] == "paired t on 3 shared seeds (one-sided)"  # the old pairing by row
    test, p = _worse_p(_Arm.of(best), _Arm.of(other))
    assert test == "Welch t (one-sided, unpaired)" and p == old_t_p(best.reset_index(drop=True), other)[1]
    assert _t_p(_Arm.of(other), _Arm.of(best))[0] == "Welch t (one-sided, unpaired)"  # either way round
