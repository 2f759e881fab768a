"""A local launcher's workers: at most the sweep's jobs and the cores (issue 50)."""

from __future__ import annotations

import json

import pytest
from hydra import compose as hydra_compose
from hydra import initialize_config_dir

from normbench.configuration.config import config_dir
from normbench.studies import workers
from tests.conftest import TINY, TINY_TASK


def hydra_config(*overrides):
    with initialize_config_dir(str(config_dir()), version_base="1.3"):
        return hydra_compose("config", overrides=list(overrides), return_hydra_config=True)


@pytest.mark.parametrize(("asked", "jobs", "cores", "allowed"), [
    (100000, 1, 2, 1), (100000, 50, 2, 2), (4, 3, 16, 3), (2, 10, 16, 2), (-1, 1, 2, -1), (8, None, 4, 4)])
def test_the_count_is_cut_to_jobs_and_cores(asked, jobs, cores, allowed):
    assert workers.bounded(asked, jobs, cores) == allowed


def test_the_callback_cuts_a_composed_launcher(monkeypatch):
    monkeypatch.setattr(workers, "cores", lambda: 2)
    config = hydra_config("hydra/launcher=local", "hydra.launcher.n_jobs=100000")
    config.hydra.overrides.task = ["norm=ln,rms", "seed=0,1,2"]  # what Hydra puts there from the command line
    workers.BoundWorkers().on_multirun_start(config)
    assert config.hydra.launcher.n_jobs == 2
    config = hydra_config("hydra/launcher=local", "hydra.launcher.n_jobs=100000")
    config.hydra.overrides.task = ["seed=0"]
    workers.BoundWorkers().on_multirun_start(config)
    assert config.hydra.launcher.n_jobs == 1


def test_a_cluster_launcher_keeps_its_limits():
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    config = hydra_config("hydra/launcher=slurm")
    before = config.hydra.launcher.array_parallelism
    workers.BoundWorkers().on_multirun_start(config)
    assert config.hydra.launcher.array_parallelism == before


def test_a_sweep_of_one_job_with_a_hundred_thousand_workers_finishes(cli, tmp_path):
    code, _, err = cli("-m", *TINY, *TINY_TASK, "hydra/launcher=local", "hydra.launcher.n_jobs=100000", "report=false",
                       "progress=false", "hydra.sweep.dir=sweep")
    assert code == 0, err
    assert json.loads((tmp_path / "sweep" / "0" / "summary.json").read_text())["status"] == "ok"
