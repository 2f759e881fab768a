"""page_check's screenshot tool writes only its own files, only inside its folder, and nothing under $HOME or
left in the temporary folder (issue 50: P221, P223, P224, P226, P255, P271). The refusals need no browser;
the cases that run Chromium are skipped where none is installed."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from normbench.page_check import screenshot as shot
from tests.report.conftest import needs_browser
from tests.waiting import HANG_S

PAGE = "<!DOCTYPE html><html><head><title>t</title></head><body><p>a page</p></body></html>"


@pytest.fixture
def page(tmp_path) -> Path:
    path = tmp_path / "report.html"
    path.write_text(PAGE)
    return path


def _refused(capsys, argv) -> str:
    try:
        code = shot.main(argv)
    except SystemExit as stop:
        code = stop.code
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_a_users_screenshot_is_never_replaced(tmp_path, page, capsys):
    # P255: a report-1400.png of the user's own was overwritten
    out = tmp_path / "shots"
    out.mkdir()
    (out / "report-1400.png").write_bytes(b"my picture")
    assert "report-1400.png exists and was not written" in _refused(capsys, [str(page), str(out)])
    assert (out / "report-1400.png").read_bytes() == b"my picture"


def test_a_linked_folder_is_refused(tmp_path, page, capsys):
    # P223: an output folder that is a link was written through, into the folder it points to
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "shots").symlink_to(elsewhere)
    assert "is a link" in _refused(capsys, [str(page), str(tmp_path / "shots")])
    assert list(elsewhere.iterdir()) == []


def test_a_link_at_a_screenshots_name_is_refused(tmp_path, page, capsys):
    victim = tmp_path / "victim.png"
    victim.write_bytes(b"precious")
    out = tmp_path / "shots"
    out.mkdir()
    (out / "report-420.png").symlink_to(victim)
    assert "report-420.png" in _refused(capsys, [str(page), str(out), "--widths", "420"])
    assert victim.read_bytes() == b"precious"


def test_a_file_as_the_folder_is_one_line(tmp_path, page, capsys):
    # P224: a regular file given as the output folder was a traceback
    assert "is not a folder" in _refused(capsys, [str(page), str(page)])
    assert "is not a folder" in _refused(capsys, [str(page), str(page / "below")])


@pytest.mark.parametrize("sizes", [["--height", "0"], ["--widths", "-5"], ["--widths", "x"], ["--height", "99999"]])
def test_a_size_that_is_no_size_is_one_line(tmp_path, page, capsys, sizes):
    # P226: --height 0 was a traceback (and left the Chromium folder behind)
    assert "pixels" in _refused(capsys, [str(page), str(tmp_path / "shots"), *sizes])
    assert not (tmp_path / "shots").exists()


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """The temporary folder (TMPDIR) and $HOME the tool sees, both empty, to look into afterwards. TMPDIR
    is a short path: Chromium's socket there must fit a Unix socket's 108 bytes, which pytest's do not."""
    home, tmp = tmp_path / "home", Path(tempfile.mkdtemp(prefix="nb", dir="/tmp" if os.path.isdir("/tmp") else None))
    home.mkdir()
    (tmp_path / "tmp").symlink_to(tmp)
    for name in ("HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    yield tmp_path
    shutil.rmtree(tmp, ignore_errors=True)


@needs_browser
def test_chromium_writes_nothing_under_home_and_leaves_nothing_behind(scratch, page, capsys):
    # P221: Chromium wrote ~/.config/chromium and ~/.cache under the user's HOME
    assert shot.main([str(page), str(scratch / "shots"), "--widths", "420"]) == 0
    assert list((scratch / "home").iterdir()) == [] and list((scratch / "tmp").iterdir()) == []
    assert (scratch / "shots" / "report-420.png").stat().st_size > 0
    assert shot.main([str(page), str(scratch / "shots"), "--widths", "420"]) == 0  # its own file: replaced


@needs_browser
def test_sigterm_mid_run_removes_the_chromium_folder(scratch, page):
    # P271: SIGTERM while Chromium ran left /tmp/normbench-chromium-* behind
    tmp = (scratch / "tmp").resolve()
    env = {**os.environ, "HOME": str(scratch / "home"), "TMPDIR": str(tmp),
           "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    process = subprocess.Popen([sys.executable, "-m", "normbench.page_check.screenshot", str(page),
                                str(scratch / "shots")], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    deadline = time.monotonic() + HANG_S
    while not list(tmp.glob("normbench-chromium-*")) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert process.poll() is None, "the tool ended before Chromium started"
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=HANG_S)
    assert process.returncode == 128 + signal.SIGTERM and "stopped by SIGTERM" in err and err.count("\n") == 1, err
    assert list(tmp.iterdir()) == []
