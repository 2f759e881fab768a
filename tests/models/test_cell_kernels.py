"""What the compiled in-cell kernels (lnlstm.cpp, gru.cpp) share: their threads (row_blocks.h) and their
float32 accuracy, tested once for each family."""

import pytest
import torch

from normbench.models import gru_cpu, lnlstm_cpu
from normbench.models.recurrent import InCellLayer, _CellLayer
from normbench.norms import NormSpec

KERNELS = {"lstm": lnlstm_cpu.KERNEL, "gru": gru_cpu.KERNEL}
FAMILIES = [pytest.param(family, marks=pytest.mark.skipif(
    kernel.load() is None, reason=f"the compiled kernel does not build here: {kernel.unavailable}"))
    for family, kernel in KERNELS.items()]


def outputs_and_grads(layer, x, upstream):
    x = x.clone().requires_grad_()
    y = layer(x)
    return [y.detach(), *torch.autograd.grad(y, [x, *layer.parameters()], upstream)]


@pytest.fixture
def threads():
    """Sets torch's thread count for the test, and puts the caller's back afterwards."""
    before = torch.get_num_threads()
    yield torch.set_num_threads
    torch.set_num_threads(before)


@pytest.mark.parametrize("family", FAMILIES)
def test_blocks_of_rows_on_several_threads_give_the_one_thread_result(family, threads):
    """Batch 20 with 2 threads runs as two blocks of 10 rows; 1 thread runs one block of 20."""
    torch.manual_seed(3)
    layer = InCellLayer(family, 6, 16, NormSpec("ln"), kernel="compiled").double()
    x, upstream = torch.randn(20, 9, 6, dtype=torch.double), torch.randn(20, 9, 16, dtype=torch.double)
    threads(1)
    one = outputs_and_grads(layer, x, upstream)
    threads(2)
    two = outputs_and_grads(layer, x, upstream)
    loop = _CellLayer.forward(layer, x.clone().requires_grad_())
    torch.testing.assert_close(one[0], loop.detach(), atol=1e-12, rtol=0)
    for a, b in zip(one, two):
        torch.testing.assert_close(a, b, atol=1e-12, rtol=0)


@pytest.mark.parametrize("family", FAMILIES)
def test_thread_local_modes_reach_every_block_of_rows(family, threads):
    """Pool threads do not inherit the caller's inference mode; each block installs it."""
    layer = InCellLayer(family, 3, 8, NormSpec("ln"), kernel="compiled")
    x = torch.randn(40, 6, 3)
    threads(2)
    with torch.no_grad():
        expected = layer(x)
    with torch.inference_mode():
        torch.testing.assert_close(layer(x), expected, atol=0, rtol=0)


@pytest.mark.parametrize("family, kind", [pytest.param(p.values[0], kind, marks=p.marks) for p in FAMILIES
                                          for kind in ("ln", "rms")])
def test_float32_is_as_accurate_as_what_python_runs(family, kind):
    """Against float64, a compiled kernel's float32 error is of the size of model.cell_kernel=python's
    (the LN-LSTM's hand-written Python recurrence, the GRU's and the RMSNorm cells' autograd loop)."""
    torch.manual_seed(0)
    layer = InCellLayer(family, 8, 32, NormSpec(kind))
    x, upstream = torch.randn(16, 12, 8), torch.randn(16, 12, 32)
    exact = outputs_and_grads(layer.double(), x.double(), upstream.double())
    layer.float()
    compiled = outputs_and_grads(layer, x, upstream)
    layer.kernel = "python"
    python = outputs_and_grads(layer, x, upstream)
    for e, c, p in zip(exact, compiled, python):
        error_c, error_p = (c.double() - e).abs().max().item(), (p.double() - e).abs().max().item()
        scale = e.abs().max().item()
        assert error_c <= 4 * error_p + 1e-6 * scale, (error_c, error_p, scale)


@pytest.mark.skipif(lnlstm_cpu.KERNEL.load() is None, reason=f"does not build here: {lnlstm_cpu.KERNEL.unavailable}")
@pytest.mark.parametrize("cell_norm", [True, False])
@pytest.mark.parametrize("hidden", [20, 36])  # widths of whole tiles, single registers and a short one (gemm.h)
def test_the_tiled_step_products_give_the_autograd_loop_in_float64(hidden, cell_norm):
    """7 rows: one full tile of rows and three left over, in the forward's and the backward's step products."""
    torch.manual_seed(3)
    layer = InCellLayer("lstm", 5, hidden, NormSpec("ln"), cell_norm=cell_norm, kernel="compiled").double()
    x, upstream = torch.randn(7, 6, 5, dtype=torch.double), torch.randn(7, 6, hidden, dtype=torch.double)
    compiled = outputs_and_grads(layer, x, upstream)
    x = x.clone().requires_grad_()
    y = _CellLayer.forward(layer, x)
    loop = [y.detach(), *torch.autograd.grad(y, [x, *layer.parameters()], upstream)]
    for a, b in zip(compiled, loop):
        torch.testing.assert_close(a, b, atol=1e-11, rtol=0)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("scale", [1e22, 1e30])
def test_a_variance_that_overflows_float32_is_nan_as_in_native_layernorm(family, scale):
    """Pre-activations whose variance overflows float32 (|W x| ~ 1e21 and more): torch's layer_norm, and
    so model.cell_kernel=python, gives NaN there; the compiled kernel must too, not a finite row of zeros
    (1 / sqrt(inf) = 0) that keeps a diverging run training."""
    torch.manual_seed(0)
    layer = InCellLayer(family, 8, 32, NormSpec("ln"))
    x = torch.randn(4, 5, 8) * scale
    with torch.no_grad():
        compiled = layer(x)
        layer.kernel = "python"
        python = layer(x)
    assert torch.isnan(python).all()
    assert torch.equal(torch.isnan(compiled), torch.isnan(python))


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("impl", ["auto", "native"])
def test_an_rmsnorm_mean_square_that_overflows_gives_what_the_loops_rmsnorm_gives(family, impl):
    """Where x^2 overflows float32, torch's and normbench's RMSNorm give 1 / sqrt(inf) = 0, not NaN: the kernel
    computes that function, so it must give the same (here finite) rows, within float32 rounding."""
    torch.manual_seed(0)
    layer = InCellLayer(family, 8, 32, NormSpec("rms", impl=impl))
    x = torch.randn(4, 5, 8) * 1e22
    with torch.no_grad():
        compiled = layer(x)
        layer.kernel = "python"
        loop = layer(x)
    assert torch.isfinite(loop).all()
    torch.testing.assert_close(compiled, loop, atol=1e-6, rtol=0)


@pytest.mark.parametrize("family", FAMILIES)
def test_a_sum_of_squares_that_overflows_is_nan_where_the_variance_itself_would_not(family):
    """Inputs of 1e19: each row's centred sum of squares overflows float32 while its variance (that sum over 3 or 4
    x hidden) would not. The kernel's rows are NaN, so the run reads diverged (docs/offline-and-safety.md says so,
    and that torch's layer_norm gives rows of zeros there instead)."""
    torch.manual_seed(0)
    layer = InCellLayer(family, 8, 32, NormSpec("ln"))
    x = torch.randn(4, 5, 8) * 1e19
    with torch.no_grad():
        pre = x @ layer.weight_ih.T
        sums = (pre.double() - pre.double().mean(-1, keepdim=True)).pow(2).sum(-1)
        largest = torch.finfo(torch.float32).max
        assert (sums > largest).any() and (sums / pre.shape[-1] < largest).all()
        assert torch.isnan(layer(x)).all()


@pytest.mark.parametrize("family", FAMILIES)
def test_large_finite_inputs_stay_finite(family):
    """Only an overflow turns into NaN: inputs of 1e15 (variance 1e30, within float32) stay finite."""
    torch.manual_seed(0)
    layer = InCellLayer(family, 8, 32, NormSpec("ln"))
    with torch.no_grad():
        assert torch.isfinite(layer(torch.randn(4, 5, 8) * 1e15)).all()
