"""The HTML report in a real browser (headless Chromium) at a desktop and a phone width.

Skipped, with the reason, where no Chromium is installed. Set NORMBENCH_SCREENSHOTS=DIR to keep
report-1400.png and report-420.png of the page tested here.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from normbench.report import build_report
from normbench.report.screenshot import NoBrowser, check_page, find_chromium, problems, screenshot

try:
    find_chromium()
    NO_BROWSER = ""
except NoBrowser as error:
    NO_BROWSER = str(error)

pytestmark = pytest.mark.skipif(bool(NO_BROWSER), reason=NO_BROWSER or "chromium found")
LONG_REASON = ("placement 'gate' is invalid for transformer (a Transformer has no gates); valid: pre, post, peri. "
               "This reason is long on purpose, as the runner's are.")


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


@pytest.mark.parametrize("width", [1400, 420])
def test_page_reads_in_a_browser(page, width):
    started = time.monotonic()
    check = check_page(page, width)
    assert check["viewport_width"] <= width
    assert check["images"] and all(image["loaded"] for image in check["images"]), check["images"]
    assert problems(check) == []  # nothing but table scroll containers sticks out; no console errors
    assert check["answer_top"] is not None and check["answer_top"] < check["what_top"]
    if width == 1400:
        assert check["answer_top"] < 900, "the answer section must start on the first screen"
    assert time.monotonic() - started < 30


def test_screenshots_at_both_widths(page, tmp_path):
    out = Path(os.environ.get("NORMBENCH_SCREENSHOTS") or tmp_path)
    for width in (1400, 420):
        shot = screenshot(page, out, width)
        assert shot.stat().st_size > 1000
