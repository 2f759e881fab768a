"""Which (family, norm, placement) combinations exist, and why the others do not: read off the
placements' and the families' descriptors (normbench/configuration/placements.py, families.py)."""

from __future__ import annotations

from normbench.configuration.families import described, family_names, recurrent_names
from normbench.configuration.placements import placement_names, placement_of


def placements_of(family: str) -> tuple[str, ...]:
    """The placements ``family`` builds: those whose descriptor names slots for it."""
    return tuple(p for p in placement_names() if placement_of(p).slots_in(family))


class InvalidCombination(ValueError):
    """A (family, norm, placement) combination that cannot be built; the message says what is valid."""


def check_combination(family: str, norm_kind: str, placement, bidirectional: bool = False) -> None:
    """Raise InvalidCombination (one line, naming what is valid) for anything the builders refuse;
    ``placement``: a PlacementConfig (or anything with its fields)."""
    if family not in family_names():
        raise InvalidCombination(f"unknown model family {family!r}; valid: {', '.join(family_names())}")
    if bidirectional and not described(family).recurrent:
        raise InvalidCombination(f"model.bidirectional=true needs a recurrent family ({', '.join(recurrent_names())}); "
                                 f"the {family} is causal: valid for it: bidirectional=false")
    if norm_kind == "none":
        return  # nowhere to place a norm: every placement builds the un-normalized model
    valid = placements_of(family)
    if placement.name not in valid:
        why = placement_of(placement.name).why_not.get(family) or described(family).why_not.get(
            placement.name, "not one of its placements")
        raise InvalidCombination(f"placement {placement.name!r} is invalid for {family} ({why}); valid: {', '.join(valid)}")
    for refusal in placement_of(placement.name).refusals:
        if family in refusal.families and getattr(placement, refusal.setting) == refusal.value:
            raise InvalidCombination(refusal.why)
