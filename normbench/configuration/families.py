"""One descriptor per model family: the one place a family is described.

A family says its display name, whether it is recurrent, the ``model.*`` keys its backbone reads (the
others cannot change its runs), the in-cell LayerNorm recurrences with a hand-written backward it has
(``model.cell_kernel`` chooses among them: models/kernel_choice.py), where its norms sit at the
placements it offers, and the function that builds its backbone. Every consumer reads it: the config
schema (valid ``model.family``), the record contract (inert ``model.*`` keys, whether ``model.cell_kernel``
can act), the validity check and ``build_model`` (models/), the claims' "recurrent model" requirement
(analysis/claims/specs.py) and the report's per-family recommendations (report/synthesis.py).

It sits beside placements.py, not in models/, because the schema, the contract, the analysis and the
report read it and none of them may import models/ (tests/test_package_layers.py); the builder is named
by its dotted path, as a norm kind names its classes, so this module imports no torch.

Adding a family (tests/models/test_families.py registers a toy one the same way):
    1. its ``Family`` row in ``BUILT_IN`` below: name, display, recurrent, builder, parameters, and
       ``slots``: placement name -> the norm slots it fills there (placements.py's slot names), for each
       built-in placement it offers; a placement it does not offer is refused, for the reason in ``why_not``
       (a placement registered later names its own slots for the families it fits);
    2. its backbone module in models/ with the builder function
       ``build(shape: ModelShape, norm: NormSpec, placement: PlacementConfig, max_len: int) -> nn.Module``,
       a module mapping (batch, time, width) -> (batch, time, hidden) with ``forward(x, trace, lengths)``;
    3. ``conf/model/NAME.yaml`` and its tests.
Nothing else changes: no other module names a family.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from normbench.configuration import placements
from normbench.norms.kinds import builds_native

# model.* keys no family's ``parameters`` may claim: every run reads them, or their own rule in the record
# contract decides whether a run feels them (dropout_at: the placement; cell_kernel: norm and placement;
# bidirectional: off is how every earlier record ran, and a Transformer refuses it)
SHARED = ("family", "hidden", "layers", "dropout", "dropout_at", "cell_kernel", "bidirectional")


@dataclass(frozen=True)
class Family:
    """A model family. ``builder``: "module:function" that builds its backbone (see the module docstring);
    ``parameters``: the ``model.*`` keys only some families read that its backbone reads (a
    run of another family cannot feel them: the record contract drops them from its identity); ``input_width``: the ``model.*``
    key giving the encoder's output width; ``hand_written``: the in-cell LayerNorm recurrences with a
    hand-written backward it has, preferred first: compiled (models/lnlstm.cpp, models/gru.cpp, built on a CPU),
    python (models/lnlstm_python.py), each tested equal to the autograd loop; ``hand_written_rms``: those it has
    with RMSNorm in place of LayerNorm (compiled: lnlstm.cpp's and gru.cpp's ``centred`` false); ``slots``: placement ->
    the norm slots it fills there, for placements that do not name it themselves; ``why_not``: placement ->
    why it does not exist in this family."""

    name: str
    display: str
    recurrent: bool
    builder: str
    parameters: tuple[str, ...] = ()
    input_width: str = "embed"
    hand_written: tuple[str, ...] = ()
    hand_written_rms: tuple[str, ...] = ()
    slots: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    why_not: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self):
        if (":" not in self.builder or set(self.hand_written) - {"compiled", "python"}
                or set(self.hand_written_rms) - set(self.hand_written) or set(self.parameters) & set(SHARED)
                or self.input_width not in ("embed", "hidden")):
            raise ValueError(f"model family {self.name!r}: builder is 'module:function', hand_written among "
                             "(and hand_written_rms among hand_written's) "
                             f"compiled, python, parameters none of {', '.join(SHARED)}, input_width embed or hidden")
        object.__setattr__(self, "slots", MappingProxyType({p: tuple(s) for p, s in self.slots.items()}))
        object.__setattr__(self, "why_not", MappingProxyType(dict(self.why_not)))

    def inert_parameters(self) -> list[str]:
        """The ``model.*`` keys a run of this family cannot feel: the other families' parameters, not its
        own (none for a family not registered: what it read is not known)."""
        if _REGISTRY.get(self.name) is not self:
            return []
        others = {key for family in _REGISTRY.values() for key in family.parameters}
        return [f"model.{key}" for key in sorted(others - set(self.parameters) - set(SHARED))]

    def hand_written_for(self, norm_kind: str, impl: str) -> tuple[str, ...]:
        """The hand-written recurrences a per-term in-cell layer of this norm may run, preferred first:
        ``hand_written`` for native LayerNorm (norm.impl native, or auto, which builds native LayerNorm: LN has no
        other kernel), ``hand_written_rms`` for RMSNorm by any impl but reference (native, compiled and auto compute
        one function; reference is the formula written out, and runs the loop, as LayerNorm's does); none else."""
        if norm_kind == "ln" and builds_native(norm_kind, impl):
            return self.hand_written
        if norm_kind == "rms" and impl != "reference":
            return self.hand_written_rms
        return ()

    def hand_written_cell(self, norm_kind: str, impl: str, full_precision: bool = True) -> bool:
        """Whether a per-term in-cell layer can run a hand-written recurrence (hand_written_for), in float32 or
        float64 without autocast (the kernels compute in their input's dtype, outside the norms' precision
        policy). Only there do model.cell_kernel auto, compiled and python differ."""
        return bool(self.hand_written_for(norm_kind, impl)) and full_precision


# A family not registered here (a record's, from a version that had it) reads nothing and offers nothing.
UNKNOWN = Family("unknown", "unknown", recurrent=False, builder="normbench.models:unknown")

_REGISTRY: dict[str, Family] = {}


def register(family: Family) -> Family:
    """Add ``family``; the slots it names become its own at those placements (placements.offer)."""
    if family.name in _REGISTRY:
        raise ValueError(f"model family {family.name!r} is already registered")
    slot_kind = placements.RECURRENT_SLOTS if family.recurrent else placements.TRANSFORMER_SLOTS
    try:
        for placement, slots in family.slots.items():
            placements.offer(family.name, placement, slots, slot_kind)
    except ValueError:
        placements.withdraw(family.name)  # all or nothing
        raise
    _REGISTRY[family.name] = family
    return family


def unregister(name: str) -> None:
    placements.withdraw(name)
    del _REGISTRY[name]


def family_names() -> tuple[str, ...]:
    """The registered family names, in registration order."""
    return tuple(_REGISTRY)


def recurrent_names() -> tuple[str, ...]:
    return tuple(name for name, family in _REGISTRY.items() if family.recurrent)


def families() -> tuple[Family, ...]:
    return tuple(_REGISTRY.values())


def family_of(name: str) -> Family:
    if name not in _REGISTRY:
        raise ValueError(f"unknown model family {name!r}; valid: {', '.join(_REGISTRY)}")
    return _REGISTRY[name]


def described(name: str) -> Family:
    """The descriptor of ``name``, or UNKNOWN (reads nothing, no hand-written recurrence) for a name not registered."""
    return _REGISTRY.get(name, UNKNOWN)


def hand_written_cell(family: str, norm_kind: str, impl: str, full_precision: bool = True) -> bool:
    """Family.hand_written_cell of ``family`` (False for a family not registered)."""
    return described(family).hand_written_cell(norm_kind, impl, full_precision)


_RECURRENT_PARAMETERS = ("embed", "dropout_recurrent", "recurrent_init")  # (bidirectional and cell_kernel: SHARED's own rules)

# The built-in placements (placements.py) name their slots for these four themselves.
BUILT_IN = (
    Family("rnn", "RNN", recurrent=True, builder="normbench.models.recurrent:build", parameters=_RECURRENT_PARAMETERS),
    Family("lstm", "LSTM", recurrent=True, builder="normbench.models.recurrent:build", parameters=_RECURRENT_PARAMETERS,
           hand_written=("compiled", "python"), hand_written_rms=("compiled",)),
    Family("gru", "GRU", recurrent=True, builder="normbench.models.recurrent:build", parameters=_RECURRENT_PARAMETERS,
           hand_written=("compiled",), hand_written_rms=("compiled",)),
    Family("transformer", "Transformer", recurrent=False, builder="normbench.models.transformer:build",
           parameters=("heads", "ff_mult", "qk_norm"), input_width="hidden"),
    # Feng et al. 2024 (models/minrnn.py): gates of the input alone, parallel by a log-space scan; the norm before
    # the layer, after it, or with Mamba-2's output gate (its gated RMSNorm) before or after the gating
    *(Family(name, display, recurrent=True, builder="normbench.models.minrnn:build", parameters=("embed",),
             slots={"pre": ("layer_input",), "post": ("layer_output",), "gated_before": ("before_gate",),
                    "gated_after": ("after_gate",)})
      for name, display in (("mingru", "minGRU"), ("minlstm", "minLSTM"))),
)
for _family in BUILT_IN:
    register(_family)

# The built-in families, as tuples for docs and choices; family_names() also sees one registered later.
FAMILIES = family_names()
RECURRENT = recurrent_names()
