"""The sequential design: α spent across planned looks keeps false verdicts within α."""

from __future__ import annotations

import math

import numpy as np
import pytest

from normbench.analysis.sequential import A_BETTER, B_BETTER, EQUIVALENT, Plan, decide, simulate


def test_spending_reaches_alpha_at_the_last_look_and_spends_little_early():
    plan = Plan.rounds(pilot=3, step=2, maximum=11, alpha=0.05)
    assert plan.looks == (3, 5, 7, 9, 11)
    levels = plan.levels()
    assert sum(levels) == pytest.approx(0.05) and levels[0] < 0.002 and all(x > 0 for x in levels)


@pytest.mark.parametrize("delta", [None, 0.5])
def test_no_true_difference_gives_false_verdicts_within_alpha(delta):
    """2,000 simulated studies with no true difference, five looks each: each direction's false
    verdict rate stays within α = 0.05 (3 Monte Carlo standard errors of slack); peeking at the
    nominal 5% on every look would not."""
    plan = Plan.rounds(3, 2, 11, 0.05)
    rates = simulate(plan, repetitions=2000, delta=delta, seed=1)
    for direction in (A_BETTER, B_BETTER):
        assert rates[direction] <= 0.05 + 3 * rates[f"{direction} se"], rates
    naive = Plan((3, 5, 7, 9, 11), 0.05)
    peeking = 0
    rng = np.random.default_rng(2)
    for _ in range(1000):
        a, b = rng.normal(0, 1, 11), rng.normal(0, 1, 11)
        peeking += any(decide(a[:n], b[:n], 0.05) == A_BETTER for n in naive.looks)
    assert peeking / 1000 > 0.07  # what the spending prevents


def test_a_real_difference_is_found_and_equal_arms_are_shown_equivalent():
    plan = Plan.rounds(3, 2, 15, 0.05)
    assert simulate(plan, 300, difference=2.0, seed=3)[A_BETTER] > 0.9
    assert simulate(plan, 300, difference=0.0, sd=0.05, delta=0.5, seed=4)[EQUIVALENT] > 0.9


def test_bad_plans_are_refused():
    with pytest.raises(ValueError):
        Plan((3, 3))
    with pytest.raises(ValueError):
        Plan((1, 4))
    assert math.isclose(Plan((2, 4)).spent(4), 0.05)


def test_a_paired_look_reads_the_per_seed_differences():
    """Seeds move both arms together; a is 0.01 above b on every seed: paired decides, unpaired cannot."""
    import numpy as np

    from normbench.analysis.sequential import A_BETTER, decide, decide_paired

    shared = np.array([0.3, 0.6, 0.9, 0.4, 0.8])
    a = shared + 0.01 + 0.001 * (np.arange(5) % 2)
    assert decide_paired(a - shared, 0.05) == A_BETTER and decide(a, shared, 0.05) is None
    assert decide_paired(np.full(5, 0.01), 0.05) is None  # no spread: the caller's unpaired test decides
