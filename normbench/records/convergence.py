"""How fast a run learned, from its curves: the ``metrics`` a record's convergence claims read.

Torch-free: the report may recompute these from ``metrics.jsonl``. Every value is a float or None;
None where there is nothing finite to summarize (no loss in the window, a diverged run's area).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

FRACTIONS = (25, 50, 75, 100)  # train_loss_at_<f>: at f % of the planned steps
WINDOW = 0.10                  # ... the mean over the last 10 % of training before that point
# final_val_smoothed: the mean of the last FINAL_EVALS evaluations. At a constant learning rate the
# last evaluation alone is one iterate's noise (a dip at the last of 8 evaluations decided a verdict).
FINAL_EVALS = 3


def _finite_mean(values: Sequence[float]) -> float | None:
    if not values or not all(math.isfinite(v) for v in values):
        return None
    return sum(values) / len(values)


def train_loss_at(losses: Sequence[tuple[int, float]], steps: int, percent: float) -> float | None:
    """Mean training loss over the steps in (p - 10 %, p] of ``steps``, p = ``percent`` % of ``steps``."""
    end = steps * percent / 100
    return _finite_mean([loss for step, loss in losses if end - WINDOW * steps < step <= end])


def val_auc(evals: Sequence[tuple[int, float]]) -> float | None:
    """The validation metric's mean over the evaluated span: trapezoid area under (step, metric) divided
    by the steps between the first and the last evaluation (0 to steps done when step 0 is evaluated)."""
    points = sorted(evals)
    if len(points) < 2 or not all(math.isfinite(v) for _, v in points):
        return None
    span = points[-1][0] - points[0][0]
    if span <= 0:
        return None
    area = sum((s1 - s0) * (v0 + v1) / 2 for (s0, v0), (s1, v1) in zip(points, points[1:]))
    return area / span


def trailing_means(values: Sequence[float], k: int = FINAL_EVALS) -> list[float]:
    """Each value replaced by the mean of it and the k - 1 before it (fewer at the start): the curve
    final_val_smoothed reads, whose last point it is."""
    return [sum(values[max(0, i - k + 1): i + 1]) / len(values[max(0, i - k + 1): i + 1]) for i in range(len(values))]


def final_val_smoothed(evals: Sequence[tuple[int, float]], k: int = FINAL_EVALS) -> float | None:
    """The mean validation metric of the last ``k`` evaluations (all of them when fewer); None when one
    of them is not finite (a diverged run) or there is none."""
    last = [value for _, value in sorted(evals)[-k:]]
    return _finite_mean(last)


def convergence(losses: Sequence[tuple[int, float]], evals: Sequence[tuple[int, float]], steps: int,
                diverged: bool = False) -> dict:
    """{train_loss_at_25 .. _100, train_loss_auc, val_auc, final_val_smoothed} from (step, training loss)
    and (step, val metric).

    ``steps`` is the planned number of steps (the fractions are of it, so a run that stopped early has
    null at the fractions it never reached). ``train_loss_auc``, the mean training loss over the run
    (area under the loss curve / steps), is null for a diverged run: its curve ends at no loss.
    """
    measures = {f"train_loss_at_{f}": train_loss_at(losses, steps, f) for f in FRACTIONS}
    measures["train_loss_auc"] = None if diverged else _finite_mean([loss for _, loss in losses])
    measures["val_auc"] = val_auc(evals)
    measures["final_val_smoothed"] = final_val_smoothed(evals)
    return measures
