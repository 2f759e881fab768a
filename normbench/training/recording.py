"""The hooks that write what the loop measured: the run record's curves (``RecordHook``) and the progress
bar (``ProgressBar``). The Trainer (normbench/training/train.py) calls them as it calls the loggers;
``bench`` builds a Trainer without them and so writes nothing.
"""

from __future__ import annotations

import json
import logging
import math
import sys

from normbench.configuration.config import Config
from normbench.records.record import RecordWriter
from normbench.training.hooks import Hook

log = logging.getLogger("normbench")


class RecordHook(Hook):
    """The run's ``metrics.jsonl`` lines (train, eval, probe) and its record's ``precision`` section."""

    def __init__(self, record: RecordWriter):
        self.record = record

    def on_fit_start(self, trainer):
        # the trainer's own dict: step 1 adds the dtypes the norms received, and finish writes it
        self.record.summary["precision"] = trainer.precision_summary

    def on_log(self, trainer, step, **scalars):
        self._train(trainer, step, scalars)

    def on_diverge(self, trainer, step, **scalars):
        self._train(trainer, step, scalars)

    def _train(self, trainer, step: int, scalars: dict):
        self.record.log({"kind": "train", "step": step, "loss": scalars["loss"], "lr": scalars["lr"],
                         "grad_norm": scalars["grad_norm"], "time_s": trainer.measured.train_s})

    def on_eval(self, trainer, step, **scalars):
        self.record.log({"kind": "eval", "step": step, "val_metric": scalars["val_metric"],
                         "val_loss": scalars["val_loss"], "time_s": trainer.measured.train_s})

    def on_probe(self, trainer, step, stats, activations):
        self.record.log({"kind": "probe", "step": step, **stats, **activations})

    def state_dict(self) -> dict:
        """The curves as written so far: a resumed run's metrics.jsonl starts with them."""
        curves = self.record.run_dir / "metrics.jsonl"
        return {"curves": curves.read_text() if curves.is_file() else ""}

    def load_state_dict(self, state: dict) -> None:
        for line in state["curves"].splitlines():  # the curves as they stood at the checkpoint, then on from there
            self.record.log(json.loads(line))


class ProgressBar(Hook):
    """A tqdm bar on a terminal; otherwise one plain log line per evaluation (logs, SLURM, joblib)."""

    def __init__(self, cfg: Config, task):
        self.steps, self.metric = cfg.steps, task.metric
        self.bar = None
        if cfg.progress and sys.stderr is not None and sys.stderr.isatty():  # None: stderr closed (2>&-, hostile E06)
            from tqdm import tqdm

            self.bar = tqdm(total=cfg.steps, unit="step", leave=False, dynamic_ncols=True)

    def on_log(self, trainer, step, **scalars):
        if self.bar is not None:
            self.bar.n = step
            self.bar.set_postfix_str(f"loss {scalars['loss']:.4g}", refresh=True)

    def on_eval(self, trainer, step, **scalars):
        if self.bar is None:
            p = trainer.measured
            log.info("step %d/%d  loss %.4g  val %s %.4g  (%.1f s training)", step, self.steps,
                     p.losses[-1] if p.losses else math.nan, self.metric, scalars["val_metric"], p.train_s)

    def on_fit_end(self, trainer):
        if self.bar is not None:
            self.bar.close()
