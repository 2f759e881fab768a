"""Which groups of a comparison could be the best: the ★, with a stated error rate.

A comparison is the groups of one study and task (docs/studies.md): arms that differ only in what the
study varies. Its ranking follows one stated rule (RULE below), the same in the answer, the
leaderboard, summary.csv and the study runner (normbench/analysis/rules.py holds the constants):

1. The score is the one the study is read on (rules.study_scores: the final validation metric, under a
   constant lr the mean of the last 3 evaluations, unless the runs' optimized_metric names another), on the metric's compared scale (log for a ratio metric such
   as MSE), oriented so higher = better. A failed run (diverged, or finished without its best
   evaluation leaving the chance band: "stayed at chance") has no score and counts against its
   group: groups are ordered by their share of failed runs first (fewest first), then by the mean
   score of their other runs. Groups equal on both tie, and share a rank.
2. Only groups with at least 2 runs (distinct seeds) and one scored run are ranked: one run has
   no spread to compare. The others are listed below the ranking with what they scored.
3. The best set is multiple comparisons with the best (Hsu 1984), Bonferroni form: a group is
   "shown worse" when some other group is better than it by a one-sided test at α / (k − 1), k the
   ranked groups; α is the study's level (the level its sequential design spent; 0.05 for a plain
   sweep). Whichever group is truly best is wrongly shown worse with probability at most α (each of
   its k − 1 comparisons at α / (k − 1)), so the ★ set holds the best with probability ≥ 1 − α
   whatever the spread of each arm: a noisy arm cannot escape by being noisy, because any other
   arm may show it worse. The test is a t test on the scores when neither group has a failed run:
   **paired by seed** (a one-sample t on the per-seed differences, on the compared scale, so a
   ratio metric's differences are log-ratios) when the groups share 2 or more seeds, since the same
   seed draws the same data windows and initialization; Welch's t otherwise. The table's ``test``
   column says which. When a group has a failed run: the Mann–Whitney U test with failed runs ranked
   worst and Fisher's exact test on the failure counts, and, when only the group tested has failed
   runs, the same t test on the finished runs (its failures count as worse than any finished run, so
   dropping them can only flatter it), Bonferroni-combined (p = the number of tests × the smallest).
   Without the t route an arm with one failed run in 3 could never be shown worse: the rank test's
   smallest p at 3 vs 3 is 0.05, doubled 0.10, above α / (k − 1). ``plan_line`` says before a study
   runs how many seeds the failure route needs (the study runner prints it). Two groups whose runs
   all score one identical value are tied (p = 1); two constant groups with different values differ
   with certainty (p = 0). A group more than half of whose runs failed, against a group most of whose
   runs did not, is worse by definition, untested.
4. Groups that could be the best rank above the groups shown worse (a group with fewer failures but
   a worse score can be shown worse by one with a failed run), so rank 1 is always in the best set.
   The ★ marks the best set, but only when some group is shown worse: when none is, a ★ on every
   row would say nothing, and the answer says in words that the arms cannot be told apart.
   Every ★ is shown beside its group's failure count.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from normbench.analysis import rules
from normbench.records.metrics import path

ALPHA = rules.ALPHA
_EXACT_LIMIT = 9999  # arrangements of two groups' runs up to which the rank test is exact
SEED = "seed"       # the runs column that pairs arms: the same seed draws the same data windows and init
PAIRED_MIN = 2      # shared seeds from which a comparison is paired
RULE = (
    "Ranked within each study and task on the mean of the score the study is read on (the final validation metric, "
    "or under a constant lr the mean of the last 3 evaluations, unless optimized_metric names another; MSE on the "
    "log scale) of the runs that did not fail, fewest failed runs "
    "first (a run that diverged or never left the chance band counts against its group); only groups with 2 or "
    "more seeds are ranked, rank 1 is the best (the groups that could be the best rank above those shown worse) "
    "and equal groups share a rank. ★ = the groups that could be "
    "the best: multiple comparisons with the best (Hsu), a group being shown worse when any other group beats "
    "it in a one-sided test at α / (k − 1) (t on the per-seed differences when the groups share 2 or more seeds, "
    "Welch t otherwise; when a group has a failed run, Mann–Whitney U with failed runs ranked worst plus Fisher's "
    "exact test on failure counts plus that t on the finished runs, Bonferroni-combined), α the study's level, "
    "so the best is outside the ★ set with probability at most α. No ★ is given when no group is shown worse."
)


@dataclass
class BestSet:
    """The outcome of the rule for one task."""

    best: str | None            # rank 1, which the others are compared with; None when no group is eligible
    members: list[str]          # the best and the groups not shown worse, best first
    order: list[str]            # the ranked (eligible) groups, rank 1 first
    comparisons: pd.DataFrame   # group, runs, diverged, at_chance, failed, eligible, why, test, p, threshold, shown_worse, beaten_by
    rule: str = RULE
    ties: list[str] = dataclasses.field(default_factory=list)  # the groups that tie with the best (itself included)
    level: float = ALPHA

    @property
    def informative(self) -> bool:
        """Whether a ★ says anything: some ranked group is shown worse than the best."""
        return len(self.members) < len(self.order)


@dataclass(frozen=True)
class _Arm:
    """One ranked group as its tests read it: finished scores (oriented higher = better, indexed by seed
    where known, by row otherwise), failed runs, and the mean score of each seed, taken once."""

    scores: pd.Series
    failed: int
    seeds: np.ndarray | None = None   # the distinct seeds, sorted; None when the runs' seeds are not known
    seed_means: np.ndarray | None = None  # the mean finished score of each of ``seeds``

    @classmethod
    def of(cls, scores: pd.Series, failed: int = 0) -> _Arm:
        if scores.index.name != SEED:
            return cls(scores, failed)
        means = scores.groupby(level=0).mean()  # sorted by seed, as the paired test has always read them
        return cls(scores, failed, means.index.to_numpy(), means.to_numpy(float))


def _paired(best: _Arm, other: _Arm) -> np.ndarray | None:
    """best − other per seed both finished (same seed: same data windows and init), in seed order, or None
    when the arms share fewer than PAIRED_MIN seeds or their seeds are not known (then the test is unpaired)."""
    if best.seeds is None or other.seeds is None:
        return None
    shared, in_best, in_other = np.intersect1d(best.seeds, other.seeds, assume_unique=True, return_indices=True)
    if len(shared) < PAIRED_MIN:
        return None
    return best.seed_means[in_best] - other.seed_means[in_other]


def _t_p(best: _Arm, other: _Arm) -> tuple[str, float] | None:
    """One-sided p of "other is worse than best" on finished scores: paired t on the per-seed
    differences where the arms share seeds, Welch t otherwise; None when neither has the runs."""
    difference = _paired(best, other)
    with warnings.catch_warnings():  # near-identical scores: scipy warns, the p-value is still right
        warnings.simplefilter("ignore", RuntimeWarning)
        if difference is not None and np.ptp(difference) > 0:
            result = stats.ttest_1samp(difference, 0.0, alternative="greater")
            return f"paired t on {len(difference)} shared seeds (one-sided)", float(result.pvalue)
        a, b = best.scores.to_numpy(float), other.scores.to_numpy(float)
        if len(a) < 1 or len(b) < 1 or len(a) + len(b) < 3:
            return None
        if np.ptp(a) == 0 and np.ptp(b) == 0:  # both constant: the difference is exact
            return "exact (both groups constant)", 0.0 if a[0] > b[0] else 1.0
        if len(a) < 2 or len(b) < 2:
            return None
        return "Welch t (one-sided, unpaired)", float(stats.ttest_ind(a, b, equal_var=False,
                                                                       alternative="greater").pvalue)


def _rank_greater_p(first: np.ndarray, second: np.ndarray) -> float:
    """One-sided p of the Mann–Whitney U test that ``first`` tends to be greater than ``second``: exact (ties
    handled) when the C(n1 + n2, n1) ways to split the runs are at most _EXACT_LIMIT, else the normal
    approximation. The exact p is scipy's (``mannwhitneyu`` with ``PermutationMethod``, which enumerates every
    split) to the bit: a split's statistic is a sum of mid-ranks, a multiple of 1/2, so its count is exact."""
    n1, n2 = len(first), len(second)
    if math.comb(n1 + n2, n1) > _EXACT_LIMIT:
        return float(stats.mannwhitneyu(first, second, alternative="greater", method="asymptotic").pvalue)
    doubled = np.rint(2 * stats.rankdata(np.concatenate([first, second]))).astype(int)  # mid-ranks x 2
    at_least = _rank_sums_at_least(n1, tuple(sorted(doubled.tolist())))
    return min(1.0, at_least[int(doubled[:n1].sum())] / math.comb(n1 + n2, n1))


@functools.lru_cache(maxsize=4096)
def _rank_sums_at_least(n1: int, doubled: tuple[int, ...]) -> np.ndarray:
    """For each total t of doubled mid-ranks (0 to all of them): how many of the C(n, n1) splits give the first
    group a total of at least t (the null distribution's upper tail). Counted by subset sums over the smaller
    side, one rank at a time: a split is its first group or, by complement, its second (total − t at most), so
    no count exceeds C(n, the smaller side) <= _EXACT_LIMIT."""
    total, k = sum(doubled), min(n1, len(doubled) - n1)
    top = sum(sorted(doubled)[len(doubled) - k:])
    ways = np.zeros((k + 1, top + 1), dtype=np.int64)  # ways[j, t]: j ranks chosen, totalling t
    ways[0, 0] = 1
    for rank in doubled:
        if rank <= top:
            ways[1:, rank:] += ways[:-1, : top + 1 - rank].copy()
    counts = np.zeros(total + 1, dtype=np.int64)
    counts[: top + 1] = ways[k]  # the smaller side's totals
    if k == n1:
        return np.cumsum(counts[::-1])[::-1]  # first group's total at least t
    return np.cumsum(counts)[::-1]  # second group's total at most total − t


@functools.lru_cache(maxsize=4096)
def _failures_p(other_failed: int, other_finished: int, best_failed: int, best_finished: int) -> float:
    """Fisher's exact test, one-sided: the other group fails more often than the best."""
    return float(stats.fisher_exact([[other_failed, other_finished], [best_failed, best_finished]],
                                    alternative="greater").pvalue)


def _worse_p(best: _Arm, other: _Arm) -> tuple[str, float]:
    """One-sided p-value of "other is worse than best" from each group's finished scores (oriented higher =
    better) and failed runs."""
    if best.failed == 0 and other.failed == 0:
        found = _t_p(best, other)
        return found if found is not None else ("no test (too few runs)", 1.0)
    best_scores, other_scores = best.scores.to_numpy(float), other.scores.to_numpy(float)
    floor = min(np.min(best_scores, initial=0.0), np.min(other_scores, initial=0.0)) - 1.0
    ranked_best = np.concatenate([best_scores, np.full(best.failed, floor)])
    ranked_other = np.concatenate([other_scores, np.full(other.failed, floor)])
    if np.ptp(np.concatenate([ranked_best, ranked_other])) == 0:
        return "Mann–Whitney U (one-sided, all tied)", 1.0
    ranks = _rank_greater_p(ranked_best, ranked_other)
    # Rank tests are weak on a few runs; the divergence counts alone can be stronger evidence.
    counts = _failures_p(other.failed, len(other_scores), best.failed, len(best_scores))
    tests = [ranks, counts]
    name = ("Mann–Whitney U (one-sided, failed ranked worst) and Fisher's exact test on failure counts")
    # A rank test cannot reach a Bonferroni level at 3 seeds (its smallest p is 1 / C(6, 3) = 0.05).
    # When only the other group failed, its finished runs alone shown worse show the group worse:
    # its failed runs count as worse than any finished run, and dropping them can only flatter it.
    finished = _t_p(best, other) if best.failed == 0 else None
    if finished is not None:
        tests.append(finished[1])
        name += f", and {finished[0]} on the finished runs"
    return f"{name}, Bonferroni-combined", min(1.0, len(tests) * min(tests))


def smallest_rank_p(seeds: int) -> float:
    """The smallest p the failure route of the best-set test (Mann–Whitney + Fisher, Bonferroni-combined)
    can give at ``seeds`` runs per group: every run of the leader above every run of the other,
    1 / C(2n, n), doubled."""
    return min(1.0, 2.0 / math.comb(2 * seeds, seeds))


def seeds_to_show_failures(arms: int, alpha: float = ALPHA, limit: int = 100) -> int | None:
    """The fewest seeds per arm at which an arm whose failed runs are the evidence against it (its
    finished runs no worse) can be shown worse at the best set's level α / (k − 1)."""
    level = rules.bonferroni(alpha, max(1, arms - 1))
    return next((n for n in range(2, limit + 1) if smallest_rank_p(n) <= level), None)


def plan_line(seeds: int, arms: int, alpha: float = ALPHA) -> str:
    """What the planned seeds can show about failed runs, said before any run (the study runner prints it)."""
    needed = seeds_to_show_failures(arms, alpha)
    level = rules.bonferroni(alpha, max(1, arms - 1))
    if needed is not None and seeds >= needed:
        return (f"design: at {seeds} seeds per arm the best set can show an arm worse by its failed runs alone "
                f"(level {level:.3g} over {arms} arms)")
    return (f"design: at {seeds} seeds per arm an arm with a failed run is shown worse only through its finished "
            f"runs' scores; its failures alone (a rank test's smallest p {smallest_rank_p(seeds):.3g} > level "
            f"{level:.3g} over {arms} arms) can show it from {needed if needed else 'more than 100'} seeds per arm")


def _by_seed(scores: pd.Series, runs: pd.DataFrame) -> pd.Series:
    """One group's finished scores indexed by their seed (the pairing key), or by row when seeds are not known."""
    if SEED not in runs:
        return scores.reset_index(drop=True)
    seeds = pd.to_numeric(runs.loc[scores.index, SEED], errors="coerce")
    if seeds.isna().any():
        return scores.reset_index(drop=True)
    return pd.Series(scores.to_numpy(float), index=pd.Index(seeds.to_numpy(), name=SEED))


def _eligibility(used: pd.DataFrame, group: str, status: str, is_failed: pd.Series,
                 stuck: pd.Series) -> tuple[pd.DataFrame, list]:
    """One row per group: its runs, diverged, at-chance and failed counts, and whether it may
    be ranked (why not: fewer than 2 seeds, or no run trained); and the groups that may."""
    rows, eligible = [], []
    for name, part in used.groupby(group, sort=False):
        n, n_scored = len(part), int((~is_failed[part.index]).sum())
        why = ("fewer than 2 seeds" if n < 2 else "no run trained" if n_scored == 0 else "")
        rows.append({"group": name, "runs": n, "diverged": int((part[status] == "diverged").sum()),
                     "at_chance": int(stuck[part.index].sum()), "failed": n - n_scored,
                     "eligible": not why, "why": why})
        if not why:
            eligible.append(name)
    table = pd.DataFrame(rows, columns=["group", "runs", "diverged", "at_chance", "failed", "eligible", "why"])
    return table, eligible


def _worse_outcomes(order: list, arms: dict[object, _Arm],
                    threshold: float) -> dict[object, tuple[str, float, bool, str]]:
    """Group -> (the test, its smallest p against any other group, shown worse at `threshold`, the
    group that shows it; the first in ``order`` of those with that p). A group whose median run failed is worse
    than one whose median run did not."""
    def mostly_failed(name) -> bool:
        return arms[name].failed * 2 > arms[name].failed + len(arms[name].scores)

    outcome: dict[object, tuple[str, float, bool, str]] = {}
    for name in order:
        others = [other for other in order if other != name]
        beaten = next((o for o in others if not mostly_failed(o)), None) if mostly_failed(name) else None
        if beaten is not None:
            worst: tuple[str, float, str] = ("most runs failed (median run failed)", 0.0, beaten)
        else:
            worst = ("", math.inf, "")
            for other, (test, p) in zip(others, _tests_against(arms, name, others)):
                if p < worst[1]:
                    worst = (test, p, other)
        shown = len(order) > 1 and worst[1] <= threshold
        outcome[name] = (worst[0] if len(order) > 1 else "", worst[1] if len(order) > 1 else math.nan, shown,
                         worst[2] if shown else "")
    return outcome


def _tests_against(arms: dict[object, _Arm], name, others: list) -> list[tuple[str, float]]:
    """_worse_p(arms[other], arms[name]) for each of ``others``, in order. The paired t tests, most of a large
    comparison's, are taken together, one scipy call per number of shared seeds: a row of a 2-D call is the
    1-D call's arithmetic (each row's mean and variance reduced along its own contiguous memory), so each p is
    the one _worse_p gives, to the bit (tests/analysis/test_ranking_exact.py)."""
    found: list[tuple[str, float] | None] = []
    paired: dict[int, list[tuple[int, np.ndarray]]] = {}  # shared seeds -> (position in others, differences)
    for position, other in enumerate(others):
        best, tested = arms[other], arms[name]
        difference = _paired(best, tested) if best.failed == 0 and tested.failed == 0 else None
        if difference is not None and np.ptp(difference) > 0:
            paired.setdefault(len(difference), []).append((position, difference))
            found.append(None)
        else:
            found.append(_worse_p(best, tested))
    for seeds, rows in paired.items():
        with warnings.catch_warnings():  # near-identical scores: scipy warns, the p-value is still right
            warnings.simplefilter("ignore", RuntimeWarning)
            pvalues = stats.ttest_1samp(np.stack([d for _, d in rows]), 0.0, axis=1, alternative="greater").pvalue
        for (position, _), p in zip(rows, np.atleast_1d(pvalues)):
            found[position] = (f"paired t on {seeds} shared seeds (one-sided)", float(p))
    return found


def best_set(runs: pd.DataFrame, higher_is_better: bool, *, group: str = "group", status: str = "status",
             score: str = path(rules.PRIMARY), alpha: float = ALPHA, metric: object = None) -> BestSet:
    """The ★ groups of one task's runs (one row per run) under the rule in the module docstring.

    ``metric``: the task metric (task.metric when omitted), which decides the compared scale. Runs
    whose status is neither "ok" nor "diverged" (failed, interrupted, ...) have no score and are
    left out; an "ok" run without a finite score is left out too, unless it did not train.
    """
    if metric is None and "task.metric" in runs and len(runs):
        metric = runs["task.metric"].iloc[0]
    values = pd.Series(rules.to_scale(pd.to_numeric(runs[score], errors="coerce"), metric), index=runs.index)
    stuck = rules.at_chance(runs) if status == "status" else pd.Series(False, index=runs.index)
    is_failed_all = (runs[status] == "diverged") | stuck
    finished = (runs[status] == "ok") & np.isfinite(values) & ~stuck
    used = runs[finished | is_failed_all]
    oriented = values[used.index] if higher_is_better else -values[used.index]
    is_failed = is_failed_all[used.index]

    table, eligible = _eligibility(used, group, status, is_failed, stuck)
    if not eligible:
        return BestSet(None, [], [], table.assign(test="", p=math.nan, threshold=math.nan, shown_worse=False,
                                                  beaten_by=""), level=alpha)

    pool = used[used[group].isin(eligible)]
    failed_share = is_failed[pool.index].groupby(pool[group]).mean()
    scored_mean = oriented[pool.index][~is_failed[pool.index]].groupby(pool[group]).mean()
    key = {g: (float(failed_share[g]), -float(scored_mean.get(g, -math.inf))) for g in eligible}
    order = sorted(eligible, key=lambda g: key[g])
    best = order[0]

    labels = pool[group]
    arms = {name: _Arm.of(_by_seed(oriented[idx][~is_failed[idx]], pool), int(is_failed[idx].sum()))
            for name in eligible for idx in [labels.index[labels == name]]}
    threshold = comparison_level(alpha, len(order))
    outcome = _worse_outcomes(order, arms, threshold)
    table["test"] = table["group"].map(lambda g: outcome[g][0] if g in outcome else "")
    table["p"] = table["group"].map(lambda g: outcome[g][1] if g in outcome else math.nan)
    table["threshold"] = table["group"].map(lambda g: threshold if g in outcome and len(order) > 1 else math.nan)
    table["shown_worse"] = table["group"].map(lambda g: bool(outcome[g][2]) if g in outcome else False)
    table["beaten_by"] = table["group"].map(lambda g: outcome[g][3] if g in outcome else "")
    members = [g for g in order if not outcome[g][2]]
    # the groups that could be the best rank above those shown worse, so rank 1 always holds the ★
    order = members + [g for g in order if outcome[g][2]]
    best = order[0]
    ties = [g for g in members if key[g] == key[best]]
    return BestSet(best, members, order, table, ties=ties if len(ties) > 1 else [], level=alpha)


COMPARISON = ["study", "axes.role", "task.name", "condition"]  # the runs columns that make one comparison (conditions.py)
EVALUATION = "evaluation"  # a tuned study's evaluation runs: ranked on the test split (tuning.py)


def comparisons(runs: pd.DataFrame):
    """(study, task, runs) for each comparison: the groups of one study on one task at one condition
    (conditions.py; a tuned study's selection and evaluation runs are two comparisons: the first chose
    the second's lrs)."""
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


def comparison_level(alpha: float, arms: int) -> float:
    """The one-sided level of each of the best set's comparisons of ``arms`` ranked arms (Bonferroni over the
    best's k − 1 rivals): an interval that states how sure the ★ is must be read at this level, at 1 − 2 × it."""
    return rules.bonferroni(alpha, arms - 1)


def rank_groups(trained: pd.DataFrame, summary: pd.DataFrame, *, score: str | None = None,
                levels: dict[str, float] | None = None) -> pd.DataFrame:
    """summary.csv's `rank`, `best` (★), `shown_worse`, `tie`, `failed`, `at_chance` and
    `level` columns, by RULE within each comparison.

    ``trained`` is the runs table (one row per run, with study, group, status, task.name,
    task.higher_is_better and the score); ``summary`` has one row per group; ``levels``: a
    study's level (the one its sequential design spent) by study id, ALPHA for the others.
    Unranked groups (fewer than 2 seeds, no scored run) have no rank; groups tied on the rule's
    key share a rank; ★ only where it informs (BestSet.informative).
    """
    columns = pd.DataFrame({"rank": math.nan, "best": False, "shown_worse": False, "tie": False, "failed": 0,
                            "at_chance": 0, "level": ALPHA}, index=summary.index)
    if trained.empty or (score is not None and score not in trained):
        return columns
    levels = levels or {}
    for study, _, runs in comparisons(trained):
        higher = bool(runs["task.higher_is_better"].iloc[0])
        level = float(levels.get(study, ALPHA))
        chosen = score or rules.score_column(runs)  # None: the score its study is read on (rules.study_scores)
        if chosen not in runs:
            continue
        result = best_set(runs, higher, score=comparison_score(runs, chosen), alpha=level)
        rows = summary["group"].isin(runs["group"].unique())
        position = {g: i + 1 for i, g in enumerate(result.order)}
        for tied in _tie_runs(result):
            for g in tied:
                position[g] = min(position[t] for t in tied)
        columns.loc[rows, "rank"] = summary.loc[rows, "group"].map(position)
        columns.loc[rows, "level"] = level
        if result.informative:
            columns.loc[rows, "best"] = summary.loc[rows, "group"].isin(result.members)
        worse = set(result.comparisons.loc[result.comparisons["shown_worse"].astype(bool), "group"])
        columns.loc[rows, "shown_worse"] = summary.loc[rows, "group"].isin(worse)
        columns.loc[rows, "tie"] = summary.loc[rows, "group"].isin(result.ties)
        counts = result.comparisons.set_index("group")
        for name in ("failed", "at_chance"):
            columns.loc[rows, name] = summary.loc[rows, "group"].map(counts[name]).fillna(0).astype(int)
    return columns


def _tie_runs(result: BestSet) -> list[list[str]]:
    """The best's ties (other exact ties share a rank through the same rule when they are the best's)."""
    return [result.ties] if result.ties else []


def design_power(groups: dict[str, np.ndarray], alpha: float = ALPHA, power: float = rules.POWER,
                 limit: int = 200) -> tuple[float, int | None, float]:
    """(MDE, seeds per arm to detect the largest difference seen, that difference) of a ranking.

    ``groups``: each ranked group's scores on the compared scale (rules.to_scale). The ranking's
    own test: one-sided at α / (k − 1) (the best set's Bonferroni level), so MDE =
    (t_{1−α/(k−1)} + t_{power}) · s · √(2/n) on 2n − 2 degrees of freedom, with s the pooled
    standard deviation and n the smallest seed count (docs/report.md: the minimum detectable
    effect). NaN / None when fewer than two groups have 2 scores.
    """
    usable = {g: np.asarray(v, float)[np.isfinite(np.asarray(v, float))] for g, v in groups.items()}
    usable = {g: v for g, v in usable.items() if len(v) >= 2}
    if len(usable) < 2:
        return math.nan, None, math.nan
    s = math.sqrt(float(np.mean([v.var(ddof=1) for v in usable.values()])))
    n = min(len(v) for v in usable.values())
    means = [float(v.mean()) for v in usable.values()]
    largest = max(means) - min(means)
    level = rules.bonferroni(alpha, len(usable) - 1)

    def mde(k: int) -> float:
        df = 2 * k - 2
        return (stats.t.ppf(1 - level, df) + stats.t.ppf(power, df)) * s * math.sqrt(2 / k)

    if s == 0:
        return 0.0, n, largest
    needed = next((k for k in range(2, limit + 1) if mde(k) <= largest), None) if largest > 0 else None
    return mde(n), needed, largest
