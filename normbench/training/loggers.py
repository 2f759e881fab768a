"""Loggers: copies of what a run measures, for the tools researchers already use (``logger=...``).

The run record (summary.json, metrics.jsonl) is always written and stays the report's only input;
a logger only adds another view of the same numbers. ``Hook`` names the training loop's hooks:
the points where it already records (``on_log``, ``on_eval``, ``on_probe``), the edges of each
step and probe (``on_step_start``, ``on_step_end``, ``on_probe_start``, for clocks such as
normbench/bench/harness.py's) and the end (``on_end`` with the finished summary); a hook object
implements the ones it needs (the hooks live in normbench/training/hooks.py, below every logger). A logger
never changes what is trained or measured, so ``logger`` is a harness key (normbench/configuration/schema.py).

A logger is one entry of ``LOGGERS`` (its check, its hook, what keeps it offline) beside its settings
in normbench/configuration/schema.py's LOGGER_KINDS and its choice in conf/logger/.

Several loggers at once (``logger=[tensorboard,mlflow,wandb,csv]``, or ``logger=many_loggers``) are one ``Loggers``: every hook
goes to each, named one way (normbench/training/tracking.py: run name, params, tags, scalar names). A
logger that raises during the run is dropped with one warning line: the record is written anyway.
"""

from __future__ import annotations

import csv
import errno
import io
import logging
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import torch

from normbench.checks import ConfigError
from normbench.norms import Identity, Norm
from normbench.records.record import open_run_file
from normbench.training.hooks import Hook, ScalarLogger
from normbench.training.mlflow_logger import OFFLINE as MLFLOW_OFFLINE
from normbench.training.mlflow_logger import MLflowLogger
from normbench.training.mlflow_logger import preflight as mlflow_preflight
from normbench.training.tracking import (
    FINAL_METRICS,
    RunNames,
    final_scalars,
    logger_folder,
    number,
    require_package,
    run_names,
)
from normbench.training.wandb_logger import OFFLINE as WANDB_OFFLINE
from normbench.training.wandb_logger import WandbLogger
from normbench.training.wandb_logger import preflight as wandb_preflight

__all__ = ["FINAL_METRICS", "LOGGERS", "CsvLogger", "LoggerKind", "Loggers", "MLflowLogger", "Hook", "ScalarLogger",
           "TensorBoardLogger", "WandbLogger", "build_logger", "norm_outputs"]

log = logging.getLogger("normbench")


class TensorBoardLogger(ScalarLogger):
    """Event files in ``<run_dir>/<dir>``: scalars, histograms at probe steps, hparams with final metrics."""

    kind = "tensorboard"

    def __init__(self, logdir: Path, names: RunNames, histograms: bool = True):
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError as err:  # torch ships the writer; the tensorboard package provides its protobufs
            raise ImportError('logger=tensorboard needs the tensorboard package: pip install -e ".[tensorboard]"'
                              f" ({err})") from None
        self.logdir, self.names, self.histograms = Path(logdir), names, histograms
        _quiet_writer_threads()
        self.writer = SummaryWriter(log_dir=str(self.logdir))
        self.last_step = 0
        if names.labels:  # the user's tags=[a,b], in TensorBoard's Text tab
            self.writer.add_text("tags", ", ".join(names.labels), 0)

    def scalars(self, step, values):
        for name, value in values.items():
            self.writer.add_scalar(name, value, step)
        self.last_step = max(self.last_step, step)

    def on_probe(self, trainer, step, stats, activations):
        super().on_probe(trainer, step, stats, activations)
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
            self.close()

    def close(self) -> None:
        self.writer.close()

    def _hparams(self, summary: dict) -> None:
        from torch.utils.tensorboard.summary import hparams

        # the params every logger gets (dotted names), as TensorBoard's hparams take them
        hparam_dict = {k: v for k, v in self.names.params.items()
                       if isinstance(v, (str, bool)) or number(v)}
        metrics = final_scalars(summary)
        # Into this writer's own file (as Lightning does), not add_hparams' timestamped subfolder.
        for part in hparams(hparam_dict, metrics, hparam_domain_discrete=None):
            self.writer.file_writer.add_summary(part)
        self.scalars(self.last_step, metrics)


def _quiet_writer_threads() -> None:
    """An error in tensorboard's writer thread (a full disk) left to that thread alone, once per process: the
    thread keeps it and the writer raises it on the run's next call, where Loggers says it in one line; threading's
    excepthook printed its traceback first (hostile h16 N3)."""
    hook = threading.excepthook
    if getattr(hook, "quiets_tensorboard", False):
        return

    def excepthook(args):
        if type(args.thread).__module__.startswith("tensorboard."):
            return
        hook(args)
    excepthook.quiets_tensorboard = True
    threading.excepthook = excepthook


class CsvLogger(ScalarLogger):
    """One CSV file in the run folder: ``step,metric,value``, a row per scalar, every scalar the
    other loggers get (final ones at the last step). Appends: a resumed run continues its file."""

    kind = "csv"

    def __init__(self, path: Path):
        self.path = Path(path)
        fd = open_run_file(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)  # no link followed, no FIFO
        self.file = io.TextIOWrapper(os.fdopen(fd, "wb"), encoding="utf-8", newline="")
        self.rows = csv.writer(self.file)
        if os.fstat(fd).st_size == 0:
            self.rows.writerow(["step", "metric", "value"])
        self.last_step = 0

    def scalars(self, step, values):
        self.rows.writerows([step, name, repr(value)] for name, value in values.items())
        self.file.flush()
        self.last_step = max(self.last_step, step)

    def on_end(self, summary):
        try:
            self.scalars(self.last_step, final_scalars(summary))
        finally:
            self.close()

    def close(self) -> None:
        self.file.close()


class Loggers(Hook):
    """The run's loggers as one hook object. A logger that raises in a hook is dropped with one
    warning (its library's server went away, a disk filled): the run and its record go on."""

    def __init__(self, members: list[Hook]):
        self.members = list(members)

    def _each(self, hook: str, *args, **kwargs) -> None:
        for member in list(self.members):
            try:
                getattr(member, hook)(*args, **kwargs)
            except Exception as err:
                self.members.remove(member)
                log.warning("%s: stopped logging (%s: %s); the run and its record go on",
                            getattr(member, "kind", type(member).__name__), type(err).__name__,
                            " ".join(str(err).split())[:200])
                _close(member)

    def on_step_start(self, trainer, step):
        self._each("on_step_start", trainer, step)

    def on_log(self, trainer, step, **scalars):
        self._each("on_log", trainer, step, **scalars)

    def on_eval(self, trainer, step, **scalars):
        self._each("on_eval", trainer, step, **scalars)

    def on_probe_start(self, trainer, step):
        self._each("on_probe_start", trainer, step)

    def on_probe(self, trainer, step, stats, activations):
        self._each("on_probe", trainer, step, stats, activations)

    def on_step_end(self, trainer, step):
        self._each("on_step_end", trainer, step)

    def on_end(self, summary):
        self._each("on_end", summary)


def _close(member: Hook) -> None:
    try:
        getattr(member, "close", lambda: None)()
    except Exception:  # noqa: BLE001 - already reported; only its files are released here
        pass


def tensorboard_preflight(settings, secrets=()) -> None:
    require_package("tensorboard", "logger=tensorboard", "tensorboard")


def _csv(settings, run_dir: Path, names: RunNames, sweep_dir: Path | None) -> Hook:
    parent = logger_folder(run_dir, str(Path(settings.file).parent))
    return CsvLogger(parent / Path(settings.file).name)


@dataclass(frozen=True)
class LoggerKind:
    """One logger: everything the run asks of it. Its settings are schema.LOGGER_KINDS' entry of the
    same name (conf/logger/<name>.yaml chooses it). ``preflight(settings, secrets)`` raises ConfigError
    (one line, exit 2) before any file opens: its package is missing, its server does not answer as
    its server would; ``build(settings, run_dir, names, sweep_dir)`` makes the hook; ``offline``
    names the environment variables (and their values) that keep its library on this machine:
    set for the process unless the user set them (the user's own value turns a feature on)."""

    preflight: Callable
    build: Callable
    offline: dict = field(default_factory=dict)


LOGGERS = {
    "tensorboard": LoggerKind(tensorboard_preflight, lambda settings, run_dir, names, sweep_dir: TensorBoardLogger(
        logger_folder(run_dir, settings.dir), names, settings.histograms)),
    "mlflow": LoggerKind(mlflow_preflight, lambda settings, run_dir, names, sweep_dir: MLflowLogger(
        settings, run_dir, names, sweep_dir=sweep_dir), MLFLOW_OFFLINE),
    "wandb": LoggerKind(wandb_preflight, lambda settings, run_dir, names, sweep_dir: WandbLogger(
        settings, run_dir, names), WANDB_OFFLINE),
    "csv": LoggerKind(lambda settings, secrets=(): None, _csv),
}
PREFLIGHT = {kind: entry.preflight for kind, entry in LOGGERS.items()}  # what the earlier code called it


def keep_offline(kinds) -> None:
    """Each chosen logger's ``offline`` variables, set unless the user set them (LoggerKind)."""
    for kind in kinds:
        for name, value in LOGGERS[kind].offline.items():
            os.environ.setdefault(name, value)


@torch.no_grad()
def norm_outputs(model, x, autocast) -> dict[str, torch.Tensor]:
    """The output of every norm in ``model`` on one batch (float32, CPU), running statistics untouched.

    One extra forward in the model's current mode, outside the timed step: the training step's own
    forward is not hooked, so a logger cannot change its time.
    """
    from normbench.training.probes import buffers_preserved

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


def build_logger(config, run_dir: Path, summary: dict | None = None, *, sweep_dir: Path | None = None,
                 secrets: tuple[str, ...] = ()) -> Hook:
    """The loggers a run's ``logger`` config names (normbench/configuration/schema.py: LoggerConfig), writing under
    its run directory, named from its record as started (``summary``). Each logger's folder is made
    by the project first (tracking.logger_folder); a tracking server that does not answer is a
    ConfigError before anything is written (one line, exit status 2)."""
    chosen = config.chosen()
    if not chosen:
        return Hook()
    run_dir = Path(run_dir)
    names = run_names({**(summary or {}), "run_dir": str(run_dir)}, secrets)
    keep_offline(chosen)  # before any logger's library is imported: its telemetry starts with the import
    for kind, settings in chosen.items():  # every package is there and every server answers before any file opens
        LOGGERS[kind].preflight(settings, names.secrets)
    built: list[Hook] = []
    try:
        for kind, settings in chosen.items():
            try:
                built.append(LOGGERS[kind].build(settings, run_dir, names, sweep_dir))
            except Exception as err:  # its server answered the check, then went away: as a logger failing later
                in_run = isinstance(err, OSError) and str(getattr(err, "filename", None) or "").startswith(str(run_dir))
                if isinstance(err, ConfigError) or in_run or (isinstance(err, OSError) and err.errno == errno.ELOOP):
                    # a setting, a planted link as its folder (logger_folder), or a file in the run folder the
                    # logger cannot open (a FIFO, a file where its folder goes): refused, never dropped
                    raise
                log.warning("%s: not started (%s: %s); the run and its record go on without it", kind,
                            type(err).__name__, " ".join(str(err).split())[:200])
    except BaseException:
        for member in built:
            _close(member)
        raise
    return Loggers(built)
