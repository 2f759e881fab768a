"""Each claim on constructed runs: supported, contradicted, inconclusive, not applicable."""

from __future__ import annotations

import pytest

from normbench.report.claims import (CLAIMS, CONTRADICTED, INCONCLUSIVE, NOT_APPLICABLE, SUPPORTED,
                                     evaluate_claims, fp16_small_eps_nonfinite, gamma_small_flow,
                                     in_cell_most_stable, ln_batch_robust, postln_grad_depth,
                                     postln_needs_warmup, rms_faster_than_ln)

SEEDS = (0, 1, 2)


def jitter(seed: int, scale: float = 0.01) -> float:
    return scale * (seed - 1)


# --- ln_batch_robust ----------------------------------------------------------------------------

def batch_runs(bn_small: float, ln_small: float, seeds=SEEDS) -> list[dict]:
    rows = []
    for seed in seeds:
        for norm, small in (("bn", bn_small), ("ln", ln_small)):
            rows.append({"seed": seed, "best_val": 0.95 + jitter(seed), "axes": {"norm": norm, "batch_size": 256}})
            rows.append({"seed": seed, "best_val": small + jitter(seed), "axes": {"norm": norm, "batch_size": 4}})
    return rows


@pytest.mark.parametrize("rows, expected", [
    (batch_runs(bn_small=0.60, ln_small=0.94), SUPPORTED),
    (batch_runs(bn_small=0.94, ln_small=0.60), CONTRADICTED),
    (batch_runs(bn_small=0.60, ln_small=0.94, seeds=(0,)), INCONCLUSIVE),  # one seed per arm
    ([r for r in batch_runs(0.6, 0.94) if r["axes"]["norm"] == "ln"], NOT_APPLICABLE),
])
def test_ln_batch_robust(runs_of, rows, expected):
    verdict = ln_batch_robust(runs_of(*rows))
    assert verdict.status == expected, verdict.explanation
    if expected != NOT_APPLICABLE:
        assert set(verdict.evidence["arm"]) == {"bn @ batch 256", "bn @ batch 4", "ln @ batch 256", "ln @ batch 4"}


def test_ln_batch_robust_is_direction_aware(runs_of):
    """With mse (lower is better), BN's error rising at small batch is a drop in quality."""
    rows = []
    for seed in SEEDS:
        for norm, small in (("bn", 0.5), ("ln", 0.05)):
            rows.append({"seed": seed, "best_val": 0.05 + jitter(seed), "axes": {"task": "adding", "norm": norm, "batch_size": 256}})
            rows.append({"seed": seed, "best_val": small + jitter(seed), "axes": {"task": "adding", "norm": norm, "batch_size": 4}})
    verdict = ln_batch_robust(runs_of(*rows))
    assert verdict.status == SUPPORTED
    assert verdict.effect.estimate == pytest.approx(0.45)


def test_diverged_runs_score_chance(runs_of):
    """BN diverging at small batch is the effect, not missing data."""
    rows = batch_runs(bn_small=0.94, ln_small=0.94)
    for row in rows:
        if row["axes"] == {"norm": "bn", "batch_size": 4}:
            row["status"] = "diverged"
    verdict = ln_batch_robust(runs_of(*rows))
    assert verdict.status == SUPPORTED
    assert verdict.effect.estimate == pytest.approx(0.95 - 0.1 - (0.95 - 0.94))


# --- postln_needs_warmup ------------------------------------------------------------------------

def warmup_runs(post_cold: float, pre_cold: float, seeds=SEEDS) -> list[dict]:
    rows = []
    for seed in seeds:
        for placement, cold in (("post", post_cold), ("pre", pre_cold)):
            rows.append({"seed": seed, "best_val": 0.9 + jitter(seed), "axes": {"placement": placement, "warmup_steps": 200}})
            rows.append({"seed": seed, "best_val": cold + jitter(seed), "axes": {"placement": placement, "warmup_steps": 0}})
    return rows


@pytest.mark.parametrize("rows, expected", [
    (warmup_runs(post_cold=0.3, pre_cold=0.9), SUPPORTED),
    (warmup_runs(post_cold=0.9, pre_cold=0.3), CONTRADICTED),
    (warmup_runs(post_cold=0.3, pre_cold=0.9, seeds=(0,)), INCONCLUSIVE),
    ([r for r in warmup_runs(0.3, 0.9) if r["axes"]["warmup_steps"] == 0], NOT_APPLICABLE),
])
def test_postln_needs_warmup(runs_of, rows, expected):
    assert postln_needs_warmup(runs_of(*rows)).status == expected


def test_postln_needs_warmup_noisy_is_inconclusive(runs_of):
    rows = warmup_runs(post_cold=0.85, pre_cold=0.9)
    for row in rows:
        row["best_val"] += 0.2 * (row["seed"] - 1) * (1 if row["axes"]["placement"] == "post" else -1)
    assert postln_needs_warmup(runs_of(*rows)).status == INCONCLUSIVE


# --- postln_grad_depth --------------------------------------------------------------------------

def depth_runs(pre_exponent: float, post_exponent: float, seeds=(0, 1)) -> list[dict]:
    rows = []
    for seed in seeds:
        for layers in (2, 4, 8):
            for placement, exponent in (("pre", pre_exponent), ("post", post_exponent)):
                last = 2.0 * layers ** exponent * (1 + 0.03 * (seed - 0.5))
                rows.append({"seed": seed, "axes": {"placement": placement, "layers": layers},
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


def test_last_layer_is_the_deepest_block(runs_of):
    runs = runs_of({"profiles": {"layer_grad_norm_init": {"layers.10": 1.0, "layers.9": 7.0, "head": 3.0}}},
                   {"profiles": {"layer_grad_norm_init": {"layers.1.attn": 3.0, "layers.1.mlp": 4.0, "layers.0": 9.0}}})
    assert runs["profiles.last_layer_grad_norm_init"].tolist() == [1.0, 5.0]


# --- gamma_small_flow ---------------------------------------------------------------------------

def gamma_runs(small_ratio: float, unit_ratio: float, seeds=SEEDS, gammas=(0.1, 1.0)) -> list[dict]:
    rows = []
    for seed in seeds:
        for gamma in gammas:
            ratio = small_ratio if gamma == 0.1 else unit_ratio
            rows.append({"seed": seed, "recurrent": True, "best_val": 0.9 + jitter(seed),
                         "axes": {"model": "lstm", "placement": "in_cell", "gamma_init": gamma},
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


def test_gamma_small_flow_reports_ln_accuracy(runs_of):
    verdict = gamma_small_flow(runs_of(*gamma_runs(-0.5, -3.0)))
    (accuracy,) = verdict.more_effects
    assert accuracy.estimate == pytest.approx(0.0, abs=1e-12)
    assert accuracy.interval[0] <= 0 <= accuracy.interval[1]
    assert "consistent with insensitivity" in verdict.explanation


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

def speed_runs(rms_ms: float, ln_ms: float, rms_val: float = 0.9, seeds=SEEDS) -> list[dict]:
    rows = []
    for seed in seeds:
        for norm, ms, val in (("rms", rms_ms, rms_val), ("ln", ln_ms, 0.9)):
            rows.append({"seed": seed, "best_val": val + jitter(seed), "axes": {"norm": norm},
                         "throughput": {"step_ms_median": ms * (1 + 0.01 * (seed - 1))}})
    return rows


@pytest.mark.parametrize("rows, expected", [
    (speed_runs(rms_ms=10, ln_ms=12), SUPPORTED),
    (speed_runs(rms_ms=10, ln_ms=12, rms_val=0.95), SUPPORTED),  # more accurate is fine
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


# --- in_cell_most_stable ------------------------------------------------------------------------

def stability_runs(in_cell: float, post: float, none: float, seeds=SEEDS) -> list[dict]:
    rows = []
    for seed in seeds:
        for norm, placement, kurtosis in (("ln", "in_cell", in_cell), ("ln", "post", post), ("none", "none", none)):
            rows.append({"seed": seed, "recurrent": True, "axes": {"model": "lstm", "norm": norm, "placement": placement},
                         "metrics": {"grad_kurtosis": kurtosis + jitter(seed, 0.1), "grad_norm_max": kurtosis ** 3}})
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


# --- the registry -------------------------------------------------------------------------------

def test_registry_lists_every_claim_once():
    ids = [c.id for c in CLAIMS]
    assert ids == ["ln_batch_robust", "postln_needs_warmup", "postln_grad_depth", "gamma_small_flow",
                   "fp16_small_eps_nonfinite", "rms_faster_than_ln", "in_cell_most_stable"]
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
    real = [dict(r, axes={**r["axes"], "steps": 400}) for r in batch_runs(bn_small=0.60, ln_small=0.94)]
    smoke = [{"seed": 0, "best_val": 0.1 * i, "axes": {"norm": norm, "batch_size": bs, "steps": 4}}
             for i, (norm, bs) in enumerate([("bn", 4), ("bn", 256), ("ln", 4), ("ln", 256)] * 3)]
    verdicts = dict((c.id, v) for c, v in evaluate_claims(runs_of(*real, *smoke)))
    verdict = verdicts["ln_batch_robust"]
    assert verdict.status == SUPPORTED
    assert verdict.effect.estimate == pytest.approx(ln_batch_robust(runs_of(*real)).effect.estimate)
    assert "Judged within steps=400." in verdict.explanation and "steps=4: inconclusive" in verdict.explanation


def test_a_claim_needing_a_mix_of_settings_is_not_applicable(runs_of):
    """BN only at steps=400 and LN only at steps=4: no setting contrasts them."""
    rows = [r for r in batch_runs(0.6, 0.94) if r["axes"]["norm"] == "bn"]
    rows = [dict(r, axes={**r["axes"], "steps": 400}) for r in rows]
    rows += [dict(r, axes={**r["axes"], "steps": 4}) for r in batch_runs(0.6, 0.94) if r["axes"]["norm"] == "ln"]
    verdict = dict((c.id, v) for c, v in evaluate_claims(runs_of(*rows)))["ln_batch_robust"]
    assert verdict.status == NOT_APPLICABLE and "No single setting has every arm" in verdict.explanation
