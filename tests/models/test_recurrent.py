import pytest
import torch
from torch import nn

from normbench.models import gru_cpu, lnlstm_cpu
from normbench.models.lnlstm_python import LayerNormLSTMRecurrence
from normbench.models.recurrent import (
    TORCH_CORES,
    GateNormLayer,
    InCellLayer,
    PlainLayer,
    RecurrentShape,
    SummedInCellLayer,
    build_recurrent,
)
from normbench.norms import Identity, LayerNorm, NormSpec, StepBatchNorm

NONE, LN = NormSpec("none"), NormSpec("ln")


def copy_fused_weights(layer, fused):
    with torch.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(layer, name).copy_(getattr(fused, f"{name}_l0"))
    return layer


@pytest.mark.parametrize("family", ["rnn", "lstm", "gru"])
@pytest.mark.parametrize("layer_cls", [InCellLayer, SummedInCellLayer, GateNormLayer])
def test_cell_layers_without_norm_equal_pytorch(family, layer_cls):
    """The check PyTorch's fastrnns uses for custom cells: same weights, same outputs and gradients."""
    if (layer_cls is SummedInCellLayer and family == "gru") or (layer_cls is GateNormLayer and family == "rnn"):
        pytest.skip("combination refused by the builder (see test_invalid_combinations)")
    torch.manual_seed(0)
    fused = TORCH_CORES[family](5, 8, batch_first=True)
    layer = copy_fused_weights(layer_cls(family, 5, 8, NONE), fused)
    x = torch.randn(3, 6, 5)
    want = fused(x)[0]
    got = layer(x)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    got.square().sum().backward()
    want.square().sum().backward()
    torch.testing.assert_close(layer.weight_hh.grad, fused.weight_hh_l0.grad, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("family", ["rnn", "lstm", "gru"])
def test_trace_gives_total_derivative_through_time(family):
    """Unrolled fused core and the hand-written cell agree on d(loss)/d(h_t) for every t."""
    torch.manual_seed(1)
    plain = PlainLayer(family, 4, 6)
    cell = copy_fused_weights(InCellLayer(family, 4, 6, NONE), plain.core)
    x = torch.randn(2, 7, 4)
    grads = []
    for layer in (plain, cell):
        trace = []
        out = layer(x, trace)
        loss = out[:, -1].sum()  # loss on the last step only: earlier h_t matter only through time
        grads.append(torch.autograd.grad(loss, trace))
        torch.testing.assert_close(out, plain.core(x)[0], atol=1e-5, rtol=1e-5)
    assert len(grads[0]) == 7
    for g_plain, g_cell in zip(*grads):
        torch.testing.assert_close(g_plain, g_cell, atol=1e-5, rtol=1e-4)
    assert grads[0][0].abs().sum() > 0  # h_1 reaches the loss only through the recurrence


@pytest.mark.parametrize("family", ["rnn", "lstm", "gru"])
def test_in_cell_norms_sit_on_wx_and_uh_separately(family):
    """LN of W·x is invariant to scaling W; LN of U·h to scaling U. One joint norm would not be."""
    torch.manual_seed(2)
    layer = InCellLayer(family, 4, 8, NormSpec("ln", eps=1e-12))
    x = torch.randn(3, 5, 4)
    ref = layer(x)
    for name in ("weight_ih", "weight_hh"):
        with torch.no_grad():
            getattr(layer, name).mul_(100)
        torch.testing.assert_close(layer(x), ref, atol=1e-4, rtol=1e-4)
        with torch.no_grad():
            getattr(layer, name).div_(100)
    summed = SummedInCellLayer("lstm" if family == "gru" else family, 4, 8, NormSpec("ln", eps=1e-12))
    ref = summed(x)
    with torch.no_grad():
        summed.weight_ih.mul_(100)
    assert (summed(x) - ref).abs().max() > 1e-2  # the summed norm sees W·x and U·h together
    with torch.no_grad():
        summed.weight_hh.mul_(100)
    torch.testing.assert_close(summed(x), ref, atol=1e-4, rtol=1e-4)  # scaling both is invisible


def test_lstm_cell_state_norm_flag():
    on = InCellLayer("lstm", 4, 8, LN)
    off = InCellLayer("lstm", 4, 8, LN, cell_norm=False)
    assert isinstance(on.norm_c.norm, LayerNorm) and isinstance(off.norm_c, Identity)
    assert isinstance(InCellLayer("gru", 4, 8, LN).norm_c, Identity)  # GRU has no cell state


@pytest.mark.parametrize("family", ["lstm", "gru"])
def test_gate_placement_normalizes_each_gate_on_its_own_statistics(family):
    torch.manual_seed(3)
    hidden = 16
    layer = GateNormLayer(family, 4, hidden, NormSpec("ln", eps=1e-12))
    with torch.no_grad():  # make the second gate 1000x larger than the others
        layer.weight_ih[hidden : 2 * hidden].mul_(1000)
        layer.weight_hh[hidden : 2 * hidden].mul_(1000)
    seen = []
    hooks = [n.register_forward_hook(lambda m, i, o: seen.append(o.detach())) for n in layer.gate_norms]
    layer(torch.randn(8, 3, 4))
    for h in hooks:
        h.remove()
    assert len(seen) == 3 * len(layer.gate_norms)
    for out in seen:  # every gate comes out at unit scale, scaled or not
        torch.testing.assert_close(out.std(-1, unbiased=False), torch.ones(8), atol=1e-3, rtol=0)
    # A single norm over all gates (in_cell summed) lets the big gate swamp the statistics.
    if family == "lstm":
        joint = SummedInCellLayer("lstm", 4, hidden, NormSpec("ln", eps=1e-12))
        with torch.no_grad():
            joint.weight_ih[hidden : 2 * hidden].mul_(1000)
            joint.weight_hh[hidden : 2 * hidden].mul_(1000)
        out = []
        joint.norm_a.register_forward_hook(lambda m, i, o: out.append(o.detach()))
        joint(torch.randn(8, 3, 4))
        first_gate = out[-1][:, :hidden]
        assert first_gate.std(-1).mean() < 0.01


def test_in_cell_batchnorm_keeps_statistics_per_step():
    layer = InCellLayer("lstm", 3, 4, NormSpec("bn"))
    assert isinstance(layer.norm_h.norm, StepBatchNorm)
    layer(torch.randn(6, 5, 3))
    assert layer.norm_x.norm.running_mean.shape == (5, 16)
    assert layer.norm_h.norm.running_mean.shape == (5, 16)
    assert layer.norm_c.norm.running_mean.shape == (5, 4)
    layer.eval()
    assert layer(torch.randn(2, 9, 3)).shape == (2, 9, 4)  # longer than seen: last step's statistics


@pytest.mark.parametrize("family", ["rnn", "lstm", "gru"])
def test_post_normalizes_every_output_step_and_pre_normalizes_the_input(family):
    torch.manual_seed(4)
    post = build_recurrent(family, RecurrentShape(4, 8, 2), NormSpec("ln", eps=1e-12), "post")
    out = post(torch.randn(3, 5, 4))
    torch.testing.assert_close(out.mean(-1), torch.zeros(3, 5), atol=1e-5, rtol=0)
    torch.testing.assert_close(out.var(-1, unbiased=False), torch.ones(3, 5), atol=1e-3, rtol=0)
    pre = build_recurrent(family, RecurrentShape(4, 8, 1), NormSpec("ln", eps=1e-12), "pre")
    x = torch.randn(3, 5, 4)
    torch.testing.assert_close(pre(100 * x), pre(x), atol=1e-4, rtol=1e-4)  # LN(x) forgets the input's scale


@pytest.mark.parametrize("placement", ["pre", "post", "in_cell", "gate"])
def test_every_layer_of_a_deep_stack_has_its_norm(placement):
    stack = build_recurrent("lstm", RecurrentShape(4, 8, 3), LN, placement)
    assert len(stack.layers) == 3
    trace = []
    out = stack(torch.randn(2, 6, 4), trace)
    assert out.shape == (2, 6, 8) and len(trace) == 6
    for layer in stack.layers:
        assert any(isinstance(m, LayerNorm) for m in layer.modules())


def test_no_norm_builds_the_fused_model_whatever_the_placement():
    for placement in ("pre", "post", "in_cell", "gate"):
        stack = build_recurrent("lstm", RecurrentShape(4, 8, 2), NONE, placement)
        assert all(isinstance(layer, PlainLayer) for layer in stack.layers)
        assert isinstance(stack.layers[0].core, nn.LSTM)


@pytest.mark.parametrize("kernel", ["compiled", "python"])
@pytest.mark.parametrize("cell_norm", [True, False])
@pytest.mark.parametrize("affine", [True, False])
def test_fused_layernorm_lstm_equals_the_autograd_loop(cell_norm, affine, kernel):
    """Both hand-written recurrences give autograd's outputs and gradients, to float64 rounding."""
    from normbench.models.recurrent import _CellLayer

    if kernel == "compiled" and lnlstm_cpu.KERNEL.load() is None:
        pytest.skip(f"the compiled kernel does not build here: {lnlstm_cpu.KERNEL.unavailable}")
    torch.manual_seed(7)
    layer = InCellLayer("lstm", 5, 8, NormSpec("ln", affine=affine), cell_norm=cell_norm, kernel=kernel).double()
    with torch.no_grad():  # move gains/biases off their init so their gradients are tested too
        for name, p in layer.named_parameters():
            if "norm" in name:
                p.add_(0.3 * torch.randn_like(p))
    assert layer.hand_written and (layer.runs(torch.device("cpu")) == "compiled") == (kernel == "compiled")
    x = torch.randn(3, 7, 5, dtype=torch.double, requires_grad=True)
    fused, loop = layer(x), _CellLayer.forward(layer, x)
    torch.testing.assert_close(fused, loop, atol=1e-12, rtol=0)
    upstream = torch.randn_like(fused)
    wrt = [x, *layer.parameters()]
    for a, b in zip(torch.autograd.grad(fused, wrt, upstream), torch.autograd.grad(loop, wrt, upstream)):
        torch.testing.assert_close(a, b, atol=1e-11, rtol=0)
    assert torch.autograd.gradcheck(lambda inp: layer(inp), (x[:2, :3],), fast_mode=True)


@pytest.mark.parametrize("family", ["lstm", "gru"])
def test_fused_path_is_used_only_where_it_is_the_same_arithmetic(family, monkeypatch):
    if family == "gru" and gru_cpu.KERNEL.load() is None:
        pytest.skip(f"the compiled kernel does not build here: {gru_cpu.KERNEL.unavailable}")
    calls = []
    for function in (LayerNormLSTMRecurrence, lnlstm_cpu.LayerNormLSTMLayer, gru_cpu.LayerNormGRULayer):
        original = function.apply
        monkeypatch.setattr(function, "apply", lambda *a, _f=original: calls.append(_f) or _f(*a))
    x = torch.randn(2, 4, 3)
    InCellLayer(family, 3, 4, LN)(x)
    assert len(calls) == 1
    InCellLayer(family, 3, 4, LN)(x, trace=[])  # a trace needs h_t in the autograd graph
    InCellLayer(family, 3, 4, NormSpec("ln", impl="reference"))(x)  # the textbook formula, as asked
    InCellLayer("rnn", 3, 4, LN)(x)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        InCellLayer(family, 3, 4, LN)(x)  # low precision keeps the norm wrappers' policy
    assert len(calls) == 1


@pytest.mark.parametrize("family, placement, norm", [("rnn", "in_cell", "bn"), ("lstm", "in_cell", "ln"),
                                                     ("gru", "pre", "ln"), ("lstm", "pre", "none")])
def test_orthogonal_recurrent_init_makes_each_gate_block_orthogonal(family, placement, norm):
    """model.recurrent_init=orthogonal (Cooijmans et al.'s W_h): each gate's hidden x hidden block of every
    W_hh is orthogonal, in-cell layers and torch cores alike; W_ih keeps PyTorch's uniform init."""
    from normbench.configuration.schema import ModelShape
    from normbench.models import build_model
    from normbench.norms.spec import NormSpec

    def built(init):
        torch.manual_seed(0)
        return build_model(ModelShape(family=family, hidden=16, recurrent_init=init), NormSpec(kind=norm), placement,
                           input_kind="features", input_dim=3, n_outputs=2, readout="last")

    orthogonal, uniform = dict(built("orthogonal").named_parameters()), dict(built("uniform").named_parameters())
    recurrent = [n for n in orthogonal if n.rsplit(".", 1)[-1].startswith("weight_hh")]
    assert recurrent
    for name in recurrent:
        for block in orthogonal[name].detach().split(16):
            assert torch.allclose(block @ block.T, torch.eye(16), atol=1e-5), name
        first = uniform[name].detach()[:16]
        assert not torch.allclose(first @ first.T, torch.eye(16), atol=0.1)  # the default is not orthogonal
    for name in orthogonal:
        if "weight_ih" in name:
            assert orthogonal[name].abs().max() <= 1 / 16 ** 0.5 + 1e-6


def test_recurrent_init_at_its_default_keeps_every_earlier_records_identity():
    """uniform is how every earlier record ran: inert there (out of the hash), in the hash when orthogonal,
    and inert for a Transformer, which has no recurrence."""
    from normbench.configuration.contract import effective_config

    config = {"model": {"family": "rnn", "recurrent_init": "uniform"}, "norm": {"kind": "bn"}, "placement": {"name": "in_cell"}}
    assert "recurrent_init" not in effective_config(config)["model"]
    config["model"]["recurrent_init"] = "orthogonal"
    assert effective_config(config)["model"]["recurrent_init"] == "orthogonal"
    config["model"]["family"] = "transformer"
    assert "recurrent_init" not in effective_config(config)["model"]
