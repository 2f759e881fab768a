"""What the BatchNorm studies' designs isolate (issue 45, "causes isolated"), read from the configs their
sweep files compose: BN at the small batch pools that batch; a fixed-length control beside variable lengths,
with masked BN's per-step pools kept from being tiny; Cooijmans et al.'s gain 0.1 where they used it; the
gradient-flow input without a constant prefix; BN evaluated the same way in every study."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from normbench.configuration.config import to_config
from normbench.models import build_model
from normbench.norms.layers import BatchNorm
from normbench.studies.study import lr_plan
from normbench.tasks.tensors import load_task

SWEEPS = Path(__file__).resolve().parents[1] / "sweeps"
MIN_REAL_ROWS = 8  # the smallest expected per-step pool of masked BN that ln_vs_bn_varlen.yaml states


def _pools(cfg, batch: int) -> list[int]:
    """How many vectors each BatchNorm call's statistics pool on one training batch of the composed run."""
    task = load_task(cfg.task, 100)
    model = build_model(cfg.model, cfg.norm, cfg.placement, input_kind=task.input_kind, input_dim=task.input_dim,
                        n_outputs=task.n_outputs, readout=task.readout, max_len=task.seq_len)
    pools: list[int] = []

    def record(module, inputs, output):
        x = inputs[0]
        # (batch, d) at one step, or (batch, time, d) normalized per step: statistics over the batch axis;
        # a BatchNorm over every position at once would pool batch x time
        pools.append(x.shape[0] if _per_step(module, x) else x.shape[0] * x.shape[1])
    for module in model.modules():
        if isinstance(module, BatchNorm):
            module.register_forward_hook(record)
    model.train()
    model(task.train.x[:batch])
    return pools


def _per_step(module, x) -> bool:
    from normbench.norms.layers import StepBatchNorm

    return x.dim() == 2 or isinstance(module, StepBatchNorm)


@pytest.mark.parametrize("batch", [4, 32])
def test_small_batch_sweep_puts_bn_in_the_cell_where_its_statistics_pool_the_batch_alone(compose, batch):
    """Ba et al. §6.6 is about BN seeing B examples: post-placement BN pooled batch x time (64 at batch 4)."""
    bn = to_config(compose("+sweep=small_batch_bn", "+small_batch_arm=bn", f"batch_size={batch}", tiny=False))
    ln = to_config(compose("+sweep=small_batch_bn", "+small_batch_arm=ln", f"batch_size={batch}", tiny=False))
    assert bn.placement.name == ln.placement.name == "in_cell" and (bn.norm.kind, ln.norm.kind) == ("bn", "ln")
    pools = _pools(bn, batch)
    assert pools and set(pools) == {batch}
    assert bn.norm.gamma_init == 0.1 and ln.norm.gamma_init == 1.0  # each paper's own initialization
    # equal data: 9600 examples at every batch size, 8 evaluations each
    assert bn.steps * batch >= 9600 > (bn.steps - 1) * batch and -(-bn.steps // bn.eval_every) == 8


def test_post_placement_bn_pools_batch_times_length_so_the_check_above_can_fail(compose):
    cfg = to_config(compose("+sweep=small_batch_bn", "+small_batch_arm=bn", "batch_size=4", "placement=post",
                            tiny=False))
    assert set(_pools(cfg, 4)) == {4 * 16}


def test_batch_size_and_varlen_arms_each_get_their_own_lr():
    # each grid widened past the ends the example's arms chose (an lr at an end of its grid is not known best)
    for sweep, grid in (("small_batch_bn", (0.0003, 0.001, 0.003, 0.01, 0.03)),
                        ("ln_vs_bn_varlen", (0.001, 0.003, 0.01, 0.03))):
        plan = lr_plan([f"+sweep={sweep}"])
        assert plan.kind == "tuned" and plan.grid == grid


def _varlen_levels(compose) -> list[int]:
    """The task.min_length levels the sweep file runs (its Hydra params; a composed job holds one)."""
    params = OmegaConf.load(SWEEPS / "ln_vs_bn_varlen.yaml").hydra.sweeper.params
    return [int(v) for v in str(params["task.min_length"]).split(",")]


def test_varlen_sweep_has_a_fixed_length_control_and_masked_bn_pools_are_never_tiny(compose):
    levels = _varlen_levels(compose)
    seen = []
    for level in levels:
        cfg = to_config(compose("+sweep=ln_vs_bn_varlen", "+varlen_arm=bn_masked", f"task.min_length={level}",
                                tiny=False))
        seen.append(cfg.task.min_length == cfg.task.length)
        # lengths uniform in [min_length, length]: the last step holds batch / (number of lengths) real rows
        # on average, the smallest expected pool of any step
        assert cfg.batch_size / (cfg.task.length - cfg.task.min_length + 1) >= MIN_REAL_ROWS, level
    assert seen.count(True) == 1 and seen.count(False) >= 2  # one fixed-length control, variable levels beside it


def test_the_fixed_length_control_is_unpadded_so_bn_masked_and_unmasked_run_alike(compose):
    level = max(_varlen_levels(compose))
    cfg = to_config(compose("+sweep=ln_vs_bn_varlen", "+varlen_arm=bn_unmasked", f"task.min_length={level}",
                            tiny=False))
    task = load_task(cfg.task, 100)
    assert task.train.lengths is None or bool((torch.as_tensor(task.train.lengths) == cfg.task.length).all())


@pytest.mark.parametrize("arm, kind, gamma", [("bn_masked", "bn", 0.1), ("bn_unmasked", "bn", 0.1), ("ln", "ln", 1.0)])
def test_varlen_bn_starts_at_cooijmans_gain(compose, arm, kind, gamma):
    cfg = to_config(compose("+sweep=ln_vs_bn_varlen", f"+varlen_arm={arm}", tiny=False))
    assert cfg.norm.kind == kind and cfg.norm.gamma_init == gamma and cfg.placement.name == "in_cell"


def test_gamma_flow_reads_a_task_with_no_constant_step_over_a_window_from_t_2(compose):
    """Cooijmans et al. §5.1: steps identical in every example (in-order MNIST's blank first pixels) give BN
    zero-variance inputs. The adding task varies at every step, so the flow window starts at t = 2 and spans
    63 steps; on digits it started at t = 8, past the blank first row."""
    from normbench.analysis.aggregate import flow_start

    cfg = to_config(compose("+sweep=gamma_flow", "norm.gamma_init=1.0", tiny=False))
    assert cfg.task.name == "adding" and cfg.task.length == 64
    assert cfg.model.family == "rnn" and cfg.placement.name == "in_cell" and cfg.norm.kind == "bn"
    x = torch.as_tensor(load_task(cfg.task, 100).train.x)
    assert bool((x.std(0).amax(-1) > 0).all())  # no step is the same in every example
    assert cfg.task.length - flow_start(cfg.task.name) + 1 == 63


# every shipped study that runs BatchNorm, with an arm that selects it
BN_STUDIES = [("small_batch_bn", ["+small_batch_arm=bn"]), ("batch_size", ["norm=bn"]),
              ("ln_vs_bn_varlen", ["+varlen_arm=bn_masked"]),
              ("ln_vs_bn_varlen", ["+varlen_arm=bn_unmasked"]), ("gamma_flow", ["norm.gamma_init=0.1"]),
              ("gamma_init", ["norm=bn", "norm.gamma_init=0.1"]), ("bn_converges", ["norm=bn"]),
              ("dropout_placement", ["placement=post", "model.dropout_at=before_norm"]),
              ("gru", ["+gru_arm=bn_in_cell"]), ("gru", ["+gru_arm=bn_post"])]


@pytest.mark.parametrize("sweep, arm", BN_STUDIES)
def test_every_bn_study_evaluates_with_population_statistics_the_same_way(compose, sweep, arm):
    """Eval-mode BN with statistics re-estimated for the weights evaluated (conf/norm/bn.yaml), never the
    trailing running averages in one study and population statistics in another."""
    plain = OmegaConf.to_container(compose("norm=bn", tiny=False), resolve=True)["norm"]
    cfg = to_config(compose(f"+sweep={sweep}", *arm, tiny=False))
    assert cfg.norm.kind == "bn"
    assert (cfg.norm.bn_reestimate, cfg.norm.bn_reestimate_batches) == (plain["bn_reestimate"],
                                                                         plain["bn_reestimate_batches"]) == (True, 8)



def _arms_at_their_gains(claim_id: str) -> list[dict]:
    """Crafted records of each sweep's arms, LN at gain 1.0 and BN at 0.1, LN clearly ahead everywhere."""
    rows = []
    for seed in (0, 1, 2):
        wobble = 0.002 * (seed - 1)
        if claim_id == "ln_batch_robust":  # small_batch_bn: equal data at batch 4 and 32
            for norm, gain, small in (("ln", 1.0, 0.95), ("bn", 0.1, 0.70)):
                for batch, value in ((4, small), (32, 0.93 if norm == "ln" else 0.91)):  # LN ahead at both
                    value = value + wobble * (batch == 4) * (norm == "ln")
                    rows.append({"seed": seed, "best_val": value, "metrics": {"val_auc": value},  # read on the curve
                                 "axes": {"task": "copy", "norm": norm, "placement": "in_cell", "gamma_init": gain, "batch_size": batch,
                                          "steps": 9600 // batch, "eval_every": 1200 // batch}})
        else:  # ln_vs_bn_varlen at one variable level: MSE, lower is better
            for norm, gain, mask, value in (("ln", 1.0, None, 0.001), ("bn", 0.1, True, 0.004),
                                            ("bn", 0.1, False, 0.009)):
                axes = {"task": "adding", "norm": norm, "gamma_init": gain, "task.length": 16, "task.min_length": 12}
                rows.append({"seed": seed, "best_val": value * (1 + wobble), "metrics": {"val_auc": 2 * value * (1 + wobble)},
                             "axes": {**axes, **({} if mask is None else {"norm.bn_mask": mask})}})
    return rows


@pytest.mark.parametrize("claim_id", ["ln_batch_robust", "ln_beats_bn_varlen"])
def test_claims_read_each_norms_own_gain_as_part_of_its_arm(claim_id):
    """LN at 1.0 and BN at 0.1 differ in gamma_init: a claim that did not compare it would split its arms
    into settings no two arms share and read "not applicable" (the first tiny study of small_batch_bn did)."""
    from normbench.analysis.claims import SHIPPED, judge
    from tests.report.conftest import runs_of

    verdict = judge(next(c for c in SHIPPED if c.id == claim_id), runs_of(*_arms_at_their_gains(claim_id)))
    assert verdict.status == "supported", verdict.explanation


@pytest.mark.parametrize("claim, sweep, ln_arm, bn_arm", [
    ("ln_batch_robust", "small_batch_bn", "+small_batch_arm=ln", "+small_batch_arm=bn"),
    ("ln_beats_bn_varlen", "ln_vs_bn_varlen", "+varlen_arm=ln", "+varlen_arm=bn_masked")])
def test_claims_comparing_ln_with_bn_at_each_papers_gain_read_the_gain_as_part_of_the_arm(compose, claim, sweep,
                                                                                          ln_arm, bn_arm):
    """LN at 1.0 and BN at 0.1 differ in gamma_init: a claim that did not compare it would split the two arms
    into settings no arm shares and read "not applicable" (the first tiny study of small_batch_bn did)."""
    from normbench.analysis.claims import SHIPPED

    gains = {to_config(compose(f"+sweep={sweep}", arm, tiny=False)).norm.gamma_init for arm in (ln_arm, bn_arm)}
    assert gains == {1.0, 0.1}
    assert "gamma_init" in next(c for c in SHIPPED if c.id == claim).compare
