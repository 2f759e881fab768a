"""Confidence intervals without scipy: Student-t means and contrasts, Wilson/Newcombe proportions.

The report must run anywhere the run records can be copied to, so the one special function it
needs, the Student-t quantile, is computed here: with the substitution t = sqrt(nu) * tan(theta)
the t density becomes c * cos(theta)^(nu - 1) on [0, pi/2), with
c = Gamma((nu + 1) / 2) / (sqrt(pi) * Gamma(nu / 2)). That integrand is bounded and smooth for
nu >= 1 (Welch degrees of freedom never fall below 1 when every arm has two runs), so Simpson's
rule integrates it to ~1e-10 and bisection on theta inverts it. Non-integer nu works, which a
lookup table would not give us.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist
from typing import Iterable, Sequence

import numpy as np

LEVEL = 0.95
METHOD = (
    "Student-t intervals (Welch–Satterthwaite degrees of freedom for differences); the t quantile "
    "is computed without scipy by integrating the t density numerically (Simpson's rule after "
    "t = √ν·tan θ) and inverting it by bisection. Divergence-rate differences use Newcombe's "
    "hybrid score interval built from Wilson intervals."
)

_SIMPSON_PANELS = 400  # even; error ~1e-10 for nu >= 1


def _t_central_mass(theta: float, nu: float) -> float:
    """P(0 < T < sqrt(nu) tan(theta)) for T ~ Student-t(nu)."""
    if theta <= 0.0:
        return 0.0
    grid = np.linspace(0.0, theta, _SIMPSON_PANELS + 1)
    density = np.cos(grid) ** (nu - 1.0)
    weights = np.ones(_SIMPSON_PANELS + 1)
    weights[1:-1:2] = 4.0
    weights[2:-1:2] = 2.0
    integral = theta / (3.0 * _SIMPSON_PANELS) * float(weights @ density)
    scale = math.exp(math.lgamma((nu + 1.0) / 2.0) - math.lgamma(nu / 2.0)) / math.sqrt(math.pi)
    return scale * integral


@lru_cache(maxsize=4096)
def t_quantile(p: float, nu: float) -> float:
    """Upper quantile of Student-t with nu >= 1 degrees of freedom, for 0.5 <= p < 1."""
    if not 0.5 <= p < 1.0:
        raise ValueError(f"t_quantile needs 0.5 <= p < 1, got {p}")
    if not nu >= 1.0:
        raise ValueError(f"t_quantile needs nu >= 1, got {nu}")
    if nu > 1e6:  # indistinguishable from the normal at any precision we print
        return NormalDist().inv_cdf(p)
    target = p - 0.5
    low, high = 0.0, math.pi / 2.0
    for _ in range(60):
        mid = (low + high) / 2.0
        if _t_central_mass(mid, nu) < target:
            low = mid
        else:
            high = mid
    return math.sqrt(nu) * math.tan((low + high) / 2.0)


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
    slope = float(((xs - xs.mean()) * (ys - ys.mean())).sum()) / sxx
    if n == 2:
        return Estimate(slope, math.nan, 0.0)
    residual = ys - ys.mean() - slope * (xs - xs.mean())
    return Estimate(slope, float((residual**2).sum()) / (n - 2) / sxx, float(n - 2))


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
    z = NormalDist().inv_cdf(0.5 + level / 2.0)
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
