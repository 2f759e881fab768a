"""logger=mlflow: the run in an MLflow store, beside its record (normbench/hooks.py's hooks).

One MLflow run per normbench run, in the experiment ``normbench``: the resolved config as params
(dotted keys: ``norm.kind``, ``model.hidden``), the seed and the run folder as tags, every train
line, evaluation and probe as metrics at its step (``train/loss``, ``val/<metric>``, ``grad/std``),
the final metrics (``final/best_val`` ...) and the record (summary.json, metrics.jsonl) as
artifacts. The store is a local file store in ``<run_dir>/<logger.dir>`` (MLflow 3 wants
``MLFLOW_ALLOW_FILE_STORE=true`` for one; set here when unset) unless ``logger.tracking_uri`` names
another (a server, ``sqlite:///...``, ``file:///...``). MlflowClient, not the fluent API: several jobs of a sweep
share a process and must not share a global "active run".
"""

from __future__ import annotations

import logging
import math
import os
import time
from pathlib import Path

from normbench.hooks import RunLogger
from normbench.metrics import viewed

log = logging.getLogger("normbench")
EXPERIMENT = "normbench"
MAX_PARAM = 6000  # MLflow's limit on a param's value


def flat(config: dict, prefix: str = "") -> dict[str, str]:
    """``{"norm": {"kind": "ln"}}`` -> ``{"norm.kind": "ln"}``, values as strings (MLflow params)."""
    out = {}
    for key, value in config.items():
        if isinstance(value, dict):
            out.update(flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = str(value)[:MAX_PARAM]
    return out


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class MLflowLogger(RunLogger):
    def __init__(self, store_dir: Path, tracking_uri: str | None = None):
        try:
            from mlflow.tracking import MlflowClient
        except ImportError as err:
            raise ImportError(f'logger=mlflow needs the mlflow package: pip install -e ".[mlflow]" ({err})') from None
        self.uri = tracking_uri or Path(store_dir).resolve().as_uri()
        if self.uri.startswith("file:") or "://" not in self.uri:  # MLflow 3 keeps the file store in maintenance: opt in
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
        self.client = MlflowClient(tracking_uri=self.uri)
        experiment = self.client.get_experiment_by_name(EXPERIMENT)
        self.experiment_id = experiment.experiment_id if experiment else self.client.create_experiment(EXPERIMENT)
        self.run_id: str | None = None

    def _run(self, trainer) -> str:
        """The MLflow run, created at the first hook, when the record names the run."""
        if self.run_id is None:
            from mlflow.entities import Param

            summary = trainer.record.summary
            run = self.client.create_run(self.experiment_id, run_name=trainer.record.run_dir.name,
                                         tags={"normbench.run_dir": str(trainer.record.run_dir),
                                               "normbench.config_hash": str(summary.get("config_hash")),
                                               "normbench.seed": str(summary.get("seed"))})
            self.run_id = run.info.run_id
            params = [Param(k, v) for k, v in flat(summary.get("config") or {}).items()]
            for start in range(0, len(params), 100):  # MLflow takes at most 100 params a call
                self.client.log_batch(self.run_id, params=params[start:start + 100])
        return self.run_id

    def _metrics(self, trainer, prefix: str, step: int, values: dict) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        metrics = [Metric(f"{prefix}/{k}", float(v), now, step) for k, v in values.items() if _number(v)]
        if metrics:
            self.client.log_batch(self._run(trainer), metrics=metrics)

    def on_step_start(self, trainer, step):
        self._run(trainer)

    def on_log(self, trainer, step, **scalars):
        self._metrics(trainer, "train", step, scalars)

    def on_eval(self, trainer, step, **scalars):
        self._metrics(trainer, "val", step, {trainer.task.metric if k == "val_metric" else k.removeprefix("val_"): v
                                             for k, v in scalars.items()})

    def on_probe(self, trainer, step, stats, activations):
        self._metrics(trainer, "grad", step, {"std": stats.get("grad_std"), "kurtosis": stats.get("grad_kurtosis")})

    def on_end(self, summary):
        if self.run_id is None:  # ended before its first step: nothing was logged
            return
        try:
            from mlflow.entities import Metric

            finals = {**(summary.get("metrics") or {}), **(summary.get("throughput") or {})}
            kept = viewed("final")  # the record's values a logger keeps as the run's final metrics
            now = int(time.time() * 1000)
            self.client.log_batch(self.run_id, metrics=[Metric(f"final/{k}", float(v), now, 0)
                                                        for k, v in finals.items() if k in kept and _number(v)])
            self.client.set_tag(self.run_id, "normbench.status", str(summary.get("status")))
            run_dir = Path(summary.get("run_dir") or self.client.get_run(self.run_id).data.tags["normbench.run_dir"])
            for name in ("summary.json", "metrics.jsonl"):
                if (run_dir / name).is_file():
                    self.client.log_artifact(self.run_id, str(run_dir / name), artifact_path="record")
            status = {"ok": "FINISHED", "interrupted": "KILLED"}.get(summary.get("status"), "FAILED")
            self.client.set_terminated(self.run_id, status=status)
        except Exception as err:  # the record is written already: a logger must not turn a result into a crash
            log.warning("mlflow: could not finish the run: %s", err)
