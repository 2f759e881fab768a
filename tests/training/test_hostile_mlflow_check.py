"""The MLflow check before a run (hostile cases L08, L11, L12, Z02): it asks only the server the user
named (a redirect is refused, never followed), it is bounded as a whole by ``logger.mlflow.timeout``
(a server that drips its answer is not waited on byte by byte), and a tracking URI's password is
kept out of the record as it is out of the terminal."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from normbench.checks import ConfigError
from normbench.configuration.schema import MLflowLog
from normbench.training.mlflow_logger import require_tracking_server

pytest.importorskip("mlflow")


class Server:
    """``redirect`` answers 302 to ``target``; ``drip`` sends 200 and its headers, then a body of
    spaces a byte each 0.2 s for 20 s (each read is quick, the whole is slow), then ``{}``;
    ``mlflow`` answers ``{}``. ``requests`` lists the paths asked."""

    def __init__(self, behaviour: str, target: str = ""):
        self.requests: list[str] = []
        self.stop = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                outer.requests.append(self.path)
                if behaviour == "redirect":
                    self.send_response(302)
                    self.send_header("Location", target + self.path)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = b" " * (100 if behaviour == "drip" else 0) + b"{}"
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                for i, byte in enumerate(body):
                    if behaviour == "drip" and i < 100 and (self.stop.wait(0.2) or outer.stop.is_set()):
                        return
                    try:
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                    except OSError:
                        return

        Handler.stop = self.stop
        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.uri = f"http://127.0.0.1:{self.http.server_address[1]}"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def close(self):
        self.stop.set()
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture
def server():
    made = []

    def make(*args):
        made.append(Server(*args))
        return made[-1]
    yield make
    for s in made:
        s.close()


def test_a_redirect_is_refused_and_never_followed(server):
    elsewhere = server("mlflow")
    s = server("redirect", elsewhere.uri)
    with pytest.raises(ConfigError, match="redirect") as err:
        require_tracking_server(s.uri, MLflowLog(enabled=True, timeout=5))  # a setting, not a wait bound
    assert s.requests and elsewhere.requests == [], elsewhere.requests
    assert "\n" not in str(err.value)


def test_a_server_that_drips_its_answer_is_bounded_by_the_whole_timeout(server):
    s = server("drip")
    with pytest.raises(ConfigError, match="does not answer within logger.mlflow.timeout=1"):
        require_tracking_server(s.uri, MLflowLog(enabled=True, timeout=1))  # a setting, not a wait bound (whole answer: 20 s)


def test_a_server_that_answers_in_time_passes(server):
    require_tracking_server(server("mlflow").uri, MLflowLog(enabled=True, timeout=5))  # a setting, not a wait bound


@pytest.mark.parametrize("uri", ["http://bob:hunter2@127.0.0.1:{port}", "postgresql://bob:hunter2@127.0.0.1:{port}/db"])
def test_a_tracking_uri_password_stays_out_of_the_record(uri, cli, tiny_args, tmp_path):
    import socket

    with socket.socket() as closed:  # a port nothing listens on: refused before training (http), or the
        closed.bind(("127.0.0.1", 0))  # logger dropped with one line as it starts (a database: no pre-run check)
        port = closed.getsockname()[1]
    given = uri.format(port=port)
    code, out, err = cli(*tiny_args, "logger=mlflow", f"logger.mlflow.tracking_uri={given}",
                         "logger.mlflow.timeout=1", "hydra.run.dir=run")
    assert code != 0 or "mlflow: not started" in err, err
    record = (tmp_path / "run" / "summary.json").read_text()
    assert "hunter2" not in record + out + err, record
    for written in (tmp_path / "run").rglob("*"):  # traceback.txt, normbench.log, the logger's files
        assert not written.is_file() or b"hunter2" not in written.read_bytes(), written
    summary = json.loads(record)
    assert summary["config"]["logger"]["mlflow"]["tracking_uri"] == given.replace("hunter2", "***")
    assert any("bob:***@" in o for o in summary["overrides"])


@pytest.mark.parametrize("body", [b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 100 + b"{}" + b"}" * 100, b"[]"])
def test_an_answer_nested_past_any_mlflow_answer_is_refused_in_one_line(body):
    """A 100,000-deep answer reached the recursive decoder; a 100-deep or a list is no MLflow answer."""
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    http.daemon_threads = True
    threading.Thread(target=http.serve_forever, daemon=True).start()
    try:
        with pytest.raises(ConfigError, match="other than JSON|not an MLflow") as error:
            require_tracking_server(f"http://127.0.0.1:{http.server_address[1]}", MLflowLog(timeout=5.0))  # a setting, not a wait bound
        assert "\n" not in str(error.value)
    finally:
        http.shutdown()
        http.server_close()


def test_a_sqlite_store_in_a_missing_folder_is_one_line_before_the_run(cli, tiny_args, tmp_path):
    """SQLite makes the database file, never its folder: this failed as a traceback once training began."""
    missing = tmp_path / "missing" / "dir" / "x.db"
    code, _, err = cli(*tiny_args, "logger=mlflow", f"logger.mlflow.tracking_uri=sqlite:///{missing}",
                       "hydra.run.dir=run")
    assert code == 2 and "does not exist" in err and len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err and not (tmp_path / "missing").exists()


@pytest.mark.parametrize("when", ["build", "on_log"])
def test_a_server_that_dies_after_the_check_drops_the_logger_and_the_run_goes_on(when, cli, tiny_args, tmp_path,
                                                                                  monkeypatch):
    """docs/loggers.md: a logger that fails during a run is dropped with one line. A server that passed the
    check and was gone when the logger started ended the run `failed`, exit 1."""
    import dataclasses

    from normbench.training import loggers
    from normbench.training.hooks import Hook

    class Gone(Hook):
        kind = "mlflow"

        def on_log(self, trainer, step, **scalars):
            raise ConnectionError("the tracking server went away")

    def build(settings, run_dir, names, sweep_dir):
        if when == "build":
            raise ConnectionError("the tracking server went away")
        return Gone()
    fake = dataclasses.replace(loggers.LOGGERS["mlflow"], preflight=lambda settings, secrets=(): None, build=build)
    monkeypatch.setitem(loggers.LOGGERS, "mlflow", fake)
    code, _, err = cli(*tiny_args, "logger=mlflow", "logger.mlflow.tracking_uri=http://127.0.0.1:9", "hydra.run.dir=run")
    assert code == 0, err
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["status"] == "ok"
    said = [line for line in err.splitlines() if "the tracking server went away" in line]
    assert len(said) == 1 and "the run and its record go on" in said[0], err


@pytest.mark.parametrize("uri", ["file://", "file:", "file:// ", "FILE://"])
def test_a_file_uri_naming_no_folder_is_refused(uri):
    """Hostile h13 L11: file:// was accepted, and MLflow then failed at the run's start and was dropped (rc 0)."""
    with pytest.raises(ConfigError, match="names no folder"):
        MLflowLog(enabled=True, tracking_uri=uri)


def test_a_file_uri_with_a_folder_passes(tmp_path):
    MLflowLog(enabled=True, tracking_uri=f"file://{tmp_path}/ml")


def test_file_uri_naming_no_folder_is_one_line_on_the_command_line(cli):
    code, _, err = cli("steps=2", "task=adding", "task.n_train=64", "logger=mlflow", "logger.mlflow.tracking_uri=file://")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "names no folder" in err, err
