"""Fits the polynomials of normbench/native/rows.h's float exp pieces and prints their coefficients.

    M: expm1(r) = r + r^2 M(r)   rows::tanh's core: tanh|x| = m / (2 - m) with m = -expm1(-2|x|) = 1 - 2^n (1 + q),
                                  n = round(-2|x| / ln 2), r = -2|x| - n ln 2, q = expm1(r)
    E: exp(r) = E(r)             exp(-u^2) in elementwise.cpp's erf, as 2^n E(r)

both for r in [-ln2/2, ln2/2]. M is fitted to the relative error of expm1, E to the relative error of exp, by
Lawson's iteration (scripts/fit_erf.py), the exact values from mpmath at 40 digits. E's first two coefficients
come out 1 to float's precision and are set to 1. The C++ evaluates both in float with fused multiply-adds
(Horner); tests/norms/test_elementwise_cpu.py and tests/models/test_lnlstm_cpu.py measure the error in ulp over
dense grids and hold it to a bound.

    python scripts/fit_tanh.py
"""

from __future__ import annotations

import mpmath
import numpy as np
from fit_erf import lawson

M_DEGREE, E_DEGREE = 5, 6  # in r (a degree-6 M measured no better over every float: the roundings dominate)
HALF_LN2 = 0.3466
mpmath.mp.dps = 40


def fit_m() -> np.ndarray:
    r = np.linspace(-HALF_LN2, HALF_LN2, 4001)
    r = r[np.abs(r) > 1e-4]  # (expm1(r) - r) / r^2 is smooth through 0, but its quotient is not exact there
    exact = [mpmath.expm1(mpmath.mpf(v)) for v in r]
    target = np.array([float((e - v) / mpmath.mpf(v) ** 2) for e, v in zip(exact, r)])
    scale = np.abs([float(e / mpmath.mpf(v) ** 2) for e, v in zip(exact, r)])  # M's error over expm1's value
    return lawson(np.vander(r, M_DEGREE + 1, increasing=True), target, scale, rounds=60)


def fit_e() -> np.ndarray:
    r = np.linspace(-HALF_LN2, HALF_LN2, 4000)
    target = np.array([float(mpmath.exp(mpmath.mpf(v))) for v in r])
    return lawson(np.vander(r, E_DEGREE + 1, increasing=True), target, target, rounds=60)


def main() -> None:
    for name, coefficients in (("M (in r)", fit_m()), ("E (in r)", fit_e())):
        print(name, "lowest power first:")
        print(", ".join(f"{np.format_float_scientific(np.float32(c), unique=True)}f" for c in coefficients))


if __name__ == "__main__":
    main()
