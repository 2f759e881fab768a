"""logger=mlflow: the local store, read back with MLflow's client, holds what the record holds."""

import json

import pytest

from normbench.run import execute

mlflow = pytest.importorskip("mlflow", reason='logger=mlflow needs pip install -e ".[mlflow]"')


def only_run(uri):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    (experiment,) = [e for e in client.search_experiments() if e.name == "normbench"]
    (run,) = client.search_runs([experiment.experiment_id])
    return client, run


def test_mlflow_store_holds_params_per_step_metrics_and_the_record(compose, tmp_path):
    summary = execute(compose("logger=mlflow", "norm=rms"), tmp_path, [])
    assert summary["status"] == "ok"
    client, run = only_run((tmp_path / "mlruns").as_uri())
    assert run.info.status == "FINISHED"
    assert run.data.params["norm.kind"] == "rms" and run.data.params["task.name"] == "adding"
    assert run.data.tags["normbench.config_hash"] == summary["config_hash"]
    lines = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    train = [(row["step"], row["loss"]) for row in lines if row["kind"] == "train"]
    history = [(m.step, m.value) for m in client.get_metric_history(run.info.run_id, "train/loss")]
    assert history == train and [step for step, _ in history] == list(range(1, 7))  # log_every=1, 6 steps
    evals = [(row["step"], row["val_metric"]) for row in lines if row["kind"] == "eval"]
    assert [(m.step, m.value) for m in client.get_metric_history(run.info.run_id, "val/mse")] == evals
    assert run.data.metrics["final/best_val"] == summary["metrics"]["best_val"]
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id, "record")}
    assert artifacts == {"record/summary.json", "record/metrics.jsonl"}
    copy = client.download_artifacts(run.info.run_id, "record/summary.json", str(tmp_path / "back"))
    assert json.loads(open(copy).read())["config_hash"] == summary["config_hash"]


def test_mlflow_tracking_uri_puts_the_run_elsewhere(compose, tmp_path):
    shared = tmp_path / "shared"
    summary = execute(compose("logger=mlflow", f"logger.tracking_uri={shared.as_uri()}"), tmp_path / "run", [])
    assert summary["status"] == "ok" and not (tmp_path / "run" / "mlruns").exists()
    _, run = only_run(shared.as_uri())
    assert run.data.tags["normbench.run_dir"] == str(tmp_path / "run")
