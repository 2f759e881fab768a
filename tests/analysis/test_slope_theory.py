"""A slope part prints the theory's slope beside the measured one (referee 20: Pre-LN's −0.129 is a quarter of
Theorem 1's −0.5; Post-LN's gradient grows, away from 'independent of L')."""

from normbench.analysis.claims import CLAIMS, judge

CLAIM = next(c for c in CLAIMS if c.id == "postln_grad_depth")


def _runs(runs_of, pre_slope: float, post_slope: float):
    rows = []
    for placement, slope in (("pre", pre_slope), ("post", post_slope)):
        for layers in (2, 4, 8, 16):
            for seed in range(4):
                grad = 0.1 * layers ** slope * (1 + 0.01 * (seed - 1.5))
                rows.append({"seed": seed, "axes": {"model": "transformer", "placement": placement, "layers": layers},
                             "profiles": {"ffn_w2_grad_norm_init": grad}})
    return runs_of(*rows)


def test_a_slope_far_from_the_theorys_says_so(runs_of):
    verdict = judge(CLAIM, _runs(runs_of, -0.13, 0.065))
    pre, post = verdict.parts
    assert "Theory: slope -0.5 (Theorem 1" in pre.test and "-65% from layers 2 to 16" in pre.test, pre.test
    assert "excludes the theory's value, so the measured magnitude is far from it" in pre.test
    assert "excludes 0, the measure grows with layers, the direction away from the theory's independence" in post.test


def test_a_slope_at_the_theorys_says_so(runs_of):
    verdict = judge(CLAIM, _runs(runs_of, -0.5, 0.0))
    pre, post = verdict.parts
    assert "includes the theory's value." in pre.test, pre.test
    assert "includes the theory's 0." in post.test
