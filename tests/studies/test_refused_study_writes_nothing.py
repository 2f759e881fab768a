"""A refused study writes nothing (hostile h25 a013, a022, a025, a014, as016): its --out (or the default
studies/DATE/TIME) is made only once every check before the rounds has passed, and a round that refuses the
overrides takes back the folders the study made; a folder that was there before stays. ``+sweep=NAME`` naming no
sweep file is said as such, with where the study looked, not as a study of one arm."""

from __future__ import annotations

import pytest

from normbench.studies import study


@pytest.fixture
def refused(tmp_path, monkeypatch, capsys):
    """``normbench study ARGS`` run in an empty folder: its standard error, after checking it was refused."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NORMBENCH_SWEEPS", raising=False)

    def _run(*argv):
        assert study.main(list(argv)) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1, err
        return err
    return _run


@pytest.mark.parametrize("argv", [["--budget", "1m"], ["norm=ln,rms", "--out", "st/deep", "steps=0"],
                                  ["norm=ln,rms", "--out", "st", "-m"], ["+sweep=nosuch", "--out", "st"]],
                         ids=["one arm, default out", "no job can run", "-m", "no such sweep file"])
def test_a_refused_study_leaves_no_folder(argv, refused, tmp_path):
    refused(*argv)
    assert list(tmp_path.iterdir()) == []


def test_a_missing_sweep_file_is_named_with_where_the_study_looked(refused, tmp_path, monkeypatch):
    err = refused("+sweep=nosuch")
    assert "Could not find sweep/nosuch" in err and "shipped sweeps" in err and "two arms" not in err, err
    (tmp_path / "mine").mkdir()
    monkeypatch.setenv("NORMBENCH_SWEEPS", str(tmp_path / "mine"))
    err = refused("+sweep=nosuch")
    assert "NORMBENCH_SWEEPS" in err and str(tmp_path / "mine") in err, err


def test_a_round_refusing_the_overrides_takes_back_the_folders_the_study_made(refused, tmp_path, monkeypatch):
    def refusing_round(overrides, seeds, folder, *args, **kwargs):
        assert folder.parent.is_dir()  # the study made its --out before the round
        return 2  # as a child refusing its input, having said its own line
    monkeypatch.setattr(study, "_normbench", refusing_round)
    assert study.main(["norm=ln,rms", "--out", "st/deep"]) == 2
    assert not (tmp_path / "st").exists()
    (tmp_path / "kept").mkdir()
    assert study.main(["norm=ln,rms", "--out", "kept"]) == 2
    assert (tmp_path / "kept").is_dir()  # not this study's to remove
