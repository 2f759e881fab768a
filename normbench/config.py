"""The typed schema behind ``conf/``: what every key means, its type, and its valid range.

Hydra composes YAML from ``conf/`` onto these dataclasses (types are checked while composing);
``to_config`` then builds the dataclasses, whose ``__post_init__`` checks ranges, so a bad value
fails before any data is loaded or any model built.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf

from normbench.models import CELL_KERNELS, FAMILIES
from normbench.norms import IMPLS, KINDS
from normbench.tasks import TASK_CONFIGS

PLACEMENTS = ("pre", "post", "in_cell", "gate", "peri")
DTYPES = ("fp32", "bf16", "fp16")
OPTIMIZERS = ("adamw", "sgd")
SCHEDULES = ("constant", "cosine")
DEVICES = ("auto", "cpu", "cuda")


class ConfigError(ValueError):
    """A config value out of range; the message is one line naming the key."""


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise ConfigError(message)


def _one_of(key: str, value: str, valid: tuple[str, ...]) -> None:
    _require(value in valid, f"{key}={value!r} is not valid; valid: {', '.join(valid)}")


def _positive(key: str, value: float) -> None:
    _require(isinstance(value, (int, float)) and math.isfinite(value) and value > 0, f"{key} must be > 0, got {value}")


@dataclass
class NormConfig:
    kind: str = "ln"
    eps: float = 1e-5
    gamma_init: float = 1.0
    affine: bool = True
    impl: str = "native"
    fp32: bool = True          # compute the norm in fp32 under bf16/fp16 autocast
    alpha_init: float = 0.5    # DyT only

    def __post_init__(self):
        _one_of("norm.kind", self.kind, KINDS)
        _one_of("norm.impl", self.impl, IMPLS)
        _positive("norm.eps", self.eps)
        _require(math.isfinite(self.gamma_init), f"norm.gamma_init must be finite, got {self.gamma_init}")
        _require(math.isfinite(self.alpha_init), f"norm.alpha_init must be finite, got {self.alpha_init}")


@dataclass
class PlacementConfig:
    name: str = "pre"
    cell_norm: bool = True     # in_cell LSTM: also normalize c_t before its tanh
    summed: bool = False       # in_cell: one norm on W·x + U·h instead of one on each

    def __post_init__(self):
        _one_of("placement.name", self.name, PLACEMENTS)


@dataclass
class ModelConfig:
    family: str = "lstm"
    hidden: int = 64           # recurrent hidden size, or Transformer d_model
    layers: int = 1
    embed: int = 32            # input projection width of recurrent models
    heads: int = 4             # Transformer only
    ff_mult: int = 4           # Transformer only
    cell_kernel: str = "auto"  # in_cell LN-LSTM on CPU: auto (compiled if it builds) | cpp | python

    def __post_init__(self):
        _one_of("model.family", self.family, FAMILIES)
        _one_of("model.cell_kernel", self.cell_kernel, CELL_KERNELS)
        for key in ("hidden", "layers", "embed", "heads", "ff_mult"):
            _require(getattr(self, key) >= 1, f"model.{key} must be >= 1, got {getattr(self, key)}")


@dataclass
class PrecisionConfig:
    dtype: str = "fp32"        # autocast dtype; fp16 adds a GradScaler on CUDA

    def __post_init__(self):
        _one_of("precision.dtype", self.dtype, DTYPES)


@dataclass
class OptimConfig:
    name: str = "adamw"
    weight_decay: float = 0.01
    norm_weight_decay: float = 0.0   # decaying gamma toward 0 would measure the optimizer, not the norm
    beta1: float = 0.9
    beta2: float = 0.999
    momentum: float = 0.9            # sgd only
    schedule: str = "constant"       # after warm-up: constant | cosine (to 0 at the last step)

    def __post_init__(self):
        _one_of("optim.name", self.name, OPTIMIZERS)
        _one_of("optim.schedule", self.schedule, SCHEDULES)
        _require(self.weight_decay >= 0, f"optim.weight_decay must be >= 0, got {self.weight_decay}")
        _require(self.norm_weight_decay >= 0, f"optim.norm_weight_decay must be >= 0, got {self.norm_weight_decay}")
        for key in ("beta1", "beta2", "momentum"):
            _require(0 <= getattr(self, key) < 1, f"optim.{key} must be in [0, 1), got {getattr(self, key)}")


@dataclass
class Config:
    model: ModelConfig = field(default_factory=ModelConfig)
    norm: NormConfig = field(default_factory=NormConfig)
    placement: PlacementConfig = field(default_factory=PlacementConfig)
    precision: PrecisionConfig = field(default_factory=PrecisionConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    task: Any = None                 # one of normbench.tasks.TASK_CONFIGS, chosen by the task group
    seed: int = 0
    lr: float = 3e-3
    batch_size: int = 32
    steps: int = 600
    warmup_steps: int = 0
    grad_clip: Optional[float] = 1.0  # max global grad norm; null = no clipping
    device: str = "auto"              # auto picks cuda when available
    threads: int = 0                  # torch threads; 0 = all cores, divided among parallel workers
    eval_every: int = 100
    log_every: int = 10
    probe_every: int = 50             # gradient/activation probes; 0 = only at init and at the end
    timing_warmup: int = 10           # steps excluded from the step-time median
    resume: bool = False              # multirun: skip jobs whose completed record is in the sweep dir
    report: bool = True               # multirun: write the report into the sweep dir at the end
    progress: bool = True             # progress bar on a terminal

    def __post_init__(self):
        _positive("lr", self.lr)
        for key in ("batch_size", "steps", "eval_every", "log_every"):
            _require(getattr(self, key) >= 1, f"{key} must be >= 1, got {getattr(self, key)}")
        for key in ("warmup_steps", "threads", "probe_every", "timing_warmup"):
            _require(getattr(self, key) >= 0, f"{key} must be >= 0, got {getattr(self, key)}")
        _require(self.grad_clip is None or self.grad_clip > 0, f"grad_clip must be > 0 or null, got {self.grad_clip}")
        _one_of("device", self.device, DEVICES)
        _require(self.task is not None and hasattr(self.task, "name"), "task is not set; choose one with task=NAME")


def register() -> None:
    store = ConfigStore.instance()
    store.store(name="base_config", node=Config)
    for name, node in TASK_CONFIGS.items():
        store.store(group="task", name=f"{name}_schema", node=node)


def to_config(cfg: DictConfig) -> Config:
    """Typed, range-checked config from Hydra's composition (raises ConfigError/ValueError, one line)."""
    plain = OmegaConf.to_container(cfg, resolve=True)
    plain.pop("hydra", None)
    task = dict(plain.pop("task") or {})
    name = task.get("name")
    if name not in TASK_CONFIGS:
        raise ConfigError(f"task.name={name!r} is not valid; valid: {', '.join(TASK_CONFIGS)}")
    groups = {"model": ModelConfig, "norm": NormConfig, "placement": PlacementConfig,
              "precision": PrecisionConfig, "optim": OptimConfig}
    built = {key: cls(**plain.pop(key)) for key, cls in groups.items()}
    return Config(task=TASK_CONFIGS[name](**task), **built, **plain)


def config_dir() -> Path:
    """conf/ inside an installed wheel (normbench/conf) or beside the package in a source checkout."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "conf", here.parent / "conf"):
        if (candidate / "config.yaml").is_file():
            return candidate
    raise FileNotFoundError(f"normbench's config folder is missing (looked in {here / 'conf'} and {here.parent / 'conf'})")
