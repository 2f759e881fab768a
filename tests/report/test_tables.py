"""report/tables.py: what a claim's headline says about its parts (crafted verdicts)."""

from types import SimpleNamespace

from normbench.analysis.claims.vocabulary import (
    CONTRADICTED,
    INCONCLUSIVE,
    NOT_TESTABLE,
    SUPPORTED,
    TOWARD_CONTRADICTED,
    Part,
)
from normbench.report.tables import parts_tested


def part(status, lean=None, near="", reach=float("nan")):
    return Part("a part", status, "a test", lean=lean, near=near, reach=reach)


def test_a_not_testable_verdict_names_what_its_parts_tested_read():
    """Referee 17: ln_beats_bn_varlen read "not testable here" on the claims line while parts 1-2 leaned against
    the paper and part 3 was supported; the line names them, grouped by what they read."""
    verdict = SimpleNamespace(status=NOT_TESTABLE, parts=[part(INCONCLUSIVE, TOWARD_CONTRADICTED),
                                                          part(INCONCLUSIVE, TOWARD_CONTRADICTED),
                                                          part(SUPPORTED), part(NOT_TESTABLE)])
    assert parts_tested(verdict) == f"parts 1, 2 leaning {TOWARD_CONTRADICTED}, part 3 supported"
    near = SimpleNamespace(status=NOT_TESTABLE, parts=[part(NOT_TESTABLE), part(INCONCLUSIVE, near="0.1", reach=1.1),
                                                       part(CONTRADICTED)])
    assert parts_tested(near) == "part 2 no difference larger than δ likely, part 3 not reproduced in this setup"
    # referee 19: mixln_deep_layers' part 3, +0.008 [−0.022, +0.038] at δ 0.02, read "no difference larger than δ
    # likely" in its headline while its interval reached about 2δ
    wide = SimpleNamespace(status=NOT_TESTABLE, parts=[part(INCONCLUSIVE, near="0.02", reach=1.9)])
    assert parts_tested(wide) == "part 1 estimate inside ±δ, undecided"
    # nothing tested, or a verdict that already says what its parts read: nothing added
    assert parts_tested(SimpleNamespace(status=NOT_TESTABLE, parts=[part(NOT_TESTABLE)])) == ""
    assert parts_tested(SimpleNamespace(status=SUPPORTED, parts=[part(SUPPORTED)])) == ""


def test_a_claim_no_study_judged_reads_not_run_here():
    """Referee 18: dropout_after_norm and deepnorm_trains_deep were not run, and "not applicable" misread that."""
    from normbench.analysis.claims.vocabulary import NOT_APPLICABLE
    from normbench.report.tables import NOT_RUN, shown_as

    assert shown_as(SimpleNamespace(status=NOT_APPLICABLE, study="")) == NOT_RUN
    assert shown_as(SimpleNamespace(status=NOT_APPLICABLE, study="s1")) == NOT_RUN  # a study ran, without its arms
    assert shown_as(SimpleNamespace(status=CONTRADICTED, study="s1")) == "not reproduced in this setup"
