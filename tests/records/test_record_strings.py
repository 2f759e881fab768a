"""Record strings are data in every output format, and bounded.

One table of hostile strings, each put where a record's string goes (a failure reason, an axis
value, a config path), drives every format the suite writes: report.md and compare's Markdown (no
live link or image), runs.csv and summary.csv (no spreadsheet formula), the figures (no mathtext),
and the size of everything a record contributes.
"""

from __future__ import annotations

import csv
import importlib.util
import re
from pathlib import Path

import matplotlib
import pytest

from normbench.records.record import MAX_STRING
from normbench.report import build_report
from normbench.report.output import spreadsheet_safe
from normbench.report.render import markdown_text
from normbench.studies import compare

_spec = importlib.util.spec_from_file_location("record_factory", Path(__file__).parents[1] / "report" / "conftest.py")
factory = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(factory)

HOSTILE_STRINGS = {
    "image": "![pixel](https://evil.example/t.png)",
    "link": "[click](javascript:alert(1))",
    "autolink": "see https://evil.example and www.evil.example or me@evil.example",
    "code_break": "`x` | cell",
    "formula": "=HYPERLINK(\"https://evil.example\",\"x\")",
    "plus": "+cmd|' /C calc'!A0",
    "at": "@SUM(1+1)*cmd|' /C calc'!A0",
    "tab": "\t=1+1",
    "mathtext": "$\\frac{1}{$ unbalanced $x^",
    "dollar": "cost $5 and $",
    "html": "<img src=x onerror=alert(1)>",
}
# Markdown that would render live: a link or an image, an autolink, a raw tag.
LIVE = [re.compile(r"(?<!\\)\[[^\]]*(?<!\\)\]\("), re.compile(r"(?<![\\/])https?://"),
        re.compile(r"(?<!\\)www\."), re.compile(r"<img")]


@pytest.fixture
def sweep(tmp_path) -> Path:
    root = tmp_path / "sweep"
    for i, (name, text) in enumerate(HOSTILE_STRINGS.items()):
        factory.write_record(root, f"r{i}", seed=i, axes={"norm": text}, status="failed", reason=text)
    factory.write_record(root, "ok0", seed=0)
    factory.write_record(root, "ok1", seed=1, axes={"norm": "rms"})
    factory.write_record(root, "huge", seed=2, status="failed", reason="y" * 3_000_000)
    return root


@pytest.mark.parametrize("name", sorted(HOSTILE_STRINGS))
def test_markdown_text_leaves_nothing_live(name):
    text = markdown_text(HOSTILE_STRINGS[name])
    assert not any(pattern.search(text) for pattern in LIVE), text
    assert "\n" not in text and "\t" not in text or name == "tab"


@pytest.mark.parametrize("name", sorted(HOSTILE_STRINGS))
def test_spreadsheet_cells_never_start_a_formula(name):
    import pandas as pd

    frame = spreadsheet_safe(pd.DataFrame({"reason": [HOSTILE_STRINGS[name]], HOSTILE_STRINGS[name]: [-1.5]}))
    assert not str(frame["reason" if "reason" in frame else frame.columns[0]].iloc[0]).startswith(
        ("=", "+", "-", "@", "\t", "\r"))
    assert not any(str(c).startswith(("=", "+", "@", "\t")) for c in frame.columns)
    assert frame.iloc[0, 1] == -1.5  # a number stays a number


def test_every_report_format_treats_record_strings_as_data(sweep, tmp_path):
    build_report([sweep], tmp_path / "out")
    out = tmp_path / "out"
    md = (out / "report.md").read_text()
    body = md.replace("](figures/", "]FIG(")  # the report's own figure links
    body = re.sub(r"\]\((#[\w-]+|[\w-]+\.(?:csv|parquet))\)", "]", body)  # its own anchors and data links
    assert not any(pattern.search(body) for pattern in LIVE)
    for name in ("runs.csv", "summary.csv", "curves.csv"):
        with open(out / name, newline="", encoding="utf-8") as handle:
            cells = [cell for row in csv.reader(handle) for cell in row]
        assert not [c for c in cells if c.startswith(("=", "+", "@", "\t", "\r"))], name
        assert not [c for c in cells if c.startswith("-") and not _number(c)], name
    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    assert total < 20 * MAX_STRING * 100  # a 3 MB failure reason is cut to MAX_STRING characters
    assert "y" * (MAX_STRING + 1) not in md


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def test_compare_summary_treats_record_strings_as_data(sweep, tmp_path):
    # the fixture's records are mostly failed runs with hostile reasons: the gate fails on them (a record that is
    # no result fails its setting, in both sets alike), and what it writes must still treat every string as data
    assert compare.main([str(sweep), str(sweep), "--out", str(tmp_path / "compare.md")]) == 1
    text = (tmp_path / "compare.md").read_text()
    assert not any(pattern.search(text) for pattern in LIVE)


@pytest.mark.parametrize("name", ["mathtext", "dollar"])
def test_figure_labels_of_record_strings_are_plain_text(tmp_path, name):
    from normbench.report import figures
    from normbench.report.figures import drawing

    label = figures.text(HOSTILE_STRINGS[name])
    with matplotlib.rc_context(drawing.STYLE):
        figure = matplotlib.figure.Figure()
        ax = figure.subplots()
        ax.plot([0, 1], [0, 1], label=label)
        ax.set_title(label)
        ax.legend()
        figure.savefig(tmp_path / "f.png")  # unescaped, mathtext raises a ParseFatalException here
        assert ax.title._preprocess_math(ax.title.get_text()) == (HOSTILE_STRINGS[name], False)
