"""Which (family, norm, placement) combinations exist, and why the others do not."""

from __future__ import annotations

from normbench.schema import FAMILIES

VALID_PLACEMENTS = {
    "rnn": ("pre", "post", "in_cell"),
    "lstm": ("pre", "post", "in_cell", "gate"),
    "gru": ("pre", "post", "in_cell", "gate"),
    "transformer": ("pre", "post", "peri"),
}
WHY_INVALID = {
    ("rnn", "gate"): "a tanh rnn has no gates",
    ("rnn", "peri"): "peri (sandwich) is a Transformer placement",
    ("lstm", "peri"): "peri (sandwich) is a Transformer placement",
    ("gru", "peri"): "peri (sandwich) is a Transformer placement",
    ("transformer", "in_cell"): "a Transformer has no recurrent cell",
    ("transformer", "gate"): "a Transformer has no gates",
}


class InvalidCombination(ValueError):
    """A (family, norm, placement) combination that cannot be built; the message says what is valid."""


def check_combination(family: str, norm_kind: str, placement: str, summed: bool = False) -> None:
    """Raise InvalidCombination (one line, naming what is valid) for anything the builders refuse."""
    if family not in FAMILIES:
        raise InvalidCombination(f"unknown model family {family!r}; valid: {', '.join(FAMILIES)}")
    if norm_kind == "none":
        return  # nowhere to place a norm: every placement builds the un-normalized model
    valid = VALID_PLACEMENTS[family]
    if placement not in valid:
        why = WHY_INVALID.get((family, placement), "unknown placement")
        raise InvalidCombination(f"placement {placement!r} is invalid for {family} ({why}); valid: {', '.join(valid)}")
    if summed and placement == "in_cell" and family == "gru":
        raise InvalidCombination("placement in_cell with summed=true needs lstm or rnn (GRU's candidate gate "
                                 "multiplies U·h by r before the sum); valid for gru: summed=false")
