"""The paper's settings beside the study's (referee 20: batch 128 in Ba et al.'s Figure 6 vs 32 here; DyT's α0
tuned by Zhu et al. for language models, one untuned value here)."""

from normbench.analysis.claims import CLAIMS, judge

BY_ID = {c.id: c for c in CLAIMS}


def _batch_runs(large: int) -> list[dict]:
    """LN and BN in the LSTM cell at batch 4 and ``large``, equal examples seen."""
    return [{"seed": seed, "best_val": 0.9, "metrics": {"val_auc": 0.8 + 0.01 * seed + 0.05 * (norm == "ln")},
             "axes": {"task": "copy", "model": "lstm", "norm": norm, "placement": "in_cell", "batch_size": batch,
                      "steps": 25600 // batch}}
            for seed in (0, 1, 2) for norm in ("ln", "bn") for batch in (4, large)]


def test_a_batch_other_than_the_papers_is_named_beside_it(runs_of):
    context = judge(BY_ID["ln_batch_robust"], runs_of(*_batch_runs(32))).context
    assert "The paper: batch 128 (Ba et al. 2016, Figure 6, left); here: 32 (ln @ large batch, bn @ large batch)." in context
    assert "Figure 6, right" not in context  # the small batch is the paper's 4: nothing to say
    assert "The paper: batch" not in judge(BY_ID["ln_batch_robust"], runs_of(*_batch_runs(128))).context


def _dyt_runs(alphas: tuple[float, ...]) -> list[dict]:
    return [{"seed": seed, "best_val": 0.9 + 0.002 * seed,
             "axes": {"task": "copy", "model": "transformer", "norm": norm, "placement": "pre",
                      **({"norm.alpha_init": alpha} if norm == "dyt" else {})}}
            for seed in (0, 1, 2) for norm, alpha in [("ln", None)] + [("dyt", a) for a in alphas]]


def test_a_setting_the_paper_tuned_and_the_study_did_not_sweep_is_named(runs_of):
    context = judge(BY_ID["dyt_matches_ln"], runs_of(*_dyt_runs((0.5,)))).context
    assert "The paper tuned DyT's α0" in context and "here it was not swept: norm.alpha_init = 0.5 for dyt" in context
    swept = judge(BY_ID["dyt_matches_ln"], runs_of(*_dyt_runs((0.5, 1.0))))
    assert "The paper tuned DyT's α0" not in swept.context + "".join(n for n, _ in swept.others)
