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
    key = (repr(config), seed)  # every field of the task's config (its dataclass repr), and the seed
    if key in _built:
        _built[key] = data = _built.pop(key)  # now the most recently used
        return data
    data = config.load(seed)
    data = replace(data, train=as_tensors(data.train), val=as_tensors(data.val), test=as_tensors(data.test))
    _keep(key, data)
    return data


# A sweep's process (a joblib worker, the basic launcher's) runs job after job, and a sweep's jobs
# mostly share a few tasks: each task is built once per process, not once per job (reading and
# splitting a corpus is most of a tiny job's set-up). A task's data depends on its config and the
# seed alone (each split draws from its own generator, never torch's), and no run writes into it.
# The most recently used tasks are kept, up to KEPT_BYTES in all.
KEPT_BYTES = 256 << 20
_built: dict[tuple, TaskData] = {}


def _keep(key: tuple, data: TaskData) -> None:
    size = _bytes(data)
    if size > KEPT_BYTES:
        return
    _built[key] = data
    while sum(map(_bytes, _built.values())) > KEPT_BYTES:
        _built.pop(next(iter(_built)))


def _bytes(data: TaskData) -> int:
    return sum(t.numel() * t.element_size() for split in (data.train, data.val, data.test)
               for t in (split.x, split.y, split.lengths) if t is not None)


def as_tensors(split: Split) -> Split:
    """The split's arrays as tensors sharing their memory (dtype and shape unchanged)."""
    return Split(x=torch.from_numpy(split.x), y=torch.from_numpy(split.y),
                 lengths=None if split.lengths is None else torch.from_numpy(split.lengths))
