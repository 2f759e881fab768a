"""One descriptor per placement: where a family's norms sit, the one place a placement is described.

A placement names, per model family it is valid for, the norm slots it fills; a family it names no
slots for is refused, for the reason it gives. The config schema (valid names), the record contract
(which ``placement.*`` and ``model.dropout_at`` settings a run cannot feel), the validity check and
both builders read it: a Transformer block fills its slots from here (any combination builds), a
recurrent placement is a layer in ``models/recurrent.py``'s ``LAYERS``. Adding a placement is its
descriptor here, ``conf/placement/NAME.yaml``, a test, and for a recurrent family its layer.

Slots (x-transformers' pre-branch, post-branch, post-main):
    transformer  branch_in   x + f(N(x))        the branch's input (parameters ``norm1``, ``norm2``)
                 branch_out  x + N(f(x))        the branch's output, before the add (``norm1_out``, ...)
                 main        N(x + f(x))        the residual stream after the add (``norm1``, ``norm2``)
    recurrent    layer_input, layer_output      a layer's input (the layer below's output), its output
                 wx, uh, c                      inside the cell: W·x_t, U·h_{t-1}, the LSTM's c_t
                 gates                          each gate's pre-activation W·x_t + U·h_{t-1}

Imports nothing: the schema and the record contract stand on it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping, NamedTuple

TRANSFORMER_SLOTS = ("branch_in", "branch_out", "main")
RECURRENT_SLOTS = ("layer_input", "layer_output", "wx", "uh", "c", "gates")
# slots holding a norm of W·x_t: with per-step BatchNorm there, the first layer's encoder has no bias
INPUT_PREACTIVATION = ("wx", "gates")


class Refusal(NamedTuple):
    """A setting's value a placement cannot build in some families, and the one line that says so."""

    setting: str              # a PlacementConfig field
    value: object
    families: tuple[str, ...]
    why: str


@dataclass(frozen=True)
class Placement:
    """A placement. ``slots``: family -> the norm slots it fills (TRANSFORMER_SLOTS, RECURRENT_SLOTS);
    ``why_not``: family -> why it does not exist there; ``settings``: the ``placement.*`` keys besides
    ``name`` its layers read (the others are inert); ``final_norm``: a Transformer normalizes its residual
    stream once before the head (it leaves it un-normalized); ``cell_kernel``: its per-term layers run
    the recurrence ``model.cell_kernel`` chooses."""

    name: str
    slots: Mapping[str, tuple[str, ...]]
    why_not: Mapping[str, str] = field(default_factory=dict)
    settings: tuple[str, ...] = ()
    final_norm: bool = False
    cell_kernel: bool = False
    refusals: tuple[Refusal, ...] = ()
    # the same model as another placement under the name users also know it by: a run's identity names that one
    same_as: str | None = None
    # a rule of depth (DEPTH_RULES): the Transformer block's residual weight, branch-input scale and branch init
    depth_rule: str | None = None
    # the placement whose slots the first ``placement.post_fraction`` of a Transformer's layers take (Mix-LN)
    first_layers: str | None = None

    def __post_init__(self):
        for family, slots in self.slots.items():
            known = TRANSFORMER_SLOTS if family == "transformer" else RECURRENT_SLOTS
            if not slots or set(slots) - set(known) or {"branch_in", "main"} <= set(slots):
                raise ValueError(f"placement {self.name!r}: {family} needs slots among {', '.join(known)} "
                                 "(branch_in and main both own the parameters norm1, norm2: one of them)")
        if set(self.slots) & set(self.why_not):
            raise ValueError(f"placement {self.name!r}: a family is either given slots or refused")
        object.__setattr__(self, "slots", MappingProxyType({f: tuple(s) for f, s in self.slots.items()}))
        object.__setattr__(self, "why_not", MappingProxyType(dict(self.why_not)))

    def slots_in(self, family: str) -> tuple[str, ...]:
        """The slots it fills in ``family``; () where it does not exist."""
        return self.slots.get(family, ())

    def inert_settings(self, family: str) -> list[str]:
        """The ``placement.*`` keys a run of ``family`` at this placement cannot feel (normbench/configuration/contract.py):
        those its layers do not read, and cell_norm where it fills no ``c`` slot (only an LSTM cell has one)."""
        inert = [f"placement.{key}" for key in ("summed", "post_fraction") if key not in self.settings]
        if "c" not in self.slots_in(family):
            inert.append("placement.cell_norm")
        return inert

    def dropout_meets_norm(self, family: str, layers: int) -> bool:
        """Whether a norm meets the dropout on a layer or branch output, so that ``model.dropout_at``
        (before or after that norm) can change the run."""
        slots = self.slots_in(family)
        if family == "transformer":
            return "branch_out" in slots  # residual dropout sits before the add, after any other norm
        # a layer's input norm meets the output of the layer below: none with one layer
        return "layer_output" in slots or ("layer_input" in slots and layers != 1)


class Depth(NamedTuple):
    """What a depth rule sets in Transformer block ``layer`` (1-based) of ``layers``: x = main(residual * x +
    D(branch_out(f(branch_in(x) * branch_in_scale)))), and the gain of the branch weights' Xavier-normal init
    (the FFN, attention's value and output projections; queries and keys at gain 1), None: PyTorch's default init."""

    residual: float = 1.0
    branch_in_scale: float = 1.0
    branch_init_gain: float | None = None


DEPTH_RULES = {
    # Sun et al. (NeurIPS 2025), LayerNorm Scaling: the pre-norm's output times 1/sqrt(l) in layer l
    "layernorm_scaling": lambda layer, layers: Depth(branch_in_scale=1 / math.sqrt(layer)),
    # Wang et al. 2022 (DeepNet, Table 1, decoder-only or encoder-only with N layers): x = LN(alpha x + G(x)),
    # alpha = (2N)^(1/4), branch init gain beta = (8N)^(-1/4)
    "deepnorm": lambda layer, layers: Depth(residual=(2 * layers) ** 0.25, branch_init_gain=(8 * layers) ** -0.25),
}


def depth_of(placement: "Placement", layer: int, layers: int) -> Depth:
    """The depth rule's settings for block ``layer`` (1-based) of ``layers``; the identity rule without one."""
    return DEPTH_RULES[placement.depth_rule](layer, layers) if placement.depth_rule else Depth()


def post_layers(fraction: float, layers: int) -> int:
    """Mix-LN (Li et al., ICLR 2025): the first floor(fraction * layers) layers are Post-LN, the rest Pre-LN."""
    return math.floor(fraction * layers)


# A placement not registered here (a record's, from a version that had it) fills no slot anywhere.
UNKNOWN = Placement("unknown", {})

_REGISTRY: dict[str, Placement] = {}


def register(placement: Placement) -> Placement:
    if placement.name in _REGISTRY:
        raise ValueError(f"placement {placement.name!r} is already registered")
    _REGISTRY[placement.name] = placement
    return placement


def unregister(name: str) -> None:
    del _REGISTRY[name]


def placement_names() -> tuple[str, ...]:
    """The registered placement names, in registration order."""
    return tuple(_REGISTRY)


def placement_of(name: str) -> Placement:
    if name not in _REGISTRY:
        raise ValueError(f"unknown placement {name!r}; valid: {', '.join(_REGISTRY)}")
    return _REGISTRY[name]


def described(name: str) -> Placement:
    """The descriptor of ``name``, or UNKNOWN (no slots, reads nothing) for a name not registered."""
    return _REGISTRY.get(name, UNKNOWN)


_NO_GATES = "a tanh rnn has no gates"
_SANDWICH = "peri (sandwich) is a Transformer placement"
_BLOCK_ONLY = {"rnn": "{} is a Transformer placement", "lstm": "{} is a Transformer placement",
               "gru": "{} is a Transformer placement"}


def _block_only(name: str) -> dict:
    return {family: why.format(name) for family, why in _BLOCK_ONLY.items()}


for _placement in (
    Placement("pre", {"rnn": ("layer_input",), "lstm": ("layer_input",), "gru": ("layer_input",),
                      "transformer": ("branch_in",)}, final_norm=True),
    Placement("post", {"rnn": ("layer_output",), "lstm": ("layer_output",), "gru": ("layer_output",),
                       "transformer": ("main",)}),
    # Ba et al. 2016 (suppl. eqs. 20-22), Cooijmans et al. 2016 (eqs. 6-8); summed: one norm on W·x + U·h
    Placement("in_cell", {"rnn": ("wx", "uh"), "lstm": ("wx", "uh", "c"), "gru": ("wx", "uh")},
              why_not={"transformer": "a Transformer has no recurrent cell"}, settings=("summed",),
              cell_kernel=True,
              refusals=(Refusal("summed", True, ("gru",), "placement in_cell with summed=true needs lstm or rnn "
                                "(GRU's candidate gate multiplies U·h by r before the sum); valid for gru: "
                                "summed=false"),)),
    Placement("gate", {"lstm": ("gates",), "gru": ("gates",)},
              why_not={"rnn": _NO_GATES, "transformer": "a Transformer has no gates"}),
    # Sandwich/Peri-LN
    Placement("peri", {"transformer": ("branch_in", "branch_out")},
              why_not={"rnn": _SANDWICH, "lstm": _SANDWICH, "gru": _SANDWICH}, final_norm=True),
    # Sandwich-LN (Ding et al. 2021; x-transformers' sandwich_norm): peri's model under its other name; the run is peri's
    Placement("sandwich", {"transformer": ("branch_in", "branch_out")}, why_not=_block_only("sandwich"),
              final_norm=True, same_as="peri"),
    # LayerNorm Scaling (Sun et al., NeurIPS 2025): Pre-LN, each pre-norm's output x 1/sqrt(l) in layer l
    Placement("lns", {"transformer": ("branch_in",)}, why_not=_block_only("lns"), final_norm=True,
              depth_rule="layernorm_scaling"),
    # Mix-LN (Li et al., ICLR 2025): Post-LN in the first placement.post_fraction of the layers, Pre-LN after
    Placement("mix", {"transformer": ("branch_in",)}, why_not=_block_only("mix"), final_norm=True,
              settings=("post_fraction",), first_layers="post"),
    # DeepNorm (Wang et al. 2022): Post-LN on alpha * x + f(x), the branches' init scaled by beta, both by depth
    Placement("deepnorm", {"transformer": ("main",)}, why_not=_block_only("deepnorm"), depth_rule="deepnorm"),
):
    register(_placement)

# The built-in placements, as a tuple for docs and choices; placement_names() also sees one registered later.
PLACEMENTS = placement_names()
