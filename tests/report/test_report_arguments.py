"""`normbench report`'s arguments refused up front, in one line and exit status 2, before anything is
read or written: --out at the filesystem's root or your home folder (hostile R15), a PATH that does not
exist (R07), an empty PATH or --claims (Z10), a path holding a newline echoed on one line (R27)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import normbench.__main__ as entry
from normbench.checks import out_folder_problem
from normbench.report.__main__ import main
from tests.waiting import HANG_S

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def sweep(tmp_path, write_record):
    for seed in (0, 1):
        write_record(tmp_path / "sweep", f"ln{seed}", seed=seed, axes={"norm": "ln"})
    return tmp_path / "sweep"


def refused(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("normbench.report: "), err
    return err


@pytest.mark.parametrize("out", ["/", "//", "/.", "/tmp/..", "~"])
def test_the_root_and_the_home_folder_are_no_out_folder(out, tmp_path, monkeypatch):
    """The rule itself, checked without a command: a broken guard must not make this test write into /."""
    monkeypatch.setenv("HOME", str(tmp_path))
    assert ("home folder" if out == "~" else "filesystem's root") in out_folder_problem(out)
    assert out_folder_problem(tmp_path / "report") is None and out_folder_problem("relative/report") is None


@pytest.mark.parametrize("where", ["home", "home_with_slash", "home_dotted"])
def test_out_at_the_home_folder_itself_is_refused(where, sweep, tmp_path, monkeypatch, capsys):
    home = tmp_path / "home"
    (home / "mine").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    out = {"home": str(home), "home_with_slash": f"{home}/", "home_dotted": f"{home}/mine/.."}[where]
    assert "home folder" in refused(capsys, [str(sweep), "--out", out])
    assert sorted(p.name for p in home.iterdir()) == ["mine"]


def test_out_inside_the_home_folder_is_still_taken(sweep, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert main([str(sweep), "--out", str(tmp_path / "report")]) == 0
    assert (tmp_path / "report" / "report.html").is_file()


def test_a_path_that_does_not_exist_is_refused_before_anything_is_written(sweep, tmp_path, capsys):
    out = tmp_path / "out"
    err = refused(capsys, [str(sweep), str(tmp_path / "nonexist"), "--out", str(out)])
    assert "nonexist" in err and "does not exist" in err
    assert not out.exists()


def test_a_path_holding_a_newline_is_echoed_on_one_line(tmp_path, capsys):
    err = refused(capsys, [str(tmp_path / "no\nsuch")])
    assert "no\\nsuch" in err


def test_an_error_naming_a_path_with_a_newline_stays_one_line(tmp_path, capsys):
    empty = tmp_path / "no\nrecords"
    empty.mkdir()
    err = refused(capsys, [str(empty)])
    assert "no usable run records" in err


@pytest.mark.parametrize("argv", [[""], [" "], ["{sweep}", ""], ["{sweep}", "--claims", ""]])
def test_an_empty_path_argument_is_refused(argv, sweep, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert entry.subcommand("report", [a.format(sweep=sweep) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("normbench report: ") and "is empty" in err, err
    assert not (tmp_path / "report.html").exists() and not (sweep / "report.html").exists()


@pytest.mark.parametrize("argv", [[""], ["x", "--out", ""]])
def test_an_empty_path_is_one_line_in_the_module_spelling_too(argv, tmp_path):
    """``python -m normbench.report ''`` has no subcommand() around it: its own one line, not a traceback."""
    done = subprocess.run([sys.executable, "-m", "normbench.report", *argv], cwd=tmp_path, capture_output=True,
                          text=True, timeout=HANG_S, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "is empty" in done.stderr, done.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_record_set_aside_whose_folder_holds_a_newline_is_warned_about_on_one_line(sweep, tmp_path, capsys):
    (sweep / "bad\nrun").mkdir()
    (sweep / "bad\nrun" / "summary.json").write_text("{")
    assert main([str(sweep), "--out", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "set aside 1 record(s)" in err and "bad\\nrun" in err, err


@pytest.mark.parametrize("jobs", ["0", "-1", "two", "257", ""])
def test_jobs_outside_1_to_256_are_refused_in_one_line(jobs, sweep, tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:
        main([str(sweep), "--out", str(tmp_path / "out"), "--jobs", jobs])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and err.count("\n") == 1 and "--jobs" in err, err
    assert not (tmp_path / "out").exists()


def test_jobs_reach_the_report(sweep, tmp_path, monkeypatch):
    import normbench.report.build as build

    asked = []
    monkeypatch.setattr(build, "build_report", lambda paths, out, jobs=None: asked.append(jobs) or out / "report.html")
    assert main([str(sweep), "--out", str(tmp_path / "a"), "--jobs", "1"]) == 0
    assert main([str(sweep), "--out", str(tmp_path / "b")]) == 0
    assert asked == [1, None]  # None: the cores this process may use (png.jobs_here)
