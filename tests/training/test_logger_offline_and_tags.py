"""Offline means offline (issue 50), and the user's tags reach every logger (issue 49).

A run with every logger (``logger=many_loggers``) in a process whose $HOME is an empty folder and
whose socket connections anywhere but this machine fail (sitecustomize below): $HOME stays empty, no
connection is tried, the tags are in the record, MLflow's tags, TensorBoard's text and W&B's tags."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mlflow")
pytest.importorskip("wandb")
pytest.importorskip("tensorboard")

from tests.conftest import TINY, TINY_TASK  # noqa: E402
from tests.waiting import HANG_S  # noqa: E402

NO_NETWORK = '''
import os, socket
_log = os.environ["NB_TEST_CONNECTIONS"]

def _note(what):
    with open(_log, "a") as f:
        f.write(what + "\\n")

_connect = socket.socket.connect
def connect(self, address):
    host = address[0] if isinstance(address, tuple) else None
    if host is not None and host not in ("127.0.0.1", "::1", "localhost"):
        _note(f"connect {address!r}")
        raise OSError("network off in this test")
    return _connect(self, address)
socket.socket.connect = connect

_lookup = socket.getaddrinfo
def getaddrinfo(host, *args, **kwargs):
    if host not in (None, "127.0.0.1", "::1", "localhost"):
        _note(f"lookup {host!r}")
        raise socket.gaierror("network off in this test")
    return _lookup(host, *args, **kwargs)
socket.getaddrinfo = getaddrinfo
'''


@pytest.fixture(scope="module")
def offline_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("offline")
    home, site = root / "home", root / "site"
    home.mkdir()
    site.mkdir()
    (site / "sitecustomize.py").write_text(NO_NETWORK)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "WANDB_", "XDG_"))
           and k not in ("DO_NOT_TRACK",)}
    env.update(HOME=str(home), NB_TEST_CONNECTIONS=str(root / "connections.txt"),
               PYTHONPATH=os.pathsep.join([str(site), str(Path(__file__).resolve().parents[2])]))
    done = subprocess.run([sys.executable, "-m", "normbench", *TINY, *TINY_TASK, "logger=many_loggers",
                           "tags=[baseline,v2]", "hydra.run.dir=run"], cwd=root, env=env, capture_output=True,
                          text=True, timeout=HANG_S)
    return root, home, done


def test_no_write_under_home_and_no_connection(offline_run):
    root, home, done = offline_run
    assert done.returncode == 0, done.stderr
    assert [str(p.relative_to(home)) for p in home.rglob("*")] == []
    connections = root / "connections.txt"
    assert not connections.exists(), connections.read_text()
    assert "stopped logging" not in done.stderr, done.stderr


def test_tags_reach_the_record_and_every_logger(offline_run):
    root, _, done = offline_run
    run = root / "run"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["config"]["tags"] == ["baseline", "v2"]
    from mlflow.tracking import MlflowClient

    os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    client = MlflowClient(tracking_uri=(run / "mlruns").as_uri())
    (found,) = client.search_runs([client.get_experiment_by_name("normbench").experiment_id])
    assert {"baseline", "v2"} <= set(found.data.tags) and found.data.tags["normbench.tags"] == "baseline,v2"
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run / "tb"), size_guidance={"tensors": 0})
    events.Reload()
    (text,) = events.Tensors("tags/text_summary")
    assert b"baseline, v2" in text.tensor_proto.string_val[0]
    assert list((run / "wandb").glob("offline-run-*/run-*.wandb"))
    assert (run / "metrics.csv").is_file()


def test_wandb_gets_the_tags(monkeypatch, tmp_path):
    import wandb

    from normbench.configuration.schema import WandbLog
    from normbench.training.tracking import run_names
    from normbench.training.wandb_logger import WandbLogger

    seen = {}

    def init(**kwargs):
        seen.update(kwargs)
        raise RuntimeError("stop here")
    monkeypatch.setattr(wandb, "init", init)
    names = run_names({"seed": 3, "config": {"tags": ["baseline", "v2"]}, "environment": {"git_commit": "x"}})
    with pytest.raises(RuntimeError):
        WandbLogger(WandbLog(enabled=True), tmp_path, names)
    assert {"baseline", "v2", "seed=3"} <= set(seen["tags"])


@pytest.mark.parametrize("tags", ["tags=[a:b]", "tags=[" + "x" * 65 + "]", "tags=a", "tags=[{a:1}]"])
def test_bad_tags_are_one_line(tags, cli, tiny_args):
    code, _, err = cli(*tiny_args, tags, "hydra.run.dir=run")
    assert code == 2 and "tags" in err and len(err.strip().splitlines()) == 1, err


def test_tags_leave_the_identity_unchanged(compose):
    from omegaconf import OmegaConf

    from normbench.configuration.config import to_config
    from normbench.configuration.contract import config_hash

    def digest(*overrides):
        return config_hash(OmegaConf.to_container(compose(*overrides), resolve=True))

    plain = OmegaConf.to_container(compose("tags=[a,b]"), resolve=True)
    assert to_config(compose("tags=[a,b]")).tags == ["a", "b"]
    assert digest("tags=[a,b]") == digest()
    assert plain["tags"] == ["a", "b"]


def test_the_user_turns_telemetry_on_by_saying_so(monkeypatch):
    from normbench.training.loggers import keep_offline

    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "false")
    monkeypatch.delenv("DO_NOT_TRACK", raising=False)
    keep_offline(["mlflow"])
    assert os.environ["MLFLOW_DISABLE_TELEMETRY"] == "false" and os.environ["DO_NOT_TRACK"] == "true"
