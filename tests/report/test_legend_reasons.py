"""The legend's list of why a claim can be "not testable here" names every gate a shipped claim uses, and no
docstring offers "LN beats no normalization" as a testability gate (h22a made it external validity)."""

from normbench.analysis.claims import vocabulary
from normbench.report.build import LEGEND_RULES


def test_the_legend_names_the_domain_and_the_identical_at_init_gates_and_the_optional_arm():
    claims = dict(LEGEND_RULES)["Claims"]
    assert "outside the domains the quoted statement names" in claims  # quoted_domain (derf_outperforms)
    assert "at initialisation, placements that are identical by construction" in claims  # in_cell_most_stable
    assert "at an lr not tuned per arm where final quality is compared" in claims  # own_lr
    assert "read only by the verdict's external-validity caveat" in claims  # an optional arm (engine.compared_arms)


def test_the_setup_check_example_is_no_longer_ln_beats_none():
    assert "LN beats no normalization" not in vocabulary.setup_check.__doc__
    assert "external validity" in vocabulary.setup_check.__doc__
