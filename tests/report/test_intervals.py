"""The t quantile and intervals the report computes without scipy."""

from __future__ import annotations

import math

import pytest

from normbench.report.intervals import (Estimate, combine, mean_estimate, proportion_difference, slope_estimate,
                                        t_quantile, wilson_interval)

# Two-sided 95% critical values from any printed t table.
TABLE = {1: 12.7062, 2: 4.3027, 3: 3.1824, 4: 2.7764, 5: 2.5706, 10: 2.2281, 30: 2.0423, 120: 1.9799}


@pytest.mark.parametrize("df, expected", TABLE.items())
def test_t_quantile_matches_the_table(df, expected):
    assert t_quantile(0.975, df) == pytest.approx(expected, abs=1e-4)


def test_t_quantile_other_levels_and_the_normal_limit():
    assert t_quantile(0.95, 10) == pytest.approx(1.8125, abs=1e-4)
    assert t_quantile(0.5, 7) == pytest.approx(0.0, abs=1e-9)
    assert t_quantile(0.975, 1e7) == pytest.approx(1.95996, abs=1e-5)


def test_t_quantile_non_integer_df_agrees_with_scipy():
    stats = pytest.importorskip("scipy.stats")
    for df in (1.3, 2.7, 7.5, 41.2):
        assert t_quantile(0.975, df) == pytest.approx(stats.t.ppf(0.975, df), rel=1e-7)


def test_t_quantile_rejects_what_it_cannot_do():
    with pytest.raises(ValueError):
        t_quantile(0.975, 0.5)
    with pytest.raises(ValueError):
        t_quantile(0.2, 5)


def test_mean_interval_and_single_value():
    estimate = mean_estimate([1.0, 2.0, 3.0])
    low, high = estimate.interval()
    assert (low, high) == pytest.approx((2 - 4.3027 / math.sqrt(3), 2 + 4.3027 / math.sqrt(3)), abs=1e-3)
    assert mean_estimate([5.0]).interval() is None
    assert mean_estimate([float("nan"), 5.0]).value == 5.0


def test_welch_difference_of_means():
    a, b = mean_estimate([1.0, 2.0, 3.0, 4.0]), mean_estimate([10.0, 12.0])
    diff = combine([(1, a), (-1, b)])
    assert diff.value == pytest.approx(-8.5)
    va, vb = 1.6667 / 4, 2.0 / 2
    assert diff.df == pytest.approx((va + vb) ** 2 / (va**2 / 3 + vb**2 / 1), rel=1e-3)
    assert combine([(1, a), (-1, mean_estimate([3.0]))]).interval() is None


def test_zero_variance_gives_a_point_interval():
    assert combine([(1, Estimate(1.0, 0.0, 2.0)), (-1, Estimate(0.5, 0.0, 2.0))]).interval() == (0.5, 0.5)


def test_slope():
    estimate = slope_estimate([1, 2, 3, 4], [2.0, 4.1, 5.9, 8.0])
    assert estimate.value == pytest.approx(1.98)
    assert estimate.df == 2
    assert slope_estimate([1, 2], [1, 2]).interval() is None
    assert math.isnan(slope_estimate([1, 1, 1], [1, 2, 3]).value)


def test_wilson_and_newcombe():
    low, high = wilson_interval(0, 10)
    assert (low, high) == pytest.approx((0.0, 0.2775), abs=1e-4)
    difference, (low, high) = proportion_difference(3, 3, 0, 3)
    assert difference == 1.0 and 0 < low < high <= 1.0
    _, (low, high) = proportion_difference(1, 3, 0, 3)
    assert low < 0 < high
