"""A sweep's efficiency (normbench/records/sweep_time.py) and the environment it collects once (normbench/training/environment.py)."""

import json
import math
import shutil

import pytest
import torch

from normbench.records import sweep_time
from normbench.training import environment
from normbench.training.environment import SWEEP_CACHE


@pytest.fixture(scope="module")
def tiny_sweep(tmp_path_factory):
    """A real two-run multirun of very few steps, in this process (the basic launcher), run once for the module."""
    from hydra.core.global_hydra import GlobalHydra

    from normbench.studies import app
    from tests.conftest import TINY, TINY_TASK

    folder = tmp_path_factory.mktemp("efficiency")
    patch = pytest.MonkeyPatch()
    patch.chdir(folder)
    patch.setattr(environment, "_in_process", {})  # this process collects as a fresh one would
    patch.setattr("sys.argv", ["normbench", "-m", *TINY, *TINY_TASK, "seed=0,1", "hydra.sweep.dir=sweep", "report=false"])
    try:
        app.main()
    finally:
        GlobalHydra.instance().clear()
        patch.undo()
    return folder / "sweep"


def test_a_sweep_says_its_efficiency_and_where_the_rest_went(tiny_sweep, capfd):
    result = json.loads((tiny_sweep / sweep_time.RECORD).read_text())
    assert result["jobs"] == 2 and result["workers"] == 1 and result["processes"] == 1
    assert 0 < result["efficiency"] <= 1
    assert set(result["shares"]) == set(sweep_time.SHARES) and all(v >= 0 for v in result["shares"].values())
    assert math.isclose(sum(result["shares"].values()), 1.0, abs_tol=1e-9)
    # one worker: its time is the sweep's wall time, and training is the runs' own train_s
    assert math.isclose(sum(result["seconds"].values()), result["wall_s"], rel_tol=1e-6)
    runs = [json.loads((tiny_sweep / str(k) / "summary.json").read_text()) for k in (0, 1)]
    assert math.isclose(result["train_s"], sum(r["time"]["train_s"] for r in runs), rel_tol=1e-9)
    assert result["efficiency"] == pytest.approx(result["train_s"] / result["wall_s"])
    assert result["seconds"]["environment"] > 0  # the first job collected it
    marks = [json.loads((tiny_sweep / sweep_time.FOLDER / f"{k}.json").read_text()) for k in (0, 1)]
    assert all(m["called"] <= m["ready"] <= m["returned"] for m in marks)
    assert marks[0]["returned"] <= marks[1]["called"] and marks[0]["pid"] == marks[1]["pid"]


def test_the_second_job_of_a_process_does_not_collect_the_environment_again(tiny_sweep):
    first, second = (json.loads((tiny_sweep / str(k) / "summary.json").read_text())["environment"] for k in (0, 1))
    assert first["collect_env_from"] == "collected" and second["collect_env_from"] == "this process"
    assert second["collect_env"] == first["collect_env"] and second["collect_env_s"] < first["collect_env_s"]
    cache = json.loads((tiny_sweep / SWEEP_CACHE).read_text())
    assert cache["key"] == environment.cache_key() and cache["collect_env"] == first["collect_env"]
    assert environment._shared_in is None  # after its jobs, this process shares nothing with the sweep


def test_another_process_of_the_sweep_reads_the_cache_until_its_key_changes(tiny_sweep, tmp_path, monkeypatch):
    shutil.copy(tiny_sweep / SWEEP_CACHE, tmp_path / SWEEP_CACHE)
    cached = json.loads((tmp_path / SWEEP_CACHE).read_text())
    monkeypatch.setattr(environment, "_in_process", {})  # as in a new worker
    monkeypatch.setattr(environment, "_shared_in", tmp_path)
    env = environment.environment(torch.device("cpu"))
    assert env["collect_env_from"] == "sweep cache" and env["collect_env"] == cached["collect_env"]
    # another torch (the key names it): collected again, and the cache rewritten for this one
    stale = {**cached, "key": {**cached["key"], "torch": "0.0.1"}, "collect_env": {**cached["collect_env"], "os": "stale"}}
    (tmp_path / SWEEP_CACHE).write_text(json.dumps(stale))
    monkeypatch.setattr(environment, "_in_process", {})
    env = environment.environment(torch.device("cpu"))
    assert env["collect_env_from"] == "collected" and env["collect_env"]["os"] != "stale"
    assert json.loads((tmp_path / SWEEP_CACHE).read_text())["key"] == environment.cache_key()


@pytest.mark.parametrize("content", ["[]", "{", '{"key": null}', "LINK"])
def test_a_cache_file_that_is_not_the_cache_is_not_used(tiny_sweep, tmp_path, content):
    path = tmp_path / SWEEP_CACHE
    if content == "LINK":  # a planted link is not followed, even to a good cache
        path.symlink_to(tiny_sweep / SWEEP_CACHE)
    else:
        path.write_text(content)
    assert environment._read_cache(path, environment.cache_key()) is None
    assert environment._read_cache(tiny_sweep / SWEEP_CACHE, environment.cache_key()) is not None


def test_a_single_run_collects_its_own_environment(cli, tiny_args, tiny_sweep, tmp_path, monkeypatch):
    monkeypatch.setattr(environment, "_in_process", {})
    environment.share_in(tiny_sweep)  # as if a sweep's job had left it: a single run must not read the sweep's cache
    code, out, err = cli(*tiny_args, "hydra.run.dir=run", "report=false")
    assert code == 0, err
    recorded = json.loads((tmp_path / "run" / "summary.json").read_text())["environment"]
    assert recorded["collect_env_from"] == "collected" and set(recorded["collect_env"]) == set(environment._COLLECT_ENV)
    assert "error" not in recorded["collect_env"] and recorded["collect_env_s"] > 0
    assert list(environment._in_process) == [None] and not (tmp_path / "run" / SWEEP_CACHE).exists()
    assert not (tmp_path / "run" / sweep_time.FOLDER).exists()  # a single run keeps no sweep timing


def test_shares_of_two_workers_follow_their_timelines():
    """Two workers over a 20 s sweep: each waits for the launcher and imports until 4 s, then runs two jobs."""
    def job(pid, called, first, train):
        ready = called + (1.0 if first else 0.0)  # torch comes with a process's first job
        return {"pid": pid, "process_start": 2.0, "imported": 4.0, "called": called, "ready": ready,
                "returned": ready + 6.0, "wall_s": 5.5, "span_s": 5.0, "train_s": train,
                "collect_env_s": 0.5 if first else 0.0}
    jobs = [job(1, 5.0, True, 4.0), job(1, 12.5, False, 4.5), job(2, 5.0, True, 4.0), job(2, 13.0, False, 4.5)]
    result = sweep_time.account(jobs, started=0.0, ended=20.0, workers=2, report_s=0.5, apart={"paired_timing": 9.0})
    s = result["seconds"]
    assert result["efficiency"] == pytest.approx(17.0 / 40.0) and result["workers"] == 2 and result["processes"] == 2
    assert s["training"] == pytest.approx(17.0)
    assert s["startup"] == pytest.approx(2 * 4.0 + 2 * 1.0)      # waiting and importing until 4 s; torch in the first job
    assert s["composition"] == pytest.approx(1.0 + 0.5 + 1.0 + 1.0)  # imports to the first call; a job's end to the next call
    assert s["environment"] == pytest.approx(1.0) and s["setup"] == pytest.approx(1.0)
    assert s["evaluation"] == pytest.approx(4 * 5.0 - 17.0) and s["writing"] == pytest.approx(4 * 0.5)
    assert s["report"] == pytest.approx(2 * 0.5) and s["idle"] == pytest.approx(40.0 - 38.5)
    assert math.isclose(sum(result["shares"].values()), 1.0) and result["apart_s"] == {"paired_timing": 9.0}
    line = sweep_time.line(result)
    assert result["loop_efficiency"] == pytest.approx(20.0 / 40.0)
    assert line.startswith("efficiency 0.42: 17.0 s training of 20.0 s wall x 2 workers (4 jobs in 2 processes; "
                           "0.50 with the runs' evaluation and probes)")
    assert "startup 25%" in line and "not counted: paired_timing 9.0 s" in line


def test_a_job_that_found_its_run_done_adds_no_time_of_that_run():
    done = {"status": "ok", "duplicate_of": "sweep/0", "time": {"wall_s": 9.0, "train_s": 8.0},
            "environment": {"span_s": 8.5, "collect_env_s": 1.0}}
    marks = sweep_time.job_marks(None, 1.0, 2.0, 2.0, done)
    assert marks["train_s"] is None and marks["wall_s"] is None and marks["span_s"] is None
