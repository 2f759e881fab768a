"""Tasks: a task config and a seed in, tensors out.

A task knows nothing about models, training or reports. It hands back a `TaskData`: three
splits of tensors plus what a runner needs to build a model's input and output layers, pick a
loss, and judge the result (metric, its direction, chance level, target).

A task with variable lengths left-aligns its examples and marks the padding in the input (token
id -1, or NaN features; normbench/padding.py), with target -100 at every padded step; its splits
carry the lengths, which batching by length (``bucket``) reads.
"""

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Optional

import torch

from normbench.padding import NOT_SCORED, PAD_TOKEN  # noqa: F401 - used by the loaders
from normbench.schema import TASK_CONFIGS, require_at_least, require_name  # noqa: F401 - used by the loaders


class TaskDataError(ValueError):
    """A task's files are missing or unreadable. The message is one line and names the path."""


def resolve_path(task: str, path: Optional[str], expected: str) -> Path:
    """`task.path` made absolute, so an error names the very place that was looked at."""
    if path is None:
        raise TaskDataError(f"{task}: task.path is not set (set task.path to {expected})")
    return Path(path).expanduser().absolute()


@dataclass(frozen=True)
class Split:
    x: torch.Tensor  # float32 (N, T, F) for "features" input, int64 (N, T) for "tokens" input
    y: torch.Tensor  # float32 (N,) regression | int64 (N,) per sequence | int64 (N, T) per step, -100 = not scored
    lengths: Optional[torch.Tensor] = None  # int64 (N,) real steps per example; None: all T (no padding)


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
    loss: str  # "mse" | "cross_entropy"
    metric: str  # "mse" | "accuracy" | "bpc" (cross-entropy in bits per character)
    higher_is_better: bool
    chance: float  # the metric an uninformed predictor gets
    target: float  # the val metric that counts as solved, for steps-to-target
    seq_len: int  # the longest example
    bucket: bool = False  # train batches of examples of similar length (tasks/batching.py)

    @property
    def variable_length(self) -> bool:
        return self.train.lengths is not None

    @classmethod
    def classification(cls, name: str, train: Split, val: Split, test: Split, **io) -> "TaskData":
        """One label per sequence, read from the last step, scored by accuracy."""
        return cls(name, train, val, test, readout="last", loss="cross_entropy", metric="accuracy",
                   higher_is_better=True, **io)


# The task modules import the definitions above, so they are imported after them.
from normbench.tasks.digits import DigitsConfig, load_digits  # noqa: E402
from normbench.tasks.idx import IdxConfig, load_idx  # noqa: E402
from normbench.tasks.imdb import ImdbConfig, load_imdb  # noqa: E402
from normbench.tasks.synthetic import (  # noqa: E402
    AddingConfig,
    CopyConfig,
    MqarConfig,
    load_adding,
    load_copy,
    load_mqar,
)
from normbench.tasks.text import TextConfig, load_text  # noqa: E402

_LOADERS = {
    AddingConfig: load_adding,
    CopyConfig: load_copy,
    DigitsConfig: load_digits,
    MqarConfig: load_mqar,
    TextConfig: load_text,
    ImdbConfig: load_imdb,
    IdxConfig: load_idx,
}


def load_task(cfg, seed: int) -> TaskData:
    """Build the task named by `cfg.name`; `cfg` is a task dataclass or anything with its attributes."""
    if cfg.name not in TASK_CONFIGS:
        raise ValueError(f"task.name must be one of {sorted(TASK_CONFIGS)}, got {cfg.name!r}")
    if seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")
    config_class = TASK_CONFIGS[cfg.name]
    # Rebuilding the dataclass re-runs its checks: Hydra merges overrides into the schema
    # without calling __post_init__ again, so a DictConfig may hold values it never saw.
    config = config_class(**{field.name: getattr(cfg, field.name) for field in fields(config_class)})
    return _LOADERS[config_class](config, seed)


__all__ = [
    "TASK_CONFIGS",
    "AddingConfig",
    "CopyConfig",
    "DigitsConfig",
    "IdxConfig",
    "ImdbConfig",
    "MqarConfig",
    "Split",
    "TaskData",
    "TaskDataError",
    "TextConfig",
    "load_task",
]
