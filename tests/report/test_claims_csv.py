"""claims.csv: one row per claim and study, its regime read from the parts a gate held back."""

from normbench.report.build import claims_frame
from normbench.report.tables import ClaimView, Table


def view(status, verdicts, **kw):
    parts = Table(["part", "test", "effect [interval]", "verdict"], [[f"p{i}", "t", "e", v] for i, v in enumerate(verdicts)])
    return ClaimView(id=kw.get("id", "c"), statement="s", citation="Author 2020", status=status, effect="—",
                     more_effects=[], n_per_arm="", explanation="", evidence=Table([], []), parts=parts,
                     study=kw.get("study", "st"), scale="measured at 9k parameters", where=kw.get("where", ""))


def test_a_gated_part_names_its_regime_and_a_testable_claim_says_so():
    frame = claims_frame([
        view("not testable here", ["supported", "not testable here: every arm is at chance (…) — testable with more steps"]),
        view("supported", ["supported", "supported"], where="§3, Fig. 2"),
        view("inconclusive", ["inconclusive (leans toward supported, MDE 0.02, ≈9 seeds/arm would decide)"]),
    ])
    assert list(frame["regime"]) == ["every arm is at chance (…)", "testable here", "testable here"]
    assert frame["parts"][0] == "1: supported | 2: not testable here: every arm is at chance (…) — testable with more steps"
    assert frame["parts"][2] == "1: inconclusive"  # the advice is in the report, not the table
    assert list(frame["source"]) == ["Author 2020", "§3, Fig. 2", "Author 2020"]
    assert (frame["scale"] == "measured at 9k parameters").all()
