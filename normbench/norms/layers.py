"""The normalization layers, one class per (kind, impl), named by the kinds' descriptors (kinds.py).

Every norm normalizes over the last dimension of an input shaped (..., dim). Each (kind, impl)
pair is its own class, so a reader sees the exact arithmetic of the variant being measured:
``native`` calls PyTorch's fused op, ``reference`` spells out the textbook formula with
elementary ops (mean, biased variance, sqrt). A constructor takes (dim, eps=, gamma_init=,
affine=) and the extras its descriptor names.
"""

from __future__ import annotations

import math
import time

import torch
import torch.nn.functional as F
from torch import nn

from normbench.checks import ConfigError
from normbench.norms import elementwise_cpu, rmsnorm_cpu
from normbench.norms.dispatch import decide
from normbench.norms.kinds import NormKind, kind_of
from normbench.norms.masking import masked_batch_norm, real_rows


class Norm(nn.Module):
    """Base of every normalization layer; lets optimizers and probes find norm parameters.

    Every norm is called as ``norm(x, step=None)``; only per-step BatchNorm inside a recurrence
    uses ``step``, the others ignore it, so recurrent cells need not know which norm they hold.
    """

    owns_children = False  # its child modules' parameters are its own (a user's norm: UserNorm)

    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.dim, self.eps = dim, eps

    def extra_repr(self) -> str:
        return f"{self.dim}, eps={self.eps:g}"


class Identity(Norm):
    def __init__(self, dim: int, eps: float = 0.0, gamma_init: float = 1.0, affine: bool = True):
        super().__init__(dim, eps)

    def forward(self, x, step=None):
        return x

    def extra_repr(self) -> str:
        return str(self.dim)


class ZeroCentredGain:
    """``gain_offset``: the parameter stored is ``weight_offset`` = gamma - 1 (Gemma's RMSNorm), so weight
    decay pulls the gain toward 1 instead of 0. ``weight`` reads the effective gain, 1 + weight_offset,
    so every consumer (forward, the fused LSTM cells) sees gamma as before; the optimizer sees gamma - 1.
    """

    def _init_gain(self, dim: int, gamma_init: float, affine: bool, gain_offset: bool) -> None:
        self.gamma_init, self.gain_offset = gamma_init, gain_offset
        gain = torch.full((dim,), float(gamma_init))
        if affine and gain_offset:
            self.weight_offset = nn.Parameter(gain - 1.0)
        else:
            self.weight = nn.Parameter(gain) if affine else None

    def __getattr__(self, name):
        if name == "weight" and "weight_offset" in self._parameters:
            return self._parameters["weight_offset"] + 1.0
        return super().__getattr__(name)

    def _gain_repr(self) -> str:
        affine = self.weight is not None
        return f"gamma_init={self.gamma_init:g}, affine={affine}" + (", gain_offset=True" if self.gain_offset else "")


class _AffineNorm(ZeroCentredGain, Norm):
    """Gain gamma (init ``gamma_init``) and, when ``bias``, shift beta (init 0)."""

    def __init__(self, dim, eps, gamma_init, affine, bias=True, gain_offset=False):
        super().__init__(dim, eps)
        self._init_gain(dim, gamma_init, affine, gain_offset)
        self.bias = nn.Parameter(torch.zeros(dim)) if affine and bias else None

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, {self._gain_repr()}"


class _GroupedNorm(_AffineNorm):
    """``groups`` > 1 (norm.groups): the statistics are taken per group of dim/groups consecutive features
    (a head's, as xLSTM's and Mamba-2's output norms take them), the gain and bias stay per feature.
    groups=1 is the layer as it always was."""

    def __init__(self, dim, eps, gamma_init, affine, bias=True, gain_offset=False, groups=1):
        super().__init__(dim, eps, gamma_init, affine, bias=bias, gain_offset=gain_offset)
        if groups < 1 or dim % groups:
            raise ValueError(f"groups={groups} must divide the norm's width {dim}")
        self.groups = groups

    def split(self, x):
        """(..., dim) -> (..., groups, dim/groups): each group's features on the last axis."""
        return x.unflatten(-1, (self.groups, self.dim // self.groups))

    def gained(self, y):
        """The per-feature gain (and bias) on the groups' normalized output, back as (..., dim)."""
        y = y.flatten(-2)
        if self.weight is None:
            return y
        return y * self.weight if self.bias is None else y * self.weight + self.bias

    def extra_repr(self) -> str:
        return super().extra_repr() + (f", groups={self.groups}" if self.groups != 1 else "")


class LayerNorm(_GroupedNorm):
    def __init__(self, dim, eps=1e-5, gamma_init=1.0, affine=True, gain_offset=False, groups=1):
        super().__init__(dim, eps, gamma_init, affine, gain_offset=gain_offset, groups=groups)

    def forward(self, x, step=None):
        if self.groups == 1:
            return F.layer_norm(x, (self.dim,), self.weight, self.bias, self.eps)
        return self.gained(F.layer_norm(self.split(x), (self.dim // self.groups,), None, None, self.eps))


class LayerNormReference(LayerNorm):
    # Ba et al. 2016, eq. 4: y = gamma * (x - mu) / sqrt(sigma^2 + eps) + beta, sigma^2 biased (per group).
    def forward(self, x, step=None):
        g = self.split(x)
        mu = g.mean(-1, keepdim=True)
        var = ((g - mu) ** 2).mean(-1, keepdim=True)
        return self.gained((g - mu) / torch.sqrt(var + self.eps))


class RMSNorm(_GroupedNorm):
    # Zhang & Sennrich 2019: no re-centering, no bias.
    def __init__(self, dim, eps=1e-5, gamma_init=1.0, affine=True, gain_offset=False, groups=1):
        super().__init__(dim, eps, gamma_init, affine, bias=False, gain_offset=gain_offset, groups=groups)

    def forward(self, x, step=None):
        if self.groups == 1:
            return F.rms_norm(x, (self.dim,), self.weight, self.eps)
        return self.gained(F.rms_norm(self.split(x), (self.dim // self.groups,), None, self.eps))


class RMSNormReference(RMSNorm):
    def forward(self, x, step=None):
        g = self.split(x)
        return self.gained(g / torch.sqrt((g * g).mean(-1, keepdim=True) + self.eps))


class RMSNormCompiled(RMSNorm):
    """impl="compiled": normbench's own CPU kernel (norms/rmsnorm.cpp, two vectorized passes over
    each row each way) for fp32/fp64/bf16/fp16 on a CPU (bf16/fp16 computed in fp32), the fastest
    RMSNorm the suite has there; anywhere else (a GPU, a weight of another dtype than the input, no
    compiler) PyTorch's native one. Same function, tested equal."""

    @staticmethod
    def runs_on(device_type: str, dtype: torch.dtype) -> bool:
        """Whether the compiled kernel, not the native fall-back, runs for inputs of this device and dtype."""
        return rmsnorm_cpu.runs_on(device_type, dtype)

    def forward(self, x, step=None):
        if self.groups == 1 and rmsnorm_cpu.usable(x, self.weight):  # the kernel normalizes whole rows
            return rmsnorm_cpu.rms_norm(x, self.weight, self.eps)
        return RMSNorm.forward(self, x, step)  # named: impl=auto runs this forward on an RMSNormAuto


def classes_of(kind: NormKind) -> dict[str, type[Norm]]:
    """{impl: layer class} of one kind, as its descriptor names them in this module (a user's kind:
    its class, wrapped in UserNorm by normbench/norms/user.py)."""
    if kind.user:
        return {impl: _user_layer(kind.name, reference) for impl, reference in kind.classes.items()}
    return {impl: globals()[name] for impl, name in kind.classes.items()}


_user_layers: dict[tuple[str, str], type] = {}  # (kind, class reference) -> its UserNorm subclass, once per process


def _user_layer(name: str, reference: str) -> type:
    if (name, reference) not in _user_layers:
        from normbench.norms.user import described, load  # the user's class, imported when its first layer is built

        inner = load(reference)
        _user_layers[name, reference] = type(f"UserNorm_{inner.__name__}", (UserNorm,),
                                             {"inner_class": inner, "source": described(name, reference)})
    return _user_layers[name, reference]


class AutoImpl:
    """Mixin of a kind's ``auto_class``, before the kind's native class: its forward runs
    the impl ``dispatch.decide`` names for the input, on the layer's own parameters (every impl's class
    subclasses native's, so they share parameters, buffers and state_dict keys with native)."""

    kind: str  # the kind whose descriptor names the kernels

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.choices: dict[tuple[str, str, int], str] = {}  # (device type, dtype, width) -> the impl run
        self.measured_s = 0.0  # seconds deciding (a first decision may build a kernel): kept out of train_s
        self._seen = self._forward = None  # the last input's (device, dtype, width) and the forward run for it

    def forward(self, x, step=None):
        if torch.compiler.is_compiling():
            return super().forward(x, step)  # the native class's: the one after this mixin
        seen = (x.device, x.dtype, x.shape[-1])
        if seen != self._seen:  # the hot path is one tuple compare
            self._seen, self._forward = seen, self.impls()[self._choose(x)].forward
        return self._forward(self, x, step)

    def _choose(self, x) -> str:
        key = (x.device.type, str(x.dtype).removeprefix("torch."), x.shape[-1])
        if key not in self.choices:
            began = time.perf_counter()
            self.choices[key] = decide(self.kind, self.impls(), x.device.type, x.dtype, x.shape[-1])
            self.measured_s += time.perf_counter() - began
        return self.choices[key]

    @classmethod
    def impls(cls) -> dict[str, type]:
        return classes_of(kind_of(cls.kind))

    @property
    def chosen(self) -> str | None:
        """The impls run so far, joined with ``|`` where inputs differed; None before the first call."""
        return "|".join(sorted(set(self.choices.values()))) or None

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, impl=auto ({self.chosen or 'decided at first call'})"


class RMSNormAuto(AutoImpl, RMSNorm):
    """impl="auto" (the default): native RMSNorm's parameters, run by the compiled kernel where it runs
    (a CPU, fp32/fp64/bf16/fp16, the kernel built), by native elsewhere (normbench/norms/dispatch.py)."""

    kind = "rms"


class BatchNorm(_AffineNorm):
    """Statistics per feature over every leading dimension (batch x time for sequences).

    Running statistics follow PyTorch's convention: exponential average with ``momentum`` of the
    batch mean and of the *unbiased* batch variance; normalization uses the biased variance.

    In a padded batch (normbench/norms/masking.py) training statistics are over the real steps alone;
    ``mask_padding=False`` takes them over padding too (the failure the LN papers describe).
    """

    def __init__(self, dim, eps=1e-5, gamma_init=1.0, affine=True, momentum=0.1, gain_offset=False,
                 mask_padding=True):
        super().__init__(dim, eps, gamma_init, affine, gain_offset=gain_offset)
        self.momentum, self.mask_padding = momentum, mask_padding
        self.register_buffer("running_mean", torch.zeros(dim))
        self.register_buffer("running_var", torch.ones(dim))

    def real_rows(self, x, step=None):
        """The mask of real steps for this training call's input, or None (all real, eval, or unmasked)."""
        return real_rows(x, step) if self.training and self.mask_padding else None

    def masked(self, x, real):
        y = masked_batch_norm(x.reshape(-1, 1, self.dim), real.reshape(-1, 1), self.running_mean.view(1, -1),
                              self.running_var.view(1, -1), self.weight, self.bias, self.momentum, self.eps)
        return y.view_as(x)

    def forward(self, x, step=None):
        if (real := self.real_rows(x)) is not None:
            return self.masked(x, real)
        flat = x.reshape(-1, self.dim)
        y = F.batch_norm(flat, self.running_mean, self.running_var, self.weight, self.bias,
                         self.training, self.momentum, self.eps)
        return y.view_as(x)


class BatchNormReference(BatchNorm):
    def forward(self, x, step=None):
        if (real := self.real_rows(x)) is not None:
            return self.masked(x, real)
        flat = x.reshape(-1, self.dim)
        if self.training:
            mu = flat.mean(0)
            var = ((flat - mu) ** 2).mean(0)
            n = flat.shape[0]
            with torch.no_grad():
                unbiased = var * (n / max(n - 1, 1))
                self.running_mean.lerp_(mu.to(self.running_mean.dtype), self.momentum)
                self.running_var.lerp_(unbiased.to(self.running_var.dtype), self.momentum)
        else:
            mu, var = self.running_mean, self.running_var
        y = (flat - mu) / torch.sqrt(var + self.eps)
        if self.weight is not None:
            y = y * self.weight + self.bias
        return y.view_as(x)


class StepBatchNorm(BatchNorm):
    """BatchNorm with separate statistics for every time step (Cooijmans et al. 2016, §3).

    Averaging statistics over time "severely degrades performance" inside a recurrence, so
    step t keeps its own running mean/var; gamma and beta are shared across steps. Steps beyond
    the longest sequence seen in training reuse the last step's statistics.

    Called with (batch, time, dim) it normalizes all steps in one op (statistics over the batch,
    per step); called with (batch, dim) it needs ``step``.
    """

    def __init__(self, dim, eps=1e-5, gamma_init=1.0, affine=True, momentum=0.1, gain_offset=False,
                 mask_padding=True):
        super().__init__(dim, eps, gamma_init, affine, momentum, gain_offset=gain_offset, mask_padding=mask_padding)
        self.register_buffer("running_mean", torch.zeros(0, dim))
        self.register_buffer("running_var", torch.ones(0, dim))

    def reserve(self, steps: int) -> None:
        """Grow the statistics to ``steps`` time steps now (training), as the steps' calls would one by one."""
        self._stats_for(steps)

    def _stats_for(self, steps: int):
        seen = self.running_mean.shape[0]
        if self.training and steps > seen:
            grow = steps - seen
            self.running_mean = torch.cat([self.running_mean, self.running_mean.new_zeros(grow, self.dim)])
            self.running_var = torch.cat([self.running_var, self.running_var.new_ones(grow, self.dim)])
        if self.running_mean.shape[0] == 0:
            raise RuntimeError("StepBatchNorm has no statistics yet: run it in training mode first")
        return self.running_mean, self.running_var

    def masked(self, x, real, step=None):
        """Per-step statistics over the real rows: (batch, time, dim) all steps, (batch, dim) step ``step``."""
        if x.dim() == 2:
            rm, rv = self._stats_for(step + 1)
            return masked_batch_norm(x[:, None], real[:, None], rm[step : step + 1], rv[step : step + 1],
                                     self.weight, self.bias, self.momentum, self.eps)[:, 0]
        rm, rv = self._stats_for(x.shape[1])
        return masked_batch_norm(x, real, rm[: x.shape[1]], rv[: x.shape[1]], self.weight, self.bias,
                                 self.momentum, self.eps)

    def at_step_tensor(self, x, step: torch.Tensor):
        """Step ``step`` of a (batch, dim) input, the step a 0-dim integer tensor: torch.compile's step
        (model.cell_kernel=torch_compile) takes it so, as a Python int would be a guard on each t (a graph
        at t = 0, one between, one at the last step; dynamo's recompile limit). The same statistics and
        update as an int step, through a copy of the step's row that is written back."""
        held_mean, held_var = self._stats_for(0)  # grown to the sequence beforehand (reserve); refused if none yet
        row = step.clamp(max=held_mean.shape[0] - 1).view(1)  # past the longest training sequence: the last
        rm, rv = held_mean.index_select(0, row)[0], held_var.index_select(0, row)[0]
        y = F.batch_norm(x, rm, rv, self.weight, self.bias, self.training, self.momentum, self.eps)
        if self.training:
            self.running_mean.index_copy_(0, row, rm[None])
            self.running_var.index_copy_(0, row, rv[None])
        return y

    def forward(self, x, step: int | torch.Tensor | None = None):
        if isinstance(step, torch.Tensor):
            return self.at_step_tensor(x, step)
        if (real := self.real_rows(x, step)) is not None:
            return self.masked(x, real, step)
        if x.dim() == 3:
            batch, steps, dim = x.shape
            rm, rv = self._stats_for(steps)
            if not self.training and steps > rm.shape[0]:
                pad = steps - rm.shape[0]
                rm = torch.cat([rm, rm[-1:].expand(pad, dim)])
                rv = torch.cat([rv, rv[-1:].expand(pad, dim)])
            w = None if self.weight is None else self.weight.repeat(steps)
            b = None if self.bias is None else self.bias.repeat(steps)
            # (batch, time*dim): one batch_norm call, statistics over the batch for each (t, feature).
            y = F.batch_norm(x.reshape(batch, steps * dim), rm[:steps].view(-1), rv[:steps].view(-1),
                             w, b, self.training, self.momentum, self.eps)
            return y.view_as(x)
        if step is None:
            raise TypeError("StepBatchNorm on a (batch, dim) input needs step=")
        rm, rv = self._stats_for(step + 1)
        t = min(step, rm.shape[0] - 1)
        return F.batch_norm(x, rm[t], rv[t], self.weight, self.bias, self.training, self.momentum, self.eps)


def batch_norms(model: nn.Module) -> list[BatchNorm]:
    """Every BatchNorm (per-step ones included) inside ``model``, whatever wrapper holds it."""
    return [m for m in model.modules() if isinstance(m, BatchNorm)]


@torch.no_grad()
def reestimate_statistics(model: nn.Module, batches) -> int:
    """Replace every BatchNorm's running statistics by population statistics of ``batches`` (inputs
    only), computed with the weights as they are now: the cumulative average (PyTorch's momentum=None)
    of the batch means and unbiased batch variances, each batch weighted by its size. Per-step
    statistics are re-estimated for every step the inputs reach; steps beyond keep using the last.

    The running averages of training trail the weights by about 1/momentum steps; where a feature's
    mean moves fast relative to its spread, evaluation with them is off by several deviations (see
    docs/run-record.md, ``norm.bn_reestimate``). Returns the number of examples seen.

    The pass runs eagerly, a step through torch.compile (model.cell_kernel=torch_compile) included: each
    batch's momentum would be a guard, a graph per batch past dynamo's recompile limit.
    """
    norms = batch_norms(model)
    if not norms:
        return 0
    was_training, momenta = model.training, [m.momentum for m in norms]
    for m in norms:
        m.running_mean.zero_()
        m.running_var.fill_(1.0)
    seen = 0
    model.train()
    try:
        with torch.compiler.set_stance("force_eager"):
            for x in batches:
                n = len(x)
                for m in norms:  # weight n / (seen + n): after the pass, the size-weighted mean over all batches
                    m.momentum = n / (seen + n)
                model(x)
                seen += n
    finally:
        for m, momentum in zip(norms, momenta):
            m.momentum = momentum
        model.train(was_training)
    return seen


class ScaleNorm(Norm):
    # Nguyen & Salazar 2019: y = g * x / max(||x||, eps), one scalar g initialised to sqrt(dim).
    def __init__(self, dim, eps=1e-5, gamma_init=1.0, affine=True):
        super().__init__(dim, eps)
        g = torch.tensor(float(gamma_init) * math.sqrt(dim))
        if affine:
            self.g = nn.Parameter(g)
        else:
            self.register_buffer("g", g)

    def forward(self, x, step=None):
        return self.g * F.normalize(x, dim=-1, eps=self.eps)


class ScaleNormReference(ScaleNorm):
    def forward(self, x, step=None):
        # max(||x||, eps) as sqrt(max(sum x^2, eps^2)): same value, and a finite gradient at x = 0.
        return self.g * x / torch.sqrt((x * x).sum(-1, keepdim=True).clamp_min(self.eps**2))


class DynamicTanh(ZeroCentredGain, Norm):
    # Zhu et al. 2025: y = gamma * tanh(alpha * x) + beta, alpha a learned scalar. No statistics, no eps.
    def __init__(self, dim, eps=0.0, gamma_init=1.0, affine=True, alpha_init=0.5, gain_offset=False):
        super().__init__(dim, eps)
        self.alpha = nn.Parameter(torch.tensor(float(alpha_init)))
        self._init_gain(dim, gamma_init, affine, gain_offset)
        self.bias = nn.Parameter(torch.zeros(dim)) if affine else None

    def forward(self, x, step=None):
        y = torch.tanh(self.alpha * x)
        return y if self.weight is None else y * self.weight + self.bias

    def extra_repr(self) -> str:
        return f"{self.dim}, {self._gain_repr()}"


class DynamicErf(DynamicTanh):
    # Chen et al. 2025 (arXiv 2512.10938), eq. 10: y = gamma * erf(alpha * x + s) + beta, alpha and s learned
    # scalars, gamma and beta per feature; the authors' code initialises alpha to 0.5 and s to 0. No statistics.
    def __init__(self, dim, eps=0.0, gamma_init=1.0, affine=True, alpha_init=0.5, shift_init=0.0, gain_offset=False):
        super().__init__(dim, eps, gamma_init, affine, alpha_init, gain_offset)
        self.shift = nn.Parameter(torch.tensor(float(shift_init)))

    def forward(self, x, step=None):
        y = torch.erf(self.alpha * x + self.shift)
        return y if self.weight is None else y * self.weight + self.bias


FULL_PRECISION = (torch.float32, torch.float64)


class DynamicTanhCompiled(DynamicTanh):
    """impl="compiled": normbench's own CPU kernel (norms/elementwise.cpp: one vectorized pass over each row
    each way, f(u) recomputed in the backward) for fp32/fp64/bf16/fp16 on a CPU (bf16/fp16 computed in fp32);
    anywhere else (a GPU, parameters of another dtype than the input, no compiler) the PyTorch formula.
    Same function: tanh in float within 2 ulp (tested)."""

    @staticmethod
    def runs_on(device_type: str, dtype: torch.dtype) -> bool:
        """Whether impl=auto runs the kernel for inputs of this device and dtype: fp32 and fp64 on a CPU. In
        bf16/fp16 the kernel computes in fp32 and rounds once, where the formula rounds after each op (alpha x,
        tanh, the gain, the bias): another arithmetic, which auto never runs (dispatch.py). The default
        norm.fp32=true hands the norm fp32 inputs under autocast; norm.impl=compiled runs bf16/fp16 too."""
        return dtype in FULL_PRECISION and elementwise_cpu.runs_on(device_type, dtype)

    def forward(self, x, step=None):
        if elementwise_cpu.usable(x, self.weight, self.bias):
            return elementwise_cpu.elementwise("tanh", x, self.alpha, None, self.weight, self.bias)
        return DynamicTanh.forward(self, x, step)  # named: impl=auto runs this forward on a DynamicTanhAuto


class DynamicErfCompiled(DynamicErf):
    """impl="compiled" of Derf: the kernel of DynamicTanhCompiled with erf (its own float erf, within 1.5 ulp,
    tested); the PyTorch formula wherever the kernel does not run."""

    runs_on = staticmethod(DynamicTanhCompiled.runs_on)

    def forward(self, x, step=None):
        if elementwise_cpu.usable(x, self.weight, self.bias):
            return elementwise_cpu.elementwise("erf", x, self.alpha, self.shift, self.weight, self.bias)
        return DynamicErf.forward(self, x, step)


class DynamicTanhAuto(AutoImpl, DynamicTanh):
    """impl="auto" (the default): DyT's parameters, run by the compiled kernel where auto may run it (a CPU,
    fp32/fp64, the kernel built: DynamicTanhCompiled.runs_on), by the formula elsewhere (norms/dispatch.py)."""

    kind = "dyt"


class DynamicErfAuto(AutoImpl, DynamicErf):
    """impl="auto" (the default) of Derf: as DynamicTanhAuto."""

    kind = "derf"
class UserNorm(Norm):
    """A user's norm class (normbench/norms/user.py) as a kind: built as ``inner_class(dim)``, called as
    every norm is (``norm(x, step)``), its parameters all norm parameters (``owns_children``)."""

    inner_class: type[nn.Module]
    source: str  # the kind's name and where its class comes from (user.described)
    owns_children = True

    def __init__(self, dim, eps=0.0, gamma_init=1.0, affine=True):
        super().__init__(dim, eps)
        try:
            self.inner = self.inner_class(dim)
        except Exception as error:  # the user's constructor: named as a class that cannot be loaded is (h21 B7)
            raise ConfigError(f"the norm {self.source} cannot be built as {self.inner_class.__name__}({dim}): "
                              f"{type(error).__name__}: {error}") from error

    def forward(self, x, step=None):
        return self.inner(x)

    def extra_repr(self) -> str:
        return f"{self.dim}, {self.inner_class.__module__}.{self.inner_class.__qualname__}"


def norm_parameters(model: nn.Module):
    """(name, parameter) of every norm gain/bias/alpha in ``model``: the ones weight decay skips."""
    seen = set()
    for mod_name, mod in model.named_modules():
        if isinstance(mod, Norm):
            for p_name, p in mod.named_parameters(recurse=mod.owns_children):
                if id(p) not in seen:
                    seen.add(id(p))
                    yield f"{mod_name}.{p_name}" if mod_name else p_name, p
