"""The compiled in-cell LN-GRU and RMSNorm-GRU (gru.cpp): equal to the autograd loop, fallback, the record
(threads and float32 accuracy: test_cell_kernels.py)."""

import pytest
import torch

from normbench.models import cell_kernel_in_use, gru_cpu
from normbench.models.recurrent import InCellLayer, _CellLayer
from normbench.native import cpu_build
from normbench.norms import NormSpec

CPU = torch.device("cpu")
needs_kernel = pytest.mark.skipif(gru_cpu.KERNEL.load() is None,
                                  reason=f"the compiled kernel does not build here: {gru_cpu.KERNEL.unavailable}")


def outputs_and_grads(layer, x, upstream, parameters=None):
    x = x.clone().requires_grad_()
    y = layer(x)
    return [y.detach(), *torch.autograd.grad(y, [x, *(parameters or layer.parameters())], upstream)]


def perturbed_layer(hidden, affine=True, seed=11, kind="ln"):
    """A float64 layer whose norm gains and biases are off their init, so that their gradients are tested too."""
    torch.manual_seed(seed)
    layer = InCellLayer("gru", 5, hidden, NormSpec(kind, affine=affine), kernel="compiled").double()
    with torch.no_grad():
        for name, p in layer.named_parameters():
            if "norm" in name:
                p.add_(0.3 * torch.randn_like(p))
    return layer


def assert_equals_the_autograd_loop(layer, batch=3, steps=6):
    hidden = layer.hidden_size
    x = torch.randn(batch, steps, 5, dtype=torch.double)
    upstream = torch.randn(batch, steps, hidden, dtype=torch.double)
    compiled = outputs_and_grads(layer, x, upstream)
    loop = outputs_and_grads(lambda inp: _CellLayer.forward(layer, inp), x, upstream, layer.parameters())
    assert len(compiled) == 2 + len(list(layer.parameters()))  # h, dx and every parameter's gradient
    for a, b in zip(compiled, loop):
        torch.testing.assert_close(a, b, atol=1e-11, rtol=0)


@needs_kernel
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("hidden", [8, 20])  # shorter than one AVX-512 float register; 20 leaves a short chunk
def test_equals_the_autograd_loop_in_float64(hidden, affine):
    layer = perturbed_layer(hidden, affine)
    assert layer.hand_written and layer.runs(CPU) == "compiled"
    assert_equals_the_autograd_loop(layer)
    x = torch.randn(2, 3, 5, dtype=torch.double, requires_grad=True)
    assert torch.autograd.gradcheck(lambda inp: layer(inp), (x,), fast_mode=True)


@needs_kernel
def test_the_kernel_refuses_parameters_of_the_wrong_size():
    module = gru_cpu.KERNEL.load()
    xw, w_hh, ones12 = torch.randn(2, 3, 12), torch.randn(12, 4), torch.ones(12)
    with pytest.raises(RuntimeError, match=r"xw: \(batch, time, 3 hidden\), got \[2, 3, 8\]"):
        module.forward(torch.randn(2, 3, 8), w_hh, ones12, ones12, ones12, ones12, 1e-5)
    with pytest.raises(RuntimeError, match=r"w_hh: .*of size \[12, 4\], got \[16, 4\]"):
        module.forward(xw, torch.randn(16, 4), ones12, ones12, ones12, ones12, 1e-5)
    with pytest.raises(RuntimeError, match=r"gamma_h: .*of size \[12\], got \[1\]"):
        module.forward(xw, w_hh, ones12, torch.ones(1), ones12, ones12, 1e-5)
    with pytest.raises(RuntimeError, match=r"bias_x: .*of size \[12\], got \[4\]"):
        module.forward(xw, w_hh, ones12, ones12, torch.ones(4), ones12, 1e-5)
    with pytest.raises(RuntimeError, match=r"bias_h: .*of the input's dtype"):
        module.forward(xw, w_hh, ones12, ones12, ones12, ones12.double(), 1e-5)


def test_without_a_compiler_auto_runs_the_autograd_loop_and_cpp_says_why(monkeypatch):
    monkeypatch.setattr(gru_cpu.KERNEL, "module", None)
    monkeypatch.setattr(gru_cpu.KERNEL, "unavailable", "RuntimeError: c++: not found (test)")
    layer = InCellLayer("gru", 3, 4, NormSpec("ln"))
    x = torch.randn(2, 5, 3)
    torch.testing.assert_close(layer(x), _CellLayer.forward(layer, x), atol=0, rtol=0)
    assert cell_kernel_in_use(layer, CPU) == "autograd"
    layer.kernel = "compiled"
    with pytest.raises(ValueError, match=r"model.cell_kernel=compiled, but the compiled kernel is unavailable: .*not found"):
        layer(x)


def test_the_record_names_the_recurrence_that_runs():
    expected = "autograd" if gru_cpu.KERNEL.load() is None else f"compiled-{cpu_build.capability()}"
    assert cell_kernel_in_use(InCellLayer("gru", 3, 4, NormSpec("ln")), CPU) == expected
    assert cell_kernel_in_use(InCellLayer("gru", 3, 4, NormSpec("ln"), kernel="python"), CPU) == "autograd"
    assert cell_kernel_in_use(InCellLayer("gru", 3, 4, NormSpec("ln")), CPU, autocast=True) == "autograd"
    assert cell_kernel_in_use(InCellLayer("gru", 3, 4, NormSpec("rms")), CPU) == expected  # gru.cpp's centred false
    assert cell_kernel_in_use(InCellLayer("gru", 3, 4, NormSpec("rms"), kernel="python"), CPU) == "autograd"
    assert cell_kernel_in_use(InCellLayer("gru", 3, 4, NormSpec("rms", impl="reference")), CPU) is None
    assert cell_kernel_in_use(InCellLayer("gru", 3, 4, NormSpec("dyt")), CPU) is None


@needs_kernel
@pytest.mark.parametrize("impl, affine, gain_offset", [("auto", True, False), ("native", True, True),
                                                        ("compiled", False, False), ("compiled", True, False)])
def test_the_rmsnorm_cell_equals_the_autograd_loop_in_float64(impl, affine, gain_offset):
    """gru.cpp with RMSNorm (centred false): no mean, no shift, the gain (gamma - 1 stored with gain_offset) or
    none; against the loop of the cell's step with normbench's RMSNorm of each impl, outputs and every gradient.
    Hidden 20 leaves a short chunk after full registers, batch 7 one full tile of rows and three left over."""
    torch.manual_seed(11)
    norm = NormSpec("rms", impl=impl, affine=affine, gain_offset=gain_offset)
    layer = InCellLayer("gru", 5, 20, norm, kernel="compiled").double()
    with torch.no_grad():
        for name, p in layer.named_parameters():
            if "norm" in name:
                p.add_(0.3 * torch.randn_like(p))
    assert cell_kernel_in_use(layer, CPU).startswith("compiled-")
    assert_equals_the_autograd_loop(layer, batch=7)


@needs_kernel
def test_the_rmsnorm_cell_is_not_the_layernorm_cell():
    """The same weights through the RMSNorm and the LayerNorm kernel differ, forward and backward (a flag lost on
    its way to the C++ would run LayerNorm under RMSNorm's name and pass the test above, which compares RMSNorm
    with itself), and the RMSNorm kernel is the loop's RMSNorm in float32 too."""
    torch.manual_seed(2)
    rms, ln = InCellLayer("gru", 5, 16, NormSpec("rms")), InCellLayer("gru", 5, 16, NormSpec("ln"))
    ln.load_state_dict(rms.state_dict(), strict=False)
    x, upstream = torch.randn(3, 4, 5) + 2.0, torch.randn(3, 4, 16)  # a mean far from 0, where the two norms part
    kernel_rms, kernel_ln = outputs_and_grads(rms, x, upstream), outputs_and_grads(ln, x, upstream)
    assert (kernel_rms[0] - kernel_ln[0]).abs().max() > 1e-3 and (kernel_rms[1] - kernel_ln[1]).abs().max() > 1e-3
    loop = outputs_and_grads(lambda inp: _CellLayer.forward(rms, inp), x, upstream, rms.parameters())
    for a, b in zip(kernel_rms, loop):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)


@pytest.mark.slow  # compiles every variant once (about 30 s each, then cached)
@pytest.mark.parametrize("variant", ["default", "avx2", "avx512"])
@pytest.mark.parametrize("hidden", [8, 20])
@pytest.mark.parametrize("kind", ["ln", "rms"])
def test_every_capability_build_equals_the_autograd_loop_in_float64(variant, hidden, kind, monkeypatch):
    if variant not in cpu_build.runnable_variants():
        pytest.skip(f"this CPU does not run {variant}")
    try:
        module = cpu_build.build(gru_cpu.KERNEL.source, variant)
    except Exception as err:  # noqa: BLE001 - a variant that does not build is skipped, saying why
        pytest.skip(f"the {variant} build fails here: {cpu_build.why(err)}")
    monkeypatch.setattr(gru_cpu.KERNEL, "module", module)
    monkeypatch.setattr(gru_cpu.KERNEL, "unavailable", None)
    assert_equals_the_autograd_loop(perturbed_layer(hidden, kind=kind))
