"""Loggers that fail fast (issue 49): a tracking server that does not answer as MLflow's does is one
line and exit 2 before training; one that dies mid-run costs the config's bounded seconds, then the
logger is dropped with one line and the run goes on. Every server here is a local one on 127.0.0.1."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytest.importorskip("mlflow")

RUN = {"info": {"run_id": "r1", "run_uuid": "r1", "experiment_id": "1", "run_name": "x", "status": "RUNNING",
                "start_time": 0, "artifact_uri": "mlflow-artifacts:/1/r1/artifacts", "lifecycle_stage": "active"},
       "data": {}, "inputs": {}}


class Server:
    """A local HTTP server whose behaviour a test picks: ``mlflow`` answers as a tracking server would
    (until ``die`` is set, then it never answers again), ``silent`` never answers, ``status`` answers
    that HTTP status, ``page`` answers a web page."""

    def __init__(self, behaviour: str, status: int = 200):
        self.behaviour, self.status, self.die, self.release = behaviour, status, threading.Event(), threading.Event()
        self.requests: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self):
                outer.requests.append(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                if outer.behaviour == "silent" or outer.die.is_set():
                    outer.release.wait(60)
                    return
                if outer.behaviour == "status":
                    return self._send(outer.status, b'{"error_code": "X"}')
                if outer.behaviour == "page":
                    return self._send(200, b"<html>a proxy</html>", "text/html")
                if "get-by-name" in self.path:
                    return self._send(404, b'{"error_code": "RESOURCE_DOES_NOT_EXIST", "message": "no"}')
                if "experiments/create" in self.path:
                    return self._send(200, b'{"experiment_id": "1"}')
                if "runs/create" in self.path:
                    return self._send(200, json.dumps({"run": RUN}).encode())
                if "log-batch" in self.path and sum("log-batch" in r for r in outer.requests) >= 3:
                    outer.die.set()  # it dies mid-run: from here on nothing answers
                return self._send(200, b"{}")

            def _send(self, code, body, kind="application/json"):
                self.send_response(code)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_PATCH = _answer

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.uri = f"http://127.0.0.1:{self.http.server_address[1]}"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def close(self):
        self.release.set()
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture
def server(request):
    made = []

    def make(behaviour, status=200):
        made.append(Server(behaviour, status))
        return made[-1]
    yield make
    for s in made:
        s.close()


REFUSED = {  # behaviour -> what the one line says
    "silent": "does not answer within logger.mlflow.timeout=1 s",
    "status_500": "answers HTTP 500",
    "status_503": "answers HTTP 503",
    "status_404": "it is not one",
    "status_401": "MLFLOW_TRACKING_USERNAME",
    "page": "other than JSON",
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_server_that_does_not_answer_as_mlflow_is_one_line_before_training(case, server, cli, tiny_args,
                                                                             tmp_path):
    behaviour, _, status = case.partition("_")
    s = server(behaviour, int(status or 200))
    started = time.monotonic()
    code, out, err = cli(*tiny_args, "logger=mlflow", f"logger.mlflow.tracking_uri={s.uri}", "logger.mlflow.timeout=1",
                         "hydra.run.dir=run")
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and REFUSED[case] in lines[0], err
    assert "Traceback" not in err + out
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["status"] == "invalid"  # before step 1
    assert '"kind": "train"' not in (tmp_path / "run" / "metrics.jsonl").read_text()
    assert time.monotonic() - started < 30  # the config's bound (1 s), not MLflow's retries (minutes)


def test_a_server_that_dies_mid_run_costs_seconds_and_drops_the_logger(server, cli, tiny_args, tmp_path):
    s = server("mlflow")
    started = time.monotonic()
    code, out, err = cli(*tiny_args, "steps=20", "logger=mlflow", f"logger.mlflow.tracking_uri={s.uri}",
                         "logger.mlflow.timeout=1", "logger.mlflow.retries=1", "hydra.run.dir=run")
    took = time.monotonic() - started
    assert code == 0, err
    assert s.die.is_set() and err.count("mlflow: stopped logging") == 1, err
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["status"] == "ok"
    assert took < 30, f"{took:.1f} s"  # bounded: (retries + 1) x timeout, not MLflow's 7 retries of 120 s


def test_mlflow_requests_are_bounded_by_the_config(tmp_path):
    import os

    from normbench.configuration.schema import MLflowLog
    from normbench.training.mlflow_logger import bound_requests

    saved = {k: os.environ.get(k) for k in ("MLFLOW_HTTP_REQUEST_TIMEOUT", "MLFLOW_HTTP_REQUEST_MAX_RETRIES")}
    try:
        bound_requests(MLflowLog(enabled=True, timeout=7, retries=0))  # a setting, not a wait bound
        from mlflow.environment_variables import MLFLOW_HTTP_REQUEST_MAX_RETRIES, MLFLOW_HTTP_REQUEST_TIMEOUT

        assert MLFLOW_HTTP_REQUEST_TIMEOUT.get() == 7 and MLFLOW_HTTP_REQUEST_MAX_RETRIES.get() == 0
    finally:
        for k, v in saved.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)


@pytest.mark.parametrize("bad", ["logger.mlflow.timeout=0", "logger.mlflow.retries=-1", "logger.mlflow.retries=99"])
def test_bounds_out_of_range_are_one_line(bad, cli, tiny_args):
    code, _, err = cli(*tiny_args, "logger=mlflow", bad, "hydra.run.dir=run")
    assert code == 2 and bad.split("=")[0] in err and len(err.strip().splitlines()) == 1, err
