"""minGRU and minLSTM (Feng et al. 2024): the log-space parallel scan equals the sequential loop to 1e-10 in
float64, the loop is the paper's equations, and each norm slot's layer is the one written out by hand."""

import pytest
import torch
import torch.nn.functional as F

from normbench.models.minrnn import GATES, MinRNNLayer, coefficients_log, g, scan_log, sequential
from normbench.norms import NormSpec


def preactivations(family, batch=3, steps=40, width=6, scale=3.0, seed=0):
    torch.manual_seed(seed)
    return {k: torch.randn(batch, steps, width, dtype=torch.float64) * scale for k in (*GATES[family], "h")}


@pytest.mark.parametrize("family", list(GATES))
@pytest.mark.parametrize("scale", [0.1, 1.0, 3.0, 10.0])
def test_the_parallel_scan_is_the_sequential_loop_to_1e_10_in_float64(family, scale):
    """Gate pre-activations of standard deviation up to 10 (gates saturated to about e^-30): 1e-12 measured.
    At 20 the log-space cancellation (cumulative log-gates near -400) reaches about 1e-9 absolute."""
    pre = preactivations(family, scale=scale)
    torch.testing.assert_close(scan_log(*coefficients_log(family, pre)), sequential(family, pre), rtol=0, atol=1e-10)


@pytest.mark.parametrize("family", list(GATES))
def test_the_gradients_of_scan_and_loop_agree(family):
    pre = {k: v.requires_grad_() for k, v in preactivations(family, steps=12).items()}
    torch.autograd.gradcheck(lambda *xs: scan_log(*coefficients_log(family, dict(zip(pre, xs)))), tuple(pre.values()))
    upstream = torch.randn(3, 12, 6, dtype=torch.float64)
    first = torch.autograd.grad((scan_log(*coefficients_log(family, pre)) * upstream).sum(), list(pre.values()))
    second = torch.autograd.grad((sequential(family, pre) * upstream).sum(), list(pre.values()))
    for a, b in zip(first, second):
        torch.testing.assert_close(a, b, rtol=1e-8, atol=1e-10)


def test_the_loop_is_feng_et_al_s_equations_written_out():
    pre = preactivations("mingru", steps=3, batch=1, width=1)
    z, h_tilde = torch.sigmoid(pre["z"][0, :, 0]), pre["h"][0, :, 0]
    g_h = torch.where(h_tilde >= 0, h_tilde + 0.5, torch.sigmoid(h_tilde))  # g: x + 1/2, sigmoid below 0
    h, want = 0.0, []
    for t in range(3):
        h = (1 - z[t]) * h + z[t] * g_h[t]
        want.append(h)
    torch.testing.assert_close(sequential("mingru", pre)[0, :, 0], torch.stack(want))
    pre = preactivations("minlstm", steps=3, batch=1, width=1)
    f, i = torch.sigmoid(pre["f"][0, :, 0]), torch.sigmoid(pre["i"][0, :, 0])
    h, want = 0.0, []
    for t in range(3):  # the gate normalization: f' + i' = 1
        h = f[t] / (f[t] + i[t]) * h + i[t] / (f[t] + i[t]) * g(pre["h"][0, t, 0])
        want.append(h)
    torch.testing.assert_close(sequential("minlstm", pre)[0, :, 0], torch.stack(want))


@pytest.mark.parametrize("family", list(GATES))
def test_the_scan_stays_finite_over_long_sequences(family):
    pre = {k: v.float() for k, v in preactivations(family, batch=2, steps=4000, width=4, scale=5.0).items()}
    h = scan_log(*coefficients_log(family, pre))
    assert torch.isfinite(h).all() and (h > 0).all()


def layer_by_hand(layer, x, slots):
    """The layer's forward written out from its projection and norms (float64)."""
    inp = layer.norm_in(x) if "layer_input" in slots else x
    chunks = dict(zip(layer.names, F.linear(inp, layer.proj.weight, layer.proj.bias).chunk(len(layer.names), -1)))
    h = sequential(layer.family, chunks)
    if "layer_output" in slots:
        return layer.norm_out(h)
    if "before_gate" in slots:
        return layer.norm_out(h) * F.silu(chunks["o"])
    if "after_gate" in slots:
        return layer.norm_out(h * F.silu(chunks["o"]))
    return h


@pytest.mark.parametrize("family", list(GATES))
@pytest.mark.parametrize("slots", [("layer_input",), ("layer_output",), ("before_gate",), ("after_gate",), ()])
def test_each_norm_slot_is_the_layer_written_by_hand(family, slots):
    torch.manual_seed(1)
    layer = MinRNNLayer(family, 5, 8, NormSpec("rms"), slots).double()
    with torch.no_grad():
        for name, p in layer.named_parameters():
            if "norm" in name:
                p.add_(torch.randn_like(p) * 0.3)
    x = torch.randn(2, 7, 5, dtype=torch.float64)
    torch.testing.assert_close(layer(x), layer_by_hand(layer, x, slots), rtol=1e-10, atol=1e-10)
    assert ("o" in layer.names) == bool(set(slots) & {"before_gate", "after_gate"})  # only the gated norms add a gate
    if slots:
        norms = [n for n, _ in layer.named_parameters() if "norm" in n]
        assert norms, slots
