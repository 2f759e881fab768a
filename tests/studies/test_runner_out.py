"""`normbench study` and `normbench tune` refuse an --out no round may run in, in one line and exit status 2,
before any job runs or any folder is made: one holding ``${`` (hostile O03, U03: refused late, after round 1
or the selection had run), your home folder itself (R15's rule, shared)."""

from __future__ import annotations

import pytest

import normbench.__main__ as entry
from normbench.studies import study, tune

TINY = ["steps=2", "eval_every=1", "task=adding", "task.n_train=64"]


def no_job_may_run(monkeypatch):
    def ran(*args, **kwargs):
        raise AssertionError("a job ran")

    monkeypatch.setattr(study, "_normbench", ran)
    monkeypatch.setattr(tune, "_normbench", ran)


def refused(name, argv, capsys, monkeypatch) -> str:
    no_job_may_run(monkeypatch)
    if name == "study":
        assert study.main(argv) == 2
    else:
        with pytest.raises(SystemExit) as exit_:
            tune.main(argv)
        assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("name", ["study", "tune"])
def test_an_out_holding_an_interpolation_is_refused_before_any_job(name, tmp_path, monkeypatch, capsys):
    out = tmp_path / "d${oc.env:HOME}"
    err = refused(name, ["--out", str(out), "norm=ln,none", *TINY], capsys, monkeypatch)
    assert "holds ${" in err and "--out" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["study", "tune"])
def test_an_out_at_the_home_folder_itself_is_refused(name, tmp_path, monkeypatch, capsys):
    """checks.out_folder_problem's rule (tested at the root in tests/report, where nothing would be run)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    err = refused(name, ["--out", f"{tmp_path}/", "norm=ln,none", *TINY], capsys, monkeypatch)
    assert "home folder" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("blank", ["", " "])
def test_an_empty_claims_folder_is_refused(blank, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    no_job_may_run(monkeypatch)
    assert entry.subcommand("study", ["--claims", blank, *TINY]) == 2
    assert capsys.readouterr().err == "normbench study: --claims is empty; name a folder (an unset shell variable?)\n"
    assert list(tmp_path.iterdir()) == []
