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

import logging
import os
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

from normbench.training.hooks import ScalarLogger
from normbench.configuration.schema import uri_scheme
from normbench.training.tracking import (RunNames, final_scalars, logger_folder, require_package, require_reachable)

log = logging.getLogger("normbench")
MAX_PARAM = 6000  # MLflow's limit on a param's value
MAX_TAG = 5000    # and on a tag's
BATCH = 100       # params per log_batch call (MLflow's limit); metrics: 1000


def preflight(settings, secrets: tuple[str, ...] = ()) -> None:
    """Before anything is written: the package is installed (with SQLAlchemy for a database store)
    and a tracking server answers (ConfigError, one line, otherwise)."""
    uri = settings.tracking_uri
    if uri is not None:
        require_reachable(uri, "logger.mlflow.tracking_uri", secrets)
    require_package("mlflow", "logger=mlflow", "mlflow")
    if uri is not None and uri_scheme(uri) in ("sqlite", "postgresql", "mysql", "mssql"):
        for module in ("sqlalchemy", "alembic"):  # what MLflow's database stores import
            require_package(module, f"logger.mlflow.tracking_uri={uri_scheme(uri)}://...", "mlflow")


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
        from mlflow.exceptions import MlflowException
        from mlflow.tracking import MlflowClient

        self.run_dir, self.sweep_dir, self.names = Path(run_dir), sweep_dir, names
        self.artifacts_named = settings.artifact_location is not None
        uri = settings.tracking_uri
        if uri is None:  # the default: a file store inside the run folder, made by the project first
            uri = logger_folder(self.run_dir, settings.dir).resolve().as_uri()
        self.store = _local_path(uri) if uri_scheme(uri) in ("", "file") else None  # a file store's folder
        if self.store is not None:  # MLflow 3 keeps the file store in maintenance: opt in
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
        self.client = MlflowClient(tracking_uri=uri)
        name = settings.experiment or names.experiment
        experiment = self.client.get_experiment_by_name(name)
        if experiment is None:
            location = settings.artifact_location
            if location is None and uri_scheme(uri) not in ("", "file", "http", "https", "databricks"):
                # a database store: artifacts in the sweep (or run) folder, not ./mlruns of the cwd
                location = (logger_folder(logger_folder(Path(sweep_dir or run_dir), settings.dir), "artifacts")
                            .resolve().as_uri())
            try:
                experiment_id = self.client.create_experiment(name, artifact_location=location)
            except MlflowException:  # another job of the sweep made it first
                experiment_id = self.client.get_experiment_by_name(name).experiment_id
        else:
            experiment_id = experiment.experiment_id
        tags = {k: v[:MAX_TAG] for k, v in names.tags.items()}
        commit = names.tags.get("normbench.commit")
        if commit:
            tags["mlflow.source.git.commit"] = commit.removesuffix("-dirty")
        run = self.client.create_run(experiment_id, run_name=names.name, tags=tags)
        self.run_id, self.artifact_uri = run.info.run_id, run.info.artifact_uri
        params = [Param(k, str(v)[:MAX_PARAM]) for k, v in names.params.items()]
        for start in range(0, len(params), BATCH):
            self.client.log_batch(self.run_id, params=params[start:start + BATCH])

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
