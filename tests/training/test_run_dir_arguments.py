"""`normbench evaluate` and `normbench rerun` say what is wrong with RUN_DIR in one line, exit status 2: a
folder that does not exist (hostile V04) or a sweep's (V03) is not blamed on save_model; an empty RUN_DIR is
refused, not read as the working folder (Z10); a path holding a newline stays on one line (R27)."""

from __future__ import annotations

import pytest

import normbench.__main__ as entry
from tests.report.conftest import write_record

COMMANDS = ("evaluate", "rerun")


def said(name: str, args: list[str], capsys) -> str:
    assert entry.subcommand(name, args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("name", COMMANDS)
def test_a_run_dir_that_does_not_exist_is_said_so(name, tmp_path, capsys):
    err = said(name, [str(tmp_path / "nonexistent")], capsys)
    assert "nonexistent' does not exist" in err and "save_model" not in err


@pytest.mark.parametrize("name", COMMANDS)
def test_a_sweep_folder_is_said_to_be_no_run_and_a_run_is_suggested(name, tmp_path, capsys):
    write_record(tmp_path / "sweep", "0")
    write_record(tmp_path / "sweep", "1", seed=1)
    (tmp_path / "sweep" / "multirun.yaml").write_text("hydra: {}\n")
    err = said(name, [str(tmp_path / "sweep")], capsys)
    assert "is a sweep's folder, not a run's" in err and str(tmp_path / "sweep" / "0") in err
    assert "save_model" not in err


@pytest.mark.parametrize("name", COMMANDS)
def test_a_study_folder_suggests_a_run_of_one_of_its_sweeps(name, tmp_path, capsys):
    write_record(tmp_path / "study" / "selection", "0")
    (tmp_path / "study" / "selection" / "multirun.yaml").write_text("hydra: {}\n")
    err = said(name, [str(tmp_path / "study")], capsys)
    assert "is a sweep's folder, not a run's" in err and str(tmp_path / "study" / "selection" / "0") in err


@pytest.mark.parametrize("name", COMMANDS)
def test_a_folder_with_runs_only_deeper_inside_is_no_sweep_and_none_is_suggested(name, tmp_path, capsys):
    """Like `evaluate /` (hostile X12, X13): runs two or three levels down, in folders that are no sweep's,
    are someone else's; the folder is not searched for them."""
    write_record(tmp_path / "top" / "tmp", "e6")
    write_record(tmp_path / "top" / "home" / "user", "run")
    err = said(name, [str(tmp_path / "top")], capsys)
    assert err.endswith(f"{str(tmp_path / 'top')!r} holds no summary.json: not a run's folder\n"), err


@pytest.mark.parametrize("name", COMMANDS)
def test_a_file_as_run_dir_is_not_a_folder(name, tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    assert "is not a folder" in said(name, [str(tmp_path / "file")], capsys)


@pytest.mark.parametrize("blank", ["", " "])
@pytest.mark.parametrize("name", COMMANDS)
def test_an_empty_run_dir_is_refused(name, blank, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    expected = f"normbench {name}: RUN_DIR is empty; name a folder (an unset shell variable?)\n"
    assert said(name, [blank], capsys) == expected


@pytest.mark.parametrize("name", COMMANDS)
def test_a_run_dir_holding_a_newline_is_echoed_on_one_line(name, tmp_path, capsys):
    assert "no\\nsuch" in said(name, [str(tmp_path / "no\nsuch")], capsys)


def test_a_run_without_its_saved_model_still_blames_save_model(tmp_path, capsys):
    write_record(tmp_path, "run")
    assert "save_model=true" in said("evaluate", [str(tmp_path / "run")], capsys)


def test_rerun_out_at_the_home_folder_itself_is_refused_by_the_shared_rule(tmp_path, monkeypatch, capsys):
    write_record(tmp_path / "runs", "run")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    assert "is your home folder itself" in said("rerun", [str(tmp_path / "runs" / "run"), "--out", f"{home}/"], capsys)
    assert list(home.iterdir()) == []
