"""The compiled in-cell LN-LSTM (lnlstm.cpp): fallback, checks, builds, and the record of which one ran
(threads and float32 accuracy: test_cell_kernels.py)."""


import numpy as np
import pytest
import torch

from normbench.models import cell_kernel_in_use, lnlstm_cpu
from normbench.models.recurrent import InCellLayer, _CellLayer
from normbench.native import cpu_build
from normbench.norms import NormSpec

CPU = torch.device("cpu")
needs_kernel = pytest.mark.skipif(lnlstm_cpu.KERNEL.load() is None,
                                  reason=f"the compiled kernel does not build here: {lnlstm_cpu.KERNEL.unavailable}")


def outputs_and_grads(layer, x, upstream, parameters=None):
    x = x.clone().requires_grad_()
    y = layer(x)
    return [y.detach(), *torch.autograd.grad(y, [x, *(parameters or layer.parameters())], upstream)]


def test_without_a_compiler_auto_falls_back_and_cpp_says_why(monkeypatch):
    monkeypatch.setattr(lnlstm_cpu.KERNEL, "module", None)
    monkeypatch.setattr(lnlstm_cpu.KERNEL, "unavailable", "RuntimeError: c++: not found (test)")
    torch.manual_seed(0)  # fp32: two orders of the same sums, so the data must not depend on the tests run before
    layer = InCellLayer("lstm", 3, 4, NormSpec("ln"))
    x = torch.randn(2, 5, 3)
    torch.testing.assert_close(layer(x), _CellLayer.forward(layer, x), atol=2e-6, rtol=0)
    assert cell_kernel_in_use(layer, CPU) == "python"
    layer.kernel = "compiled"
    with pytest.raises(ValueError, match=r"model.cell_kernel=compiled, but the compiled kernel is unavailable: .*not found"):
        layer(x)


def test_the_record_names_the_recurrence_that_runs():
    assert cell_kernel_in_use(InCellLayer("lstm", 3, 4, NormSpec("ln"), kernel="python"), CPU) == "python"
    assert cell_kernel_in_use(InCellLayer("lstm", 3, 4, NormSpec("bn")), CPU) is None  # autograd loop
    assert cell_kernel_in_use(InCellLayer("lstm", 3, 4, NormSpec("rms"), kernel="python"), CPU) == "autograd"
    assert cell_kernel_in_use(InCellLayer("gru", 3, 4, NormSpec("ln"), kernel="python"), CPU) == "autograd"
    expected = "python" if lnlstm_cpu.KERNEL.load() is None else f"compiled-{cpu_build.capability()}"
    assert cell_kernel_in_use(InCellLayer("lstm", 3, 4, NormSpec("ln")), CPU) == expected


def test_an_unknown_kernel_is_refused():
    with pytest.raises(ValueError, match="unknown cell kernel 'fast'; valid: auto, compiled, python, torch_compile"):
        InCellLayer("lstm", 3, 4, NormSpec("ln"), kernel="fast")


@needs_kernel
def test_the_kernel_refuses_parameters_of_the_wrong_size():
    module = lnlstm_cpu.KERNEL.load()
    xw, w_hh = torch.randn(2, 3, 16), torch.randn(16, 4)
    ones16, ones4, zeros4 = torch.ones(16), torch.ones(4), torch.zeros(4)
    with pytest.raises(RuntimeError, match=r"gamma_x: .*of size \[16\], got \[1\]"):
        module.forward(xw, w_hh, torch.ones(1), ones16, ones16, ones4, zeros4, 1e-5, True)
    with pytest.raises(RuntimeError, match=r"beta_c: .*of size \[4\], got \[16\]"):
        module.forward(xw, w_hh, ones16, ones16, ones16, ones4, ones16, 1e-5, True)


def test_under_autocast_the_record_names_the_autograd_loop():
    layer = InCellLayer("lstm", 3, 4, NormSpec("ln"))
    assert cell_kernel_in_use(layer, CPU, autocast=True) == "autograd"


@pytest.mark.slow  # compiles every variant once (about a minute each, then cached)
@pytest.mark.parametrize("variant", ["default", "avx2", "avx512"])
@pytest.mark.parametrize("hidden", [8, 20])  # shorter than one AVX-512 float register; 20 leaves a short chunk
def test_every_capability_build_equals_the_autograd_loop_in_float64(variant, hidden, monkeypatch):
    if variant not in cpu_build.runnable_variants():
        pytest.skip(f"this CPU does not run {variant}")
    try:
        module = cpu_build.build(lnlstm_cpu.KERNEL.source, variant)
    except Exception as err:  # noqa: BLE001 - a variant that does not build is skipped, saying why
        pytest.skip(f"the {variant} build fails here: {cpu_build.why(err)}")
    monkeypatch.setattr(lnlstm_cpu.KERNEL, "module", module)
    torch.manual_seed(11)
    layer = InCellLayer("lstm", 5, hidden, NormSpec("ln"), kernel="compiled").double()
    with torch.no_grad():
        for name, p in layer.named_parameters():
            if "norm" in name:
                p.add_(0.3 * torch.randn_like(p))
    x, upstream = torch.randn(3, 6, 5, dtype=torch.double), torch.randn(3, 6, hidden, dtype=torch.double)
    compiled = outputs_and_grads(layer, x, upstream)
    loop = outputs_and_grads(lambda inp: _CellLayer.forward(layer, inp), x, upstream, layer.parameters())
    for a, b in zip(compiled, loop):
        torch.testing.assert_close(a, b, atol=1e-11, rtol=0)


@needs_kernel
@pytest.mark.parametrize("cell_norm", [True, False])
@pytest.mark.parametrize("impl, affine, gain_offset", [("auto", True, False), ("native", True, True),
                                                        ("compiled", False, False)])
def test_the_rmsnorm_cell_equals_the_autograd_loop_in_float64(impl, affine, gain_offset, cell_norm):
    """lnlstm.cpp with RMSNorm (centred false): no mean, no shift, the gain (gamma - 1 stored with gain_offset) or
    none; against the loop of the cell's step with normbench's RMSNorm of each impl, outputs and every gradient.
    Hidden 20 leaves a short chunk after full registers, batch 7 one full tile of rows and three left over."""
    torch.manual_seed(11)
    norm = NormSpec("rms", impl=impl, affine=affine, gain_offset=gain_offset)
    layer = InCellLayer("lstm", 5, 20, norm, cell_norm=cell_norm, kernel="compiled").double()
    with torch.no_grad():
        for name, p in layer.named_parameters():
            if "norm" in name:
                p.add_(0.3 * torch.randn_like(p))
    x, upstream = torch.randn(7, 6, 5, dtype=torch.double), torch.randn(7, 6, 20, dtype=torch.double)
    assert cell_kernel_in_use(layer, CPU).startswith("compiled-")
    compiled = outputs_and_grads(layer, x, upstream)
    loop = outputs_and_grads(lambda inp: _CellLayer.forward(layer, inp), x, upstream, layer.parameters())
    assert len(compiled) == 2 + len(list(layer.parameters()))
    for a, b in zip(compiled, loop):
        torch.testing.assert_close(a, b, atol=1e-11, rtol=0)


@needs_kernel
def test_the_rmsnorm_cell_is_not_the_layernorm_cell():
    """The same weights through the RMSNorm and the LayerNorm kernel differ (a flag lost on its way to the C++
    would run LayerNorm under RMSNorm's name and pass every test above that compares RMSNorm with itself)."""
    torch.manual_seed(2)
    rms, ln = InCellLayer("lstm", 5, 16, NormSpec("rms")), InCellLayer("lstm", 5, 16, NormSpec("ln"))
    ln.load_state_dict(rms.state_dict(), strict=False)
    x = torch.randn(3, 4, 5) + 2.0  # a mean far from 0, where the two norms part
    with torch.no_grad():
        assert (rms(x) - ln(x)).abs().max() > 1e-3


@needs_kernel
def test_onednn_products_give_the_at_mm_result_in_float32(monkeypatch):
    """The products on oneDNN (gemm.h) and on at::mm are the same sums in other orders: float32 rounding apart."""
    if not lnlstm_cpu.onednn_products(torch.float32):
        pytest.skip("torch here runs no full-precision oneDNN matmul")
    assert not lnlstm_cpu.onednn_products(torch.float64)  # float64 (the equality tests) stays on at::mm
    torch.manual_seed(5)
    layer = InCellLayer("lstm", 6, 24, NormSpec("ln"))
    x, upstream = torch.randn(8, 7, 6), torch.randn(8, 7, 24)
    onednn = outputs_and_grads(layer, x, upstream)
    monkeypatch.setattr(lnlstm_cpu, "onednn_products", lambda dtype: False)
    aten = outputs_and_grads(layer, x, upstream)
    for a, b in zip(onednn, aten):
        torch.testing.assert_close(a, b, atol=1e-5 * (1 + b.abs().max().item()), rtol=1e-5)


@needs_kernel
def test_the_kernel_clocks_count_each_phase_only_while_on():
    layer = InCellLayer("lstm", 3, 8, NormSpec("ln"))
    x = torch.randn(4, 5, 3, requires_grad=True)
    lnlstm_cpu.phases(on=False)
    layer(x).sum().backward()
    assert set(lnlstm_cpu.phases(on=True).values()) == {0.0}
    layer(x).sum().backward()
    laps = lnlstm_cpu.phases(on=False)
    assert list(laps) == list(lnlstm_cpu.PHASES) and all(v > 0 for v in laps.values()), laps
    layer(x).sum().backward()
    assert set(lnlstm_cpu.phases().values()) == {0.0}


@needs_kernel
def test_the_cells_float_tanh_is_within_3_ulp_and_keeps_sign_zero_inf_and_nan():
    """rows.h's float tanh (m / (2 - m), m = -expm1(-2|x|) from its own expm1) against tanh in float64, over the whole range."""
    x = torch.cat([torch.linspace(-20, 20, 400_001), torch.logspace(-38, 1, 100_000), -torch.logspace(-38, 1, 1000),
                   torch.tensor([0.50811636, -0.51623797, 8.14448, -8.4911, 88.0, -88.0, 1e30])])
    y = lnlstm_cpu.KERNEL.module.tanh(x.float().contiguous()).double()
    exact = torch.tanh(x.double())
    ulp = torch.from_numpy(np.spacing(exact.abs().float().numpy())).double()
    assert ((y - exact).abs() / ulp).max().item() <= 3
    special = lnlstm_cpu.KERNEL.module.tanh(torch.tensor([-0.0, float("inf"), -float("inf"), float("nan")]))
    assert torch.signbit(special[0]) and special[1].item() == 1.0 and special[2].item() == -1.0
    assert torch.isnan(special[3])
