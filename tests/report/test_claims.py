"""Each claim on constructed runs: every part tested, supported only when all parts hold."""

from __future__ import annotations

import math

import pytest

from normbench.report.claims import (CLAIMS, CONTRADICTED, INCONCLUSIVE, NOT_APPLICABLE, SLOPE_DELTA, SUPPORTED,
                                     evaluate_claims, fp16_small_eps_nonfinite, gamma_small_flow,
                                     in_cell_most_stable, ln_batch_robust, postln_grad_depth,
                                     postln_needs_warmup, rms_faster_than_ln, settings)

SEEDS = (0, 1, 2)
QUIET = 0.002  # seed-to-seed spread small enough for a TOST at δ = 0.01 to decide with 3 seeds


def jitter(seed: int, scale: float = QUIET) -> float:
    return scale * (seed - 1)


def statuses(verdict) -> list[str]:
    return [part.status for part in verdict.parts]


# --- ln_batch_robust ----------------------------------------------------------------------------

def batch_runs(bn_small: float, ln_small: float, seeds=SEEDS, task: str = "copy", large: float = 0.95,
               spread: float = QUIET, examples: int | None = 25600) -> list[dict]:
    """Runs at batch 256 and 4 that saw ``examples`` each (steps = examples / batch), or, with
    examples=None, 100 steps each (the smaller batch sees 64x fewer examples)."""
    rows = []
    for seed in seeds:
        for norm, small in (("bn", bn_small), ("ln", ln_small)):
            for batch, value in ((256, large), (4, small)):
                steps = {"steps": examples // batch} if examples else {}
                rows.append({"seed": seed, "best_val": value + jitter(seed, spread),
                             "axes": {"task": task, "norm": norm, "batch_size": batch, **steps}})
    return rows


@pytest.mark.parametrize("rows, expected", [
    (batch_runs(bn_small=0.60, ln_small=0.95), SUPPORTED),
    (batch_runs(bn_small=0.95, ln_small=0.60), CONTRADICTED),
    (batch_runs(bn_small=0.60, ln_small=0.95, seeds=(0,)), INCONCLUSIVE),  # one seed per arm
    ([r for r in batch_runs(0.6, 0.95) if r["axes"]["norm"] == "ln"], NOT_APPLICABLE),
])
def test_ln_batch_robust(runs_of, rows, expected):
    verdict = ln_batch_robust(runs_of(*rows))
    assert verdict.status == expected, verdict.explanation
    if expected != NOT_APPLICABLE:
        assert set(verdict.evidence["arm"]) == {"bn @ batch 256", "bn @ batch 4", "ln @ batch 256", "ln @ batch 4"}
        assert len(verdict.parts) == 2 and "δ = 0.01 accuracy" in verdict.explanation


def test_ln_and_bn_both_degrading_is_not_supported(runs_of):
    """BN degrading more than LN is not "LN is robust": LN's own drop must be inside ±δ."""
    verdict = ln_batch_robust(runs_of(*batch_runs(bn_small=0.60, ln_small=0.80)))
    assert statuses(verdict) == [SUPPORTED, CONTRADICTED]
    assert verdict.status == CONTRADICTED


def test_ln_flat_but_noisy_is_inconclusive(runs_of):
    """LN's mean does not move, but its interval is wider than ±δ: equivalence is not shown."""
    verdict = ln_batch_robust(runs_of(*batch_runs(bn_small=0.60, ln_small=0.95, spread=0.05)))
    assert statuses(verdict)[1] == INCONCLUSIVE and verdict.status == INCONCLUSIVE
    assert "seeds per arm would put the 90% interval inside ±δ" in verdict.explanation


def test_ln_batch_robust_is_direction_aware(runs_of):
    """With mse (lower is better), BN's error rising at small batch is a drop in quality; the
    effect is printed in raw mse, large − small, and its label says lower is better."""
    verdict = ln_batch_robust(runs_of(*batch_runs(bn_small=0.5, ln_small=0.05, large=0.05, task="adding")))
    assert verdict.status == SUPPORTED, verdict.explanation
    assert verdict.effect.estimate == pytest.approx(0.05 - 0.5)
    assert "bn @ batch 256 − bn @ batch 4" in verdict.effect.label and "lower is better" in verdict.effect.label
    assert "δ = 0.0167 mse (10% of the range from chance 0.167 to the ideal 0)" in verdict.explanation


def test_divergence_is_the_effect_not_missing_data(runs_of):
    """BN diverging at small batch is shown by its divergence rate, reported beside the scores."""
    rows = batch_runs(bn_small=0.95, ln_small=0.95)
    for row in rows:
        if row["axes"]["norm"] == "bn" and row["axes"]["batch_size"] == 4:
            row["status"] = "diverged"
    verdict = ln_batch_robust(runs_of(*rows))
    assert verdict.status == SUPPORTED, verdict.explanation
    rate = verdict.parts[0].effects[1]
    assert rate.label.startswith("divergence rate") and rate.estimate == -1.0 and rate.interval[1] < 0


def test_mse_divergence_never_scores_better_than_a_finished_run(runs_of):
    """Finished runs far worse than chance (1.69 vs 0.167) still beat diverged ones."""
    rows = batch_runs(bn_small=0.05, ln_small=0.05, large=0.05, task="adding")
    for row in rows:
        if row["axes"]["norm"] == "bn":
            if row["axes"]["batch_size"] == 256:
                row["best_val"] = 1.69 + jitter(row["seed"])
            else:
                row["status"] = "diverged"
    verdict = ln_batch_robust(runs_of(*rows))
    assert verdict.parts[0].status == SUPPORTED, verdict.explanation  # the diverged arm is the worse one
    assert "chance" not in verdict.parts[0].test


# --- postln_needs_warmup ------------------------------------------------------------------------

def warmup_runs(post_cold: float, pre_cold: float, seeds=SEEDS, spread: float = QUIET) -> list[dict]:
    rows = []
    for seed in seeds:
        for placement, cold in (("post", post_cold), ("pre", pre_cold)):
            rows.append({"seed": seed, "best_val": 0.9 + jitter(seed, spread), "axes": {"placement": placement, "warmup_steps": 200}})
            rows.append({"seed": seed, "best_val": cold + jitter(seed, spread), "axes": {"placement": placement, "warmup_steps": 0}})
    return rows


@pytest.mark.parametrize("rows, expected", [
    (warmup_runs(post_cold=0.3, pre_cold=0.9), SUPPORTED),
    (warmup_runs(post_cold=0.9, pre_cold=0.3), CONTRADICTED),
    (warmup_runs(post_cold=0.3, pre_cold=0.9, seeds=(0,)), INCONCLUSIVE),
    ([r for r in warmup_runs(0.3, 0.9) if r["axes"]["warmup_steps"] == 0], NOT_APPLICABLE),
])
def test_postln_needs_warmup(runs_of, rows, expected):
    verdict = postln_needs_warmup(runs_of(*rows))
    assert verdict.status == expected, verdict.explanation


def test_postln_needs_warmup_noisy_is_inconclusive(runs_of):
    rows = warmup_runs(post_cold=0.85, pre_cold=0.9)
    for row in rows:
        row["best_val"] += 0.2 * (row["seed"] - 1) * (1 if row["axes"]["placement"] == "post" else -1)
    verdict = postln_needs_warmup(runs_of(*rows))
    assert verdict.status == INCONCLUSIVE
    assert "Minimum detectable effect of this design" in verdict.explanation and "seeds per arm" in verdict.explanation


def test_pre_ln_needing_warmup_too_is_not_supported(runs_of):
    """Post-LN gaining from warm-up is half the claim; Pre-LN gaining as much contradicts the other half."""
    verdict = postln_needs_warmup(runs_of(*warmup_runs(post_cold=0.3, pre_cold=0.3)))
    assert statuses(verdict) == [SUPPORTED, CONTRADICTED] and verdict.status == CONTRADICTED


def test_depths_without_overlap_cannot_be_pooled(runs_of):
    """Warm-up only at 2 layers and none only at 6: depth and warm-up are confounded."""
    rows = []
    for seed in SEEDS:
        for placement in ("post", "pre"):
            rows.append({"seed": seed, "best_val": 0.5 + jitter(seed), "axes": {"placement": placement, "warmup_steps": 200, "layers": 2}})
            rows.append({"seed": seed, "best_val": 0.9 + jitter(seed), "axes": {"placement": placement, "warmup_steps": 0, "layers": 6}})
    verdict = postln_needs_warmup(runs_of(*rows))
    assert verdict.status == NOT_APPLICABLE and "share no level of layers" in verdict.explanation


def test_unbalanced_depths_are_stratified(runs_of):
    """Within each depth warm-up costs Post-LN 0.05, but warm-up was run mostly at the easy depth:
    pooled naively the effect flips to +0.083; stratified it stays −0.05."""
    rows = []
    cells = {("post", 200, 2): (0.85, 4), ("post", 200, 6): (0.45, 2), ("post", 0, 2): (0.90, 2), ("post", 0, 6): (0.50, 4),
             ("pre", 200, 2): (0.90, 3), ("pre", 200, 6): (0.50, 3), ("pre", 0, 2): (0.90, 3), ("pre", 0, 6): (0.50, 3)}
    for (placement, warmup, layers), (value, seeds) in cells.items():
        for seed in range(seeds):
            rows.append({"seed": seed, "best_val": value + 0.004 * (seed - (seeds - 1) / 2),
                         "axes": {"placement": placement, "warmup_steps": warmup, "layers": layers}})
    verdict = postln_needs_warmup(runs_of(*rows))
    post = verdict.parts[0]
    assert post.effects[0].estimate == pytest.approx(-0.05, abs=1e-9)
    assert post.status == CONTRADICTED and "Stratified by layers" in post.test
    assert "Pooled over layers (balanced" in verdict.parts[1].test  # Pre-LN's arms are balanced
    assert verdict.status == CONTRADICTED


# --- postln_grad_depth --------------------------------------------------------------------------

NOISE = {(0, 2): 0.3, (0, 4): -0.2, (0, 8): 0.1, (1, 2): -0.25, (1, 4): 0.3, (1, 8): -0.15,
         (2, 2): -0.05, (2, 4): -0.1, (2, 8): 0.2}


def depth_runs(pre_exponent: float, post_exponent: float, seeds=(0, 1), post_noise: float = 0.0,
               warmups=(0,)) -> list[dict]:
    rows = []
    for seed in seeds:
        for layers in (2, 4, 8):
            for placement, exponent in (("pre", pre_exponent), ("post", post_exponent)):
                last = 2.0 * layers ** exponent * (1 + 0.03 * (seed - 0.5))
                if placement == "post":
                    last *= math.exp(post_noise * NOISE[(seed, layers)])
                for warmup in warmups:
                    rows.append({"seed": seed, "axes": {"placement": placement, "layers": layers, "warmup_steps": warmup},
                                 "profiles": {"layer_grad_norm_init": {"embed": 9.0, "layers.0": 5.0,
                                                                       f"layers.{layers - 1}": last}}})
    return rows


@pytest.mark.parametrize("rows, expected", [
    (depth_runs(pre_exponent=-0.5, post_exponent=0.0), SUPPORTED),
    (depth_runs(pre_exponent=0.0, post_exponent=-0.5), CONTRADICTED),
    (depth_runs(pre_exponent=-0.5, post_exponent=0.0, seeds=(0,)), INCONCLUSIVE),
    ([{**r, "axes": {**r["axes"], "model": "lstm"}} for r in depth_runs(-0.5, 0.0)], NOT_APPLICABLE),
    ([r for r in depth_runs(-0.5, 0.0) if r["axes"]["layers"] == 4], NOT_APPLICABLE),
])
def test_postln_grad_depth(runs_of, rows, expected):
    verdict = postln_grad_depth(runs_of(*rows))
    assert verdict.status == expected, verdict.explanation
    if expected == SUPPORTED:
        assert verdict.effect.estimate == pytest.approx(-0.5, abs=0.05)
        assert f"δ = {SLOPE_DELTA:g} in log-log units" in verdict.explanation


def test_a_changing_slope_on_the_flat_side_is_not_supported(runs_of):
    """Pre-LN shrinking is half the claim; Post-LN rising with depth contradicts the other half."""
    verdict = postln_grad_depth(runs_of(*depth_runs(pre_exponent=-0.5, post_exponent=0.5)))
    assert statuses(verdict) == [SUPPORTED, CONTRADICTED] and verdict.status == CONTRADICTED


def test_flat_but_noisy_is_inconclusive(runs_of):
    """Post-LN's slope is about 0 but its 90% interval is wider than ±δ: flatness is not shown."""
    verdict = postln_grad_depth(runs_of(*depth_runs(-0.5, 0.0, seeds=(0, 1, 2), post_noise=1.0)))
    assert statuses(verdict) == [SUPPORTED, INCONCLUSIVE] and verdict.status == INCONCLUSIVE
    assert abs(verdict.parts[1].effects[0].estimate) < SLOPE_DELTA


def test_warmup_does_not_multiply_a_gradient_measured_at_init(runs_of):
    """The same seed at two warm-up lengths is one observation of the gradient at init."""
    once = postln_grad_depth(runs_of(*depth_runs(-0.5, 0.0)))
    twice = postln_grad_depth(runs_of(*depth_runs(-0.5, 0.0, warmups=(0, 200))))
    assert twice.n_per_arm == once.n_per_arm
    assert twice.parts[0].effects[0].interval == pytest.approx(once.parts[0].effects[0].interval)
    assert "counted once per seed" in twice.explanation


def test_last_layer_is_the_deepest_block(runs_of):
    runs = runs_of({"profiles": {"layer_grad_norm_init": {"layers.10": 1.0, "layers.9": 7.0, "head": 3.0}}},
                   {"profiles": {"layer_grad_norm_init": {"layers.1.attn": 3.0, "layers.1.mlp": 4.0, "layers.0": 9.0}}})
    assert runs["profiles.last_layer_grad_norm_init"].tolist() == [1.0, 5.0]


# --- gamma_small_flow ---------------------------------------------------------------------------

def gamma_runs(small_ratio: float, unit_ratio: float, seeds=SEEDS, gammas=(0.1, 1.0), norm: str = "ln",
               task: str = "copy", small_val: float = 0.9, unit_val: float = 0.9, spread: float = QUIET) -> list[dict]:
    rows = []
    for seed in seeds:
        for gamma in gammas:
            ratio = small_ratio if gamma == 0.1 else unit_ratio
            rows.append({"seed": seed, "recurrent": True,
                         "best_val": (small_val if gamma == 0.1 else unit_val) + jitter(seed, spread),
                         "axes": {"task": task, "model": "lstm", "norm": norm, "placement": "in_cell", "gamma_init": gamma},
                         "metrics": {"grad_time_ratio_init": ratio + jitter(seed, 0.05)}})
    return rows


@pytest.mark.parametrize("rows, expected", [
    (gamma_runs(small_ratio=-0.5, unit_ratio=-3.0), SUPPORTED),
    (gamma_runs(small_ratio=-3.0, unit_ratio=-0.5), CONTRADICTED),
    (gamma_runs(small_ratio=-0.5, unit_ratio=-3.0, seeds=(0,)), INCONCLUSIVE),
    (gamma_runs(-0.5, -3.0, gammas=(0.5, 1.0)), NOT_APPLICABLE),
    ([{**r, "axes": {**r["axes"], "model": "transformer"}, "recurrent": False, "metrics": {}}
      for r in gamma_runs(-0.5, -3.0)], NOT_APPLICABLE),
])
def test_gamma_small_flow(runs_of, rows, expected):
    verdict = gamma_small_flow(runs_of(*rows))
    assert verdict.status == expected, verdict.explanation


def test_gamma_small_flow_tests_ln_accuracy(runs_of):
    """Better flow with LN's accuracy moving by 0.05 is not "insensitive"."""
    verdict = gamma_small_flow(runs_of(*gamma_runs(-0.5, -3.0, small_val=0.85)))
    assert statuses(verdict) == [SUPPORTED, CONTRADICTED] and verdict.status == CONTRADICTED
    noisy = gamma_small_flow(runs_of(*gamma_runs(-0.5, -3.0, spread=0.05)))
    assert statuses(noisy) == [SUPPORTED, INCONCLUSIVE] and noisy.status == INCONCLUSIVE


def test_gamma_small_flow_without_ln_cannot_be_supported(runs_of):
    verdict = gamma_small_flow(runs_of(*gamma_runs(-0.5, -3.0, norm="bn")))
    assert statuses(verdict) == [SUPPORTED, NOT_APPLICABLE] and verdict.status == INCONCLUSIVE
    assert "No LN runs at both gains" in verdict.explanation


def test_effect_label_says_what_the_number_is(runs_of):
    """The table's 0.1682 at gamma 0.1 and 0.1541 at 1.0 (mse) print as +0.0141, gamma 0.1 − gamma 1.0."""
    verdict = gamma_small_flow(runs_of(*gamma_runs(-0.5, -3.0, task="adding", small_val=0.1682, unit_val=0.1541)))
    accuracy = verdict.parts[1].effects[0]
    assert accuracy.estimate == pytest.approx(0.1682 - 0.1541)
    assert "mse of finished runs: LN gamma 0.1 − LN gamma 1.0 (lower is better" in accuracy.label


# --- fp16_small_eps_nonfinite -------------------------------------------------------------------

def eps_runs(diverged_small: int, diverged_large: int, n: int = 3, precision: str = "fp16") -> list[dict]:
    rows = []
    for eps, diverged in ((1e-8, diverged_small), (1e-3, diverged_large)):
        for seed in range(n):
            rows.append({"seed": seed, "status": "diverged" if seed < diverged else "ok",
                         "axes": {"precision": precision, "eps": eps}})
    return rows


@pytest.mark.parametrize("rows, expected", [
    (eps_runs(3, 0), SUPPORTED),
    (eps_runs(0, 3), CONTRADICTED),
    (eps_runs(1, 0), INCONCLUSIVE),
    (eps_runs(1, 0, n=1), INCONCLUSIVE),
    (eps_runs(3, 0, precision="fp32"), NOT_APPLICABLE),
    ([r for r in eps_runs(3, 0) if r["axes"]["eps"] == 1e-8], NOT_APPLICABLE),
])
def test_fp16_small_eps_nonfinite(runs_of, rows, expected):
    assert fp16_small_eps_nonfinite(runs_of(*rows)).status == expected


# --- rms_faster_than_ln -------------------------------------------------------------------------

def speed_runs(rms_ms: float, ln_ms: float, rms_val: float = 0.9, seeds=SEEDS, rms_spread: float = 14 / 11) -> list[dict]:
    rows = []
    for seed in seeds:
        for norm, ms, val, spread in (("rms", rms_ms, rms_val, rms_spread), ("ln", ln_ms, 0.9, 14 / 11)):
            median = ms * (1 + 0.01 * (seed - 1))
            rows.append({"seed": seed, "best_val": val + jitter(seed), "axes": {"norm": norm},
                         "throughput": {"step_ms_median": median, "step_ms_p10": median * 0.95,
                                        "step_ms_p90": median * 0.95 * spread}})
    return rows


@pytest.mark.parametrize("rows, expected", [
    (speed_runs(rms_ms=10, ln_ms=12), SUPPORTED),
    (speed_runs(rms_ms=10, ln_ms=12, rms_val=0.95), SUPPORTED),  # more accurate is no accuracy cost
    (speed_runs(rms_ms=14, ln_ms=12), CONTRADICTED),  # slower
    (speed_runs(rms_ms=10, ln_ms=12, rms_val=0.6), CONTRADICTED),  # faster but less accurate
    (speed_runs(rms_ms=12, ln_ms=12), INCONCLUSIVE),
    (speed_runs(rms_ms=10, ln_ms=12, seeds=(0,)), INCONCLUSIVE),
    ([r for r in speed_runs(10, 12) if r["axes"]["norm"] == "rms"], NOT_APPLICABLE),
])
def test_rms_faster_than_ln(runs_of, rows, expected):
    verdict = rms_faster_than_ln(runs_of(*rows))
    assert verdict.status == expected, verdict.explanation


def test_rms_speed_effect_is_a_ratio(runs_of):
    verdict = rms_faster_than_ln(runs_of(*speed_runs(rms_ms=10, ln_ms=12)))
    assert verdict.effect.null == 1.0
    assert verdict.effect.estimate == pytest.approx(10 / 12, rel=1e-3)
    assert verdict.effect.interval[1] < 1.0
    assert "not interleaved" in verdict.explanation


def test_disturbed_timings_are_set_aside(runs_of):
    """RMSNorm's runs all show interference (p90/p10 = 3): speed cannot be judged from them."""
    verdict = rms_faster_than_ln(runs_of(*speed_runs(rms_ms=10, ln_ms=12, rms_spread=3.0)))
    assert verdict.parts[0].status == INCONCLUSIVE and verdict.status == INCONCLUSIVE
    assert "3 run(s) whose step-time p90/p10 exceeds 1.5" in verdict.explanation
    assert "Cannot be judged: fewer than 2 undisturbed timings" in verdict.explanation


# --- in_cell_most_stable ------------------------------------------------------------------------

def stability_runs(in_cell: float, post: float, none: float, seeds=SEEDS, norm: str = "ln",
                   grad_max=lambda kurtosis: kurtosis ** 3) -> list[dict]:
    rows = []
    for seed in seeds:
        for arm_norm, placement, kurtosis in ((norm, "in_cell", in_cell), (norm, "post", post), ("none", "none", none)):
            rows.append({"seed": seed, "recurrent": True, "axes": {"model": "lstm", "norm": arm_norm, "placement": placement},
                         "metrics": {"grad_kurtosis": kurtosis + jitter(seed, 0.1),
                                     "grad_norm_max": grad_max(kurtosis) * (1 + jitter(seed, 0.1))}})
    return rows


@pytest.mark.parametrize("rows, expected", [
    (stability_runs(in_cell=3.2, post=5.0, none=8.7), SUPPORTED),
    (stability_runs(in_cell=8.7, post=5.0, none=3.2), CONTRADICTED),
    (stability_runs(in_cell=3.2, post=3.2, none=8.7), INCONCLUSIVE),  # in-cell no better than post
    (stability_runs(in_cell=3.2, post=5.0, none=8.7, seeds=(0,)), INCONCLUSIVE),
    ([r for r in stability_runs(3.2, 5.0, 8.7) if r["axes"]["norm"] != "none"], NOT_APPLICABLE),
])
def test_in_cell_most_stable(runs_of, rows, expected):
    verdict = in_cell_most_stable(runs_of(*rows))
    assert verdict.status == expected, verdict.explanation
    if expected != NOT_APPLICABLE:
        assert list(verdict.evidence["arm"]) == ["in_cell", "post", "none"]


def test_in_cell_most_stable_is_about_layernorm(runs_of):
    """A BatchNorm-only sweep says nothing about LayerNorm in the cell."""
    verdict = in_cell_most_stable(runs_of(*stability_runs(3.2, 5.0, 8.7, norm="bn")))
    assert verdict.status == NOT_APPLICABLE and "LayerNorm" in verdict.explanation


def test_gradient_norms_that_contradict_the_kurtosis_are_not_ignored(runs_of):
    """Lower kurtosis in the cell, but its largest gradients are 100× larger: the measures disagree."""
    rows = stability_runs(3.2, 5.0, 8.7, grad_max=lambda k: 1e4 if k == 3.2 else 100.0)
    verdict = in_cell_most_stable(runs_of(*rows))
    assert verdict.parts[0].status == INCONCLUSIVE and "disagree" in verdict.parts[0].note
    assert verdict.status != SUPPORTED


def test_in_cell_diverging_more_contradicts_stability(runs_of):
    rows = stability_runs(3.2, 5.0, 8.7, seeds=(0, 1, 2, 3, 4))
    for row in rows:
        if row["axes"]["placement"] == "in_cell":
            row["status"] = "diverged"
    verdict = in_cell_most_stable(runs_of(*rows))
    assert verdict.parts[0].status == CONTRADICTED and verdict.status == CONTRADICTED


# --- settings ------------------------------------------------------------------------------------

def test_settings_ignore_missing_values_and_constant_extra_axes(runs_of):
    """eps does not apply to norm=none (NaN there): it must not split the runs into settings."""
    rows = [{"seed": s, "axes": {"norm": "ln", "eps": 1e-5, "optim.weight_decay": 0.0}} for s in SEEDS]
    rows += [{"seed": s, "axes": {"norm": "none", "eps": None, "optim.weight_decay": 0.0}} for s in SEEDS]
    runs = runs_of(*rows)
    assert [name for name, _ in settings(runs, ("norm",))] == [""]
    rows += [{"seed": s, "axes": {"norm": "ln", "eps": 1e-3, "optim.weight_decay": 0.0}} for s in SEEDS]
    split = settings(runs_of(*rows), ("norm",))
    assert sorted(name for name, _ in split) == ["eps=0.001", "eps=1e-05"]
    assert all((part["axes.norm"] == "none").sum() == 3 for _, part in split)  # norm=none joins both


# --- the registry -------------------------------------------------------------------------------

def test_registry_lists_every_claim_once():
    ids = [c.id for c in CLAIMS]
    assert ids == ["ln_batch_robust", "postln_needs_warmup", "postln_grad_depth", "gamma_small_flow",
                   "fp16_small_eps_nonfinite", "rms_faster_than_ln", "in_cell_most_stable",
                   "ln_larger_stable_lr"]
    assert all(c.statement and c.citation for c in CLAIMS)


def test_not_applicable_says_what_is_missing(runs_of):
    verdicts = dict((c.id, v) for c, v in evaluate_claims(runs_of({"seed": 0}, {"seed": 1})))
    assert verdicts["ln_batch_robust"].explanation.startswith("Needs norm ln and bn")
    assert "fp16" in verdicts["fp16_small_eps_nonfinite"].explanation
    assert all(v.status == NOT_APPLICABLE for v in verdicts.values())


def test_single_seed_never_supports(runs_of):
    """Pooling other axes can give an arm several runs but one seed: still not enough."""
    rows = [{**r, "axes": {**r["axes"], "lr": lr}} for r in batch_runs(0.6, 0.94, seeds=(0,)) for lr in (1e-3, 3e-3, 1e-2)]
    verdict = ln_batch_robust(runs_of(*rows))
    assert verdict.effect.interval is not None
    assert verdict.status == INCONCLUSIVE
    assert "Fewer than 2 seeds" in verdict.explanation


def test_claims_compare_like_with_like_across_mixed_sweeps(runs_of):
    """A smoke sweep's tiny runs beside a real batch-size sweep: the claim is judged within the real
    setting, the smoke setting is listed apart, and neither is pooled into the other."""
    real = [dict(r, axes={**r["axes"], "lr": 1e-3}) for r in batch_runs(bn_small=0.60, ln_small=0.95)]
    smoke = [{"seed": 0, "best_val": 0.1 * i, "axes": {"norm": norm, "batch_size": bs, "steps": 1024 // bs, "lr": 1.0}}
             for i, (norm, bs) in enumerate([("bn", 4), ("bn", 256), ("ln", 4), ("ln", 256)] * 3)]
    verdicts = dict((c.id, v) for c, v in evaluate_claims(runs_of(*real, *smoke)))
    verdict = verdicts["ln_batch_robust"]
    assert verdict.status == SUPPORTED
    assert verdict.effect.estimate == pytest.approx(ln_batch_robust(runs_of(*real)).effect.estimate)
    assert "Judged within lr=0.001." in verdict.explanation and "lr=1: inconclusive" in verdict.explanation


def test_a_claim_needing_a_mix_of_settings_is_not_applicable(runs_of):
    """BN only at lr=1e-3 and LN only at lr=1e-2: no setting contrasts them."""
    rows = [dict(r, axes={**r["axes"], "lr": 1e-3 if r["axes"]["norm"] == "bn" else 1e-2})
            for r in batch_runs(0.6, 0.94)]
    verdict = dict((c.id, v) for c, v in evaluate_claims(runs_of(*rows)))["ln_batch_robust"]
    assert verdict.status == NOT_APPLICABLE and "No single setting has every arm" in verdict.explanation


def test_ln_batch_robust_needs_equal_data(runs_of):
    """At equal steps the small batch sees 64x fewer examples: not a comparison of batch sizes, so the
    claim is not applicable (no number of seeds would make it one), and it says what each arm saw."""
    verdict = ln_batch_robust(runs_of(*batch_runs(bn_small=0.60, ln_small=0.95, examples=None)))
    assert verdict.status == NOT_APPLICABLE
    assert verdict.explanation.startswith("Not comparable")
    assert "bn @ batch 4: 400; bn @ batch 256: 25600" in verdict.explanation


def test_ln_batch_robust_says_the_arms_saw_equal_data(runs_of):
    rows = [dict(r, axes={**r["axes"], "eval_every": 6400 // r["axes"]["batch_size"]})
            for r in batch_runs(bn_small=0.60, ln_small=0.95, examples=25600)]
    verdict = dict((c.id, v) for c, v in evaluate_claims(runs_of(*rows)))["ln_batch_robust"]
    assert verdict.status == SUPPORTED, verdict.explanation
    assert "equal data: 25600 examples each (steps × batch_size), each evaluated every 6400 examples" in verdict.explanation


def test_ln_batch_robust_takes_the_equal_data_runs_beside_a_fixed_steps_sweep(runs_of):
    """An old fixed-steps sweep (100 steps at each batch) beside an equal-data one: only the latter counts."""
    fixed = batch_runs(bn_small=0.95, ln_small=0.60, examples=None)  # would contradict the claim
    equal = batch_runs(bn_small=0.60, ln_small=0.95, examples=6400)
    verdict = dict((c.id, v) for c, v in evaluate_claims(runs_of(*fixed, *equal)))["ln_batch_robust"]
    assert verdict.status == SUPPORTED, verdict.explanation
    assert verdict.n_per_arm == {"bn @ batch 256": 3, "bn @ batch 4": 3, "ln @ batch 256": 3, "ln @ batch 4": 3}


# --- fp16_small_eps_nonfinite: which runs' norms computed in fp16 ---------------------------------

def test_fp16_small_eps_reads_the_pure_mode(runs_of):
    assert fp16_small_eps_nonfinite(runs_of(*eps_runs(3, 0, precision="fp16_pure"))).status == SUPPORTED


def test_fp16_small_eps_needs_norms_computing_in_fp16(runs_of):
    """With norm.fp32=true the norm computes in fp32, where no eps vanishes: not this claim's evidence."""
    rows = [dict(r, axes={**r["axes"], "norm_fp32": True}) for r in eps_runs(3, 0, precision="fp16_pure")]
    verdict = fp16_small_eps_nonfinite(runs_of(*rows))
    assert verdict.status == NOT_APPLICABLE and "norm.fp32=true" in verdict.explanation


def test_fp16_small_eps_judged_where_the_norm_is_fp16_beside_its_fp32_control(runs_of):
    """The eps sweep's control arm (norm.fp32=true, never diverges) is a setting of its own, not pooled."""
    control = [dict(r, axes={**r["axes"], "norm_fp32": True}) for r in eps_runs(0, 0, precision="fp16_pure")]
    half = [dict(r, axes={**r["axes"], "norm_fp32": False}) for r in eps_runs(3, 0, precision="fp16_pure")]
    verdict = dict((c.id, v) for c, v in evaluate_claims(runs_of(*control, *half)))["fp16_small_eps_nonfinite"]
    assert verdict.status == SUPPORTED, verdict.explanation
    assert verdict.n_per_arm == {"eps 1e-08": 3, "eps 0.001": 3}
    assert "Judged within norm_fp32=false" in verdict.explanation
