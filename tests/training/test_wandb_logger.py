"""logger=wandb, offline: the run read back from W&B's own transaction log in the run folder; and a
run with several loggers at once, each read back as its tool reads it, all named one way."""

import json
from pathlib import Path

import pytest

from normbench.training.run import execute

wandb = pytest.importorskip("wandb", reason='logger=wandb needs pip install -e ".[wandb]"')

BLOCK = 32 * 1024  # W&B's run-<id>.wandb is a LevelDB-style log: 32 KiB blocks of checksummed chunks
FULL, LAST = 1, 4


def wandb_records(path: Path) -> list:
    """Every record of an offline run's ``.wandb`` file, as wandb's own protobuf messages. Each chunk
    has a 7-byte header (crc32c, length, type); a record is one FULL chunk or FIRST, MIDDLE..., LAST."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    assert data[:4] == b":W&B", "not a W&B transaction log"
    records, pending, pos = [], b"", 7  # the file header: ":W&B", a magic number, the format version
    while pos + 7 <= len(data):
        if BLOCK - pos % BLOCK < 7:  # a block's tail too short for a header is padding
            pos += BLOCK - pos % BLOCK
            continue
        length, kind = int.from_bytes(data[pos + 4:pos + 6], "little"), data[pos + 6]
        pending += data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind in (FULL, LAST):
            records.append(wandb_internal_pb2.Record.FromString(pending))
            pending = b""
    return records


def read_offline_run(run_dir: Path) -> dict:
    """What an offline run holds: its run record (name, group, tags, config), history rows by step,
    the last summary value of each key, and the exit code."""
    (log,) = run_dir.glob("wandb/offline-run-*/run-*.wandb")

    def key(item):
        return item.key or "/".join(item.nested_key)
    out = {"history": {}, "summary": {}, "exit": None, "kinds": set()}
    for record in wandb_records(log):
        kind = record.WhichOneof("record_type")
        out["kinds"].add(kind)
        if kind == "run":
            out["run"] = record.run
            out["config"] = {key(i): json.loads(i.value_json) for i in record.run.config.update}
        elif kind == "history":
            row = {key(i): json.loads(i.value_json) for i in record.history.item}
            out["history"][row["_step"]] = {k: v for k, v in row.items() if not k.startswith("_")}
        elif kind == "summary":
            out["summary"].update({key(i): json.loads(i.value_json) for i in record.summary.update})
        elif kind == "exit":
            out["exit"] = record.exit.exit_code
    return out


@pytest.mark.slow  # the default suite reads an offline run back in the several-logger run below
def test_an_offline_run_holds_the_config_every_scalar_and_the_final_metrics(compose, tmp_path):
    summary = execute(compose("logger=wandb", "norm=rms"), tmp_path, [])
    assert summary["status"] == "ok"
    run = read_offline_run(tmp_path)
    assert run["run"].display_name == f"seed=0 {summary['config_hash'][:8]}" and run["run"].run_group == "normbench"
    assert run["run"].project == "normbench" and list(run["run"].tags) == ["seed=0"]
    assert run["config"]["norm.kind"] == "rms" and run["config"]["normbench.config_hash"] == summary["config_hash"]
    lines = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert {row["step"]: row["loss"] for row in lines if row["kind"] == "train"} == \
        {step: row["train/loss"] for step, row in run["history"].items()}
    assert {row["step"]: row["val_metric"] for row in lines if row["kind"] == "eval"} == \
        {step: row["val/mse"] for step, row in run["history"].items() if "val/mse" in row}
    assert run["summary"]["final/best_val"] == summary["metrics"]["best_val"] and run["summary"]["final/diverged"] == 0
    assert run["summary"]["normbench.status"] == "ok" and run["exit"] == 0
    # W&B's own logs, the service's included, stay in the run's wandb folder (its links point inside it)
    assert list((tmp_path / "wandb" / "cache").rglob("core-debug-*.log"))
    assert all(p.resolve().is_relative_to(tmp_path / "wandb") for p in tmp_path.rglob("*") if p.is_symlink())
    assert {p.name for p in tmp_path.iterdir()} == {"summary.json", "metrics.jsonl", ".normbench.lock", "wandb"}


def test_a_planted_link_as_the_wandb_folder_is_refused_not_followed(compose, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "wandb").symlink_to(elsewhere)
    summary = execute(compose("logger=wandb"), tmp_path / "run", [])
    assert summary["status"] == "failed" and "link" in summary["reason"] and list(elsewhere.iterdir()) == []


def test_several_loggers_read_back_hold_the_same_run_under_the_same_names(compose, tmp_path, monkeypatch, quick_sqlite):
    """logger=[tensorboard,mlflow,wandb] with MLflow in a sqlite store: each tool's own reader finds the
    run named alike, with the same params and the same scalars at the same steps, and every file
    (the database's artifacts too) inside the run folder."""
    pytest.importorskip("mlflow", reason='logger=mlflow needs pip install -e ".[mlflow]"')
    pytest.importorskip("tensorboard", reason='logger=tensorboard needs pip install -e ".[tensorboard]"')
    from mlflow.tracking import MlflowClient
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams import plugin_data_pb2

    monkeypatch.chdir(tmp_path)
    run_dir = tmp_path / "run"
    uri = f"sqlite:///{run_dir / 'mlflow.db'}"
    summary = execute(compose("logger=[tensorboard,mlflow,wandb]", f"logger.mlflow.tracking_uri={uri}",
                              "logger.tensorboard.histograms=false"), run_dir, [])
    assert summary["status"] == "ok"
    assert {p.name for p in tmp_path.iterdir()} == {"run"}  # no ./mlruns, no ./wandb in the working directory

    client = MlflowClient(tracking_uri=uri)
    (experiment,) = [e for e in client.search_experiments() if e.name == "normbench"]
    (ml,) = client.search_runs([experiment.experiment_id])
    assert ml.info.artifact_uri.startswith((run_dir / "mlruns" / "artifacts").as_uri())
    assert {a.path for a in client.list_artifacts(ml.info.run_id, "record")} == {"record/summary.json",
                                                                                 "record/metrics.jsonl"}
    wb = read_offline_run(run_dir)
    assert "environment" not in wb["kinds"]  # W&B's metadata would copy the command line, typed secrets included
    events = EventAccumulator(str(run_dir / "tb"), size_guidance={"scalars": 0, "tensors": 0})
    events.Reload()

    assert ml.info.run_name == wb["run"].display_name == f"seed=0 {summary['config_hash'][:8]}"
    normbench_tags = {k: v for k, v in ml.data.tags.items() if k.startswith("normbench.")}
    assert normbench_tags == {k: v for k, v in wb["config"].items() if k.startswith("normbench.")} | {"normbench.status": "ok"}
    hparams = plugin_data_pb2.HParamsPluginData.FromString(
        events.PluginTagToContent("hparams")["_hparams_/session_start_info"]).session_start_info.hparams
    params = {k: v for k, v in ml.data.params.items() if not k.startswith("logger.")}
    assert params and all(str(wb["config"][k]) == v or json.dumps(wb["config"][k]) == v or
                          (wb["config"][k] is None and v == "None") for k, v in params.items())
    assert {k for k, v in wb["config"].items() if v is not None and not k.startswith(("normbench.", "_"))} == set(hparams)

    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [(row["step"], row["loss"]) for row in lines if row["kind"] == "train"] == \
        [(step, row["train/loss"]) for step, row in sorted(wb["history"].items())]
    assert wb["summary"]["final/best_val"] == summary["metrics"]["best_val"] and wb["exit"] == 0
    assert list((run_dir / "wandb" / "cache").rglob("core-debug-*.log"))  # W&B's service log: in the run folder too

    tb_names = set(events.Tags()["scalars"])
    wb_names = {name for row in wb["history"].values() for name in row} | {k for k in wb["summary"] if k.startswith("final/")}
    ml_names = set(ml.data.metrics)
    assert tb_names == wb_names == ml_names and {"train/loss", "val/mse", "grad/std", "final/best_val"} <= tb_names
    for name in ("train/loss", "val/mse", "grad/std"):
        ml_curve = [(m.step, m.value) for m in client.get_metric_history(ml.info.run_id, name)]
        wb_curve = [(step, row[name]) for step, row in sorted(wb["history"].items()) if name in row]
        tb_curve = [(e.step, e.value) for e in events.Scalars(name)]
        assert ml_curve == wb_curve and [s for s, _ in tb_curve] == [s for s, _ in ml_curve]
        assert [v for _, v in tb_curve] == pytest.approx([v for _, v in ml_curve], rel=1e-6)  # TensorBoard keeps float32


def test_online_without_a_name_server_is_one_line_within_the_bound(monkeypatch):
    """No network: resolving W&B's host waited on each DNS server in turn (~90 s), which a socket's
    timeout does not cover. The pre-run check bounds the resolution too."""
    import socket
    import time as clock

    from normbench.checks import ConfigError
    from normbench.configuration.schema import WandbLog
    from normbench.training import wandb_logger

    monkeypatch.delenv("WANDB_BASE_URL", raising=False)
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: clock.sleep(60))
    started = clock.monotonic()
    with pytest.raises(ConfigError, match="not resolved within 3 s") as error:
        wandb_logger.preflight(WandbLog(enabled=True, mode="online"))
    assert clock.monotonic() - started < 10 and "\n" not in str(error.value)
    assert "api.wandb.ai" in str(error.value)
