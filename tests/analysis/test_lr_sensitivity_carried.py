"""An lr-sensitivity area ratio says which lrs make it (referee 20: qknorm_lr's ratio came from lr 0.1 alone)."""

from normbench.analysis.claims import CLAIMS_2026, judge

CLAIM = next(c for c in CLAIMS_2026 if c.id == "qknorm_lr_sensitivity")
GRID = (1e-3, 1e-2, 1e-1, 1.0)


def _runs(runs_of, no_qk: dict, qk: dict):
    """Accuracy per lr for each arm (two seeds, 0.005 apart)."""
    return runs_of(*[{"seed": seed, "best_val": scores[lr] - 0.005 * seed,
                      "axes": {"model": "transformer", "task": "copy", "model.qk_norm": qk_norm, "lr": lr}}
                     for qk_norm, scores in ((False, no_qk), (True, qk)) for lr in GRID for seed in (0, 1)])


def test_one_lr_carrying_the_difference_is_named(runs_of):
    part = judge(CLAIM, _runs(runs_of, {1e-3: 0.90, 1e-2: 0.95, 1e-1: 0.94, 1.0: 0.40},
                              {1e-3: 0.90, 1e-2: 0.95, 1e-1: 0.945, 1.0: 0.93})).parts[0]
    assert "Per lr, the difference in area no qk-norm − qk-norm (accuracy" in part.test, part.test
    assert "One lr carries it: lr 1 gives" in part.test


def test_a_difference_spread_over_the_grid_is_said_to_be(runs_of):
    part = judge(CLAIM, _runs(runs_of, {1e-3: 0.80, 1e-2: 0.95, 1e-1: 0.80, 1.0: 0.60},
                              {1e-3: 0.90, 1e-2: 0.95, 1e-1: 0.90, 1.0: 0.80})).parts[0]
    assert "No one lr carries more than 80% of it" in part.test, part.test
