"""What a task hands back, and what every task config can be asked.

A task knows nothing about models, training or reports, nor about torch: its loader returns a
`TaskData` of numpy arrays (normbench/tasks/tensors.py makes them tensors). `TaskData` holds
three splits plus what a runner needs to build a model's input and output layers, pick a loss,
and judge the result (metric, its direction, chance level, target and the predicate on it, `reached`);
normbench/tasks/scoring.py computes the loss and metric that ``loss`` and ``metric`` name.

A task with variable lengths left-aligns its examples and marks the padding in the input (token
id ``PAD_TOKEN``, or NaN features; normbench/tasks/padding.py reads them), with target ``NOT_SCORED``
at every padded step; its splits carry the lengths, which batching by length (``bucket``) reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

PAD_TOKEN = -1  # token id of a padded step; feature inputs mark padded steps with NaN
NOT_SCORED = -100  # the target at a padded or unscored step (torch's cross_entropy ignore_index)


class TaskDataError(ValueError):
    """A task's files are missing or unreadable. The message is one line and names the path."""


def resolve_path(task: str, path: Optional[str], expected: str) -> Path:
    """`task.path` made absolute, so an error names the very place that was looked at."""
    if path is None:
        raise TaskDataError(f"{task}: task.path is not set (set task.path to {expected})")
    return Path(path).expanduser().absolute()


class TaskConfig:
    """What each task's config dataclass (the ``task`` config group) can be asked besides its fields.

    A subclass is a dataclass whose ``name`` field defaults to the task's name; it checks its values
    in ``__post_init__`` (raising ConfigError) and builds its data in ``load``.
    """

    def load(self, seed: int) -> "TaskData":
        """The task's three splits, drawn or read with ``seed``, as numpy arrays."""
        raise NotImplementedError

    def tensor_bytes(self) -> int:
        """About what the task's tensors take in memory, known before loading; 0 where they are
        bounded by the task's files instead (each reader caps what it reads)."""
        return 0

    # A run's identity (normbench/configuration/contract.py) asks these of a recorded config, which may predate
    # a key: ``setting(key, default=None)`` reads the record's task.<key>.

    @classmethod
    def padded(cls, setting) -> bool:
        """Whether the examples vary in length (padding to mask, lengths to bucket by)."""
        return False

    @classmethod
    def inert(cls, setting) -> list[str]:
        """The task's own keys that cannot change this run (each left out of its identity)."""
        return []

    @classmethod
    def describe_data(cls, paths: list[str]) -> str:
        """What the task reads, for the report's list of data sets; ``paths``: its runs' task.path values."""
        return "see the task's config"


BYTES_PER_POSITION = 16  # an int64 or two float32 inputs plus a target


def draw_bytes(config, positions: int) -> int:
    """``tensor_bytes`` of a task that draws n_train + n_val + n_test examples of up to ``positions``
    steps: examples x positions x 16 bytes."""
    return (config.n_train + config.n_val + config.n_test) * positions * BYTES_PER_POSITION


@dataclass(frozen=True)
class Split:
    # numpy from a loader, torch from load_task (normbench/tasks/tensors.py)
    x: Any  # float32 (N, T, F) for "features" input, int64 (N, T) for "tokens" input
    y: Any  # float32 (N,) regression | int64 (N,) per sequence | int64 (N, T) per step, NOT_SCORED = not scored
    lengths: Any = None  # int64 (N,) real steps per example; None: all T (no padding)


@dataclass(frozen=True)
class TaskData:
    name: str
    train: Split
    val: Split
    test: Split
    input_kind: str  # "features" | "tokens"
    input_dim: int  # features per step, or vocabulary size (token ids are 0..input_dim-1)
    n_outputs: int  # number of classes, or 1 for regression
    readout: str  # "last" (one prediction from the last step) | "every_step"
    loss: str  # "mse" | "cross_entropy": an entry of normbench/tasks/scoring.py's LOSSES
    metric: str  # "mse" | "accuracy" | "bpc" (cross-entropy in bits per character): an entry of METRIC_SUMS there
    higher_is_better: bool
    chance: float  # the metric an uninformed predictor gets
    target: float  # the val metric that counts as solved, for steps-to-target
    seq_len: int  # the longest example
    bucket: bool = False  # train batches of examples of similar length (tasks/batching.py)
    # {name: the val metric of a trivial solution} (normbench/tasks/trivial.py): a plateau short of the task
    trivial: dict = field(default_factory=dict)

    @property
    def variable_length(self) -> bool:
        return self.train.lengths is not None

    def better(self, value: float, than: float) -> bool:
        """Whether metric ``value`` beats ``than`` (normbench/tasks/scoring.py computes the metric)."""
        return value > than if self.higher_is_better else value < than

    def reached(self, value: float) -> bool:
        """The target predicate: whether val metric ``value`` counts as solved, for steps-to-target."""
        return value >= self.target if self.higher_is_better else value <= self.target

    @classmethod
    def classification(cls, name: str, train: Split, val: Split, test: Split, **io) -> "TaskData":
        """One label per sequence, read from the last step, scored by accuracy."""
        return cls(name, train, val, test, readout="last", loss="cross_entropy", metric="accuracy",
                   higher_is_better=True, **io)
