"""Precision that reaches the norm: pure half modes, master weights, and the dtypes each norm received."""

from __future__ import annotations

import pytest
import torch

from normbench.norms import build_norm
from normbench.training.precision import PRECISIONS, MasterWeights, RunPrecision, half_model
from normbench.training.run import execute, prepare, unsupported_precision
from normbench.training.train import AUTOCAST_DTYPES

TRANSFORMER = ["model=transformer", "norm=ln"]


@pytest.mark.parametrize("placement", ["pre", "post"])
@pytest.mark.parametrize("precision, half", [("fp16_pure", "float16"), ("bf16_pure", "bfloat16")])
def test_pure_mode_norms_receive_half_unless_fp32(compose, tmp_path, placement, precision, half):
    received = {}
    for fp32 in ("false", "true"):
        summary = execute(compose(*TRANSFORMER, f"placement={placement}", f"precision={precision}",
                                  f"norm.fp32={fp32}"), tmp_path / fp32, [])
        assert summary["status"] == "ok", summary["reason"]
        assert summary["precision"]["mode"] == "pure" and summary["precision"]["master_weights"] == "float32"
        received[fp32] = summary["precision"]["norm_input_dtypes"]
    assert "backbone.layers.0.norm1" in received["false"] and len(received["false"]) >= 4
    assert set(received["false"].values()) == {half}
    assert set(received["true"].values()) == {"float32"}


def test_autocast_residual_stream_norms_receive_float32_either_way(compose, tmp_path):
    """Why the pure modes exist: under fp16 autocast the Transformer's stream is float32 (a half
    sublayer output plus the float32 position table promotes), so norm.fp32 changes nothing there."""
    for fp32 in ("false", "true"):
        summary = execute(compose(*TRANSFORMER, "placement=pre", "precision=fp16", f"norm.fp32={fp32}"),
                          tmp_path / fp32, [])
        assert summary["precision"]["mode"] == "autocast"
        assert set(summary["precision"]["norm_input_dtypes"].values()) == {"float32"}


def test_fp16_pure_scales_its_loss_and_bf16_pure_does_not(compose, tmp_path):
    fp16 = execute(compose(*TRANSFORMER, "precision=fp16_pure"), tmp_path / "fp16", [])
    bf16 = execute(compose(*TRANSFORMER, "precision=bf16_pure"), tmp_path / "bf16", [])
    assert fp16["precision"]["loss_scale"] == "dynamic" and isinstance(fp16["metrics"]["skipped_steps"], int)
    assert bf16["precision"]["loss_scale"] is None and bf16["metrics"]["skipped_steps"] is None


@pytest.mark.parametrize("name", PRECISIONS)
def test_the_loss_scaler_is_enabled_only_where_fp16_needs_one_and_a_disabled_one_passes_through(name):
    """On CPU only fp16_pure scales its loss (an overflow then skips the step); fp32 steps exactly
    as the unscaled loop does, through the disabled scaler."""
    torch.manual_seed(0)
    plain, model = torch.nn.Linear(4, 1), torch.nn.Linear(4, 1)
    model.load_state_dict(plain.state_dict())
    run = RunPrecision(name, model, torch.device("cpu"))
    assert run.scales_loss == (name == "fp16_pure") and (run.state_dict() is None) == (name != "fp16_pure")
    optimizer = torch.optim.SGD(run.master.parameters(), lr=0.1)

    def step(x):
        with run.autocast():
            loss = run.model(x.to(run.inputs or x.dtype)).float().pow(2).mean()
        run.backward(loss, optimizer)
        return run.step(optimizer)

    x = torch.randn(8, 4) / 100  # small enough that 2^16 times its gradients fit fp16
    assert step(x) is False
    if name == "fp32":
        plain(x).pow(2).mean().backward()
        torch.optim.SGD(plain.parameters(), lr=0.1).step()
        assert all(torch.equal(a, b) for a, b in zip(run.master.parameters(), plain.parameters()))
    if run.scales_loss:  # gradients x 2^16 overflow fp16: the step is skipped, the scale lowered, the weights kept
        before = [p.clone() for p in run.master.parameters()]
        assert step(torch.full((8, 4), 1e3)) is True and run.state_dict()["scale"] < 2.0**16
        assert all(torch.equal(a, b) for a, b in zip(run.master.parameters(), before))
    with pytest.raises(ValueError, match="loss scaler"):
        run.load_state_dict(None if run.scales_loss else {"scale": 1.0})


def test_half_model_keeps_norms_fp32_and_master_weights_track_it(compose):
    _, _, model, _ = prepare(compose(*TRANSFORMER, "precision=fp16_pure"))
    half = half_model(model, torch.float16)
    dtypes = {name: p.dtype for name, p in half.named_parameters()}
    assert dtypes["backbone.layers.0.attn.qkv.weight"] == torch.float16 and dtypes["backbone.pos"] == torch.float16
    assert dtypes["backbone.layers.0.norm1.norm.weight"] == torch.float32
    masters = MasterWeights(model, half)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(1e-2)
    masters.master_to_model()
    for (name, m), h in zip(model.named_parameters(), half.parameters()):
        assert torch.equal(h, m.to(h.dtype)), name


def test_the_precisions_the_config_accepts_are_the_ones_defined_here():
    from normbench.configuration.schema import (
        DTYPES,  # precision.dtype's names (torch-free); PRECISIONS: what each one is
    )

    assert tuple(PRECISIONS) == DTYPES and all(name == p.name for name, p in PRECISIONS.items())


def test_every_half_precision_goes_through_the_device_check():
    assert {name for name, p in PRECISIONS.items() if p.dtype is not None} == set(AUTOCAST_DTYPES)

    class RefusesHalf(torch.nn.Module):
        def forward(self, x):
            if torch.is_autocast_enabled("cpu"):
                raise RuntimeError('"addmm" not implemented for \'Half\'')
            return x

    class Task:
        class train:
            x = torch.zeros(2, 3)

    assert "fp16_pure" in unsupported_precision(RefusesHalf(), Task, torch.device("cpu"), "fp16_pure")


# A row whose variance is 0 (h_0 = 0 under U·h in an in-cell norm, a constant row) or underflows in fp16
# (spread ~1e-4: its squared deviations fall below fp16's smallest subnormal, 6e-8).
ROWS = {"zero": torch.zeros(4, 16), "constant": torch.full((4, 16), 0.5),
        "tiny spread": 1e-4 * torch.randn(4, 16, generator=torch.Generator().manual_seed(0))}


@pytest.mark.parametrize("row", ROWS)
def test_too_small_eps_vanishes_in_an_fp16_norm(row):
    """fp16 cannot hold 1e-8 (it rounds to 0), so var + eps = 0 and (x - mean) / sqrt(0) is 0/0 or ±inf;
    1e-5 survives as a subnormal, and the fp32 policy keeps either eps."""
    x = ROWS[row].half()
    assert torch.tensor(1e-8, dtype=torch.float16) == 0 and torch.tensor(1e-5, dtype=torch.float16) > 0
    half_small = build_norm("ln", 16, eps=1e-8, impl="reference", fp32=False)
    half_large = build_norm("ln", 16, eps=1e-5, impl="reference", fp32=False)
    fp32_small = build_norm("ln", 16, eps=1e-8, impl="reference", fp32=True)
    assert not torch.isfinite(half_small(x)).all()
    assert torch.isfinite(half_large(x)).all()
    assert torch.isfinite(fp32_small(x)).all()
    assert half_small(x).dtype == torch.float16 and fp32_small(x).dtype == torch.float16
