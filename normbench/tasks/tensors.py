"""A task's arrays as the tensors a run trains on: the one place the tasks meet torch."""

from dataclasses import fields, replace

import torch

from normbench.checks import ConfigError
from normbench.tasks import TASK_CONFIGS
from normbench.tasks.data import Split, TaskData


def load_task(cfg, seed: int) -> TaskData:
    """Build the task named by `cfg.name`; `cfg` is a task dataclass or anything with its attributes."""
    if cfg.name not in TASK_CONFIGS:
        raise ConfigError(f"task.name must be one of {sorted(TASK_CONFIGS)}, got {cfg.name!r}")
    if seed < 0:
        raise ConfigError(f"seed must be >= 0, got {seed}")
    config_class = TASK_CONFIGS[cfg.name]
    # Rebuilding the dataclass re-runs its checks: Hydra merges overrides into the schema
    # without calling __post_init__ again, so a DictConfig may hold values it never saw.
    config = config_class(**{field.name: getattr(cfg, field.name) for field in fields(config_class)})
    data = config.load(seed)
    return replace(data, train=as_tensors(data.train), val=as_tensors(data.val), test=as_tensors(data.test))


def as_tensors(split: Split) -> Split:
    """The split's arrays as tensors sharing their memory (dtype and shape unchanged)."""
    return Split(x=torch.from_numpy(split.x), y=torch.from_numpy(split.y),
                 lengths=None if split.lengths is None else torch.from_numpy(split.lengths))
