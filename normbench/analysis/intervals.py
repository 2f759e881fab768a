"""Confidence intervals and the tests the report's verdicts rest on.

Student-t means, slopes and contrasts (Welch–Satterthwaite df), Wilson/Newcombe and Agresti–Caffo
intervals for divergence rates, TOST for equivalence, and the design's minimum detectable effect.
Quantiles come from scipy.stats.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np
from scipy import stats

from normbench.analysis.rules import ALPHA, LEVEL, POWER  # noqa: F401  (written once, in rules.py)

METHOD = (
    "Student-t intervals (Welch–Satterthwaite degrees of freedom for differences, quantiles from "
    "scipy.stats.t); every directional claim part is a one-sided test at α in each direction, read "
    "on one (1 − 2α) interval, and equivalence is two one-sided tests (TOST) at α: the same "
    "interval inside the stated margin ±δ. Divergence-rate differences use Newcombe's hybrid score interval built from "
    "Wilson intervals (Agresti–Caffo intervals, inverse-variance combined, when stratified). n is seeds: "
    "a seed's runs at several levels of a pooled axis are averaged into one value per seed, and arms that "
    "share 2 or more seeds are compared on their per-seed differences (paired)."
)
PAIRED_MIN = 2  # shared seeds from which a difference is paired (the ranking uses the same: ranking.PAIRED_MIN)


def t_quantile(p: float, nu: float) -> float:
    """Upper quantile of Student-t with nu >= 1 degrees of freedom, for 0.5 <= p < 1."""
    if not 0.5 <= p < 1.0:
        raise ValueError(f"t_quantile needs 0.5 <= p < 1, got {p}")
    if not nu >= 1.0:
        raise ValueError(f"t_quantile needs nu >= 1, got {nu}")
    return float(stats.t.ppf(p, nu))


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its sampling variance and the degrees of freedom of that variance.

    var is NaN when it cannot be estimated (an arm with a single run).
    """

    value: float
    var: float
    df: float

    def interval(self, level: float = LEVEL) -> tuple[float, float] | None:
        if not (math.isfinite(self.value) and math.isfinite(self.var)):
            return None
        if self.var == 0.0:
            return (self.value, self.value)
        if not self.df >= 1.0:
            return None
        half = t_quantile(0.5 + level / 2.0, self.df) * math.sqrt(self.var)
        return (self.value - half, self.value + half)


def mean_estimate(values: Iterable[float]) -> Estimate:
    """Sample mean, variance s^2/n on n - 1 degrees of freedom (NaN values are dropped)."""
    x = np.asarray(list(values), dtype=float)
    x = x[np.isfinite(x)]
    n = x.size
    if n == 0:
        return Estimate(math.nan, math.nan, math.nan)
    if n == 1:
        return Estimate(float(x[0]), math.nan, 0.0)
    return Estimate(float(x.mean()), float(x.var(ddof=1)) / n, float(n - 1))


def slope_estimate(x: Iterable[float], y: Iterable[float]) -> Estimate:
    """Ordinary least squares slope of y on x, variance SSE / (n - 2) / Sxx on n - 2 df."""
    xs = np.asarray(list(x), dtype=float)
    ys = np.asarray(list(y), dtype=float)
    keep = np.isfinite(xs) & np.isfinite(ys)
    xs, ys = xs[keep], ys[keep]
    n = xs.size
    sxx = float(((xs - xs.mean()) ** 2).sum()) if n else 0.0
    if n < 2 or sxx == 0.0:
        return Estimate(math.nan, math.nan, math.nan)
    fit = stats.linregress(xs, ys)
    if n == 2:
        return Estimate(float(fit.slope), math.nan, 0.0)
    return Estimate(float(fit.slope), float(fit.stderr) ** 2, float(n - 2))  # stderr² = SSE / (n - 2) / Sxx


def per_seed(values: Iterable[float], seeds: Iterable) -> dict:
    """{seed: the mean of its finite values}: a seed's runs at several strata (lengths, sizes) are one
    observation, so pooling strata never raises n above the seeds."""
    sums: dict = {}
    for value, seed in zip(values, seeds):
        value = float(value)
        if math.isfinite(value):
            total, count = sums.get(seed, (0.0, 0))
            sums[seed] = (total + value, count + 1)
    return {seed: total / count for seed, (total, count) in sums.items()}


def seed_difference(a: Iterable[float], a_seeds: Iterable, b: Iterable[float], b_seeds: Iterable) -> tuple[Estimate, int]:
    """mean(a) − mean(b) with n = seeds, and the number of seeds it is paired on (0: unpaired).

    Each arm's values are first averaged per seed (per_seed). When the arms share PAIRED_MIN or more
    seeds (the same seed draws the same data and initialization), the estimate is the mean of the
    per-seed differences on the shared seeds (a paired t, n − 1 df); otherwise Welch on the per-seed
    means. Per-seed differences that are all equal have no spread to read an interval from (seeds
    agreeing on a discrete grid is not proof): those fall back to the unpaired test too."""
    mine, theirs = per_seed(a, a_seeds), per_seed(b, b_seeds)
    shared = [s for s in mine if s in theirs]
    differences = [mine[s] - theirs[s] for s in shared]
    if len(shared) >= PAIRED_MIN and np.ptp(differences) > 0:
        return mean_estimate(differences), len(shared)
    return combine([(1, mean_estimate(mine.values())), (-1, mean_estimate(theirs.values()))]), 0


def combine(terms: Sequence[tuple[float, Estimate]]) -> Estimate:
    """A linear contrast sum(c_i * e_i) of independent estimates, Welch–Satterthwaite df.

    With two means and coefficients (+1, -1) this is Welch's unequal-variance t; with four it is a
    difference of differences (an interaction), which is what "X degrades more than Y" needs.
    """
    value = sum(c * e.value for c, e in terms)
    parts = [(c * c * e.var, e.df) for c, e in terms]
    var = sum(v for v, _ in parts)
    if not math.isfinite(var):
        return Estimate(value, math.nan, math.nan)
    denominator = sum(v * v / df for v, df in parts if v > 0.0)
    df = var * var / denominator if denominator > 0.0 else math.inf
    return Estimate(value, var, df)


def wilson_interval(k: int, n: int, level: float = LEVEL) -> tuple[float, float]:
    """Wilson score interval for a proportion k/n (sensible at k = 0 and k = n, unlike Wald)."""
    if n == 0:
        return (0.0, 1.0)
    z = float(stats.norm.ppf(0.5 + level / 2.0))
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (max(0.0, centre - half), min(1.0, centre + half))


def proportion_difference(k1: int, n1: int, k2: int, n2: int, level: float = LEVEL) -> tuple[float, tuple[float, float]]:
    """k1/n1 - k2/n2 with Newcombe's hybrid score interval (his method 10)."""
    p1, p2 = k1 / n1, k2 / n2
    l1, u1 = wilson_interval(k1, n1, level)
    l2, u2 = wilson_interval(k2, n2, level)
    d = p1 - p2
    return d, (d - math.hypot(p1 - l1, u2 - p2), d + math.hypot(u1 - p1, p2 - l2))


def inverse_variance(estimates: Sequence[Estimate]) -> Estimate:
    """Estimates of one effect from separate strata, combined with weights 1/var (the stratified
    effect when an axis cannot be pooled because its levels are unbalanced between arms).

    The result is the contrast sum(w_i / W * e_i), so its df is Welch–Satterthwaite's; an estimate
    with an undefined or zero variance makes the combination undefined.
    """
    if not estimates:
        return Estimate(math.nan, math.nan, math.nan)
    if len(estimates) == 1:
        return estimates[0]
    if not all(math.isfinite(e.var) and e.var > 0.0 for e in estimates):
        return Estimate(float(np.mean([e.value for e in estimates])), math.nan, math.nan)
    weights = [1.0 / e.var for e in estimates]
    total = sum(weights)
    return combine([(w / total, e) for w, e in zip(weights, estimates)])


def decision_level(alpha: float) -> float:
    """The two-sided level whose interval carries a one-sided test at ``alpha`` in each direction
    (0.90 at α = 0.05): "shown above" and "shown below" read the same interval."""
    if not 0.0 < alpha < 0.5:
        raise ValueError(f"alpha must be in (0, 0.5), got {alpha}")
    return 1.0 - 2.0 * alpha


def equivalence(estimate: Estimate, delta: float, alpha: float = ALPHA) -> str:
    """TOST against the margin ±delta at ``alpha``: "equivalent" when the (1 − 2α) interval lies
    inside (−δ, +δ) (both one-sided tests reject), "different" when it lies wholly beyond +δ or −δ,
    "undecided" otherwise."""
    interval = estimate.interval(decision_level(alpha))
    if interval is None:
        return "undecided"
    if -delta < interval[0] and interval[1] < delta:
        return "equivalent"
    if interval[0] > delta or interval[1] < -delta:
        return "different"
    return "undecided"


def non_inferiority(estimate: Estimate, delta: float, alpha: float = ALPHA) -> str:
    """The lower of TOST's two one-sided tests (the estimate oriented so + = better): "not worse"
    when the (1 − 2α) interval's lower end is above −δ, "worse" when its upper end is below −δ."""
    interval = estimate.interval(decision_level(alpha))
    if interval is None:
        return "undecided"
    if interval[0] > -delta:
        return "not worse"
    if interval[1] < -delta:
        return "worse"
    return "undecided"


def minimum_detectable_effect(estimate: Estimate, alpha: float = ALPHA, power: float = POWER) -> float:
    """(t_{1−α} + t_{power}) · SE on the estimate's df: the smallest difference a one-sided test at
    ``alpha`` detects with the given power (for two arms of n seeds with pooled s, SE = s·√(2/n))."""
    if not (math.isfinite(estimate.var) and estimate.df >= 1.0):
        return math.nan
    return (t_quantile(1 - alpha, estimate.df) + t_quantile(power, estimate.df)) * math.sqrt(estimate.var)


def _scaled(estimate: Estimate, seeds: float, to: float) -> Estimate:
    """The same design with ``to`` seeds per arm instead of ``seeds``: variance ∝ 1/n, and the df
    grow with the runs as a two-arm difference's 2n − 2 (or a slope's N − 2) do."""
    return Estimate(estimate.value, estimate.var * seeds / to, max(1.0, (estimate.df + 2) * to / seeds - 2))


def seeds_to_decide(estimate: Estimate, seeds: int, distance: float, alpha: float = ALPHA,
                    power: float = POWER, limit: int = 1000) -> int | None:
    """Seeds per arm at which a one-sided test at ``alpha`` would, with the given power, clear a
    boundary ``distance`` away from the estimate seen (the null for a difference, a margin's edge
    for TOST): the n whose MDE falls to ``distance``. None when the variance is unknown, the
    distance is not positive, or more than ``limit`` would be needed."""
    if not (math.isfinite(estimate.var) and seeds >= 1 and math.isfinite(distance) and distance > 0):
        return None
    for n in range(2, limit + 1):
        if minimum_detectable_effect(_scaled(estimate, seeds, n), alpha, power) <= distance:
            return n
    return None


def paired_seeds(sd: float, distance: float, alpha: float = ALPHA, power: float = POWER,
                 limit: int = 1000) -> int | None:
    """Paired seeds n at which a one-sided t test at ``alpha`` on n per-seed differences of standard deviation
    ``sd`` (n − 1 df) clears a boundary ``distance`` away from the estimate, with the given power: the smallest
    n ≥ 2 with (t_{1−α} + t_power) · sd / √n ≤ distance. At power 0.5 (t_power = 0) that is the n at which the
    (1 − 2α) interval, at the estimate and sd seen, would just clear the boundary. None when sd or distance is
    not positive and finite, or more than ``limit`` would be needed."""
    if not (math.isfinite(sd) and sd > 0 and math.isfinite(distance) and distance > 0):
        return None
    for n in range(2, limit + 1):
        quantiles = t_quantile(1 - alpha, n - 1) + (t_quantile(power, n - 1) if power > 0.5 else 0.0)
        if quantiles * sd / math.sqrt(n) <= distance:
            return n
    return None


def agresti_caffo(k1: int, n1: int, k2: int, n2: int) -> Estimate:
    """k1/n1 − k2/n2 with Agresti–Caffo's variance (one success and one failure added to each arm):
    a normal-theory estimate that can be inverse-variance combined across strata."""
    p1, p2 = (k1 + 1) / (n1 + 2), (k2 + 1) / (n2 + 2)
    var = p1 * (1 - p1) / (n1 + 2) + p2 * (1 - p2) / (n2 + 2)
    return Estimate(k1 / n1 - k2 / n2, var, math.inf)
