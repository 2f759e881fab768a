"""logger=mlflow: the run in an MLflow store, beside its record (normbench/training/hooks.py's hooks).

One MLflow run per normbench run, named as every logger names it (normbench/training/tracking.py): in the
experiment named for the study (``logger.mlflow.experiment`` to choose one; ``normbench`` outside a
study), the resolved config as params (dotted: ``norm.kind``, ``model.hidden``), the study, arm,
seed, group and config hashes and the commit as ``normbench.*`` tags, every train line,
evaluation and probe as metrics at its step (``train/loss``, ``val/<metric>``, ``grad/std``), the
final metrics (``final/best_val`` ...) and the record (summary.json, metrics.jsonl) as artifacts.

The store: a local file store in ``<run_dir>/<logger.mlflow.dir>`` (MLflow 3 keeps file stores in
maintenance and wants ``MLFLOW_ALLOW_FILE_STORE=true``, set here when unset), unless
``logger.mlflow.tracking_uri`` names another: a server (``http://host:5000``, which must answer
within seconds, else the run is refused with one line), a database (``sqlite:////abs/mlflow.db``:
the ``[mlflow]`` extra brings SQLAlchemy and alembic) or a file store elsewhere. A database store
has no artifact folder of its own: an experiment this logger creates keeps its artifacts in the
sweep folder (``<sweep_dir>/<dir>/artifacts``), or the run folder for a single run, unless
``logger.mlflow.artifact_location`` names one; a local artifact folder of an existing experiment
elsewhere is not written into (one warning; the tags name the run folder and its record).
MlflowClient, not the fluent API: several jobs of a sweep share a process and must not share a
global "active run".
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

from normbench.checks import ConfigError
from normbench.configuration.schema import uri_scheme
from normbench.records.record import Unreadable, parse_json
from normbench.training.hooks import ScalarLogger
from normbench.training.tracking import (
    RunNames,
    final_scalars,
    logger_folder,
    public_uri,
    require_package,
    require_reachable,
)

log = logging.getLogger("normbench")
MAX_PARAM = 6000  # MLflow's limit on a param's value
MAX_TAG = 5000    # and on a tag's
BATCH = 100       # params per log_batch call (MLflow's limit); metrics: 1000


# MLflow 3 turns on usage telemetry (and writes ~/.config/mlflow/telemetry.json) unless told not to:
# a benchmark that runs offline sends nothing. MLFLOW_DISABLE_TELEMETRY=false in the environment turns it on.
OFFLINE = {"MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true"}
PROBE = "/api/2.0/mlflow/experiments/search?max_results=1"  # what every MLflow tracking server answers
# The probe's answer is an object a few levels deep ({"experiments": [{"tags": [{...}]}]}): one nested
# past this is not MLflow's, and a 100,000-deep one must not reach a recursive walk as if it were.
MAX_ANSWER_DEPTH = 32


def _depth(value, limit: int) -> int:
    """How deep ``value`` nests, counted up to ``limit`` + 1 (never further)."""
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    deepest = 0
    for child in children:
        deepest = max(deepest, _depth(child, limit - 1) if limit > 0 else 1)
        if deepest > limit:
            break
    return 1 + deepest


def bound_requests(settings) -> None:
    """The config's time bounds on MLflow's HTTP client (read by it at each request): ``timeout``
    seconds an answer, ``retries`` retries, short backoff. Its own defaults (120 s, 7 retries with a
    doubling backoff) let a dead server stall a run for minutes."""
    os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] = str(int(settings.timeout))
    os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] = str(int(settings.retries))
    os.environ["MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR"] = "1"
    os.environ["MLFLOW_HTTP_REQUEST_BACKOFF_JITTER"] = "0"


class _Refused(Exception):
    """The check's answer was a redirect: normbench asks only the server the user named."""


def _bounded_opener(deadline_s: float):
    """A urllib opener (proxies as the environment says) that follows no redirect (one to another host
    would connect where nobody named: hostile case L08) and whose connections are all shut at
    ``deadline_s`` seconds from now: a server that drips its answer a byte at a time is bounded by the
    whole check's time, not each read's (L11). Returns the opener and ``expired()``, true once the
    deadline shut them."""
    import socket
    import threading
    import urllib.request

    opened: list[socket.socket] = []  # the sockets themselves: urllib drops the connection's after the headers
    expired = threading.Event()

    class Recording:
        def do_open(self, http_class, req, **kwargs):
            class Connection(http_class):
                def connect(self):
                    super().connect()
                    opened.append(self.sock)
            return super().do_open(Connection, req, **kwargs)

    class Http(Recording, urllib.request.HTTPHandler):
        pass

    class Https(Recording, urllib.request.HTTPSHandler):
        pass

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, req, fp, code, msg, headers, newurl):
            raise _Refused(code)

    def shut() -> None:
        expired.set()
        for sock in list(opened):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)  # a blocked read returns at once

    timer = threading.Timer(deadline_s, shut)
    timer.daemon = True
    timer.start()
    return urllib.request.build_opener(Http, Https, NoRedirect), expired, timer


def require_tracking_server(uri: str, settings, secrets: tuple[str, ...] = ()) -> None:
    """ConfigError (one line) unless ``uri`` answers as an MLflow tracking server within the config's
    timeout: a server that accepts and never answers, answers 5xx, or is something else (a proxy's
    404, a web page) is refused before training, not found out by MLflow's retries during it."""
    import base64
    import http.client
    import urllib.error
    import urllib.request

    parts = urlsplit(uri)
    netloc = parts.hostname + (f":{parts.port}" if parts.port else "")
    if ":" in parts.hostname:
        netloc = f"[{parts.hostname}]" + (f":{parts.port}" if parts.port else "")
    url = f"{parts.scheme}://{netloc}{parts.path.rstrip('/')}{PROBE}"
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    user = unquote(parts.username) if parts.username else os.environ.get("MLFLOW_TRACKING_USERNAME")
    password = unquote(parts.password or "") if parts.username else os.environ.get("MLFLOW_TRACKING_PASSWORD", "")
    if os.environ.get("MLFLOW_TRACKING_TOKEN"):
        request.add_header("Authorization", f"Bearer {os.environ['MLFLOW_TRACKING_TOKEN']}")
    elif user:
        request.add_header("Authorization", "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode())
    key, shown = "logger.mlflow.tracking_uri", public_uri(uri, secrets)
    slow = f"accepts connections but does not answer within logger.mlflow.timeout={settings.timeout} s"
    opener, expired, timer = _bounded_opener(float(settings.timeout))
    try:
        with opener.open(request, timeout=settings.timeout) as answer:
            body = answer.read(1 << 20)
        if expired.is_set():  # the deadline cut the answer short
            raise TimeoutError
        answer = parse_json(body or b"{}", "answer")  # bounded: its keys, and a nesting past recursion refused
        if not isinstance(answer, dict) or _depth(answer, MAX_ANSWER_DEPTH) > MAX_ANSWER_DEPTH:
            raise Unreadable("not an MLflow answer")
        return
    except _Refused as err:
        why = (f"answers with a redirect (HTTP {err.args[0]}) where an MLflow tracking server answers; normbench "
               "follows none: name the server itself")
    except urllib.error.HTTPError as err:
        if err.code in (401, 403):
            why = (f"refuses the request (HTTP {err.code}): give its credentials in MLFLOW_TRACKING_USERNAME and "
                   "MLFLOW_TRACKING_PASSWORD, or MLFLOW_TRACKING_TOKEN")
        elif err.code >= 500:
            why = f"answers HTTP {err.code} (a server error); try again when it is up, or choose another"
        else:
            why = f"answers HTTP {err.code} where an MLflow tracking server answers: it is not one (a proxy, a web page?)"
    except (TimeoutError, OSError, http.client.HTTPException) as err:
        reason = getattr(err, "reason", err)
        why = (slow if expired.is_set() or isinstance(reason, TimeoutError) or "timed out" in str(reason)
               else f"cannot be asked ({' '.join(str(reason).split())[:120]})")
    except (ValueError, Unreadable):  # its answer is not JSON, or not the object an MLflow server answers
        why = slow if expired.is_set() else \
            "answers with something other than JSON: it is not an MLflow tracking server (a web page?)"
    finally:
        timer.cancel()
    raise ConfigError(f"{key}={shown!r} {why}")


def preflight(settings, secrets: tuple[str, ...] = ()) -> None:
    """Before anything is written: the package is installed (with SQLAlchemy for a database store)
    and a tracking server answers, as an MLflow server does, within the config's timeout
    (ConfigError, one line, otherwise)."""
    uri = settings.tracking_uri
    if uri is not None:
        require_reachable(uri, "logger.mlflow.tracking_uri", secrets, timeout=min(3.0, settings.timeout))
        if uri_scheme(uri) in ("http", "https"):
            require_tracking_server(uri, settings, secrets)
    require_package("mlflow", "logger=mlflow", "mlflow")
    if uri is not None and uri_scheme(uri) in ("sqlite", "postgresql", "mysql", "mssql"):
        for module in ("sqlalchemy", "alembic"):  # what MLflow's database stores import
            require_package(module, f"logger.mlflow.tracking_uri={uri_scheme(uri)}://...", "mlflow")
    database = sqlite_file(uri) if uri is not None and uri_scheme(uri) == "sqlite" else None
    if database is not None and not database.parent.is_dir():  # SQLite makes the file, never its folder
        raise ConfigError(f"logger.mlflow.tracking_uri={public_uri(uri, secrets)!r}: the folder "
                          f"{str(database.parent)[:200]!r} does not exist; make it, or name another")


def sqlite_file(uri: str) -> Path | None:
    """The database file a ``sqlite:`` URI names, or None (in memory, or no file named)."""
    # sqlite:///m.db is m.db (relative), sqlite:////abs/m.db is /abs/m.db; a query string is SQLAlchemy's
    _, _, rest = uri.partition(":///")
    path = Path(unquote(rest.split("?")[0]))
    return None if not rest or not path.name or path.name == ":memory:" else path


@contextlib.contextmanager
def store_made_once(uri: str):
    """Held while a job opens a SQLite store: an exclusive lock on the database file itself (made
    empty if new, which SQLite takes as a new database). Two jobs that open one new store at once
    would both run its ~50 migrations and one would fail; the second now finds it made."""
    if uri_scheme(uri) != "sqlite":
        yield
        return
    import fcntl

    path = sqlite_file(uri)
    if path is None:
        yield
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # the lock goes with it


def _local_path(uri: str) -> Path | None:
    """The folder a ``file:`` URI or a plain path names; None for anything remote."""
    scheme = uri_scheme(uri)
    if scheme == "":
        return Path(uri).expanduser().resolve()
    if scheme == "file":
        return Path(unquote(urlsplit(uri).path)).resolve()
    return None


def _within(path: Path, folder: Path | None) -> bool:
    return folder is not None and path.is_relative_to(Path(folder).resolve())


class MLflowLogger(ScalarLogger):
    kind = "mlflow"

    def __init__(self, settings, run_dir: Path, names: RunNames, sweep_dir: Path | None = None):
        from mlflow.entities import Param
        from mlflow.tracking import MlflowClient

        self.run_dir, self.sweep_dir, self.names = Path(run_dir), sweep_dir, names
        bound_requests(settings)
        self.artifacts_named = settings.artifact_location is not None
        uri = settings.tracking_uri
        if uri is None:  # the default: a file store inside the run folder, made by the project first
            uri = logger_folder(self.run_dir, settings.dir).resolve().as_uri()
        self.store = _local_path(uri) if uri_scheme(uri) in ("", "file") else None  # a file store's folder
        if self.store is not None:  # MLflow 3 keeps the file store in maintenance: opt in
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
        with store_made_once(uri):  # a new database store's tables are made by one job, the others wait
            self.client = MlflowClient(tracking_uri=uri)
            experiment_id = self._experiment(settings, uri, names, run_dir, sweep_dir)
        tags = {k: v[:MAX_TAG] for k, v in names.tags.items()}
        if names.labels:  # the user's tags=[a,b]: each one a tag to filter runs by, and all of them in one
            tags.update({label: "" for label in names.labels}, **{"normbench.tags": ",".join(names.labels)[:MAX_TAG]})
        commit = names.tags.get("normbench.commit")
        if commit:
            tags["mlflow.source.git.commit"] = commit.removesuffix("-dirty")
        run = self.client.create_run(experiment_id, run_name=names.name, tags=tags)
        self.run_id, self.artifact_uri = run.info.run_id, run.info.artifact_uri
        params = [Param(k, str(v)[:MAX_PARAM]) for k, v in names.params.items()]
        for start in range(0, len(params), BATCH):
            self.client.log_batch(self.run_id, params=params[start:start + BATCH])

    def _experiment(self, settings, uri: str, names: RunNames, run_dir: Path, sweep_dir: Path | None) -> str:
        """The id of the run's experiment, made if new."""
        from mlflow.exceptions import MlflowException

        name = settings.experiment or names.experiment
        experiment = self.client.get_experiment_by_name(name)
        if experiment is not None:
            return experiment.experiment_id
        location = settings.artifact_location
        if location is None and uri_scheme(uri) not in ("", "file", "http", "https", "databricks"):
            # a database store: artifacts in the sweep (or run) folder, not ./mlruns of the cwd
            location = (logger_folder(logger_folder(Path(sweep_dir or run_dir), settings.dir), "artifacts")
                        .resolve().as_uri())
        try:
            return self.client.create_experiment(name, artifact_location=location)
        except MlflowException:  # another job of the sweep made it first
            return self.client.get_experiment_by_name(name).experiment_id

    def scalars(self, step: int, values: dict[str, float]) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        metrics = [Metric(name, value, now, step) for name, value in values.items()]
        for start in range(0, len(metrics), 1000):
            self.client.log_batch(self.run_id, metrics=metrics[start:start + 1000])

    def _artifacts_here(self) -> bool:
        """Whether the record may be copied into the run's artifact folder: a remote one (the server's),
        one the user named (or inside the file store named), or a local one inside this run's folder or its sweep's."""
        local = _local_path(self.artifact_uri)
        if local is None or self.artifacts_named or any(_within(local, f) for f in (self.store, self.run_dir, self.sweep_dir)):
            return True
        log.warning("mlflow: the record is not copied to the experiment's artifacts in %s, outside this run's "
                    "folder (logger.mlflow.artifact_location names where they go); the run's tags name its folder",
                    local)
        return False

    def on_end(self, summary):
        try:
            self.scalars(0, final_scalars(summary))
            self.client.set_tag(self.run_id, "normbench.status", str(summary.get("status")))
            run_dir = Path(summary.get("run_dir") or self.run_dir)
            if self._artifacts_here():
                for name in ("summary.json", "metrics.jsonl"):
                    if (run_dir / name).is_file():
                        self.client.log_artifact(self.run_id, str(run_dir / name), artifact_path="record")
            status = {"ok": "FINISHED", "interrupted": "KILLED"}.get(summary.get("status"), "FAILED")
            self.client.set_terminated(self.run_id, status=status)
        except Exception as err:  # the record is written already: a logger must not turn a result into a crash
            log.warning("mlflow: could not finish the run: %s", err)
