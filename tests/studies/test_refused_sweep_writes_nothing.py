"""A refused sweep writes nothing (hostile h25 g011, xe001): one refused once Hydra's sweeper had written its
multirun.yaml (a sweep file sweeping an unknown key, refused as the launcher composes the first job) takes that
file and the folders it made back; a folder that was there before keeps what it held. A local launcher's
``hydra.launcher.n_jobs=0`` is refused before the sweeper writes anything, in a line naming the key."""

from __future__ import annotations

from tests.conftest import TINY, TINY_TASK

BOGUS = "# @package _global_\nhydra:\n  mode: MULTIRUN\n  sweeper:\n    params:\n      bogus_key: 1,2\n"


def test_a_sweep_of_an_unknown_key_leaves_no_sweep_folder(cli, tmp_path, monkeypatch):
    (tmp_path / "swp").mkdir()
    (tmp_path / "swp" / "bog.yaml").write_text(BOGUS)
    monkeypatch.setenv("NORMBENCH_SWEEPS", str(tmp_path / "swp"))
    code, _, err = cli("+sweep=bog", *TINY, *TINY_TASK, "hydra.sweep.dir=sw/deep", "report=false")
    assert code == 2 and err.count("\n") == 1 and "bogus_key" in err, err
    assert not (tmp_path / "sw").exists()


def test_a_refused_sweep_keeps_a_folder_that_was_there(cli, tmp_path, monkeypatch):
    (tmp_path / "swp").mkdir()
    (tmp_path / "swp" / "bog.yaml").write_text(BOGUS)
    (tmp_path / "sw").mkdir()
    (tmp_path / "sw" / "notes.txt").write_text("mine")
    monkeypatch.setenv("NORMBENCH_SWEEPS", str(tmp_path / "swp"))
    code, _, err = cli("+sweep=bog", *TINY, *TINY_TASK, "hydra.sweep.dir=sw", "report=false")
    assert code == 2, err
    assert sorted(p.name for p in (tmp_path / "sw").iterdir()) == ["notes.txt"]
    (tmp_path / "sw" / "notes.txt").unlink()
    code, _, err = cli("+sweep=bog", *TINY, *TINY_TASK, "hydra.sweep.dir=sw", "report=false")
    assert code == 2 and (tmp_path / "sw").is_dir() and not any((tmp_path / "sw").iterdir()), err  # not made here


def test_no_workers_is_refused_naming_the_key_before_any_file(cli, tmp_path):
    code, _, err = cli("-m", *TINY, *TINY_TASK, "seed=0,1", "hydra/launcher=local", "hydra.launcher.n_jobs=0",
                       "hydra.sweep.dir=sw", "report=false")
    assert code == 2 and err.count("\n") == 1 and "hydra.launcher.n_jobs" in err, err
    assert not (tmp_path / "sw").exists()


def test_a_sweep_whose_every_job_cannot_resolve_leaves_nothing(cli, tmp_path):
    """Hostile h26 w16: every job's interpolation overflowed: one line, exit 2, and empty 0/, 1/ and a multirun.yaml
    were left; nothing ran, so nothing stays."""
    code, _, err = cli("-m", *TINY, *TINY_TASK, "seed=0,1", "lr=${ceil_div:1e400,1}", "hydra.sweep.dir=sw/deep",
                       "report=false")
    assert code == 2 and err.count("\n") == 1 and "OverflowError" in err and "full_key: lr" in err, err
    assert not (tmp_path / "sw").exists()
