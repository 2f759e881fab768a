"""logger=mlflow: the store, read back with MLflow's client, holds what the record holds, named as
every logger names the run; a database store keeps its artifacts in the run (or sweep) folder."""

import json
import os

import pytest

from normbench.training.run import execute
from tests.waiting import HANG_S

mlflow = pytest.importorskip("mlflow", reason='logger=mlflow needs pip install -e ".[mlflow]"')


def only_run(uri, experiment="normbench"):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    (found,) = [e for e in client.search_experiments() if e.name == experiment]
    (run,) = client.search_runs([found.experiment_id])
    return client, run


def test_mlflow_store_holds_params_per_step_metrics_and_the_record(compose, tmp_path):
    summary = execute(compose("logger=mlflow", "norm=rms"), tmp_path, [])
    assert summary["status"] == "ok"
    client, run = only_run((tmp_path / "mlruns").as_uri())
    assert run.info.status == "FINISHED" and run.info.run_name == f"seed=0 {summary['config_hash'][:8]}"
    assert run.data.params["norm.kind"] == "rms" and run.data.params["task.name"] == "adding"
    tags = run.data.tags
    assert tags["normbench.config_hash"] == summary["config_hash"] and tags["normbench.group_hash"] == summary["group_hash"]
    assert tags["normbench.seed"] == "0" and tags["normbench.status"] == "ok" and tags["normbench.run_dir"] == str(tmp_path)
    lines = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    train = [(row["step"], row["loss"]) for row in lines if row["kind"] == "train"]
    history = [(m.step, m.value) for m in client.get_metric_history(run.info.run_id, "train/loss")]
    assert history == train and [step for step, _ in history] == list(range(1, 7))  # log_every=1, 6 steps
    evals = [(row["step"], row["val_metric"]) for row in lines if row["kind"] == "eval"]
    assert [(m.step, m.value) for m in client.get_metric_history(run.info.run_id, "val/mse")] == evals
    assert run.data.metrics["final/best_val"] == summary["metrics"]["best_val"]
    assert {"grad/std", "grad_norm/layers.0", "act_rms/layers.0"} <= set(run.data.metrics)  # the probes, as TensorBoard's
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id, "record")}
    assert artifacts == {"record/summary.json", "record/metrics.jsonl"}
    copy = client.download_artifacts(run.info.run_id, "record/summary.json", str(tmp_path / "back"))
    assert json.loads(open(copy).read())["config_hash"] == summary["config_hash"]


def test_mlflow_tracking_uri_puts_the_run_elsewhere(compose, tmp_path):
    shared = tmp_path / "shared"
    summary = execute(compose("logger=mlflow", f"logger.mlflow.tracking_uri={shared.as_uri()}",
                              "logger.mlflow.experiment=mine"), tmp_path / "run", [])
    assert summary["status"] == "ok" and not (tmp_path / "run" / "mlruns").exists()
    client, run = only_run(shared.as_uri(), "mine")
    assert run.data.tags["normbench.run_dir"] == str(tmp_path / "run")
    assert {a.path for a in client.list_artifacts(run.info.run_id, "record")}  # inside the store that was named


@pytest.mark.slow  # the default suite reads a sqlite store back in test_wandb_logger.py's several-logger run
def test_a_sqlite_store_keeps_its_artifacts_in_the_run_folder(compose, tmp_path, monkeypatch, quick_sqlite):
    """No ./mlruns in the working directory: the experiment's artifacts are made inside the run folder."""
    monkeypatch.chdir(tmp_path)
    run_dir = tmp_path / "run"
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    summary = execute(compose("logger=mlflow", f"logger.mlflow.tracking_uri={uri}"), run_dir, [])
    assert summary["status"] == "ok" and not (tmp_path / "mlruns").exists()
    client, run = only_run(uri)
    assert run.info.artifact_uri.startswith((run_dir / "mlruns" / "artifacts").as_uri())
    copy = client.download_artifacts(run.info.run_id, "record/summary.json", str(tmp_path / "back"))
    assert json.loads(open(copy).read())["config_hash"] == summary["config_hash"]

    # a second run into that experiment: its artifact folder belongs to the first run, never written into
    other = execute(compose("logger=mlflow", f"logger.mlflow.tracking_uri={uri}", "seed=1"), tmp_path / "other", [])
    assert other["status"] == "ok" and not (tmp_path / "other" / "mlruns").exists()
    second = [r for r in client.search_runs([run.info.experiment_id]) if r.info.run_id != run.info.run_id]
    assert len(second) == 1 and second[0].data.tags["normbench.status"] == "ok"
    assert client.list_artifacts(second[0].info.run_id) == []
    assert sorted(os.listdir(run_dir / "mlruns" / "artifacts")) == [run.info.run_id]


def test_a_planted_link_as_the_store_is_refused_not_followed(compose, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "mlruns").symlink_to(elsewhere)
    summary = execute(compose("logger=mlflow"), tmp_path / "run", [])
    assert summary["status"] == "failed" and "link" in summary["reason"] and list(elsewhere.iterdir()) == []


@pytest.mark.slow
def test_a_sweep_is_one_experiment_named_for_its_study_with_artifacts_in_the_sweep(cli, tiny_args, tmp_path, quick_sqlite):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    code, out, err = cli("-m", *tiny_args, "norm=ln,rms", "logger=mlflow", f"logger.mlflow.tracking_uri={uri}",
                         "hydra.sweep.dir=sweep", "report=false")
    assert code == 0, err
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    (experiment,) = [e for e in client.search_experiments() if e.name.startswith("command line [")]  # + the study's id
    assert experiment.artifact_location == (tmp_path / "sweep" / "mlruns" / "artifacts").as_uri()
    runs = client.search_runs([experiment.experiment_id])
    assert sorted(r.info.run_name.rsplit(" ", 1)[0] for r in runs) == ["norm=ln seed=0", "norm=rms seed=0"]
    assert {r.data.tags["normbench.arm"] for r in runs} == {"norm=ln", "norm=rms"}
    assert all(len(client.list_artifacts(r.info.run_id, "record")) == 2 for r in runs)
    assert not (tmp_path / "mlruns").exists()


@pytest.mark.parametrize("uri", ["sqlite:///{db}", "sqlite:///{db}?timeout=5"])
def test_a_sqlite_store_is_opened_under_its_files_lock(tmp_path, uri):
    import fcntl
    import os

    from normbench.training.mlflow_logger import store_made_once

    db = tmp_path / "m.db"
    with store_made_once(uri.format(db=db)):
        fd = os.open(db, os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):  # another job waits here until the store is made
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
    with store_made_once("http://127.0.0.1:9"), store_made_once(str(tmp_path / "mlruns")):
        pass  # no lock for other stores


@pytest.mark.slow
def test_jobs_opening_one_new_sqlite_store_at_once_make_it_once(tmp_path):
    """Three processes open one new SQLite store at the same moment: its tables are made once (the
    others wait on the database file's lock) and every job gets its run."""
    import subprocess
    import sys
    from pathlib import Path as P

    pytest.importorskip("sqlalchemy")
    db = tmp_path / "new.db"
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from normbench.configuration.schema import MLflowLog\n"
        "from normbench.training.mlflow_logger import MLflowLogger\n"
        "from normbench.training.tracking import run_names\n"
        "start = float(sys.argv[2])\n"
        "time.sleep(max(0.0, start - time.time()))\n"
        "run = Path(sys.argv[1]); run.mkdir()\n"
        f"MLflowLogger(MLflowLog(enabled=True, tracking_uri='sqlite:///{db}'), run, "
        "run_names({'seed': 0, 'config': {}, 'environment': {'git_commit': 'x'}}))\n")
    import time as clock

    start = clock.time() + 8  # after every process has imported mlflow (a start barrier, not a wait bound)
    root = P(__file__).resolve().parents[2]
    procs = [subprocess.Popen([sys.executable, "-c", script, str(tmp_path / f"job{i}"), str(start)], cwd=root,
                              stderr=subprocess.PIPE, text=True) for i in range(3)]
    errors = [p.communicate(timeout=HANG_S)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], errors
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{db}")
    (experiment,) = [e for e in client.search_experiments() if e.name == "normbench"]
    assert len(client.search_runs([experiment.experiment_id])) == 3
