"""Hydra's side of the schema: registers normbench/schema.py's dataclasses, builds a typed Config
from a composition, and finds ``conf/`` in a checkout or a wheel.

Hydra composes YAML from ``conf/`` onto the dataclasses (types are checked while composing);
``to_config`` then builds them, whose ``__post_init__`` checks ranges, so a bad value fails before
any data is loaded or any model built.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf

from normbench.schema import (TASK_CONFIGS, Config, ConfigError, ModelShape, NormSpec, OptimConfig,
                              PlacementConfig, PrecisionConfig)

__all__ = ["Config", "ConfigError", "config_dir", "register", "to_config"]


def register() -> None:
    # ${ceil_div:a,b}: a sweep file can tie one setting to another (equal data: steps = examples / batch)
    if not OmegaConf.has_resolver("ceil_div"):
        OmegaConf.register_new_resolver("ceil_div", lambda a, b: -(-int(a) // int(b)))
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
    groups = {"model": ModelShape, "norm": NormSpec, "placement": PlacementConfig,
              "precision": PrecisionConfig, "optim": OptimConfig}
    _known_keys("", plain, Config)
    _known_keys("task.", task, TASK_CONFIGS[name])
    for key, cls in groups.items():
        _known_keys(f"{key}.", plain[key], cls)
    built = {key: cls(**plain.pop(key)) for key, cls in groups.items()}
    return Config(task=TASK_CONFIGS[name](**task), **built, **plain)


def _known_keys(prefix: str, values: dict, schema: type) -> None:
    """An added key (``+unknown=1``) the schema does not define is a typo, not a setting."""
    known = {f.name for f in fields(schema)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ConfigError(f"unknown key {prefix}{unknown[0]}; {prefix or 'top-level '}keys are: {', '.join(sorted(known))}")


def config_dir() -> Path:
    """conf/ inside an installed wheel (normbench/conf) or beside the package in a source checkout."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "conf", here.parent / "conf"):
        if (candidate / "config.yaml").is_file():
            return candidate
    raise FileNotFoundError(f"normbench's config folder is missing (looked in {here / 'conf'} and {here.parent / 'conf'})")
