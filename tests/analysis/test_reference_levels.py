"""Each arm's final level against the task's reference levels, in every verdict on such a task (referee 20:
postln_needs_warmup's gate hid Post-LN without warm-up sitting at the unigram model in every seed)."""

from normbench.analysis.claims import CLAIMS, judge

CLAIM = next(c for c in CLAIMS if c.id == "postln_needs_warmup")


def test_each_arm_is_placed_against_the_unigram_and_bigram_models(runs_of):
    rows = [{"seed": seed, "best_val": score + 0.002 * seed,
             "axes": {"model": "transformer", "task": "fortunes_lm", "placement": placement, "warmup_steps": warmup}}
            for placement, warmup, score in (("post", 0, 4.79), ("post", 100, 3.6), ("pre", 0, 3.5))
            for seed in (0, 1, 2)]
    verdict = judge(CLAIM, runs_of(*rows))
    assert "Where each arm ended against the task's reference levels (bpc" in verdict.context
    assert "post, no warm-up: at the unigram model in 3/3 runs (4.79–4.794 vs 4.78)" in verdict.context
    assert "post, warm-up: past the bigram model in 3/3 runs (3.6–3.604 vs 3.75)" in verdict.context


def test_a_task_without_reference_levels_says_nothing_of_them(runs_of):
    rows = [{"seed": seed, "best_val": 0.9, "axes": {"model": "transformer", "task": "copy", "placement": placement,
                                                     "warmup_steps": warmup}}
            for placement, warmup in (("post", 0), ("post", 100), ("pre", 0)) for seed in (0, 1, 2)]
    assert "reference levels" not in judge(CLAIM, runs_of(*rows)).context
