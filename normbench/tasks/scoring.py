"""What the training loop may ask of a task on tensors: the loss it trains on and its metric.

A task names both in its `TaskData` (``loss``, ``metric``: the names the record keeps); each name is
one entry of ``LOSSES`` or ``METRIC_SUMS`` here, and `Scoring` is what the loop holds, so the
loop never branches on a name. The target predicate is the task's own (`TaskData.reached`), and a
metric's decisions (its direction for the report, its chance band, its unit) are its entry in
normbench/records/metrics.py, which stays torch-free for the report.

A metric is summed over a batch, not averaged: (sum, count) pairs add up exactly over splits of
any size and batches of any length. Adding a task metric: its function ``(out, y) -> (sum,
count)``, here or in a module of its own, and one entry in ``METRIC_SUMS`` (tests/tasks/test_scoring.py
registers a toy one from the test alone); an entry in normbench/records/metrics.py's TASK_METRICS gives it
its decisions (without one it has no chance band, and the figures give it no bounds or unit).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from normbench.tasks.data import NOT_SCORED

Loss = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
MetricSums = Callable[[torch.Tensor, torch.Tensor], tuple[float, int]]


def mse_loss(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.mse_loss(out.squeeze(-1).float(), y)


def cross_entropy_loss(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Over every scored step: a per-sequence target has one, a per-step target one per step."""
    return F.cross_entropy(out.float().reshape(-1, out.shape[-1]), y.reshape(-1), ignore_index=NOT_SCORED)


def mse_sums(out: torch.Tensor, y: torch.Tensor) -> tuple[float, int]:
    return float(F.mse_loss(out.squeeze(-1).float(), y, reduction="sum")), y.numel()


def _scored(out: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The logits and labels of the scored steps (a padded step's target is NOT_SCORED)."""
    scored = y.reshape(-1) != NOT_SCORED
    return out.float().reshape(-1, out.shape[-1])[scored], y.reshape(-1)[scored]


def accuracy_sums(out: torch.Tensor, y: torch.Tensor) -> tuple[float, int]:
    logits, labels = _scored(out, y)
    return float((logits.argmax(-1) == labels).sum()), int(labels.numel())


def bpc_sums(out: torch.Tensor, y: torch.Tensor) -> tuple[float, int]:
    """Cross-entropy in bits per character."""
    logits, labels = _scored(out, y)
    return float(F.cross_entropy(logits, labels, reduction="sum")) / math.log(2), int(labels.numel())


LOSSES: dict[str, Loss] = {"mse": mse_loss, "cross_entropy": cross_entropy_loss}
METRIC_SUMS: dict[str, MetricSums] = {"mse": mse_sums, "accuracy": accuracy_sums, "bpc": bpc_sums}


@dataclass(frozen=True)
class Scoring:
    """A task's loss and metric, looked up once (``scoring(task)``)."""

    loss: Loss
    metric_sums: MetricSums


def scoring(task) -> Scoring:
    """The loss and metric a `TaskData` names; a KeyError names one nobody registered."""
    for table, name in ((LOSSES, task.loss), (METRIC_SUMS, task.metric)):
        if name not in table:
            raise KeyError(f"{task.name}: {name!r} is not registered in normbench/tasks/scoring.py")
    return Scoring(LOSSES[task.loss], METRIC_SUMS[task.metric])
