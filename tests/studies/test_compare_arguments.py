"""`normbench compare`'s arguments refused up front in one line and exit status 2: --exact beside a flag that
loosens its gate (hostile C02, C15), an --out whose folder does not exist named as that folder, not as the
writer's temporary file (C10), an empty BASELINE or NEW (Z10); refused, and --help answered, before pandas and
scipy load (normbench/studies/compare_command.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import normbench.__main__ as entry
from normbench.studies.compare import main
from tests.report.conftest import write_record
from tests.waiting import HANG_S

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def sweep(tmp_path):
    for seed in (0, 1):
        write_record(tmp_path / "sweep", f"run{seed}", seed=seed)
    return tmp_path / "sweep"


@pytest.mark.parametrize("loose", [["--tolerance", "0.5"], ["--relative"], ["--max-new-divergences", "1"],
                                   ["--tolerance", "0.01"]])
def test_exact_with_a_flag_that_loosens_it_is_refused(loose, sweep, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([str(sweep), str(sweep), "--exact", *loose])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1 and "--exact" in err and loose[0] in err, err


def test_exact_with_a_step_time_gate_is_taken(sweep, capsys):
    """Exact mode leaves timings out: a step-time gate beside it is no contradiction."""
    assert main([str(sweep), str(sweep), "--exact", "--step-time-tolerance", "0.5"]) == 0


def test_the_default_tolerances_still_gate(sweep, capsys):
    assert main([str(sweep), str(sweep)]) == 0
    assert "by more than 0.01 (absolute)" in capsys.readouterr().out


def test_out_in_a_folder_that_does_not_exist_names_the_folder(sweep, tmp_path, capsys):
    out = tmp_path / "nonexistent" / "dir" / "x.md"
    assert main([str(sweep), str(sweep), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"the folder {out.parent} does not exist" in err and ".tmp" not in err, err
    assert not out.parent.exists()


@pytest.mark.parametrize("blank", ["", " "])
@pytest.mark.parametrize("which", ["baseline", "new"])
def test_an_empty_baseline_or_new_is_refused(blank, which, sweep, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # '' would be this folder, the sweep's parent: it holds records to compare
    args = [blank, str(sweep)] if which == "baseline" else [str(sweep), blank]
    assert entry.subcommand("compare", args) == 2
    err = capsys.readouterr().err
    assert err == f"normbench compare: {which.upper()} is empty; name a folder (an unset shell variable?)\n"


def test_exact_with_no_more_divergences_is_taken(sweep, capsys):
    """Hostile C01: --max-new-divergences 0 (the default) beside --exact was refused as loosening the gate."""
    assert main([str(sweep), str(sweep), "--exact", "--max-new-divergences", "0"]) == 0


def test_out_that_is_a_symbolic_link_is_refused_and_the_link_kept(sweep, tmp_path, capsys):
    """Hostile C09: --out LINK replaced the user's link with a regular file holding the summary."""
    (tmp_path / "notes.txt").write_text("mine\n")
    link = tmp_path / "lnk"
    link.symlink_to("notes.txt")
    assert main([str(sweep), str(sweep), "--out", str(link)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a symbolic link" in err, err
    assert link.is_symlink() and (tmp_path / "notes.txt").read_text() == "mine\n"


@pytest.mark.parametrize("argv", [["--help"], ["--bogus"], ["{tmp}/nowhere", "{tmp}"], ["{tmp}", "{tmp}/nowhere"],
                                  ["{tmp}", "{tmp}", "--exact", "--relative"], ["{tmp}", "{tmp}", "--tolerance", "inf"],
                                  ["{tmp}", "{tmp}", "--out", "{tmp}/no/x.md"]])
def test_the_arguments_are_answered_before_pandas_and_scipy_are_imported(argv, tmp_path):
    """The parser and the checks that read no record are compare_command's, which imports neither (the comparison,
    normbench/studies/compare.py, does): a mistyped option, a folder that does not exist or --help took about 2 s
    of their import here; `normbench compare` runs them first."""
    code = ("import sys\nimport normbench.__main__ as entry\nstatus = entry.subcommand('compare', sys.argv[1:])\n"
            "print(status, 'pandas' in sys.modules or 'scipy' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code, *(a.format(tmp=tmp_path) for a in argv)], capture_output=True,
                          text=True, timeout=HANG_S, cwd=ROOT)
    assert done.stdout.splitlines()[-1] == ("0 False" if argv == ["--help"] else "2 False"), (done.stdout, done.stderr)
    assert argv == ["--help"] or done.stderr.count("\n") == 1, done.stderr
    assert not (tmp_path / "no").exists()
