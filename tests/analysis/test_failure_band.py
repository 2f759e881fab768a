"""A failure count that a small move of its band changes is not a verdict (referee 20, postln_fails_without_warmup)."""

from normbench.analysis.claims import CLAIMS, NOT_TESTABLE, SUPPORTED, judge

CLAIM = next(c for c in CLAIMS if c.id == "postln_fails_without_warmup")


def _runs(runs_of, last_post: float):
    """Post-LN without warm-up: two seeds at the unigram model (4.78), the third at ``last_post`` bpc; Post-LN with
    warm-up and Pre-LN without it well past the bigram model (3.75) in every seed."""
    rows = []
    for placement, warmup, scores in (("post", 0, (4.79, 4.79, last_post)), ("post", 100, (3.0, 3.01, 3.02)),
                                      ("pre", 0, (3.0, 3.01, 3.02))):
        for seed, score in enumerate(scores):
            rows.append({"seed": seed, "best_val": score, "axes": {"model": "transformer", "task": "fortunes_lm",
                                                                    "placement": placement, "warmup_steps": warmup}})
    return runs_of(*rows)


def test_a_count_that_moves_with_the_band_is_not_testable(runs_of):
    # 3.71 is 0.04 bpc past the bigram: inside the 0.05 band (failed), outside a band 0.02 narrower (trained)
    part = judge(CLAIM, _runs(runs_of, 3.71)).parts[1]
    assert part.status == NOT_TESTABLE, part.test
    assert "hinges on the band" in part.note
    assert "seed 2 at bigram model (3.75: best 3.71, 0.04 past it)" in part.test
    assert "with the band at 0.03 / 0.07: 2 / 3" in part.test


def test_a_count_clear_of_the_band_is_judged_and_names_its_rule(runs_of):
    part = judge(CLAIM, _runs(runs_of, 4.79)).parts[1]
    assert part.status == SUPPORTED, part.test
    assert "Failure rule: a run fails when it diverged or its best evaluation gets no more than 0.05 bpc past" in part.test
    assert "changes no count" in part.test
