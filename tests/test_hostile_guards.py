"""Hostile pass 13: what the command line may not take away or point at (h13 B1, B2, B3, B11, B12)."""

import os
import subprocess
import sys

import pytest

from normbench.configuration.config import command_line_guard
from tests.waiting import HANG_S

# B3 (D01, D02, D03, O07, X20, E12): a deletion has no '=' and passed the code gate, dropping the file guard
GUARD_DELETIONS = ["~hydra.callbacks.hydra_files", "~hydra.callbacks.orphans", "~hydra.callbacks.study",
                   "~hydra.callbacks", "~hydra", "~hydra.callbacks.hydra_files=",
                   "~hydra.callbacks.hydra_files={_target_:normbench.configuration.hydra_files.CheckHydraFiles}",
                   "~hydra/job_logging", "~hydra.job_logging.handlers.file", "~hydra.hydra_logging",
                   "~hydra.sweep.dir", "~hydra.run", "~hydra.output_subdir", "~paths.multirun", "~paths"]


@pytest.mark.parametrize("override", GUARD_DELETIONS)
def test_deleting_a_guard_is_refused_in_one_line(override, cli, tmp_path):
    assert command_line_guard([override]) is not None
    code, _, err = cli("-m", override, "steps=2", "task=adding", "task.n_train=64", "report=false",
                       f"hydra.sweep.dir={tmp_path / 'sw'}")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "remove" in err, err
    assert not (tmp_path / "sw").exists()


@pytest.mark.parametrize("override", ["~tags", "~hydra.job.chdir", "~logger", "hydra.callbacks_x=1", "~pathsx"])
def test_other_deletions_are_not_guards(override):
    assert command_line_guard([override]) is None


def test_allow_code_does_not_open_a_guard(cli, tmp_path):
    code, _, err = cli("--allow-code", "-m", "~hydra.callbacks.hydra_files", "steps=2",
                       f"hydra.sweep.dir={tmp_path / 's'}")
    assert code == 2 and "remove" in err.strip().splitlines()[-1], err
    assert not (tmp_path / "s").exists()


# B1, B2 (O01-O04, O06, O08, O10): a run's or sweep's folder at the filesystem's root or the home folder itself.
# The root is checked on the rule alone: a command here would write at / on a tree without the fix.
@pytest.mark.parametrize("settings", [{"paths": {"outputs": "/"}}, {"paths": {"outputs": "//"}},
                                      {"paths": {"outputs": "${oc.env:NB_H13_EMPTY}/"}},
                                      {"paths": {"outputs": "../../../../../../../../../../.."}},
                                      {"hydra": {"run": {"dir": "/"}}}, {"hydra": {"sweep": {"dir": "//"}}},
                                      {"paths": {"multirun": "/"}}])
def test_a_folder_at_the_root_is_refused(settings, monkeypatch, tmp_path):
    from omegaconf import OmegaConf

    from normbench.configuration.hydra_files import Refused, _root_or_home

    monkeypatch.setenv("NB_H13_EMPTY", "")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(Refused, match="filesystem's root"):
        _root_or_home(OmegaConf.create(settings),
                      ("paths.outputs", "paths.multirun", "hydra.run.dir", "hydra.sweep.dir"))


def test_a_folder_below_the_root_passes(monkeypatch, tmp_path):
    from omegaconf import OmegaConf

    from normbench.configuration.hydra_files import _root_or_home

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    _root_or_home(OmegaConf.create({"paths": {"outputs": "/tmp/x", "multirun": f"{tmp_path}/home/m"}}),
                  ("paths.outputs", "paths.multirun"))


@pytest.fixture
def home(tmp_path, monkeypatch):
    folder = tmp_path / "home"
    (folder / "sub").mkdir(parents=True)
    (folder / "notes.txt").write_text("mine\n")
    monkeypatch.setenv("HOME", str(folder))
    return folder


def _only_notes(home):
    return sorted(p.name for p in home.iterdir()) == ["notes.txt", "sub"] and not any((home / "sub").iterdir())


@pytest.mark.parametrize("args", [["-m", "hydra.sweep.dir=HOME"], ["-m", "hydra.sweep.dir=HOME/"],
                                  ["-m", "paths.multirun=HOME"], ["-m", "hydra.sweep.dir=${oc.env:HOME}"],
                                  ["hydra.run.dir=HOME"], ["paths.outputs=HOME/sub/.."], ["-m", "paths.multirun=.."]])
def test_a_folder_at_home_itself_is_refused(args, home, cli, monkeypatch):
    args = [a.replace("HOME", str(home)) if "oc.env" not in a else a for a in args]
    cli_dir = home / "sub"
    monkeypatch.chdir(cli_dir)
    from normbench.studies import app

    monkeypatch.setattr("sys.argv", ["normbench", *args, "steps=2", "task=adding", "task.n_train=64", "report=false"])
    try:
        app.main()
        code = 0
    except SystemExit as done:
        code = done.code
    finally:
        from hydra.core.global_hydra import GlobalHydra

        GlobalHydra.instance().clear()
    assert code == 2 and _only_notes(home)


def test_an_unset_sweep_folder_is_one_line(cli, tmp_path, monkeypatch):
    monkeypatch.delenv("NB_H13_UNSET", raising=False)
    code, _, err = cli("-m", "steps=2", "hydra.sweep.dir=${oc.env:NB_H13_UNSET}")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "hydra.sweep.dir" in err, err


@pytest.mark.parametrize("entry", ["pkg://os", "file:///nonexistent-h13-folder"])
def test_a_search_path_hydra_cannot_read_is_one_line(entry, cli, tmp_path):
    """Hostile h13 X24: Hydra's raw UserWarning (2 lines, `warnings.warn(`), then a run without the search path."""
    code, _, err = cli("steps=2", "task=adding", "task.n_train=64", f"hydra.searchpath=[{entry}]",
                       f"hydra.run.dir={tmp_path / 'run'}")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "hydra.searchpath" in err, err
    assert "warnings.warn" not in err and not (tmp_path / "run").exists()


@pytest.mark.parametrize("multirun, key", [(False, "hydra.run.dir"), (True, "hydra.sweep.dir"), (False, "paths.outputs")])
def test_hydras_own_resolver_in_a_folder_still_runs(tmp_path, multirun, key):
    """Hostile h14 H23: the root/home check resolved the folder before Hydra had set its config, so
    ${hydra:runtime.cwd} was refused ("HydraConfig was not set"); it worked before the check existed."""
    env = {**os.environ, "HOME": str(tmp_path / "home"), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-m", "normbench", *(["-m", "seed=0", "report=false"] if multirun else []),
                           "steps=2", "eval_every=1", "task=adding", "task.n_train=64",
                           f"{key}=${{hydra:runtime.cwd}}/there"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=HANG_S)
    assert done.returncode == 0, done.stderr[-2000:]
    assert list((tmp_path / "there").rglob("summary.json")), sorted(p.name for p in tmp_path.rglob("*"))[:20]
