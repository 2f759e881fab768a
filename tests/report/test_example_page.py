"""The committed example report keeps the page's promises: at most 6 figures a study, no caption
repeated, unique ids, at most 3 MB, tables of at most 12 columns, a synthesis line for every model
family a study covers, and in Chromium at 1400 and 420 px no arm, metric, interval or verdict cut."""

import re
from pathlib import Path

import pytest

from normbench.page_check.facts import broken, html_facts, layout_facts
from normbench.page_check.screenshot import problems
from tests.report.conftest import needs_browser

EXAMPLE = Path(__file__).resolve().parents[2] / "reports" / "example" / "report.html"


def test_the_example_page_keeps_its_promises():
    facts = html_facts(EXAMPLE)
    assert broken(facts) == [] and len(facts["study_figures"]) >= 15
    families = set(re.findall(r'<td[^>]*data-label="family"[^>]*>(\w+)</td>', EXAMPLE.read_text()))
    assert families == {"RNN", "LSTM", "GRU", "Transformer"}  # every family a study covers has its line


@needs_browser
@pytest.mark.parametrize("width", [1400, 420])
def test_the_example_page_reads_whole_in_chromium(width):
    layout = layout_facts(EXAMPLE, width)
    assert layout["n_cut"] == 0, layout["cut"]
    assert problems(layout["check"]) == []
    assert {"arm", "verdict", "effect [interval]", "family", "how sure"} <= set(layout["kept"])
