"""The lr-sensitivity area ratio is paired by seed where the arms share seeds (referee: qknorm_lr's interval
[1.24, 2.81] was Welch although both arms ran seeds 0 and 1; paired it is [1.18, 2.95]), Welch only where not."""

from normbench.analysis.claims import CLAIMS_2026, judge
from normbench.analysis.claims.vocabulary import INCONCLUSIVE, SUPPORTED

CLAIM = next(c for c in CLAIMS_2026 if c.id == "qknorm_lr_sensitivity")
GRID = (1e-3, 1e-2, 1e-1, 1.0)
SCALE = {0: 1.0, 1: 2.0, 2: 4.0, 3: 8.0}  # a seed effect common to both arms: seed 3's area is 8× seed 0's


def _runs(runs_of, seeds_of_qk):
    """Per seed, the area is 0.02 × SCALE with qk-norm and 1.5× that (±5%) without: the best lr scores 0.95,
    the other three lose 4/3 of the area each. seeds_of_qk maps no-qk seeds to the qk arm's seeds."""
    rows = []
    for seed, scale in SCALE.items():
        for qk_norm, area, seed_run in ((False, 0.03 * scale * (1 + 0.05 * (-1) ** seed), seed),
                                        (True, 0.02 * scale, seeds_of_qk(seed))):
            rows += [{"seed": seed_run, "best_val": 0.95 if lr == 1e-2 else 0.95 - 4 / 3 * area,
                      "axes": {"model": "transformer", "task": "copy", "model.qk_norm": qk_norm, "lr": lr}}
                     for lr in GRID]
    return runs_of(*rows)


def test_shared_seeds_are_paired_and_decide(runs_of):
    part = judge(CLAIM, _runs(runs_of, lambda seed: seed)).parts[0]
    effect = part.effects[0]
    assert effect.label.endswith("paired by seed over 4 seeds)"), effect.label
    assert "a paired t on the per-seed log ratios" in part.test, part.test
    assert part.status == SUPPORTED, (part.status, effect.interval)
    assert 1.3 < effect.interval[0] < effect.estimate < effect.interval[1] < 1.7, effect.interval


def test_unshared_seeds_stay_welch_and_the_seed_effect_leaves_it_undecided(runs_of):
    part = judge(CLAIM, _runs(runs_of, lambda seed: seed + 10)).parts[0]
    effect = part.effects[0]
    assert "unpaired (Welch" in effect.label, effect.label
    assert "Welch t on the log of the per-seed values" in part.test, part.test
    assert part.status == INCONCLUSIVE, (part.status, effect.interval)
    assert effect.interval[0] < 1 < effect.interval[1], effect.interval
