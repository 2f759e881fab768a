"""A local launcher's workers: at most the sweep's jobs and the cores (issue 50)."""

from __future__ import annotations

import json
import os

import pytest
from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from omegaconf import OmegaConf

from normbench.configuration.config import config_dir
from normbench.studies import workers
from tests.conftest import TINY, TINY_TASK


def hydra_config(*overrides):
    with initialize_config_dir(str(config_dir()), version_base="1.3"):
        return hydra_compose("config", overrides=list(overrides), return_hydra_config=True)


@pytest.mark.parametrize(("asked", "jobs", "cores", "allowed"), [
    (100000, 1, 2, 1), (100000, 50, 2, 2), (4, 3, 16, 3), (2, 10, 16, 2), (8, None, 4, 4),
    # negative: counted back from the cores first, as joblib counts them (-1 every core, -2 all but one)
    (-1, 1, 2, 1), (-1, 8, 2, 2), (-2, 8, 2, 1), (-2, None, 16, 15), (-3, 4, 16, 4), (-100, 5, 4, 1)])
def test_the_count_is_cut_to_jobs_and_cores(asked, jobs, cores, allowed, monkeypatch):
    import joblib

    monkeypatch.setattr(joblib, "cpu_count", lambda: cores)  # joblib's count of the cores, which a negative one reads
    assert workers.bounded(asked, jobs, cores) == allowed


@pytest.mark.parametrize("limit", [None, "1"])
@pytest.mark.parametrize("n_jobs", [1, 3, -1, -2, -3, -64])
def test_a_count_is_the_one_joblib_starts(n_jobs, limit, monkeypatch):
    """joblib's own arithmetic on its own count of the cores, which a CPU quota or LOKY_MAX_CPU_COUNT lowers (not
    "every negative count is every core", nor counted from the affinity mask alone)."""
    import joblib

    if limit:
        monkeypatch.setenv("LOKY_MAX_CPU_COUNT", limit)
    assert workers.joblib_count(n_jobs) == joblib.effective_n_jobs(n_jobs)


def test_each_sweep_in_one_process_gives_its_jobs_its_own_study_and_workers(cli, tmp_path):
    """A job composes its config from the command line again, so its n_jobs is the count as typed (8 here),
    and loky keeps a sweep's workers, with the environment they started with, for the next sweep in the
    process: the records said 8 parallel jobs where 2 ran, and the second sweep's said the first's study."""
    if workers.bounded(-1, 2, workers.cores()) < 2:
        pytest.skip("one worker: joblib runs the jobs in this process, and no loky worker is kept")
    for name, swept, n_jobs in (("one", "norm=ln,rms", 8), ("two", "lr=0.01,0.02", -1)):  # 2 workers each
        code, _, err = cli("-m", *TINY, *TINY_TASK, swept, "hydra/launcher=local", f"hydra.launcher.n_jobs={n_jobs}",
                           "report=false", "progress=false", f"hydra.sweep.dir={name}")
        assert code == 0, err
    for name, swept, ran in (("one", ["norm"], 2), ("two", ["lr"], 2)):
        for job in (0, 1):
            record = json.loads((tmp_path / name / str(job) / "summary.json").read_text())
            assert record["study"]["swept"] == swept, name
            assert record["environment"]["parallel_jobs"] == ran, name
    assert workers.SWEEP_WORKERS not in os.environ


@pytest.mark.parametrize(("sweeper", "side_by_side"), [
    ({"_target_": "hydra._internal.core_plugins.basic_sweeper.BasicSweeper", "max_batch_size": None}, 6),
    ({"_target_": "hydra._internal.core_plugins.basic_sweeper.BasicSweeper", "max_batch_size": 4}, 4),
    ({"_target_": "hydra._internal.core_plugins.basic_sweeper.BasicSweeper", "max_batch_size": 50}, 6),
    # Optuna's sweeper hands its launcher n_jobs trials at a time (fewer once fewer are left)
    ({"_target_": "hydra_plugins.hydra_optuna_sweeper.optuna_sweeper.OptunaSweeper", "n_jobs": 1, "n_trials": 12}, 1),
    ({"_target_": "hydra_plugins.hydra_optuna_sweeper.optuna_sweeper.OptunaSweeper", "n_jobs": 8, "n_trials": 3}, 3),
    ({"_target_": "some.other.Sweeper"}, None)])
def test_the_jobs_side_by_side_are_the_sweepers_batch(sweeper, side_by_side):
    config = OmegaConf.create({"hydra": {"sweeper": sweeper, "overrides": {"task": ["norm=ln,rms", "seed=0,1,2"]}}})
    assert workers.side_by_side(config) == side_by_side


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
    assert os.environ.pop(workers.SWEEP_WORKERS) == "1"  # for its jobs; on_multirun_end takes it back


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
