"""Fits the float tanh of normbench/native/rows.h (rows::tanh) and prints its coefficients.

    tanh(x) = x + x^3 Q(x^2)            for |x| < SPLIT (tanh(x)/x is a smooth function of x^2)
    tanh(x) = 1 - 2 / (exp(2|x|) + 1)   above, where tanh > 0.5 and the subtraction no longer cancels

with exp(y) for y in [0, 20] (every lane computes it; the large branch uses it from 2 SPLIT on) as 2^n E(r):
n = round(y / ln 2), r = y - n ln 2 in [-ln2/2, ln2/2] and E a polynomial for exp on that interval (beyond y = 20 the argument is clamped: tanh rounds to 1 in float
above 9.01). Q is fitted to the relative error of tanh, E to the relative error of exp, by Lawson's iteration
(scripts/fit_erf.py), the exact values from mpmath at 40 digits. E's first two coefficients come out 1 to
float's precision and are set to 1. The C++ evaluates both in float with fused multiply-adds (Horner);
tests/norms/test_elementwise_cpu.py and tests/models/test_lnlstm_cpu.py measure the error in ulp over
dense grids and hold it to a bound.

    python scripts/fit_tanh.py
"""

from __future__ import annotations

import mpmath
import numpy as np
from fit_erf import lawson

SPLIT = 0.55
Q_DEGREE, E_DEGREE = 4, 6  # in x^2 for Q, in r for E
HALF_LN2 = 0.3466
mpmath.mp.dps = 40


def fit_q() -> np.ndarray:
    x = np.linspace(1e-3, SPLIT, 4000)
    exact = [mpmath.tanh(mpmath.mpf(v)) for v in x]
    target = np.array([float((e - v) / mpmath.mpf(v) ** 3) for e, v in zip(exact, x)])
    scale = np.array([float(e / mpmath.mpf(v) ** 3) for e, v in zip(exact, x)])  # Q's error over tanh's value
    return lawson(np.vander(x * x, Q_DEGREE + 1, increasing=True), target, scale, rounds=60)


def fit_e() -> np.ndarray:
    r = np.linspace(-HALF_LN2, HALF_LN2, 4000)
    target = np.array([float(mpmath.exp(mpmath.mpf(v))) for v in r])
    return lawson(np.vander(r, E_DEGREE + 1, increasing=True), target, target, rounds=60)


def main() -> None:
    for name, coefficients in (("Q (in x^2)", fit_q()), ("E (in r)", fit_e())):
        print(name, "lowest power first:")
        print(", ".join(f"{np.format_float_scientific(np.float32(c), unique=True)}f" for c in coefficients))


if __name__ == "__main__":
    main()
