"""Which (family, norm, placement) combinations exist, and why the others do not."""

from __future__ import annotations

from normbench.schema import FAMILIES, RECURRENT

# Why a placement does not exist for a family. The valid ones are read off the families' tables
# (placements_of); a pair named here is refused even where its family's table has the placement.
WHY_INVALID = {
    ("rnn", "gate"): "a tanh rnn has no gates",
    ("rnn", "peri"): "peri (sandwich) is a Transformer placement",
    ("lstm", "peri"): "peri (sandwich) is a Transformer placement",
    ("gru", "peri"): "peri (sandwich) is a Transformer placement",
    ("transformer", "in_cell"): "a Transformer has no recurrent cell",
    ("transformer", "gate"): "a Transformer has no gates",
}


def placements_of(family: str, table) -> tuple[str, ...]:
    """The placements ``family`` builds: the keys of its table (recurrent.LAYERS, transformer.BLOCKS,
    which each builder hands in: this module imports neither), less the pairs WHY_INVALID names."""
    return tuple(p for p in table if (family, p) not in WHY_INVALID)


class InvalidCombination(ValueError):
    """A (family, norm, placement) combination that cannot be built; the message says what is valid."""


def check_combination(family: str, norm_kind: str, placement: str, table, summed: bool = False,
                      bidirectional: bool = False) -> None:
    """Raise InvalidCombination (one line, naming what is valid) for anything the builders refuse;
    ``table``: the family's placement -> layer (or block) table."""
    if family not in FAMILIES:
        raise InvalidCombination(f"unknown model family {family!r}; valid: {', '.join(FAMILIES)}")
    if bidirectional and family not in RECURRENT:
        raise InvalidCombination(f"model.bidirectional=true needs a recurrent family ({', '.join(RECURRENT)}); "
                                 f"the {family} is causal: valid for it: bidirectional=false")
    if norm_kind == "none":
        return  # nowhere to place a norm: every placement builds the un-normalized model
    valid = placements_of(family, table)
    if placement not in valid:
        why = WHY_INVALID.get((family, placement), "not one of its placements")
        raise InvalidCombination(f"placement {placement!r} is invalid for {family} ({why}); valid: {', '.join(valid)}")
    if summed and placement == "in_cell" and family == "gru":
        raise InvalidCombination("placement in_cell with summed=true needs lstm or rnn (GRU's candidate gate "
                                 "multiplies U·h by r before the sum); valid for gru: summed=false")
