"""Every norm x impl against float64 formulas written here, forward and backward."""

import inspect
import math

import pytest
import torch
from torch import nn

from normbench.norms import (
    KINDS,
    REGISTRY,
    BatchNorm,
    Fp32Norm,
    InputDtypeNorm,
    NormSpec,
    RMSNorm,
    RMSNormCompiled,
    StepBatchNorm,
    auto_choices,
    build_norm,
    decisions,
    dispatch,
    norm_class,
    rmsnorm_cpu,
)

IMPLS = ("native", "reference")  # "auto" runs native's arithmetic by the fastest kernel of it: tested on its own below
SHAPES = [(5, 7), (3, 4, 16), (2, 1, 1), (6, 2), (1, 3, 33)]


def expected(kind, x, eps, gamma, beta, alpha=0.5):
    """The formulas, in float64, straight from the papers."""
    x = x.double()
    if kind == "none":
        return x
    if kind == "ln":
        mu = x.mean(-1, keepdim=True)
        var = ((x - mu) ** 2).mean(-1, keepdim=True)
        return (x - mu) / torch.sqrt(var + eps) * gamma + beta
    if kind == "rms":
        return x / torch.sqrt((x**2).mean(-1, keepdim=True) + eps) * gamma
    if kind == "bn":  # training mode: statistics over every leading dimension
        flat = x.reshape(-1, x.shape[-1])
        mu = flat.mean(0)
        var = ((flat - mu) ** 2).mean(0)
        return ((x - mu) / torch.sqrt(var + eps)) * gamma + beta
    if kind == "scale":
        return gamma * math.sqrt(x.shape[-1]) * x / torch.linalg.vector_norm(x, dim=-1, keepdim=True).clamp_min(eps)
    if kind == "dyt":
        return torch.tanh(alpha * x) * gamma + beta
    if kind == "derf":  # Chen et al. 2025, eq. 10, at its initial shift s = 0
        return torch.erf(alpha * x) * gamma + beta
    raise AssertionError(kind)


def _set_affine(norm, gamma, beta):
    inner = norm.norm if isinstance(norm, (Fp32Norm, InputDtypeNorm)) else norm
    with torch.no_grad():
        if hasattr(inner, "weight") and inner.weight is not None:
            inner.weight.copy_(gamma)
        if getattr(inner, "bias", None) is not None:
            inner.bias.copy_(beta)
    return inner


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("impl", (*IMPLS, "auto"))
@pytest.mark.parametrize("shape", SHAPES)
def test_forward_and_backward_match_float64_formula(kind, impl, shape):
    if kind == "bn" and math.prod(shape[:-1]) < 2:
        pytest.skip("BatchNorm in training needs more than one value per feature")
    torch.manual_seed(0)
    dim = shape[-1]
    x = torch.randn(shape) * 3 + 1
    gamma, beta = torch.rand(dim) + 0.5, torch.randn(dim)
    norm = build_norm(kind, dim, eps=1e-3, impl=impl)
    inner = _set_affine(norm, gamma, beta)
    if kind == "scale":
        gamma_used = inner.g.detach().double() / math.sqrt(dim)
    else:
        gamma_used = gamma.double()
    x1 = x.clone().requires_grad_()
    y = norm(x1)
    x2 = x.double().requires_grad_()
    y_ref = expected(kind, x2, 1e-3, gamma_used, beta.double())
    torch.testing.assert_close(y.double(), y_ref, rtol=1e-5, atol=1e-5)
    upstream = torch.randn(shape)
    y.backward(upstream)
    y_ref.backward(upstream.double())
    torch.testing.assert_close(x1.grad.double(), x2.grad, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kind", ["ln", "rms", "bn", "scale", "dyt", "derf"])
@pytest.mark.parametrize("impl", (*IMPLS, "auto"))
def test_gradcheck_double(kind, impl):
    torch.manual_seed(1)
    norm = build_norm(kind, 6, eps=1e-3, impl=impl).double()
    x = torch.randn(4, 6, dtype=torch.double, requires_grad=True)
    params = tuple(p for p in norm.parameters())
    assert torch.autograd.gradcheck(lambda inp, *ps: norm(inp), (x, *params))


@pytest.mark.parametrize("impl", IMPLS)
def test_layernorm_of_constant_row_is_its_bias_and_finite(impl):
    norm = build_norm("ln", 8, eps=1e-5, impl=impl)
    _, beta = _set_affine(norm, torch.full((8,), 2.0), torch.arange(8.0)), torch.arange(8.0)
    y = norm(torch.full((3, 8), 7.0))
    assert torch.isfinite(y).all()
    torch.testing.assert_close(y, torch.arange(8.0).expand(3, 8))


@pytest.mark.parametrize("kind", ["ln", "rms", "bn", "scale"])
@pytest.mark.parametrize("impl", IMPLS)
def test_zero_variance_rows_stay_finite(kind, impl):
    norm = build_norm(kind, 5, eps=1e-5, impl=impl)
    x = torch.zeros(4, 5, requires_grad=True)
    y = norm(x)
    y.sum().backward()
    assert torch.isfinite(y).all() and torch.isfinite(x.grad).all()


@pytest.mark.parametrize("kind", ["ln", "rms", "bn", "dyt"])
def test_gamma_init_scales_output_exactly(kind):
    torch.manual_seed(2)
    x = torch.randn(6, 10)
    base = build_norm(kind, 10, gamma_init=1.0)(x)
    small = build_norm(kind, 10, gamma_init=0.1)(x)
    torch.testing.assert_close(small, 0.1 * base)  # beta starts at 0, so y scales with gamma


def test_scalenorm_gain_starts_at_sqrt_dim_times_gamma_init():
    assert build_norm("scale", 16).norm.g.item() == pytest.approx(4.0)
    assert build_norm("scale", 16, gamma_init=0.1).norm.g.item() == pytest.approx(0.4)


@pytest.mark.parametrize("impl", IMPLS)
def test_eps_sits_inside_the_square_root(impl):
    # A row with variance v normalizes to (x - mu) / sqrt(v + eps): with v = 1 and eps = 3, halved.
    x = torch.tensor([[-1.0, 1.0]])
    for kind, want in (("ln", [-0.5, 0.5]), ("rms", [-0.5, 0.5])):
        y = build_norm(kind, 2, eps=3.0, impl=impl)(x)
        torch.testing.assert_close(y, torch.tensor([want]))


@pytest.mark.parametrize("kind", ["ln", "rms", "bn", "scale", "dyt"])
def test_affine_false_has_no_learned_gain(kind):
    norm = build_norm(kind, 4, affine=False)
    names = {n for n, _ in norm.named_parameters()}
    assert names <= {"norm.alpha"}, names  # DyT keeps its alpha: it is part of the function


@pytest.mark.parametrize("impl", IMPLS)
def test_batchnorm_train_eval_and_running_statistics(impl):
    torch.manual_seed(3)
    norm = build_norm("bn", 3, impl=impl)
    inner = norm.norm
    x = torch.randn(4, 5, 3) * 2 + 5  # statistics over batch x time = 20 values per feature
    norm.train()
    norm(x)
    flat = x.reshape(-1, 3)
    torch.testing.assert_close(inner.running_mean, 0.1 * flat.mean(0))
    torch.testing.assert_close(inner.running_var, 0.9 + 0.1 * flat.var(0, unbiased=True))
    norm.eval()
    y = norm(x)
    want = (x - inner.running_mean) / torch.sqrt(inner.running_var + inner.eps)
    torch.testing.assert_close(y, want)
    running_before = inner.running_mean.clone()
    norm(x)
    torch.testing.assert_close(inner.running_mean, running_before)  # eval never updates


def test_native_and_reference_batchnorm_agree_on_running_statistics():
    torch.manual_seed(4)
    a, b = build_norm("bn", 6, impl="native"), build_norm("bn", 6, impl="reference")
    for _ in range(3):
        x = torch.randn(8, 6)
        a(x), b(x)
    torch.testing.assert_close(a.norm.running_mean, b.norm.running_mean)
    torch.testing.assert_close(a.norm.running_var, b.norm.running_var)


def test_step_batchnorm_keeps_statistics_per_time_step():
    torch.manual_seed(5)
    norm = build_norm("bn", 2, per_step=True).norm
    assert isinstance(norm, StepBatchNorm)
    x = torch.randn(16, 3, 2) * torch.tensor([1.0, 10.0, 100.0]).view(1, 3, 1)  # scale differs per step
    y = norm(x)
    for t in range(3):  # every step is normalized on its own batch statistics
        torch.testing.assert_close(y[:, t].mean(0), torch.zeros(2), atol=1e-5, rtol=0)
        torch.testing.assert_close(y[:, t].var(0, unbiased=False), torch.ones(2), atol=1e-3, rtol=0)
    assert norm.running_mean.shape == (3, 2)
    torch.testing.assert_close(norm.running_var[:, 0], 0.9 + 0.1 * x[:, :, 0].var(0), rtol=1e-5, atol=1e-5)
    # One step at a time gives the same as all steps at once.
    stepwise = build_norm("bn", 2, per_step=True).norm
    ys = torch.stack([stepwise(x[:, t], step=t) for t in range(3)], 1)
    torch.testing.assert_close(ys, y)
    torch.testing.assert_close(stepwise.running_mean, norm.running_mean)
    # Eval: steps beyond the longest seen in training reuse the last step's statistics.
    norm.eval()
    late = norm(x[:, 2], step=7)
    torch.testing.assert_close(late, norm(x[:, 2], step=2))
    long_seq = norm(torch.cat([x, x[:, 2:]], 1))
    torch.testing.assert_close(long_seq[:, 3], late)


@pytest.mark.parametrize("dtype", [torch.bfloat16])
def test_fp32_policy_is_visible_and_changes_the_arithmetic(dtype):
    assert "Fp32Norm" in repr(build_norm("ln", 4)) and "InputDtypeNorm" in repr(build_norm("ln", 4, fp32=False))
    torch.manual_seed(6)
    x = (torch.randn(64, 256) * 10 + 1000).to(dtype)
    exact = expected("ln", x.double(), 1e-5, torch.ones(256).double(), torch.zeros(256).double())
    hi = build_norm("ln", 256, impl="reference", fp32=True)(x)
    lo = build_norm("ln", 256, impl="reference", fp32=False)(x)
    assert hi.dtype == lo.dtype == dtype
    err_hi = (hi.double() - exact).abs().max()
    err_lo = (lo.double() - exact).abs().max()
    assert err_hi < 0.05 < err_lo  # the large mean cancels badly in bf16, not in fp32


def test_fp16_reference_layernorm_with_tiny_eps_gives_nan_and_fp32_policy_prevents_it():
    x = torch.full((2, 8), 3.0, dtype=torch.float16)
    lo = build_norm("ln", 8, eps=1e-12, impl="reference", fp32=False)(x)
    hi = build_norm("ln", 8, eps=1e-12, impl="reference", fp32=True)(x)
    assert torch.isnan(lo).all()  # 1e-12 underflows to 0 in fp16: 0/sqrt(0)
    assert torch.isfinite(hi).all()


def test_unknown_kind_and_impl_list_the_valid_names():
    with pytest.raises(ValueError, match=r"unknown norm kind 'layer'; valid: none, bn, ln, rms, scale, dyt"):
        build_norm("layer", 4)
    with pytest.raises(ValueError, match=r"unknown norm impl 'cuda'; valid: native, reference, auto"):
        build_norm("ln", 4, impl="cuda")
    with pytest.raises(ValueError, match="eps must be > 0"):
        build_norm("ln", 4, eps=0.0)
    with pytest.raises(ValueError, match="norm.kind='group' is not valid"):
        NormSpec(kind="group")


def test_registry_covers_every_kind_and_impl():
    assert {(k, i) for k in KINDS for i in IMPLS} == set(REGISTRY)
    assert issubclass(REGISTRY[("bn", "reference")], BatchNorm)


def test_auto_is_the_default_and_builds_native_itself_where_a_kind_has_no_faster_kernel():
    assert NormSpec().impl == "auto" and inspect.signature(build_norm).parameters["impl"].default == "auto"
    for kind in ("ln", "bn", "scale"):  # (dyt, derf: their compiled kernel, tests/norms/test_elementwise_cpu.py)
        assert type(build_norm(kind, 8).norm) is norm_class(kind, "native"), kind
        assert auto_choices(nn.Sequential(build_norm(kind, 8))) == {"0": "native"}
    assert type(build_norm("bn", 8, per_step=True).norm) is StepBatchNorm  # per-step statistics: native
    assert auto_choices(nn.Sequential(build_norm("ln", 8, impl="native"))) == {}  # not built with auto: not named


def test_auto_rmsnorm_is_native_rmsnorm_run_by_the_compiled_kernel_where_it_runs():
    """Native's parameters and state_dict (a checkpoint of either loads into the other), native's
    function (to rounding), and on a CPU in fp32 the compiled kernel; what ran is named per site."""
    torch.manual_seed(3)
    auto, native = build_norm("rms", 16, gamma_init=0.5), build_norm("rms", 16, impl="native", gamma_init=0.5)
    assert isinstance(auto.norm, RMSNorm) and auto.state_dict().keys() == native.state_dict().keys()
    native.load_state_dict(auto.state_dict())
    assert "decided at first call" in repr(auto) and auto_choices(nn.Sequential(auto)) == {"0": None}
    x, upstream = torch.randn(6, 16) * 3 + 1, torch.randn(6, 16)
    for norm in (auto, native):  # forward and the whole backward of each, on the same input
        xi = x.clone().requires_grad_()
        norm.grads = [norm(xi), *torch.autograd.grad(norm(xi), [xi, norm.norm.weight], upstream)]
    for a, b in zip(auto.grads, native.grads):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    ran = "compiled" if rmsnorm_cpu.KERNEL.load() is not None else "native"
    assert auto.norm.chosen == ran and f"impl=auto ({ran})" in repr(auto)
    assert decisions()["rms cpu float32 16"] == ran and auto.norm.measured_s >= 0
    half = build_norm("rms", 16, fp32=False).to(torch.bfloat16)  # bf16 in its own dtype: the kernel's bf16 path
    half(x.to(torch.bfloat16))
    assert half.norm.chosen == ran and decisions()["rms cpu bfloat16 16"] == ran


def test_auto_decides_once_per_process_and_falls_back_to_native_without_a_compiler(monkeypatch):
    asked = []
    monkeypatch.setattr(dispatch, "_DECIDED", {})  # this test's decisions, not the process's
    monkeypatch.setattr(rmsnorm_cpu.KERNEL, "module", None)
    monkeypatch.setattr(rmsnorm_cpu.KERNEL, "unavailable", "RuntimeError: no compiler (test)")
    real = RMSNormCompiled.runs_on
    monkeypatch.setattr(RMSNormCompiled, "runs_on", staticmethod(lambda *a: asked.append(a) or real(*a)))
    layers_ = [build_norm("rms", 8) for _ in range(3)]
    for norm in layers_:
        torch.testing.assert_close(norm(torch.ones(2, 8)), torch.ones(2, 8), rtol=1e-4, atol=1e-4)
    assert len(asked) == 1 and all(n.norm.chosen == "native" for n in layers_)  # one decision for all three
    layers_[0](torch.ones(2, 4, 8))  # another shape, the same width: the same decision
    build_norm("rms", 4)(torch.ones(2, 4))  # another width: decided for it
    assert len(asked) == 2 and dispatch.decisions() == {"rms cpu float32 8": "native", "rms cpu float32 4": "native"}


def test_auto_runs_native_while_torch_compile_traces(monkeypatch):
    """A C++ kernel is opaque to dynamo; inductor fuses native's ops (model.cell_kernel=torch_compile)."""
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    monkeypatch.setattr(RMSNormCompiled, "forward", lambda *a: pytest.fail("the C++ kernel ran under torch.compile"))
    norm = build_norm("rms", 8)
    x = torch.randn(3, 8)
    torch.testing.assert_close(norm(x), build_norm("rms", 8, impl="native")(x))
    assert norm.norm.choices == {}


# --- gain_offset: the parameter is gamma - 1 (Gemma's RMSNorm), the function is unchanged -------------

OFFSET_KINDS = ("ln", "rms", "bn", "dyt")


@pytest.mark.parametrize("kind", OFFSET_KINDS)
@pytest.mark.parametrize("impl", IMPLS)
def test_gain_offset_stores_gamma_minus_1_and_matches_float64_formula(kind, impl):
    torch.manual_seed(0)
    dim = 6
    x = (torch.randn(4, 3, dim) * 3 + 1).double()
    offset = torch.randn(dim, dtype=torch.float64) * 0.3           # the stored parameter, gamma - 1
    beta = torch.randn(dim, dtype=torch.float64)
    norm = build_norm(kind, dim, eps=1e-3, impl=impl, gamma_init=0.25, gain_offset=True).double()
    inner = norm.norm
    assert "weight" not in dict(inner.named_parameters())
    torch.testing.assert_close(inner.weight_offset.detach(), torch.full((dim,), -0.75, dtype=torch.float64))
    with torch.no_grad():
        inner.weight_offset.copy_(offset)
        if getattr(inner, "bias", None) is not None:
            inner.bias.copy_(beta)
    x_ref = x.clone().requires_grad_(True)
    x_in = x.clone().requires_grad_(True)
    gamma_ref = (1.0 + offset).clone().requires_grad_(True)        # the formula's gamma = 1 + stored value
    y = norm(x_in)
    y_ref = expected(kind, x_ref, 1e-3, gamma_ref, beta if kind != "rms" else 0.0)
    torch.testing.assert_close(y, y_ref, rtol=1e-10, atol=1e-10)
    upstream = torch.randn_like(y)
    (y * upstream).sum().backward()
    (y_ref * upstream).sum().backward()
    torch.testing.assert_close(x_in.grad, x_ref.grad, rtol=1e-9, atol=1e-9)
    # d/d(gamma - 1) = d/d(gamma): the optimizer sees the same gradient, on a parameter centred at 0
    torch.testing.assert_close(inner.weight_offset.grad, gamma_ref.grad, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("kind", OFFSET_KINDS)
def test_gain_offset_keeps_gamma_init_as_the_initial_effective_gain(kind):
    torch.manual_seed(1)
    x = torch.randn(8, 5)
    for gamma_init in (1.0, 0.1):
        plain = build_norm(kind, 5, gamma_init=gamma_init)
        offset = build_norm(kind, 5, gamma_init=gamma_init, gain_offset=True)
        torch.testing.assert_close(offset(x), plain(x), rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(offset.norm.weight, torch.full((5,), gamma_init))


def test_gain_offset_weight_decay_pulls_the_gain_toward_1_not_0():
    torch.manual_seed(2)
    for gain_offset, toward in ((False, 0.0), (True, 1.0)):
        norm = build_norm("rms", 4, gamma_init=0.5, gain_offset=gain_offset)
        # decay alone: no gradient, AdamW's decoupled decay multiplies the parameter by (1 - lr * wd)
        opt = torch.optim.AdamW(norm.parameters(), lr=0.1, weight_decay=1.0)
        for _ in range(200):
            opt.zero_grad()
            for p in norm.parameters():
                p.grad = torch.zeros_like(p)
            opt.step()
        torch.testing.assert_close(norm.norm.weight.detach(), torch.full((4,), toward), atol=1e-6, rtol=0)


def test_gain_offset_is_visible_and_reaches_fused_cells_and_low_precision():
    norm = build_norm("ln", 8, gain_offset=True, fp32=False)
    assert "gain_offset=True" in repr(norm)
    x = torch.randn(3, 8).to(torch.bfloat16)
    ref = build_norm("ln", 8, fp32=False)
    torch.testing.assert_close(norm(x), ref(x))                      # InputDtypeNorm casts the stored offset
    assert build_norm("ln", 8, gain_offset=True, affine=False).norm.weight is None
    assert NormSpec("rms", gain_offset=True).build(4).norm.gain_offset
