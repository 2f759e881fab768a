"""One descriptor per norm kind: the one place a kind is described.

What a kind uses (eps, a gain, a bias, extra parameters, batch statistics), which layer class each
impl builds, which of its kernels ``impl=auto`` prefers on each device, and whether the kernel
benchmark times it. The config schema (valid kinds and impls,
the eps rule), the run's identity (which ``norm.*`` settings cannot change a run of this kind),
the factory (``build_norm``) and ``normbench bench kernels`` all read it, so adding a kind is its
descriptor here, its class in ``layers.py``, its ``conf/norm/`` file and its test.

Imports no torch and nothing of normbench but its range checks (normbench/checks.py): the schema and the record contract stand on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from normbench.checks import require_positive
from normbench.norms import installed

CORE_IMPLS = ("native", "reference")  # every kind has both (the same class where there is one formula)
GAINS = ("feature", "scalar", "none")
DEFAULT_IMPL = "auto"  # norm.impl's default: native's arithmetic, by the fastest kernel of it that runs (dispatch.py)


@dataclass(frozen=True)
class NormKind:
    """A norm kind. ``classes`` maps each impl to its class name in normbench/norms/layers.py."""

    name: str
    classes: Mapping[str, str]
    eps: bool = True             # divides by a statistic: eps is used, and must be > 0
    # "feature": gamma per feature (``norm.gain_offset`` may store gamma - 1; gone without affine);
    # "scalar": one g, a buffer without affine, so gamma_init still acts; "none"
    gain: str = "feature"
    bias: bool = True            # a shift beta per feature (with affine)
    params: tuple[str, ...] = ()  # the NormSpec fields its constructor also takes (dyt: alpha_init)
    batch_stats: bool = False    # statistics over the batch: needs batch >= 2; norm.bn_* act on it
    per_step: str | None = None  # the class with separate statistics per time step, inside a recurrence
    active: bool = True          # False: the identity (norm=none), nothing computed, nowhere to place it
    timed: bool = True           # `normbench bench kernels` times it
    # impl=auto's table (normbench/norms/dispatch.py): per device type, the kind's own kernels of native's
    # arithmetic to run instead of native, first that runs wins, each measured faster than native there
    # (reports/bench-cpu/kernels.csv); native everywhere else. Never reference: another arithmetic.
    fastest: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # the class impl=auto builds where ``fastest`` names a kernel: a subclass of native's with its
    # parameters and state_dict, whose forward runs the kernel dispatch.py decides on
    auto_class: str | None = None
    # a user's class (normbench/norms/user.py): its parameters are its own, normbench's settings none of its
    user: bool = False
    # normalizes per group of channels where ``norm.groups`` > 1 (xLSTM's and Mamba-2's head-wise output norms):
    # the kinds with per-token statistics over the features, LN and RMSNorm
    grouped: bool = False

    def __post_init__(self):
        missing = [impl for impl in CORE_IMPLS if impl not in self.classes]
        if missing or self.gain not in GAINS:
            raise ValueError(f"norm kind {self.name!r}: needs classes for {', '.join(CORE_IMPLS)} "
                             f"and a gain in {GAINS}")
        named = {impl for impls in self.fastest.values() for impl in impls}
        if named - (set(self.classes) - set(CORE_IMPLS)) or bool(named) != bool(self.auto_class):
            raise ValueError(f"norm kind {self.name!r}: fastest may name only its own kernels (not "
                             f"{', '.join(CORE_IMPLS)}), and needs an auto_class exactly when it names one")
        object.__setattr__(self, "classes", MappingProxyType(dict(self.classes)))
        object.__setattr__(self, "fastest", MappingProxyType({d: tuple(i) for d, i in self.fastest.items()}))

    @property
    def has_parameters(self) -> bool:
        return self.gain != "none" or self.bias or bool(self.params) or self.user

    @property
    def one_formula(self) -> bool:
        """Every impl builds the same class: norm.impl cannot change a run."""
        return len(set(self.classes.values())) == 1

    def impl_inert(self, impl: str) -> bool:
        """Whether ``norm.impl=impl`` leaves a run of this kind as its native run: every impl builds one class,
        or native and reference do (one formula) and ``impl`` is one of them (DyT and Derf, whose records
        before their compiled kernel left norm.impl out of identity). A kernel of the kind's own asked for
        by name stays its own setting, as RMSNorm's compiled (auto counts as native: contract.py)."""
        return self.one_formula or (self.classes["native"] == self.classes["reference"]
                                     and impl in (*CORE_IMPLS, DEFAULT_IMPL))


_REGISTRY: dict[str, NormKind] = {}


def register(kind: NormKind) -> NormKind:
    if kind.name in _REGISTRY:
        raise ValueError(f"norm kind {kind.name!r} is already registered")
    _REGISTRY[kind.name] = kind
    return kind


def unregister(name: str) -> None:
    del _REGISTRY[name]


def kind_names() -> tuple[str, ...]:
    """The registered kind names, in registration order."""
    return tuple(_REGISTRY)


def impl_names() -> tuple[str, ...]:
    """Every norm.impl value: the core pair, auto (native's arithmetic by the fastest kernel of it here), and
    each kind's own."""
    extra = (impl for kind in _REGISTRY.values() for impl in kind.classes if impl not in CORE_IMPLS)
    return (*CORE_IMPLS, "auto", *dict.fromkeys(extra))


def kind_of(name: str) -> NormKind:
    if name not in _REGISTRY:
        raise ValueError(f"unknown norm kind {name!r}; valid: {', '.join(_REGISTRY)}")
    return _REGISTRY[name]


def builds_native(kind: str, impl: str) -> bool:
    """Whether ``impl`` builds the kind's native class itself: native, and auto where the kind's descriptor
    names no faster kernel (what the hand-written in-cell recurrences, which compute native LN, need)."""
    return impl == "native" or (impl == "auto" and kind_of(kind).auto_class is None)


def require_eps(kind: str, eps: float, key: str = "norm.eps") -> None:
    """The one eps rule, for the config and the library alike: positive and finite wherever the kind
    uses it (not without a norm, not in DyT's elementwise tanh)."""
    if kind_of(kind).eps:  # > 0 in float32 too: an eps that rounds to 0 divides by a zero variance
        require_positive(key, eps)


# Settings added after records existed, at the value every earlier record ran with: a run at that value
# leaves them out of its identity, so its hash is the one it always had (tests/test_identity.py)
EARLIER_DEFAULTS = {"groups": 1, "alpha_rule": "single"}


def inert_settings(kind: str, *, affine: bool, gain_offset: bool, bn_reestimate: bool,
                   settings: Mapping | None = None) -> list[str]:
    """The settings a run of ``kind`` cannot feel, whatever the rest of its config (normbench/configuration/contract.py).
    ``settings``: the run's ``norm`` group, for the settings that are inert at their earlier default."""
    k = kind_of(kind)
    settings = settings or {}
    inert = [] if k.eps else ["norm.eps"]
    if not k.grouped or settings.get("groups", 1) == EARLIER_DEFAULTS["groups"]:
        inert.append("norm.groups")
    if "alpha_init" not in k.params or settings.get("alpha_rule", "single") == EARLIER_DEFAULTS["alpha_rule"]:
        inert.append("norm.alpha_rule")  # how alpha_init is set per site: only where there is an alpha
    if k.impl_inert(settings.get("impl", "native")):  # (the identity's copy: auto already reads native)
        inert.append("norm.impl")
    params = dict.fromkeys(p for other in _REGISTRY.values() for p in other.params)
    inert += [f"norm.{p}" for p in params if p not in k.params]
    if k.gain == "none" or (k.gain == "feature" and affine is False):
        inert.append("norm.gamma_init")  # no gain to initialise (ScaleNorm keeps its g as a buffer)
    if k.gain == "none" and not k.bias:
        inert.append("norm.affine")
    if k.gain != "feature" or affine is False or not gain_offset:
        inert.append("norm.gain_offset")  # no per-feature gain to offset; off is how earlier records ran
    if not k.has_parameters:
        inert.append("optim.norm_weight_decay")
    if not k.batch_stats:
        inert.append("norm.bn_mask")
    if not k.batch_stats or not bn_reestimate:  # evaluation with the running averages, as
        inert += ["norm.bn_reestimate", "norm.bn_reestimate_batches"]  # every earlier record was evaluated
    if not k.active:  # no norm: nothing computed, nowhere to place it
        inert += ["norm.fp32", "placement.cell_norm", "placement.summed"]
    return inert


for _kind in (
    NormKind("none", {"native": "Identity", "reference": "Identity"}, eps=False, gain="none", bias=False,
             active=False, timed=False),
    NormKind("bn", {"native": "BatchNorm", "reference": "BatchNormReference"}, batch_stats=True,
             per_step="StepBatchNorm"),
    NormKind("ln", {"native": "LayerNorm", "reference": "LayerNormReference"}, grouped=True),
    # Zhang & Sennrich 2019: no re-centering, no bias; compiled: normbench's CPU kernel (rmsnorm.cpp), about
    # 5x native's forward+backward on a CPU (F.rms_norm's backward is unfused there), LayerNorm's speed
    NormKind("rms", {"native": "RMSNorm", "reference": "RMSNormReference", "compiled": "RMSNormCompiled"},
             bias=False, fastest={"cpu": ("compiled",)}, auto_class="RMSNormAuto", grouped=True),
    NormKind("scale", {"native": "ScaleNorm", "reference": "ScaleNormReference"}, gain="scalar", bias=False),
    # elementwise tanh: no statistics, so no eps, and one formula (no fused op to compare against);
    # compiled: normbench's CPU kernel (elementwise.cpp), one pass each way where the formula's ops make several
    # alpha_rule: alpha_init everywhere (single) or per site by width (Zhu et al. 2025's LLaMA table; norms/alpha.py)
    NormKind("dyt", {"native": "DynamicTanh", "reference": "DynamicTanh", "compiled": "DynamicTanhCompiled"},
             eps=False, params=("alpha_init",), fastest={"cpu": ("compiled",)}, auto_class="DynamicTanhAuto"),
    # Chen et al. 2025 (arXiv 2512.10938) eq. 10: gamma * erf(alpha * x + s) + beta, alpha and s learned scalars
    NormKind("derf", {"native": "DynamicErf", "reference": "DynamicErf", "compiled": "DynamicErfCompiled"},
             eps=False, params=("alpha_init", "shift_init"), fastest={"cpu": ("compiled",)},
             auto_class="DynamicErfAuto"),
):
    register(_kind)

# The built-in kinds and impls, as tuples for argparse choices and docs; kind_names() and impl_names() also
# see a kind registered later (what the schema validates against).
KINDS, IMPLS = kind_names(), impl_names()



def user_kind(name: str, reference: str) -> NormKind:
    """A user's norm (normbench/norms/user.py): its class owns its parameters, so no statistics of normbench's
    to guard (eps) and no gain or bias of normbench's: norm.eps/gamma_init/affine/gain_offset cannot change it."""
    return NormKind(name, {"native": reference, "reference": reference}, eps=False, gain="none", bias=False,
                    timed=False, user=True)


# Installed packages' norms (entry point group normbench.norms), from their metadata: every process that
# imports the kinds has them, so a joblib worker, a study round, rerun and evaluate validate and build them.
for _name, _reference in installed.usable({k.name: k.classes["native"] for k in _REGISTRY.values()}):
    register(user_kind(_name, _reference))
