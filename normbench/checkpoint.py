"""Checkpoints: runs that survive preemption (``checkpoint_every``, ``resume=true``).

Every ``checkpoint_every`` steps, between two steps (after step k's evaluation, before step k+1
draws its batch), ``checkpoint.pt`` in the run folder is replaced atomically by the whole state
the rest of the run depends on: the weights (and a pure mode's half copy), the optimizer, the
loss scaler, every random generator (torch, CUDA, numpy, Python, the batch sampler's generator and
its place in the epoch), the progress so far (losses, best metric, profiles, spikes) and the
curves written (metrics.jsonl up to step k). The learning-rate schedule is a function of the step
(train.learning_rate), so the step is its state. ``resume=true`` continues an interrupted run from
its checkpoint: the new attempt writes the saved curves again and trains steps k+1.., so that it
ends with the metrics an uninterrupted run has (bitwise, on CPU with ``deterministic=true``;
tests/test_checkpoint.py). A run that ends (ok, diverged) deletes its checkpoint.

The Trainer knows nothing of this: ``Checkpointer`` is one more hook on its loop
(normbench/loggers.py), and ``restore`` sets its state and ``start_step`` before ``fit``.
"""

from __future__ import annotations

import json
import logging
import os
import random
from pathlib import Path

import numpy as np
import torch

from normbench.loggers import RunLogger
from normbench.record import RunRecord, read_summary, write_atomic

log = logging.getLogger("normbench")
FILE = "checkpoint.pt"
FORMAT = 1


class Checkpointer(RunLogger):
    """Saves the trainer's state every ``every`` steps into ``<run_dir>/checkpoint.pt``."""

    def __init__(self, every: int, path: Path, config_hash: str):
        self.every, self.path, self.config_hash = every, Path(path), config_hash
        self.saved_step = 0

    def on_step_start(self, trainer, step: int) -> None:
        done = step - 1
        if done > self.saved_step and done % self.every == 0:
            save(trainer, self.path, done, self.config_hash)
            self.saved_step = done


def state(trainer, step: int, config_hash: str) -> dict:
    """Everything the run's remaining steps depend on, after ``step`` steps."""
    batches = trainer.train_batches
    curves = trainer.record.run_dir / "metrics.jsonl"
    return {
        "format": FORMAT, "config_hash": config_hash, "step": step,
        "model": trainer.master.state_dict(),
        "model_half": trainer.model.state_dict() if trainer.model is not trainer.master else None,
        "optimizer": trainer.optimizer.state_dict(),
        "scaler": trainer.scaler.state_dict() if trainer.scaler is not None else None,
        "rng": {"torch": torch.get_rng_state(), "numpy": np.random.get_state(), "python": random.getstate(),
                "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None},
        "batches": {"generator": batches.generator.get_state(), "order": batches.order, "pos": batches.pos},
        "progress": dict(vars(trainer.progress)),
        "spikes": {"window": list(trainer.spikes.window), "steps": list(trainer.spikes.steps)},
        "precision": trainer.record.summary.get("precision"),
        "rss_peak_mb": trainer.rss_peak_mb,
        "curves": curves.read_text() if curves.is_file() else "",
    }


def save(trainer, path: Path, step: int, config_hash: str) -> None:
    """``state`` into ``path``, atomically: a reader (or a kill mid-write) sees the old file or the new one."""
    write_atomic(Path(path), lambda out: torch.save(state(trainer, step, config_hash), out), binary=True)


def load(path: Path) -> dict | None:
    """A checkpoint this version wrote, or None (missing, partial, foreign)."""
    try:
        saved = torch.load(path, map_location="cpu", weights_only=False)  # our own file: pickled numpy/python state
    except Exception:  # noqa: BLE001 - any unreadable file is no checkpoint
        return None
    return saved if isinstance(saved, dict) and saved.get("format") == FORMAT else None


def find(run_dir: Path, sweep_dir: Path | None, config_hash: str) -> tuple[Path, dict] | None:
    """The checkpoint of run ``config_hash``: in its run folder first, else anywhere in its sweep."""
    candidates = [Path(run_dir) / FILE]
    if sweep_dir is not None:  # another folder's checkpoint, when the record beside it is of this run
        candidates += sorted(p for p in Path(sweep_dir).rglob(FILE) if p != candidates[0]
                             and isinstance(record := read_summary(p.parent / "summary.json"), RunRecord)
                             and record.summary.get("config_hash") == config_hash)
    for path in candidates:
        saved = load(path) if path.is_file() else None
        if saved is not None and saved["config_hash"] == config_hash:
            return path, saved
    return None


def restore(trainer, saved: dict) -> None:
    """Puts ``saved`` (from ``find``) into a freshly built trainer: it continues after ``saved['step']``."""
    device = trainer.device
    trainer.master.load_state_dict(saved["model"])
    if saved["model_half"] is not None:
        trainer.model.load_state_dict(saved["model_half"])
    trainer.optimizer.load_state_dict(saved["optimizer"])
    if trainer.scaler is not None and saved["scaler"] is not None:
        trainer.scaler.load_state_dict(saved["scaler"])
    rng = saved["rng"]
    torch.set_rng_state(rng["torch"])
    np.random.set_state(rng["numpy"])
    random.setstate(rng["python"])
    if rng["cuda"] is not None and device.type == "cuda":
        torch.cuda.set_rng_state_all(rng["cuda"])
    batches = trainer.train_batches
    batches.generator.set_state(saved["batches"]["generator"])
    batches.order, batches.pos = saved["batches"]["order"], saved["batches"]["pos"]
    for key, value in saved["progress"].items():
        setattr(trainer.progress, key, value)
    trainer.spikes.window.extend(saved["spikes"]["window"])
    trainer.spikes.steps[:] = saved["spikes"]["steps"]
    if saved["precision"] is not None:
        trainer.record.summary["precision"] = saved["precision"]
    trainer.rss_peak_mb = max(trainer.rss_peak_mb, saved["rss_peak_mb"])
    for line in saved["curves"].splitlines():  # the curves as they stood at the checkpoint, then on from there
        trainer.record.log(json.loads(line))
    trainer.start_step = saved["step"]
    log.info("resume: continuing from the checkpoint at step %d", saved["step"])
