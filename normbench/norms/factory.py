"""The factory: every consumer builds its norm here, from the kind's descriptor (kinds.py).

``build_norm`` looks up the class the descriptor names for the impl, passes it what the kind uses,
and wraps it in its numerics policy under autocast (``Fp32Norm`` / ``InputDtypeNorm``, visible in
the module's repr). ``impl="auto"``, the default, builds the kind's ``auto_class`` where its
descriptor names a faster kernel (RMSNorm: ``RMSNormAuto``, which runs rmsnorm.cpp on a CPU), else
the native class itself (dispatch.py says why a table decides).
"""

from __future__ import annotations

from typing import Iterator, Mapping

import torch
from torch import nn

from normbench.norms import layers
from normbench.norms.kinds import CORE_IMPLS, DEFAULT_IMPL, impl_names, kind_names, kind_of, require_eps
from normbench.norms.layers import AutoImpl, Norm, classes_of

LOW_PRECISION = (torch.float16, torch.bfloat16)


class _ClassTable(Mapping):
    """{(kind, impl): class} read from the descriptors at each use: the core pair or the extras."""

    def __init__(self, core: bool):
        self.core = core

    def _items(self) -> dict[tuple[str, str], type[Norm]]:
        return {(name, impl): cls for name in kind_names() for impl, cls in classes_of(kind_of(name)).items()
                if (impl in CORE_IMPLS) == self.core}

    def __getitem__(self, key):
        return self._items()[key]

    def __iter__(self) -> Iterator:
        return iter(self._items())

    def __len__(self) -> int:
        return len(self._items())


REGISTRY = _ClassTable(core=True)        # native and reference, every kind
EXTRA_IMPLS = _ClassTable(core=False)    # impls only some kinds have (rms compiled: CPU fp32/fp64/bf16/fp16)


class _PrecisionPolicy(nn.Module):
    """How a norm computes when its input is bf16/fp16; fp32/fp64 inputs pass straight through."""

    def __init__(self, norm: nn.Module, impl: str = "native"):
        super().__init__()
        self.norm, self.impl = norm, impl  # impl: what it was built with (auto: the record names what ran)

    def forward(self, x, step=None):
        if x.dtype not in LOW_PRECISION:
            return self.norm(x, step)
        with torch.autocast(x.device.type, enabled=False):
            return self.low_precision(x, step)


class Fp32Norm(_PrecisionPolicy):
    """Computes the wrapped norm in fp32 with autocast off, returns the input's dtype.

    CUDA autocast already runs layer_norm in fp32, CPU autocast does not, and neither knows
    our reference or ScaleNorm/DyT variants: this wrapper makes the policy explicit and equal
    on every device.
    """

    def low_precision(self, x, step):
        return self.norm(x.float(), step).to(x.dtype)


class InputDtypeNorm(_PrecisionPolicy):
    """Computes the wrapped norm in the input's own dtype (bf16/fp16), parameters cast to it.

    This is the low-precision norm the fp32 policy protects against; it exists to be measured.
    """

    def low_precision(self, x, step):
        params = {name: p.to(x.dtype) for name, p in self.norm.named_parameters()}
        return torch.func.functional_call(self.norm, params, (x, step))


def auto_sites(model: nn.Module):
    """(site name, layer) of every norm built with impl="auto" that decides per input (``AutoImpl``), named
    as precision_sites names them."""
    return [(name, m.norm) for name, m in precision_sites(model) if isinstance(m.norm, AutoImpl)]


def auto_choices(model: nn.Module) -> dict[str, str | None]:
    """{site: the impl impl="auto" ran there} for every norm built with auto: several (one per device,
    dtype or width met) joined with ``|``, null for a site that decides per input and was never called,
    native where the kind has no other kernel (auto builds native itself there)."""
    return {name: m.norm.chosen if isinstance(m.norm, AutoImpl) else "native"
            for name, m in precision_sites(model) if m.impl == "auto"}


def precision_sites(model: nn.Module):
    """(name, wrapper) of every norm built with a precision policy: where a norm meets its input."""
    return [(name, m) for name, m in model.named_modules() if isinstance(m, _PrecisionPolicy)]


def norm_class(kind: str, impl: str = "native") -> type[Norm]:
    if kind not in kind_names():
        raise ValueError(f"unknown norm kind {kind!r}; valid: {', '.join(kind_names())}")
    if impl not in impl_names():
        raise ValueError(f"unknown norm impl {impl!r}; valid: {', '.join(impl_names())}")
    described = kind_of(kind)
    if impl == "auto":  # the class that decides per input where the kind has a kernel to prefer, else native
        return getattr(layers, described.auto_class) if described.auto_class else classes_of(described)["native"]
    classes = classes_of(described)
    if impl not in classes:
        raise ValueError(f"norm {kind!r} has no impl {impl!r}; it has: " + ", ".join(classes) + ", auto")
    return classes[impl]


def build_norm(kind: str, dim: int, *, eps: float = 1e-5, gamma_init: float = 1.0, affine: bool = True,
               impl: str = DEFAULT_IMPL, fp32: bool = True, per_step: bool = False, gain_offset: bool = False,
               bn_mask: bool = True, groups: int = 1, **params) -> nn.Module:
    """Build a normalization layer over the last dimension of (..., dim) inputs.

    kind: none | bn | ln | rms | scale | dyt (kinds.kind_names()).   impl: auto (the default: native's
    arithmetic by the fastest kernel of it that runs for the input, dispatch.py) | native (fused PyTorch op) |
    reference (textbook formula) | a kind's own (rms: compiled).
    fp32: compute in fp32 under autocast (True) or in the input's dtype (False).   per_step: kinds with
    batch statistics, separate statistics per time step (inside a recurrence).   gain_offset: store
    gamma - 1 instead of gamma (kinds with a per-feature gain; the others ignore it).   bn_mask: kinds
    with batch statistics, over the real steps of a padded batch (True) or over padding too (False).
    groups: kinds whose descriptor is ``grouped`` (ln, rms), statistics per group of dim/groups features
    (the others ignore it).   params: a kind's own (dyt: alpha_init), passed to the kinds whose descriptor names them; the class's
    default where not given.
    """
    cls = norm_class(kind, impl)
    unknown = set(params).difference(*(kind_of(name).params for name in kind_names()))
    if unknown:
        raise TypeError(f"build_norm() got an unexpected keyword argument {sorted(unknown)[0]!r}")
    if dim < 1:
        raise ValueError(f"norm dim must be >= 1, got {dim}")
    require_eps(kind, eps, "norm eps")
    described = kind_of(kind)
    if not described.active:
        return cls(dim)
    stepwise = per_step and described.per_step is not None
    if stepwise:
        cls = getattr(layers, described.per_step)
    extra = {name: params[name] for name in described.params if name in params}
    if described.gain == "feature":
        extra["gain_offset"] = gain_offset
    if described.batch_stats:
        extra["mask_padding"] = bn_mask
    if described.grouped and groups != 1:  # 1: the class's own default, so a layer's repr is as it always was
        if groups < 1 or dim % groups:
            raise ValueError(f"norm.groups={groups} must divide the norm's width {dim}")
        extra["groups"] = groups
    norm = cls(dim, eps=eps, gamma_init=gamma_init, affine=affine, **extra)
    return Fp32Norm(norm, impl) if fp32 else InputDtypeNorm(norm, impl)
