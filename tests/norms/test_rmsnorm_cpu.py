"""The compiled RMSNorm (rmsnorm.cpp, norm.impl=compiled): equal to the reference in float64."""

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


def test_half_precision_and_no_compiler_use_the_native_kernel(monkeypatch):
    module = RMSNormCompiled(16)
    x = torch.randn(4, 16, dtype=torch.bfloat16)
    torch.testing.assert_close(module.to(torch.bfloat16)(x), torch.nn.functional.rms_norm(
        x, (16,), module.weight, module.eps), atol=0, rtol=0)
    monkeypatch.setattr(rmsnorm_cpu.KERNEL, "module", None)
    monkeypatch.setattr(rmsnorm_cpu.KERNEL, "unavailable", "RuntimeError: c++: not found (test)")
    module.float()
    y = torch.randn(4, 16)
    torch.testing.assert_close(module(y), torch.nn.functional.rms_norm(y, (16,), module.weight, module.eps))


def test_the_factory_builds_it_and_refuses_it_for_other_norms():
    assert EXTRA_IMPLS[("rms", "compiled")] is RMSNormCompiled
    assert isinstance(build_norm("rms", 8, impl="compiled").norm, RMSNormCompiled)
    with pytest.raises(ValueError, match="norm 'ln' has no impl 'compiled'; it has: native, reference, auto"):
        build_norm("ln", 8, impl="compiled")
