import math

import pytest
import torch

from normbench.models import ModelShape, build_model
from normbench.norms import NormSpec
from normbench.training import probes


def tiny(family="lstm", kind="ln", placement="pre"):
    return build_model(ModelShape(family, hidden=8, embed=8, heads=2), NormSpec(kind), placement,
                       input_kind="features", input_dim=2, n_outputs=1, readout="last")


def mse(out, y):
    return torch.nn.functional.mse_loss(out.squeeze(-1), y)


def test_gradient_statistics_pooled_kurtosis_of_gaussian_gradients_is_three():
    torch.manual_seed(0)
    model = tiny()
    for p in model.parameters():
        p.grad = torch.randn_like(p)
    big = torch.nn.Linear(1000, 200)
    big.weight.grad, big.bias.grad = torch.randn(200, 1000), torch.randn(200)
    stats = probes.gradient_statistics(big)
    assert abs(stats["grad_kurtosis"] - 3.0) < 0.1 and abs(stats["grad_std"] - 1.0) < 0.01
    heavy = torch.nn.Linear(1000, 200)
    heavy.weight.grad = torch.randn(200, 1000) ** 3  # heavy tails
    heavy.bias.grad = torch.zeros(200)
    assert probes.gradient_statistics(heavy)["grad_kurtosis"] > 10
    per_layer = probes.gradient_statistics(model)["layer_grad_norm"]
    assert set(per_layer) == {"encoder", "layers.0", "head"}


def test_gradient_through_time_profile_and_ratio():
    torch.manual_seed(1)
    model = tiny("rnn")
    x, y = torch.rand(4, 12, 2), torch.rand(4)
    profile = probes.gradient_through_time(model, x, y, mse)
    assert len(profile) == 12 and all(v >= 0 for v in profile)
    assert profile[-1] > profile[0]  # at init, gradients shrink going back in time
    assert probes.grad_time_ratio(profile) == math.log10(profile[0] / profile[-1]) < 0
    assert probes.grad_time_ratio([0.0, 1.0]) is None
    assert probes.gradient_through_time(tiny("transformer"), x, y, mse) is None


def test_last_ffn_w2_gradient_norm_is_that_weights_frobenius_norm_from_the_same_backward():
    torch.manual_seed(2)
    model = build_model(ModelShape("transformer", hidden=8, embed=8, heads=2, layers=3), NormSpec("ln"), "post",
                        input_kind="features", input_dim=2, n_outputs=1, readout="last")
    x, y = torch.rand(4, 6, 2), torch.rand(4)
    per_layer, w2_norm = probes.layer_gradient_norms(model, x, y, mse)
    weight = model.backbone.layers[2].mlp[2].weight
    assert probes.last_ffn_w2(model) is weight and weight.shape == (8, 4 * 8)
    expected = torch.autograd.grad(mse(model(x), y), weight)[0].norm()
    assert w2_norm == pytest.approx(float(expected), rel=1e-6) and 0 < w2_norm < per_layer["layers.2"]
    assert weight.grad is None  # the probe leaves no gradient behind
    assert probes.layer_gradient_norms(tiny("lstm"), x, y, mse)[1] is None  # Transformers only


def test_probes_restore_batchnorm_running_statistics():
    model = tiny("lstm", "bn", "in_cell")
    model(torch.rand(4, 5, 2))  # grow per-step statistics
    before = {k: v.clone() for k, v in model.named_buffers()}
    probes.gradient_through_time(model, torch.rand(4, 9, 2) * 5, torch.rand(4), mse)  # longer: would grow
    probes.layer_gradient_norms(model, torch.rand(4, 5, 2) * 5, torch.rand(4), mse)
    after = dict(model.named_buffers())
    assert before.keys() == after.keys()
    for k in before:
        assert torch.equal(before[k], after[k]), k


def test_batchnorm_train_eval_gap_is_measured_and_leaves_mode():
    model = tiny("lstm", "bn", "post")
    model.train()
    batches = [(torch.rand(8, 5, 2), torch.rand(8))]
    gap = probes.train_eval_gap(model, batches, mse)
    assert isinstance(gap, float) and gap != 0.0 and model.training


def test_activation_probe_records_each_layer_only_inside_the_context():
    model = build_model(ModelShape("lstm", hidden=8, embed=8, layers=2), NormSpec("ln"), "post",
                        input_kind="features", input_dim=2, n_outputs=1, readout="last")
    with probes.activation_probe(model) as stats:
        model(torch.rand(3, 4, 2))
    assert set(stats["act_max_abs"]) == {"layers.0", "layers.1"}
    assert stats["act_rms"]["layers.0"] > 0
    model(torch.rand(3, 4, 2) * 100)
    assert stats["act_max_abs"]["layers.0"] < 10  # hooks removed: later passes are not recorded


def test_spike_detector_flags_three_times_the_running_median():
    det = probes.SpikeDetector(window=5, factor=3.0)
    losses = [1.0] * 5 + [2.9, 3.5, 1.0, 1.0]
    flags = [det.update(i, v) for i, v in enumerate(losses)]
    assert flags == [False] * 5 + [False, True, False, False]
    assert det.steps == [6]


def test_loss_scaled_probes_give_the_same_norms_and_back_off_on_overflow():
    torch.manual_seed(2)
    model = tiny("lstm", "ln", "in_cell")
    x, y = torch.rand(4, 6, 2), torch.rand(4)
    plain = probes.gradient_through_time(model, x, y, mse)
    scaled = probes.gradient_through_time(model, x, y, mse, loss_scale=2.0**16)
    assert scaled == pytest.approx(plain, rel=1e-4)
    layers, _ = probes.layer_gradient_norms(model, x, y, mse, loss_scale=2.0**16)
    assert layers == pytest.approx(probes.layer_gradient_norms(model, x, y, mse)[0], rel=1e-4)
    transformer = tiny("transformer", "ln", "post")
    scaled_w2 = probes.layer_gradient_norms(transformer, x, y, mse, loss_scale=2.0**16)[1]
    assert scaled_w2 == pytest.approx(probes.layer_gradient_norms(transformer, x, y, mse)[1], rel=1e-4)
    tried = []

    def overflowing(scale):
        tried.append(scale)
        return [float("inf")] if scale > 256 else [1.0]
    assert probes._loss_scaled(overflowing, 2.0**16) == [1.0] and tried == [65536.0, 256.0]


MAGNITUDES = [10.0 ** -k for k in (0, 10, 19, 22, 25, 28, 30)]


@pytest.mark.parametrize("size", MAGNITUDES)
def test_layer_gradient_norms_do_not_underflow(size):
    """‖g‖ down to 1e-30 matches a float64 reference to 1e-6 relative (float32 squares underflow near 1e-22)."""
    torch.manual_seed(3)
    model = tiny()
    for p in model.parameters():
        p.grad = torch.randn_like(p)
        p.grad *= size / float(p.grad.double().norm())  # each parameter's gradient has norm ≈ size
    reference: dict[str, float] = {}
    for name, p in model.named_parameters():
        label = probes.layer_of(name)
        reference[label] = reference.get(label, 0.0) + float(p.grad.double().square().sum())
    measured = probes.gradient_statistics(model)["layer_grad_norm"]
    for label, squares in reference.items():
        assert measured[label] > 0
        assert measured[label] == pytest.approx(math.sqrt(squares), rel=1e-6), label


@pytest.mark.parametrize("size", MAGNITUDES)
def test_gradient_through_time_does_not_underflow(size):
    """The per-step norms of a loss scaled down to ~1e-30: positive, and equal to a float64 reference."""
    torch.manual_seed(4)
    model = tiny("lstm", "ln", "in_cell")
    x, y = torch.rand(4, 6, 2), torch.rand(4)
    plain = probes.gradient_through_time(model, x, y, mse)
    scale = size / max(plain)  # the largest step's norm becomes ≈ size

    def tiny_loss(out, target):
        return mse(out, target) * scale

    measured = probes.gradient_through_time(model, x, y, tiny_loss)
    trace: list[torch.Tensor] = []
    with probes.buffers_preserved(model):
        loss = tiny_loss(model(x, trace=trace), y)
        grads = torch.autograd.grad(loss, trace, allow_unused=True)
    reference = [float(g.double().norm(dim=-1).mean()) for g in grads]
    assert all(v > 0 for v in measured)
    assert measured == pytest.approx(reference, rel=1e-6)
    assert max(measured) == pytest.approx(size, rel=1e-3)
