"""The compiled RMSNorm (rmsnorm.cpp, norm.impl=compiled): equal to the reference in float64, and in
fp32, bf16 and fp16 to the reference one precision up, rounded."""

import pytest
import torch

from normbench.norms import EXTRA_IMPLS, RMSNormCompiled, RMSNormReference, build_norm, rmsnorm_cpu

needs_kernel = pytest.mark.skipif(rmsnorm_cpu.KERNEL.load() is None,
                                  reason=f"the compiled RMSNorm does not build here: {rmsnorm_cpu.KERNEL.unavailable}")


def outputs_and_grads(cls, module, x, upstream):
    x = x.clone().requires_grad_()
    y = cls.forward(module, x)
    wrt = [x, *module.parameters()]
    return [y.detach(), *torch.autograd.grad(y, wrt, upstream)]


@needs_kernel
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape", [(3, 5, 20), (130, 64), (7, 1), (2, 33)])  # short chunks, several blocks of rows
def test_compiled_equals_the_reference_in_float64(shape, affine):
    torch.manual_seed(0)
    module = RMSNormCompiled(shape[-1], affine=affine).double()
    if affine:
        with torch.no_grad():
            module.weight.add_(0.3 * torch.randn_like(module.weight))
    x, upstream = torch.randn(shape, dtype=torch.double), torch.randn(shape, dtype=torch.double)
    compiled = outputs_and_grads(RMSNormCompiled, module, x, upstream)
    reference = outputs_and_grads(RMSNormReference, module, x, upstream)
    assert len(compiled) == (3 if affine else 2)
    for a, b in zip(compiled, reference):
        torch.testing.assert_close(a, b, atol=1e-12, rtol=0)
    assert torch.autograd.gradcheck(lambda inp: module(inp), (x[:2].clone().requires_grad_(),), fast_mode=True)


@needs_kernel
def test_several_threads_give_the_one_thread_result():
    module = RMSNormCompiled(48).double()
    x, upstream = torch.randn(300, 48, dtype=torch.double), torch.randn(300, 48, dtype=torch.double)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = outputs_and_grads(RMSNormCompiled, module, x, upstream)
        torch.set_num_threads(2)
        two = outputs_and_grads(RMSNormCompiled, module, x, upstream)
    finally:
        torch.set_num_threads(threads)
    for a, b in zip(one, two):
        torch.testing.assert_close(a, b, atol=1e-12, rtol=0)


# Each dtype's kernel against the reference one precision up, rounded to the dtype. Tolerances: bf16 and
# fp16 are computed in fp32 and rounded once, so a value may differ from the rounded fp32 reference by
# at most one unit in the last place where the two fp32 results straddle a rounding boundary: rtol one
# ulp (2^-7 bf16, 2^-10 fp16), and nearly every value equal. fp32 against fp64: sums of at most 256
# products, each step rounding by 2^-24, stay within 1e-5 relative. atol: dx of a width-1 row is a
# difference of two equal terms, zero up to the higher precision's rounding of them (< 1e-5 here).
LOW_PRECISION = {torch.float32: (torch.float64, 1e-5), torch.bfloat16: (torch.float32, 2**-7),
                 torch.float16: (torch.float32, 2**-10)}


def _against_the_reference_one_precision_up(dtype, x, weight, upstream):
    """[y, dx, (dw)] of the compiled kernel in dtype, and of the reference in the next precision up rounded to dtype."""
    up, _ = LOW_PRECISION[dtype]
    compiled, reference = RMSNormCompiled(x.shape[-1], affine=weight is not None), RMSNormReference(x.shape[-1],
                                                                                               affine=weight is not None)
    results = []
    for module, dt in ((compiled, dtype), (reference, up)):
        if weight is not None:
            module.weight = torch.nn.Parameter(weight.to(dt))
        results.append([t.to(dtype) for t in outputs_and_grads(type(module), module, x.to(dt), upstream.to(dt))])
    return results


@needs_kernel
@pytest.mark.parametrize("dtype", list(LOW_PRECISION), ids=str)
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape", [(3, 5, 20), (130, 64), (7, 1), (2, 33), (70, 256), (9, 1000)])
def test_compiled_equals_the_reference_one_precision_up(shape, affine, dtype):
    torch.manual_seed(1)
    x, upstream = torch.randn(shape).to(dtype), torch.randn(shape).to(dtype)
    weight = (1 + 0.3 * torch.randn(shape[-1])).to(dtype) if affine else None
    compiled, reference = _against_the_reference_one_precision_up(dtype, x, weight, upstream)
    assert rmsnorm_cpu.usable(x, weight) and len(compiled) == (3 if affine else 2)
    rtol = LOW_PRECISION[dtype][1]
    for name, a, b in zip(("y", "dx", "dw"), compiled, reference):
        assert a.dtype == dtype
        torch.testing.assert_close(a, b, rtol=rtol, atol=1e-5, msg=lambda m: f"{name}: {m}")
        if dtype != torch.float32 and shape[-1] > 1:  # rounded from the same fp32 values: equal but at a boundary
            assert (a == b).float().mean() >= 0.99, name


@needs_kernel
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_non_contiguous_input_and_gradient(dtype):
    torch.manual_seed(2)
    x, upstream = torch.randn(37, 12).to(dtype).t(), torch.randn(37, 12).to(dtype).t()  # (12, 37), strided
    assert not x.is_contiguous()
    weight = (1 + 0.3 * torch.randn(37)).to(dtype)
    compiled, reference = _against_the_reference_one_precision_up(dtype, x, weight, upstream)
    for a, b in zip(compiled, reference):
        torch.testing.assert_close(a, b, rtol=LOW_PRECISION[dtype][1], atol=1e-5)


@pytest.mark.filterwarnings("ignore:Mismatch dtype between input and weight")
def test_a_weight_of_another_dtype_and_no_compiler_use_the_native_kernel(monkeypatch):
    module = RMSNormCompiled(16)  # fp32 weight, bf16 input: the kernel wants one dtype, F.rms_norm runs
    x = torch.randn(4, 16, dtype=torch.bfloat16)
    assert not rmsnorm_cpu.usable(x, module.weight)
    torch.testing.assert_close(module(x), torch.nn.functional.rms_norm(x, (16,), module.weight, module.eps),
                               atol=0, rtol=0)
    monkeypatch.setattr(rmsnorm_cpu.KERNEL, "module", None)
    monkeypatch.setattr(rmsnorm_cpu.KERNEL, "unavailable", "RuntimeError: c++: not found (test)")
    y = torch.randn(4, 16)
    assert not rmsnorm_cpu.usable(y)
    torch.testing.assert_close(module(y), torch.nn.functional.rms_norm(y, (16,), module.weight, module.eps))


def test_the_factory_builds_it_and_refuses_it_for_other_norms():
    assert EXTRA_IMPLS[("rms", "compiled")] is RMSNormCompiled
    assert isinstance(build_norm("rms", 8, impl="compiled").norm, RMSNormCompiled)
    with pytest.raises(ValueError, match="norm 'ln' has no impl 'compiled'; it has: native, reference, auto"):
        build_norm("ln", 8, impl="compiled")
