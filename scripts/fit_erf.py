"""Fits the float erf of normbench/norms/elementwise.cpp (erf_float) and prints its coefficients.

    erf(x) = x P(x^2)                      for |x| < SPLIT   (erf(x)/x is a smooth function of x^2)
    erf(x) = 1 - exp(-x^2) R(|x| - MID)    for SPLIT <= |x| < ONE (R = erfc(x) exp(x^2), Faddeeva's w(ix): smooth;
                                           about MID, the middle, so float coefficients lose little)
    erf(x) = 1                             beyond: erf(x) rounds to 1 in float above 3.92

P is fitted to the relative error of erf, R to the absolute error of erf (its error is scaled by
exp(-x^2) <= 0.37 there), both by least squares on a dense grid, then re-weighted a few rounds toward
the largest errors (Lawson's iteration, which approaches the minimax fit). The exact values come from
mpmath at 40 digits. The C++ evaluates both polynomials in float with fused multiply-adds (Horner);
tests/norms/test_elementwise_cpu.py measures its error in ulp over a dense grid and holds it to a bound.

    python scripts/fit_erf.py
"""

from __future__ import annotations

import mpmath
import numpy as np

SPLIT, ONE = 1.0, 3.92
MID = 2.5
P_DEGREE, R_DEGREE = 6, 9  # in x^2 for P, in |x| - MID for R
mpmath.mp.dps = 40


def lawson(basis: np.ndarray, target: np.ndarray, scale: np.ndarray, rounds: int = 40) -> np.ndarray:
    """Coefficients c minimizing max |basis @ c - target| / scale, approximately (Lawson 1961)."""
    weights = np.full(len(target), 1.0 / len(target))
    for _ in range(rounds):
        w = np.sqrt(weights) / scale
        c, *_ = np.linalg.lstsq(basis * w[:, None], target * w, rcond=None)
        error = np.abs(basis @ c - target) / scale
        weights = weights * error
        weights /= weights.sum()
    return c


def fit_p() -> np.ndarray:
    x = np.linspace(1e-4, SPLIT, 4000)
    t = x * x
    target = np.array([float(mpmath.erf(v) / v) for v in x])
    return lawson(np.vander(t, P_DEGREE + 1, increasing=True), target, target)


def fit_r() -> np.ndarray:
    x = np.linspace(SPLIT, ONE, 4000)
    target = np.array([float(mpmath.erfc(v) * mpmath.exp(v * v)) for v in x])
    # the error of erf is exp(-x^2) times R's: weight R's error by it
    scale = np.array([float(mpmath.exp(v * v)) for v in x])
    return lawson(np.vander(x - MID, R_DEGREE + 1, increasing=True), target, scale)


def main() -> None:
    p = fit_p()
    # P's constant term as a float pair: rounded alone it would cost up to half an ulp of every small erf
    high = np.float32(p[0])
    print(f"P[0] as high + low: {float(high)!r}f + {float(np.float32(p[0] - np.float64(high)))!r}f")
    for name, coefficients in (("P (in x^2)", p), ("R (in |x| - MID)", fit_r())):
        print(name, "lowest power first:")
        print(", ".join(f"{np.float32(c)!r}f".replace("np.float32(", "").replace(")", "") for c in coefficients))


if __name__ == "__main__":
    main()
