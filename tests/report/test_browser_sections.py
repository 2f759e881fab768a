"""The report by study in headless Chromium at 1400 and 420 px: the cells a reader must see whole
(arm, metric, interval, verdict) neither cut nor off-screen, on the crafted studies (8 arms here,
40 arms in the slow variant). Skipped, with the reason, where no Chromium is installed."""

from __future__ import annotations

import pytest

from normbench.page_check.facts import broken, html_facts, layout_facts
from normbench.page_check.screenshot import problems
from tests.report.conftest import needs_browser

pytestmark = needs_browser
WIDTHS = (1400, 420)
MUST_SEE = ("arm", "verdict", "effect [interval]", "family", "how sure")


def test_the_layout_probe_sees_a_cut_cell(tmp_path):
    page = tmp_path / "report.html"
    page.write_text('<!DOCTYPE html><html><head><meta charset="utf-8"></head><body><table><tr>'
                    '<td class="keep" data-label="verdict" style="white-space:nowrap;max-width:4em;overflow:hidden">'
                    'supported on every part of this claim</td><td class="keep" data-label="arm">ln</td></tr></table>'
                    '</body></html>')
    layout = layout_facts(page, 420)
    assert layout["n_cut"] == 1 and layout["cut"][0].startswith("verdict: supported") and "(cut)" in layout["cut"][0]
    assert layout["kept"] == {"verdict": 1, "arm": 1}


def _reads_whole(report, width: int) -> None:
    layout = layout_facts(report, width)
    assert layout["n_cut"] == 0, layout["cut"]
    assert problems(layout["check"]) == []
    seen = set(layout["kept"])
    assert set(MUST_SEE) <= seen, seen
    assert any(label.startswith("final val ") for label in seen)  # the ranked metric, with its interval
    assert broken(html_facts(report)) == []


@pytest.mark.parametrize("width", WIDTHS)
def test_crafted_studies_read_whole(small_crafted_report, width):
    _reads_whole(small_crafted_report, width)


@pytest.mark.slow
@pytest.mark.parametrize("width", WIDTHS)
def test_forty_arms_read_whole(crafted_report, width):
    _reads_whole(crafted_report, width)
