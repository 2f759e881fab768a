"""The report replaces only files it wrote itself and deletes nothing else (output.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from normbench.report import OutputNotWritable, build_report
from normbench.report.output import MANIFEST
from tests.waiting import HANG_S  # waits end on a hang, never on a slow machine

ROOT = Path(__file__).resolve().parents[2]


def cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "normbench.report", *map(str, args)], capture_output=True,
                          text=True, cwd=ROOT, timeout=HANG_S)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def sweep(tmp_path, write_record):
    for seed in (0, 1):
        for norm in ("ln", "rms"):
            write_record(tmp_path / "sweep", f"{norm}{seed}", seed=seed, axes={"norm": norm})
    return tmp_path / "sweep"


def test_users_files_in_the_way_stop_the_report_and_stay_untouched(tmp_path, sweep):
    paper = tmp_path / "paper"
    (paper / "figures").mkdir(parents=True)
    (paper / "figures" / "mine.png").write_bytes(b"my figure")
    (paper / "report.md").write_text("my own notes")
    (paper / "runs.csv").write_text("mine\n")
    before = snapshot(paper)
    result = cli(sweep, "--out", paper)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert str(paper / "report.md") in result.stderr and "not written by a normbench report" in result.stderr
    assert snapshot(paper) == before  # nothing replaced, nothing deleted, nothing added
    assert sorted(p.name for p in paper.iterdir()) == ["figures", "report.md", "runs.csv"]  # no staging left


def test_a_second_report_replaces_its_own_files_and_keeps_the_users(tmp_path, sweep, write_record):
    out = tmp_path / "paper"
    (out / "figures").mkdir(parents=True)
    (out / "figures" / "mine.png").write_bytes(b"my figure")
    (out / "notes.md").write_text("mine")
    build_report([sweep], out)
    manifest = json.loads((out / MANIFEST).read_text())["files"]
    assert {"report.md", "report.html", "runs.csv", "summary.csv", "figures/grad_norm_vs_step.png"} <= set(manifest)
    assert "figures/mine.png" not in manifest
    first_figures = {p.name for p in (out / "figures").glob("*.png")}
    assert "throughput.png" in first_figures
    # The second report no longer has throughput, so its earlier figure goes; the user's stays.
    for run in sweep.iterdir():
        summary = json.loads((run / "summary.json").read_text())
        summary["throughput"] = {}
        (run / "summary.json").write_text(json.dumps(summary))
    build_report([sweep], out)
    second = {p.name for p in (out / "figures").glob("*.png")}
    assert "throughput.png" not in second and "mine.png" in second
    assert (out / "figures" / "mine.png").read_bytes() == b"my figure" and (out / "notes.md").read_text() == "mine"
    assert set(json.loads((out / MANIFEST).read_text())["files"]) == {
        p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()} - {MANIFEST, "figures/mine.png", "notes.md"}
    assert not list(out.glob(".normbench-report-staging-*"))


def test_a_report_file_the_user_edited_is_theirs_now(tmp_path, sweep):
    out = tmp_path / "out"
    build_report([sweep], out)
    (out / "report.md").write_text((out / "report.md").read_text() + "\nmy conclusions\n")
    html = (out / "report.html").read_bytes()
    with pytest.raises(OutputNotWritable, match="report.md exists and was not written"):
        build_report([sweep], out)
    assert (out / "report.md").read_text().endswith("my conclusions\n")
    assert (out / "report.html").read_bytes() == html


def test_report_into_the_sweep_directory_twice(sweep):
    """As at the end of a sweep and again on its resume: out is the sweep directory."""
    build_report([sweep], sweep)
    build_report([sweep], sweep)
    assert (sweep / "report.html").is_file() and (sweep / MANIFEST).is_file()
    assert len(list(sweep.rglob("summary.json"))) == 4


@pytest.mark.parametrize("where", ["file", "below_a_file", "bad_manifest", "folder_named_like_a_report_file"])
def test_out_that_cannot_take_the_report_is_one_line_and_exit_2(tmp_path, sweep, where):
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    out = {"file": a_file, "below_a_file": a_file / "out"}.get(where, tmp_path / "out")
    if where == "bad_manifest":
        out.mkdir()
        (out / MANIFEST).write_text("[1, 2]")
    if where == "folder_named_like_a_report_file":
        (out / "summary.csv").mkdir(parents=True)
    result = cli(sweep, "--out", out)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("normbench.report: ") and "Traceback" not in result.stderr
    assert str(out) in lines[0]
    assert a_file.read_text() == "x"


@pytest.mark.parametrize("kind", ["link", "file"])
def test_a_figures_folder_that_is_a_link_or_a_file_is_named_as_such(tmp_path, sweep, kind):
    """Hostile h14 B12 (V09): with out/figures a link to the user's folder, the line named figures that
    were not there ("out/figures/curves_val_vs_seconds.png exists and was not written ... (and 9 more)")."""
    out, users = tmp_path / "out", tmp_path / "users"
    out.mkdir()
    users.mkdir()
    (users / "notes.txt").write_text("keep")
    (out / "figures").symlink_to(users) if kind == "link" else (out / "figures").write_text("mine")
    what = "is a symbolic link" if kind == "link" else "exists and is not a folder"
    with pytest.raises(OutputNotWritable) as refused:
        build_report([sweep], out)
    assert str(refused.value).startswith(f"{out / 'figures'} {what}, where the report puts a folder of its own")
    assert ".png" not in str(refused.value)
    assert snapshot(users) == {"notes.txt": b"keep"} and sorted(p.name for p in out.iterdir()) == ["figures"]


def test_a_sweep_whose_figures_folder_is_a_link_gets_the_refusal_alone(tmp_path, sweep, capsys):
    """Hostile h21 B6 (N078b): 'warning: set aside 1 record(s): sw/figures/summary.json (the folder is a
    symbolic link)', then the refusal: a set-aside line belongs to a report written."""
    (tmp_path / "elsewhere").mkdir()
    (sweep / "figures").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OutputNotWritable, match="is a symbolic link, where the report puts a folder of its own"):
        build_report([sweep])
    assert "set aside" not in capsys.readouterr().err
