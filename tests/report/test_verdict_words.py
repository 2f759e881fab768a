"""One verdict vocabulary on every surface (referee 20): claims.csv's verdict column said "not applicable" and bare
"contradicted" where the page said "not run here" and "not reproduced in this setup"; the multiplicity paragraph
printed "3 contradicted" bare and unnamed; the claims no study ran read "not applicable" with no reason.

One crafted report (a claim of our own that BN's records contradict, and the shipped claims, none of whose arms
ran) is read on every surface it has: claims.csv, report.md, report.html, the synthesis, the multiplicity and
external-validity paragraphs, the claims line, and the study runner's last lines on the terminal."""

from __future__ import annotations

import html as html_lib
import re

import pandas as pd
import pytest

from normbench.analysis.claims.yaml_claims import CLAIMS_ENV

NOT_REPRODUCED, NOT_RUN = "not reproduced in this setup", "not run here"
CLAIM = """id: crafted_ln_beats_bn
statement: LN ends better than BN.
source: Crafted 2026
regime: off chance and ceiling
regime_checks: [off_chance, off_ceiling]
arms:
  ln: {norm: ln}
  bn: {norm: bn}
parts:
  - {kind: better, assertion: LN ends better than BN, a: ln, b: bn, measure: score}
"""


@pytest.fixture(scope="module")
def crafted(tmp_path_factory, write_record, runs_of):
    """BN ends 0.3 above LN on 4 paired seeds: the crafted claim "LN ends better than BN" is contradicted."""
    from normbench.report import build_report

    root = tmp_path_factory.mktemp("words")
    sweep, claims = root / "sweep", root / "claims"
    for norm, score in (("ln", 0.60), ("bn", 0.90)):
        for seed in range(4):
            write_record(sweep, f"{norm}{seed}", seed=seed, axes={"task": "copy", "norm": norm, "placement": "pre"},
                         best_val=score + 0.004 * seed + 0.003 * (seed % 2) * (norm == "ln"))
    claims.mkdir()
    (claims / "crafted.yaml").write_text(CLAIM)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CLAIMS_ENV, str(claims))
        build_report([sweep], root / "out")
        from normbench.studies.progress import study_answer

        runs = runs_of(*[{"seed": s, "axes": {"task": "copy", "norm": n, "placement": "pre"},
                          "best_val": v + 0.004 * s + 0.003 * (s % 2) * (n == "ln")}
                         for n, v in (("ln", 0.60), ("bn", 0.90)) for s in range(4)])
        log = {"rounds": [{"seeds_per_arm": 4, "level": 0.05}], "seconds": 1.0, "stopped": "decided"}
        terminal = "\n".join(study_answer(log, runs, []))
    out = root / "out"
    page = (out / "report.html").read_text()
    visible = html_lib.unescape(re.sub(r"<[^>]+>", " ", re.sub(r"<(style|script)\b.*?</\1>", "", page, flags=re.S)))
    return {"csv": pd.read_csv(out / "claims.csv", keep_default_na=False), "md": (out / "report.md").read_text(),
            "html": visible, "items": [html_lib.unescape(re.sub(r"<[^>]+>", "", item)) for item in page.split("<li>")],
            "terminal": terminal}


def paragraph(text: str, start: str) -> str:
    return next(line.strip() for line in text.splitlines() if line.strip().startswith(start))


def test_every_surface_prints_the_pages_words_for_one_verdict(crafted):
    csv = crafted["csv"].set_index("claim")
    assert csv.loc["crafted_ln_beats_bn", "verdict"] == NOT_REPRODUCED
    assert csv.loc["crafted_ln_beats_bn", "verdict_code"] == "contradicted"  # the machine value, its own column
    assert (csv.drop("crafted_ln_beats_bn")["verdict"] == NOT_RUN).all(), csv["verdict"]
    assert (csv.drop("crafted_ln_beats_bn")["verdict_code"] == "not applicable").all()
    surfaces = {
        "claims line (md)": paragraph(crafted["md"], "**Claims:**"),
        "claims line (html)": paragraph(crafted["html"], "Claims:"),
        "section (md)": paragraph(crafted["md"], "### crafted_ln_beats_bn:"),
        "synthesis (md)": next(line for line in crafted["md"].splitlines() if "claims crafted_ln_beats_bn" in line),
        "multiplicity (md)": paragraph(crafted["md"], "Multiplicity:"),
        "multiplicity (html)": paragraph(crafted["html"], "Multiplicity:"),
        "external validity (md)": paragraph(crafted["md"], "External validity:"),
        "terminal": crafted["terminal"],
    }
    for where, text in surfaces.items():
        assert NOT_REPRODUCED in text, (where, text)
    for where, text in {**surfaces, "report.md": crafted["md"], "report.html": crafted["html"]}.items():
        # the engine's words appear nowhere a reader reads: not in a verdict, a lean or a part's test
        assert "not applicable" not in text, (where, text[text.find("not applicable") - 200:][:400])
        assert not re.search(r"\bcontradicted\b", text), (where, re.findall(r".{80}\bcontradicted\b.{40}", text))
    assert "claim crafted_ln_beats_bn: not reproduced in this setup" in crafted["terminal"]


def test_the_multiplicity_paragraph_names_each_entry_under_its_words(crafted):
    line = paragraph(crafted["md"], "Multiplicity:")
    assert line.startswith("Multiplicity: 1 judged verdict (1 not reproduced in this setup: crafted_ln_beats_bn ("), line


def test_a_claim_not_run_here_says_why_and_where_else(crafted):
    """dropout_after_norm and deepnorm_trains_deep read "not applicable" with every other field empty; deepnorm's
    sweep has a recorded pilot (docs/claim-sources.md), which the entry points to."""
    csv = crafted["csv"].set_index("claim")
    for claim, arms, sweep in (("dropout_after_norm", "after norm (norm=bn, model.dropout_at=after_norm)", "dropout_placement"),
                               ("deepnorm_trains_deep", "deepnorm (placement=deepnorm)", "deepnorm_depth")):
        why = csv.loc[claim, "regime"]
        assert why.startswith(f"{NOT_RUN}: no study in this report has the arms it needs together: "), why
        assert arms in why and f"+sweep={sweep}" in why, why
        start = f"{claim}: {NOT_RUN}: no study in this report has the arms it needs together: "
        for entry in (paragraph(crafted["md"], f"- {start}"), next(i for i in crafted["items"] if i.startswith(start))):
            assert arms in entry and f"+sweep={sweep}" in entry, entry
    assert "a pilot of it (not a verdict of this report): deepnorm_depth: inconclusive at 2 seeds" in csv.loc[
        "deepnorm_trains_deep", "regime"]
    assert "docs/claim-sources.md" in csv.loc["deepnorm_trains_deep", "regime"]
    assert "pilot" not in csv.loc["dropout_after_norm", "regime"]  # none recorded
    line = paragraph(crafted["md"], "**Claims:**")
    assert "dropout_after_norm" in line.split(f"{NOT_RUN} (")[1].split(")")[0]  # named beside its count
