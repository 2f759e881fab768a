"""studies/lean_job.py: Hydra's run_job with two copies of a job's config, not four. Each job run through it must
look, to the task, to the launcher and on disk, as it does through Hydra's own run_job."""

from __future__ import annotations

import copy
import os
import shutil

import pytest
from hydra._internal.callbacks import Callbacks
from hydra._internal.core_plugins import basic_launcher
from hydra._internal.hydra import Hydra
from hydra._internal.utils import create_config_search_path
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from hydra.core.utils import HydraContext, JobStatus
from hydra.core.utils import run_job as hydras_run_job
from hydra.types import RunMode
from omegaconf import OmegaConf, open_dict

from normbench.studies import lean_job
from tests.conftest import TINY, TINY_TASK
from tests.waiting import HANG_S  # waits end on a hang, never on a slow machine


@pytest.fixture
def sweep(tmp_path, monkeypatch):
    """(compose(overrides, num) -> a job's config as the basic launcher hands it to run_job, HydraContext)."""
    monkeypatch.chdir(tmp_path)
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "config.yaml").write_text("a: 1\nb:\n  c: ${a}\n  d: [1, 2]\nout: ${hydra:runtime.output_dir}\n"
                                      "name: ${hydra:job.name}\nenv: null\n")
    GlobalHydra.instance().clear()
    hydra = Hydra.create_main_hydra2(task_name="lean", config_search_path=create_config_search_path(str(conf)))

    def context(*extra):
        master = hydra.compose_config("config", overrides=[f"hydra.sweep.dir={tmp_path / 'sw'}", *extra],
                                      run_mode=RunMode.MULTIRUN)
        HydraConfig.instance().set_config(master)

        def compose(overrides, num):
            config = hydra.config_loader.load_sweep_config(master, list(overrides))
            with open_dict(config):
                config.hydra.job.id = config.hydra.job.num = num
            return config

        return compose, HydraContext(config_loader=hydra.config_loader, callbacks=Callbacks(master))

    yield context
    GlobalHydra.instance().clear()


def _task(seen, fail=False):
    def task(cfg):
        seen.append({"yaml": OmegaConf.to_yaml(cfg, resolve=True), "struct": OmegaConf.is_struct(cfg),
                     "readonly": OmegaConf.is_readonly(cfg), "keys": list(cfg), "cwd": os.getcwd(),
                     "hydra": OmegaConf.to_yaml(HydraConfig.instance().cfg),
                     "output_dir": HydraConfig.get().runtime.output_dir, "env": os.environ.get("LEAN_JOB_X")})
        if fail:
            raise ValueError("this job fails")
        return cfg.a * 10

    return task


def _lines(path):
    return path.read_text().splitlines() if path.exists() else []


def _read_files(folder):
    hydra_dir = folder / ".hydra"
    return {p.name: p.read_text() for p in sorted(hydra_dir.iterdir())} if hydra_dir.is_dir() else {}


def _outcome(ret, seen, config, folder):
    return {"cfg": OmegaConf.to_yaml(ret.cfg), "cfg_keys": list(ret.cfg), "cfg_struct": OmegaConf.is_struct(ret.cfg),
            "hydra_cfg": OmegaConf.to_yaml(ret.hydra_cfg), "overrides": ret.overrides,
            "working_dir": ret.working_dir, "status": ret.status, "task_name": ret.task_name,
            "return": repr(ret._return_value), "seen": seen, "config_after": OmegaConf.to_yaml(config),
            "config_keys": list(config), "files": _read_files(folder),
            "hydra_root": ret.hydra_cfg.hydra._get_parent() is ret.hydra_cfg}


class JobEndProbe:
    """A Hydra callback that reads the JobReturn's hydra_cfg at the job's end, as a user's callback may, and writes
    what it read to ``out`` (Hydra instantiates it from its own import of this module)."""

    def __init__(self, out):
        self.out = out

    def on_job_end(self, config, job_return, **kwargs):
        try:
            seen = str(job_return.hydra_cfg.hydra.run.dir)
        except Exception as e:  # noqa: BLE001 - what the callback sees is the result
            seen = type(e).__name__
        with open(self.out, "a") as out:
            out.write(seen + "\n")


@pytest.mark.parametrize("extra, fail", [
    ((), False),  # Hydra's legacy default (no version_base here): chdir into the job's folder, with its warning
    (("hydra.job.chdir=false",), False),
    (("hydra.output_subdir=null",), False),
    (("+hydra.job.env_set.LEAN_JOB_X=1",), False),
    (("hydra.job.chdir=false", "hydra.output_subdir=null"), True),
    # the hydra node's copy in the JobReturn is its own root, as Hydra's deep copy: an interpolation into the user's
    # config from env_set or chdir fails there under both (hostile review of 3fdda0a: it ran here), and a callback
    # reading it at the job's end sees what Hydra's sees
    (("+hydra.job.env_set.LEAN_JOB_X=${a}",), False),
    (("hydra.job.chdir=${b.c}",), False),
    (("hydra.run.dir=out/${name}", "+hydra.callbacks.probe._target_=tests.studies.test_lean_job.JobEndProbe",
      "+hydra.callbacks.probe.out=AT_END"), False),
])
def test_a_job_run_lean_looks_as_through_hydras_run_job(sweep, tmp_path, extra, fail):
    compose, context = sweep(*(e.replace("AT_END", str(tmp_path / "at_end.txt")) for e in extra))
    outcomes = []
    for run in (hydras_run_job, lean_job.run_job):
        shutil.rmtree(tmp_path / "sw", ignore_errors=True)  # each run's folder and .hydra files its own
        config, seen = compose(["a=2", "b.d=[3]"], 4), []
        before, cwd = HydraConfig.instance().cfg, os.getcwd()
        (tmp_path / "at_end.txt").unlink(missing_ok=True)
        try:
            ret = run(task_function=_task(seen, fail), config=config, job_dir_key="hydra.sweep.dir",
                      job_subdir_key="hydra.sweep.subdir", hydra_context=context)
        except Exception as e:  # noqa: BLE001 - a run_job that raises: the same error under both
            outcomes.append({"raised": type(e).__name__, "seen": seen})
        else:
            at_end = _lines(tmp_path / "at_end.txt")
            outcomes.append({**_outcome(ret, seen, config, tmp_path / "sw" / "4"), "at_end": at_end})
        assert HydraConfig.instance().cfg is before and os.getcwd() == cwd
    hydras, lean = outcomes
    assert lean == hydras
    if "raised" in lean:
        assert any("${" in e for e in extra) and lean["raised"].startswith("Interpolation"), lean
        return
    if any("callbacks" in e for e in extra):  # the callback ran, and read what Hydra's reads
        assert lean["at_end"] == hydras["at_end"] and len(lean["at_end"]) == 1, lean["at_end"]
    assert lean["status"] == (JobStatus.FAILED if fail else JobStatus.COMPLETED)
    assert lean["seen"][0]["output_dir"] == str(tmp_path / "sw" / "4") and "out: " + str(tmp_path) in lean["seen"][0]["yaml"]
    assert ("config.yaml" in lean["files"]) == ("hydra.output_subdir=null" not in extra)


def test_the_job_config_keeps_its_hydra_node_in_place_and_the_tasks_copy_is_its_own(sweep):
    compose, _ = sweep()
    config = compose(["a=3"], 0)
    keys, text = list(config), OmegaConf.to_yaml(config)
    task_cfg = lean_job.without_hydra(config)
    assert list(config) == keys and OmegaConf.to_yaml(config) == text
    expected = copy.deepcopy(config)
    with open_dict(expected):
        del expected["hydra"]
    assert OmegaConf.to_yaml(task_cfg) == OmegaConf.to_yaml(expected) and list(task_cfg) == list(expected)
    task_cfg.b.d.append(9)
    assert list(config.b.d) == [1, 2]  # a deep copy: the job's config is not the task's


def test_one_copy_of_the_hydra_node_a_job(sweep, monkeypatch):
    compose, context = sweep()
    calls = []
    real = HydraConfig.set_config
    monkeypatch.setattr(HydraConfig, "set_config", lambda self, cfg: calls.append(1) or real(self, cfg))
    lean_job.run_job(task_function=_task([]), config=compose([], 0), job_dir_key="hydra.sweep.dir",
                     job_subdir_key="hydra.sweep.subdir", hydra_context=context)
    assert len(calls) == 1  # Hydra's sets it twice, and deep-copies it once more for the JobReturn


def test_a_real_sweep_runs_its_jobs_through_the_lean_run_job(cli, tmp_path, monkeypatch):
    """Also after a joblib sweep whose one worker ran its job in this process: there Hydra rebuilt its plugins, and
    its scan ran basic_launcher's module again, Hydra's run_job with it (the next basic sweep here ran Hydra's)."""
    code, _, err = cli("-m", *TINY, *TINY_TASK, "hydra/launcher=local", "hydra.launcher.n_jobs=1",
                       "hydra.sweep.dir=one", "report=false", "steps=2")
    assert code == 0, err
    copies = []
    real = lean_job.without_hydra
    monkeypatch.setattr(lean_job, "without_hydra", lambda config: copies.append(1) or real(config))
    code, _, err = cli("-m", *TINY, *TINY_TASK, "seed=0,1", "hydra.sweep.dir=sw", "report=false", "steps=2")
    assert code == 0, err
    assert len(copies) == 2 and basic_launcher.run_job is lean_job.run_job


def test_a_joblib_worker_runs_its_jobs_through_it_and_importing_the_app_loads_no_joblib():
    """A worker loads the joblib launcher to unpickle its job, then the app with the task function: the app's install
    patches the launcher it finds. The app alone does not load joblib (its import warns without temporary files)."""
    import subprocess
    import sys

    worker = ("import hydra_plugins.hydra_joblib_launcher._core as core\nimport normbench.studies.app\n"
              "from normbench.studies import lean_job\nassert core.run_job is lean_job.run_job\n")
    alone = "import sys\nimport normbench.studies.app\nassert 'joblib' not in sys.modules, 'joblib loaded'\n"
    for code in (worker, alone):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=HANG_S)
        assert done.returncode == 0, done.stderr
