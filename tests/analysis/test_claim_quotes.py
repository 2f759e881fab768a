"""Speed claims quote their papers verbatim, with the place (referee 20 rows 7 and 23: paraphrases 'per third-party
notes' and 'as cited by issue 46; section text not verified')."""

from normbench.analysis.claims import SHIPPED

BY_ID = {c.id: c for c in SHIPPED}


def test_the_speed_claims_quote_their_papers_verbatim():
    rms, dyt = BY_ID["rms_faster_than_ln"], BY_ID["dyt_faster_than_rms"]
    assert "reduces the running time by 7%∼64% on different models." in rms.quote
    assert "third-party notes: no full" not in rms.where and rms.where.startswith("Zhang & Sennrich 2019, Abstract (verbatim")
    assert dyt.quote == "DyT layers reduce computation time compared to RMSNorm layers."
    assert "not verified" not in dyt.where and "Appendix C, Table 14" in dyt.where
    # the paper's own qualification stands beside the sentence: compiled, the two layers time the same
    assert "nearly identical" in dyt.where


def test_a_quote_not_checked_against_a_copy_says_so():
    for claim in SHIPPED:
        if "not checked" in claim.quote or "not verified" in claim.where:
            assert claim.quote.startswith("Paraphrase:"), claim.id
