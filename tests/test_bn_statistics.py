"""BatchNorm's evaluation statistics: population statistics re-estimated from the final weights
(norm.bn_reestimate), the cause of in-cell BN's collapse in evaluation, and the train/eval gap."""

import pytest
import torch
import torch.nn.functional as F
from omegaconf import OmegaConf

from normbench.configuration.config import to_config
from normbench.configuration.contract import config_hash
from normbench.configuration.schema import ModelShape, NormSpec, PlacementConfig
from normbench.models import build_model
from normbench.norms import BatchNorm, BatchNormReference, StepBatchNorm, batch_norms, reestimate_statistics
from normbench.records.record import RecordWriter
from normbench.training import measures
from normbench.training.probes import Probes
from normbench.training.recording import RecordHook
from normbench.training.run import execute, prepare
from normbench.training.train import Trainer

# 64 steps of one pixel: the setting where evaluation with running averages collapsed
DIGITS = ["task=digits", "norm=bn", "model.hidden=16", "model.embed=8", "batch_size=32", "eval_every=30",
          "probe_every=0", "log_every=10"]


@pytest.mark.parametrize("cls", [BatchNorm, BatchNormReference])
def test_reestimate_is_the_cumulative_average_of_pytorchs_momentum_none(cls):
    torch.manual_seed(0)
    batches = [torch.randn(16, 5) * 3 + 1 for _ in range(4)]
    ours, torchs = cls(5), torch.nn.BatchNorm1d(5, momentum=None)
    for x in batches:
        torchs(x)
    ours.running_mean.fill_(7.0)  # whatever training left behind is replaced, not averaged in
    assert reestimate_statistics(ours, batches) == 64
    assert torch.allclose(ours.running_mean, torchs.running_mean, atol=1e-6)
    assert torch.allclose(ours.running_var, torchs.running_var, atol=1e-5)
    assert ours.momentum == 0.1 and ours.training  # left as it was


def test_reestimate_weights_batches_by_size_and_keeps_per_step_statistics_apart():
    torch.manual_seed(0)
    x = torch.randn(48, 3, 4) + torch.arange(3.0).view(1, 3, 1) * 10  # step t has mean 10 t
    norm = StepBatchNorm(4)
    norm.reserve(3)
    norm.eval()
    reestimate_statistics(norm, [x[:40], x[40:]])  # unequal batches: the mean is the whole split's
    assert torch.allclose(norm.running_mean, x.mean(0), atol=1e-5)
    assert not norm.training


def test_per_step_bn_encoder_has_no_bias_it_would_remove():
    def encoder(kind, placement):
        return build_model(ModelShape("lstm", 8, 1, 8), NormSpec(kind), PlacementConfig(placement),
                           input_kind="features", input_dim=1, n_outputs=3, readout="last").encoder

    assert encoder("bn", "in_cell").bias is None and encoder("bn", "gate").bias is None
    assert encoder("bn", "post").bias is not None and encoder("ln", "in_cell").bias is not None


def test_bn_reestimate_is_identity_for_bn_only(compose):
    def digest(*overrides):
        node = compose(*overrides)
        return config_hash(OmegaConf.to_container(node, resolve=True))

    assert digest("norm=bn") != digest("norm=bn", "norm.bn_reestimate=false")
    assert digest("norm=bn", "norm.bn_reestimate=false") == digest("norm=bn", "norm.bn_reestimate=false",
                                                                   "norm.bn_reestimate_batches=3")
    assert digest("norm=ln") == digest("norm=ln", "norm.bn_reestimate=true")


def momentum_none_outputs(model, x_train, x_val, batch: int = 512):
    """Eval-mode log-probabilities after a pass over x_train with PyTorch's momentum=None rule
    (batch k weighs 1/k), written here apart from normbench.norms.reestimate_statistics."""
    norms = batch_norms(model)
    model.train()
    with torch.no_grad():
        for k, i in enumerate(range(0, len(x_train), batch), start=1):
            for m in norms:
                m.momentum = 1.0 / k
            model(x_train[i: i + batch])
        model.eval()
        return F.log_softmax(model(x_val), -1)


def trained(compose, tmp_path, *overrides):
    cfg, task, model, device = prepare(compose(*DIGITS, *overrides))
    record = RecordWriter(tmp_path)
    record.start(config={}, overrides=[], seed=cfg.seed)
    trainer = Trainer(cfg, task, model, device, [Probes(), RecordHook(record)])
    trainer.fit()
    record.finish("ok", None)
    return trainer, task


@pytest.mark.parametrize("placement", ["in_cell", "gate", "post", "pre"])
def test_after_training_bn_evaluates_with_population_statistics(compose, tmp_path, placement):
    """Tolerance: every eval-mode log-probability within 1e-4 of the one under momentum=None statistics
    of the same 2 x 512 training examples (float32 rounding of two passes over the same batches)."""
    trainer, task = trained(compose, tmp_path, f"placement={placement}", "steps=60", "norm.bn_reestimate_batches=2")
    model = trainer.model
    model.eval()
    with torch.no_grad():
        evaluated = F.log_softmax(model(task.val.x), -1)
    expected = momentum_none_outputs(model, task.train.x[:1024], task.val.x)
    assert (evaluated - expected).abs().max() < 1e-4
    assert measures.metrics(trainer)["bn_train_eval_gap"] is not None
    assert measures.metrics(trainer)["bn_train_eval_gap_running"] is not None


def test_running_averages_alone_do_not_serve_in_cell_bn_evaluation(compose, tmp_path):
    """Why the option is on in conf/norm/bn.yaml: the running averages trail the weights, and the
    same comparison is far outside the tolerance above."""
    trainer, task = trained(compose, tmp_path, "placement=in_cell", "steps=60", "norm.bn_reestimate=false")
    model = trainer.model
    model.eval()
    with torch.no_grad():
        running = F.log_softmax(model(task.val.x), -1)
    expected = momentum_none_outputs(model, task.train.x[:1024], task.val.x)
    assert (running - expected).abs().max() > 0.2
    assert measures.metrics(trainer)["bn_train_eval_gap_running"] is None


def test_reestimation_changes_evaluation_only(compose, tmp_path):
    """The intermediate evaluations restore the running averages: training is the same with or without."""
    on, _ = trained(compose, tmp_path / "on", "placement=in_cell", "steps=40", "eval_every=20")
    off, _ = trained(compose, tmp_path / "off", "placement=in_cell", "steps=40", "eval_every=20",
                     "norm.bn_reestimate=false")
    assert on.measured.losses == off.measured.losses
    assert measures.metrics(on)["bn_train_eval_gap_running"] == pytest.approx(measures.metrics(off)["bn_train_eval_gap"])
