"""Loggers: copies of what a run measures, for the tools researchers already use (``logger=...``).

The run record (summary.json, metrics.jsonl) is always written and stays the report's only input;
a logger only adds another view of the same numbers. ``RunLogger`` names the training loop's hooks:
the points where it already records (``on_log``, ``on_eval``, ``on_probe``), the edges of each
step and probe (``on_step_start``, ``on_step_end``, ``on_probe_start``, for clocks such as
normbench/bench/harness.py's) and the end (``on_end`` with the finished summary); a hook object
implements the ones it needs (the hooks live in normbench/hooks.py, below every logger). A logger
never changes what is trained or measured, so ``logger`` is a harness key (normbench/schema.py).
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import torch

from normbench.hooks import RunLogger
from normbench.metrics import viewed
from normbench.mlflow_logger import MLflowLogger
from normbench.norms import Identity, Norm

__all__ = ["FINAL_METRICS", "MLflowLogger", "RunLogger", "TensorBoardLogger", "build_logger", "norm_outputs"]

log = logging.getLogger("normbench")


class TensorBoardLogger(RunLogger):
    """Event files in ``<run_dir>/<dir>``: scalars, histograms at probe steps, hparams with final metrics."""

    def __init__(self, logdir: Path, histograms: bool = True):
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError as err:  # torch ships the writer; the tensorboard package provides its protobufs
            raise ImportError('logger=tensorboard needs the tensorboard package: pip install -e ".[tensorboard]"'
                              f" ({err})") from None
        self.logdir, self.histograms = Path(logdir), histograms
        self.writer = SummaryWriter(log_dir=str(self.logdir))
        self.metric_name = "metric"
        self.last_step = 0

    def _scalars(self, prefix: str, step: int, values: dict) -> None:
        for name, value in values.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                self.writer.add_scalar(f"{prefix}/{name}", value, step)
        self.last_step = max(self.last_step, step)

    def on_log(self, trainer, step, **scalars):
        self._scalars("train", step, scalars)

    def on_eval(self, trainer, step, **scalars):
        self.metric_name = trainer.task.metric
        self._scalars("val", step, {trainer.task.metric if k == "val_metric" else k.removeprefix("val_"): v
                                    for k, v in scalars.items()})

    def on_probe(self, trainer, step, stats, activations):
        self._scalars("grad", step, {"std": stats.get("grad_std"), "kurtosis": stats.get("grad_kurtosis")})
        self._scalars("grad_norm", step, stats.get("layer_grad_norm") or {})
        self._scalars("act_rms", step, activations.get("act_rms") or {})
        self._scalars("act_max_abs", step, activations.get("act_max_abs") or {})
        if self.histograms:
            self._histograms(trainer, step)

    def _histograms(self, trainer, step: int) -> None:
        model = trainer.model
        for name, p in model.named_parameters():  # the gradients this step applied (after clipping)
            if p.grad is not None and torch.isfinite(p.grad).all():
                self.writer.add_histogram(f"grad/{name}", p.grad.detach().float().cpu(), step)
        for name, values in norm_outputs(model, trainer.probe_batch[0], trainer.autocast).items():
            self.writer.add_histogram(f"norm_output/{name}", values, step)

    def on_end(self, summary):
        try:
            self._hparams(summary)
        except Exception as err:  # the record is written already: a logger must not turn a result into a crash
            log.warning("tensorboard: could not write the hparams: %s", err)
        finally:
            self.writer.close()

    def _hparams(self, summary: dict) -> None:
        from torch.utils.tensorboard.summary import hparams

        axes = summary.get("axes") or {}
        hparam_dict = {k: v if isinstance(v, (int, float, str, bool)) else str(v) for k, v in axes.items()}
        hparam_dict["seed"] = summary.get("seed")
        hparam_dict = {k: v for k, v in hparam_dict.items() if v is not None}
        finals = {**(summary.get("metrics") or {}), **(summary.get("throughput") or {})}
        metrics = {f"hparam/{k}": v for k, v in finals.items()
                   if k in FINAL_METRICS and isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)}
        metrics["hparam/diverged"] = float(summary.get("status") == "diverged")
        # Into this writer's own file (as Lightning does), not add_hparams' timestamped subfolder.
        for part in hparams(hparam_dict, metrics, hparam_domain_discrete=None):
            self.writer.file_writer.add_summary(part)
        for tag, value in metrics.items():
            self.writer.add_scalar(tag, value, self.last_step)


FINAL_METRICS = viewed("final")  # the record's values a logger keeps as the run's final metrics


@torch.no_grad()
def norm_outputs(model, x, autocast) -> dict[str, torch.Tensor]:
    """The output of every norm in ``model`` on one batch (float32, CPU), running statistics untouched.

    One extra forward in the model's current mode, outside the timed step: the training step's own
    forward is not hooked, so a logger cannot change its time.
    """
    from normbench.probes import buffers_preserved

    seen: dict[str, torch.Tensor] = {}
    handles = []
    for name, module in model.named_modules():
        if isinstance(module, Norm) and not isinstance(module, Identity):
            def record(module, inputs, output, name=name):
                seen[name] = output.detach().float().cpu().flatten()
            handles.append(module.register_forward_hook(record))
    try:
        with buffers_preserved(model), autocast():
            model(x)
    finally:
        for handle in handles:
            handle.remove()
    return seen


def build_logger(config, run_dir: Path) -> RunLogger:
    """The logger a run's ``logger`` config names, writing under its run directory."""
    if config.name == "tensorboard":
        return TensorBoardLogger(Path(run_dir) / config.dir, histograms=config.histograms)
    if config.name == "mlflow":
        return MLflowLogger(Path(run_dir) / config.dir, tracking_uri=config.tracking_uri)
    return RunLogger()
