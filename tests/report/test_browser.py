"""The HTML report in a real browser (headless Chromium) at a desktop and a phone width.

Skipped, with the reason, where no Chromium is installed (`apt-get install chromium`). Set
NORMBENCH_SCREENSHOTS=DIR to keep report-1400.png and report-420.png of the pages tested here.
The 40-arm page is slow (its report draws 40 figures); the figure checks on the same kind of
report run fast, without a browser, in test_figures.py.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from PIL import Image

from normbench.page_check.screenshot import check_page, problems, screenshot, shown_font_px
from normbench.report import build_report
from normbench.report.figures import PROBLEMS_KEY
from tests.report.conftest import needs_browser

pytestmark = needs_browser
LONG_REASON = ("placement 'gate' is invalid for transformer (a Transformer has no gates); valid: pre, post, peri. "
               "This reason is long on purpose, as the runner's are.")
WIDTHS = (1400, 420)


@pytest.fixture(scope="module")
def page(tmp_path_factory, write_record) -> Path:
    """A sweep like a real one: 3 norms x 2 placements x 3 seeds on two tasks, a divergence, and a
    screenful of invalid combinations with long reasons (what used to push the answer off screen)."""
    sweep = tmp_path_factory.mktemp("sweep")
    index = 0
    for task, base in (("copy", 0.9), ("adding", 0.05)):
        for norm, shift in (("ln", 0.0), ("rms", 0.01), ("bn", 0.05)):
            for placement in ("pre", "post"):
                for seed in range(3):
                    diverged = (norm, placement, seed, task) == ("bn", "post", 2, "copy")
                    score = base - shift if task == "copy" else base + shift
                    write_record(sweep, f"r{index}", seed=seed, best_val=score + 0.003 * seed,
                                 status="diverged" if diverged else "ok",
                                 axes={"task": task, "norm": norm, "placement": placement, "eps": 1e-05},
                                 throughput={"step_ms_p90": 30.0} if norm == "bn" else None)
                    index += 1
    for seed in range(30):
        write_record(sweep, f"invalid{seed}", seed=seed, status="invalid", reason=LONG_REASON,
                     axes={"placement": "gate"})
    return build_report([sweep], tmp_path_factory.mktemp("out"))


def _reads_well(report: Path, width: int, arms: set[str]) -> dict:
    started = time.monotonic()
    check = check_page(report, width)
    assert check["viewport_width"] <= width
    assert check["images"] and all(image["loaded"] for image in check["images"]), check["images"]
    # nothing but table scroll containers sticks out; no image is wider than its column or shrunk
    # below 9 px text; no console errors
    assert problems(check) == []
    assert all(image["narrow"] == (width < 900) for image in check["images"])
    if width == 1400:  # full column width, text at about its drawn size
        assert all(image["shown_width"] >= 0.97 * check["column_width"] for image in check["images"])
    assert all(shown_font_px(image) >= 9 for image in check["images"])
    assert check["boards"]
    for headers in check["boards"]:
        assert len(headers) <= 12, headers
        lead = headers[:headers.index("rank")] if "rank" in headers else headers[:1]
        assert lead and set(lead) <= arms, headers  # the arm settings come first
    assert check["answer_top"] is not None and check["answer_top"] < check["what_top"]
    if width == 1400:
        assert check["answer_top"] < 900, "the answer section must start on the first screen"
    assert time.monotonic() - started < 60
    return check


@pytest.mark.parametrize("width", WIDTHS)
def test_page_reads_in_a_browser(page, width):
    _reads_well(page, width, {"task", "norm", "placement"})


@pytest.mark.slow
@pytest.mark.parametrize("width", WIDTHS)
def test_forty_arms_read_in_a_browser(crafted_report, width):
    """40 arms in one study, 4 in another: every figure fits its column and keeps 9 px text, the
    figure objects had no overlapping labels (recorded in each PNG), leaderboards lead with the arm."""
    _reads_well(crafted_report, width, {"norm", "placement", "lr", "arm"})
    for png in (crafted_report.parent / "figures").rglob("*.png"):
        with Image.open(png) as image:
            assert image.text[PROBLEMS_KEY] == "", (png.name, image.text[PROBLEMS_KEY])


def test_screenshots_at_both_widths(page, tmp_path):
    out = Path(os.environ.get("NORMBENCH_SCREENSHOTS") or tmp_path)
    for width in WIDTHS:
        shot = screenshot(page, out, width)
        assert shot.stat().st_size > 1000
