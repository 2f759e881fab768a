"""Which (family, norm, placement) combinations exist: normbench/configuration/validity.py, torch-free, so that a
study can refuse an arm no run of it could build before any round (hostile h18 H3); the builders ask it here."""

from normbench.configuration.validity import InvalidCombination, check_combination, placements_of

__all__ = ["InvalidCombination", "check_combination", "placements_of"]
