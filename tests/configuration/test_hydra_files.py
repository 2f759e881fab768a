"""The files and folders Hydra makes, read as Hydra made them (normbench/configuration/hydra_files.py)."""

import os
import subprocess
import sys

import pytest
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig

from normbench.configuration import hydra_files
from tests.waiting import HANG_S


def _main(monkeypatch, *args):
    from normbench.studies import app

    monkeypatch.setattr(sys, "argv", ["normbench", *args])
    HydraConfig.instance().cfg = None  # as in a new process: no job's config is left from an earlier test
    try:
        app.main()
        return 0
    except SystemExit as exit_:
        return exit_.code or 0
    finally:
        GlobalHydra.instance().clear()


@pytest.mark.parametrize("raw", ["/a/p${oc.env:HOME}", "/a/p\\${oc.env:HOME}/x", "/a/p\\\\${x}", "/a/q\\z",
                                 "/a/p\\\\\\${y}z${w}"])
def test_an_escaped_path_reads_back_as_it_is(raw):
    from omegaconf import OmegaConf

    from normbench.configuration.hydra_files import escaped

    config = OmegaConf.create({"cwd": escaped(raw), "below": "${cwd}/r"})
    assert config.cwd == raw and config.below == raw + "/r"


def test_a_folder_named_like_an_interpolation_keeps_the_record_in_it(tmp_path, monkeypatch, tiny_args):
    """h15 B1 (U12): from a cwd named p${oc.env:NB_Z}, the record went where the name resolved to."""
    cwd = tmp_path / "a" / "p${oc.env:NB_Z}"
    cwd.mkdir(parents=True)
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("NB_Z", "/../../esc")  # resolved: tmp_path/esc
    assert _main(monkeypatch, *tiny_args) == 0
    (summary,) = (cwd / "outputs").rglob("summary.json")
    assert (summary.parent / "normbench.log").is_file()
    assert not (tmp_path / "esc").exists()
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == [cwd.name]


def test_a_sweep_from_such_a_folder_is_not_refused(tmp_path, monkeypatch, tiny_args):
    """h15 B1 (U04): "hydra.sweep.subdir puts the job in …, outside the sweep directory"."""
    cwd = tmp_path / "p${oc.env:NB_Z}"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("NB_Z", "zz")
    assert _main(monkeypatch, "-m", *tiny_args, "norm=ln,rms", "hydra.sweep.dir=s", "report=false") == 0
    assert len(list((cwd / "s").rglob("summary.json"))) == 2
    assert not (tmp_path / "pzz").exists()


def test_an_unclosed_interpolation_in_the_cwd_is_one_line(tmp_path, monkeypatch, capsys):
    """h15 B1 (U02): Hydra cannot store such a cwd; the line says so, not "ConfigCompositionException"."""
    cwd = tmp_path / "p${x"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    assert hydra_files.unstorable_cwd() is not None
    assert _main(monkeypatch, "steps=2") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "does not close" in err
    assert list(cwd.iterdir()) == []


@pytest.mark.parametrize("name", ["p${oc.env:NB_Z}", "p\\${oc.env:NB_Z}", "p\\\\${oc.env:NB_Z}"])
def test_hydra_runtime_cwd_is_the_folder_as_it_is(tmp_path, monkeypatch, tiny_args, name):
    """h15 B1: ${hydra:runtime.cwd} in hydra.run.dir / hydra.sweep.dir resolved the cwd's own ${...} again;
    h16 N1: a backslash before it in the folder's name was read as the escape, and the rest resolved."""
    cwd = tmp_path / "a" / name
    cwd.mkdir(parents=True)
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("NB_Z", "/../../esc")
    assert _main(monkeypatch, *tiny_args, "hydra.run.dir=${hydra:runtime.cwd}/x") == 0
    assert (cwd / "x" / "summary.json").is_file()
    assert _main(monkeypatch, "-m", *tiny_args, "norm=ln,rms", "hydra.sweep.dir=${hydra:runtime.cwd}/s",
                 "report=false") == 0
    assert len(list((cwd / "s").rglob("summary.json"))) == 2
    assert not (tmp_path / "esc").exists()


@pytest.mark.parametrize("command", [["steps=2"], ["study", "norm=ln,rms", "steps=2"]], ids=["run", "study"])
def test_a_deleted_working_folder_is_one_line_before_anything_is_made(tmp_path, command):
    # a shell standing in a folder deleted under it: os.getcwd() raises, which was a 23-44 line traceback
    # (hostile h31 e16, e27); the run and the study say so in one line and make nothing
    gone = tmp_path / "gone"
    gone.mkdir()
    script = (f"import os, runpy, sys; os.chdir({str(gone)!r}); os.rmdir({str(gone)!r}); "
              f"sys.argv = ['normbench', *{command!r}]; runpy.run_module('normbench', run_name='__main__')")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=HANG_S,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "deleted or moved" in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == []
