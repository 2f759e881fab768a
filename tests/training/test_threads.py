"""threads=0: the cores other work leaves free, shared among the jobs side by side. A run on a loaded
machine must not start more torch threads than there are free cores (the default run at load 10 on
2 cores: 259 ms/step with 2 threads, 21.6 with 1)."""

import pytest

from normbench.checks import cores
from normbench.training import machine
from normbench.training.run import free_cores_for, threads_for


@pytest.mark.parametrize("cores, load, expected", [(2, 0.1, 2), (2, 1.2, 1), (2, 12.0, 1), (16, 3.0, 13), (4, 4.4, 1)])
def test_free_cores_are_the_cores_less_the_load(monkeypatch, cores, load, expected):
    monkeypatch.setattr(machine, "cores", lambda: cores)
    monkeypatch.setattr(machine, "load_1m", lambda: load)
    assert machine.free_cores() == expected


def test_no_load_average_leaves_the_count_to_the_cores(monkeypatch):
    monkeypatch.setattr(machine, "load_1m", lambda: None)
    assert machine.free_cores() is None and threads_for(0, 1, None) >= 1


def test_the_thread_count_is_the_share_of_cores_capped_by_the_free_ones(monkeypatch):
    monkeypatch.setattr("os.sched_getaffinity", lambda _: set(range(8)), raising=False)
    assert threads_for(0, 1, None) == 8 and threads_for(0, 2, None) == 4  # the old rule where no load is known
    assert threads_for(0, 1, 3) == 3 and threads_for(0, 2, 8) == 4 and threads_for(0, 4, 1) == 1
    assert threads_for(5, 1, 1) == 5  # a count the user set is kept


def test_a_sweeps_jobs_read_the_count_taken_when_it_started(monkeypatch, tmp_path):
    monkeypatch.setattr(machine, "load_1m", lambda: 99.0)  # the sweep's own earlier jobs count for nothing
    monkeypatch.setenv(machine.SWEEP_FREE_CORES, "2")
    assert free_cores_for(tmp_path) == 2 and free_cores_for(None) == 1
    monkeypatch.setenv(machine.SWEEP_FREE_CORES, "x")
    assert free_cores_for(tmp_path) is None  # not a count: the old rule
    monkeypatch.delenv(machine.SWEEP_FREE_CORES)
    assert free_cores_for(tmp_path) is None


def test_a_sweep_sets_the_count_for_its_jobs_and_takes_it_away_at_its_end(monkeypatch):
    from omegaconf import OmegaConf

    from normbench.studies.progress import SweepProgress

    monkeypatch.setattr(machine, "load_1m", lambda: 0.0)
    monkeypatch.delenv(machine.SWEEP_FREE_CORES, raising=False)
    config = OmegaConf.create({"hydra": {"overrides": {"task": []}, "sweeper": {}, "launcher": {}}})
    callback = SweepProgress()
    callback.on_multirun_start(config)
    import os
    assert os.environ[machine.SWEEP_FREE_CORES] == str(cores())
    callback.on_multirun_end(config)
    assert machine.SWEEP_FREE_CORES not in os.environ
