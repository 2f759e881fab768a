"""Hydra's side of the schema: registers normbench/schema.py's dataclasses, builds a typed Config
from a composition, finds ``conf/`` in a checkout or a wheel, and serves the sweep files.

Sweep files live in ``sweeps/`` (a checkout) or ``normbench/sweeps/`` (the wheel), and in the
folders named by the environment variable ``NORMBENCH_SWEEPS`` (``os.pathsep``-separated, searched
first, so a file of the same name replaces a shipped one). In a sweeps folder every ``*.yaml`` is a
sweep (``+sweep=NAME``) and every subfolder is a group its sweeps use (``+smoke=ln_fp32``): those
groups compose but are not listed by ``--help`` or completion, which show what users type.

Hydra composes YAML from ``conf/`` onto the dataclasses (types are checked while composing);
``to_config`` then builds them, whose ``__post_init__`` checks ranges, so a bad value fails before
any data is loaded or any model built.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import fields
from pathlib import Path

from hydra._internal.core_plugins.file_config_source import FileConfigSource
from hydra.core.config_search_path import ConfigSearchPath
from hydra.core.config_store import ConfigStore
from hydra.core.object_type import ObjectType
from hydra.core.plugins import Plugins
from hydra.plugins.config_source import ConfigLoadError, ConfigResult
from hydra.plugins.search_path_plugin import SearchPathPlugin
from omegaconf import DictConfig, OmegaConf

from normbench.schema import (TASK_CONFIGS, Config, ConfigError, ModelShape, NormSpec, OptimConfig,
                              PlacementConfig, PrecisionConfig)

__all__ = ["Config", "ConfigError", "SWEEPS_ENV", "config_dir", "register", "sweep_dirs", "to_config"]
SWEEPS_ENV = "NORMBENCH_SWEEPS"
SWEEP_GROUP = "sweep"
OPTIONAL = Path(__file__).resolve().parent / "optional"  # configs offered only with their extra


def register() -> None:
    # ${ceil_div:a,b}: a sweep file can tie one setting to another (equal data: steps = examples / batch)
    if not OmegaConf.has_resolver("ceil_div"):
        OmegaConf.register_new_resolver("ceil_div", lambda a, b: -(-int(a) // int(b)))
    store = ConfigStore.instance()
    store.store(name="base_config", node=Config)
    # Outside any group (conf/task/NAME.yaml: ``- /task_NAME_schema@_here_``): not a choice of ``task``.
    for name, node in TASK_CONFIGS.items():
        store.store(name=f"task_{name}_schema", node=node)
    # hydra/sweeper=optuna_lr only where the [optuna] extra is installed (else it is no choice to offer)
    if importlib.util.find_spec("hydra_plugins.hydra_optuna_sweeper") is not None:
        store.store(group="hydra/sweeper", name="optuna_lr", node=OmegaConf.load(OPTIONAL / "optuna_lr.yaml"))
    # Hydra's manual plugin registration: every search path (hydra.main, compose, a glob(*) of a sweep) gets the sweeps
    Plugins.instance().register(SweepSource)
    Plugins.instance().register(SweepSearchPath)


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


def sweep_dirs() -> list[Path]:
    """The sweeps folders, searched in this order: ``$NORMBENCH_SWEEPS``'s, then the shipped one.
    A folder named there that does not exist is the user's mistake (ConfigError)."""
    named = [Path(d).expanduser() for d in os.environ.get(SWEEPS_ENV, "").split(os.pathsep) if d.strip()]
    for folder in named:
        if not folder.is_dir():
            raise ConfigError(f"{SWEEPS_ENV}: {folder} is not a folder (it names folders of sweep files, "
                              f"separated by {os.pathsep!r})")
    here = Path(__file__).resolve().parent
    shipped = [c for c in (here / "sweeps", here.parent / "sweeps") if c.is_dir()][:1]
    return [folder.resolve() for folder in named] + shipped


def sweep_names() -> list[str]:
    """Every sweep a user can name (``+sweep=NAME``): the ``*.yaml`` at the top of each sweeps folder."""
    return sorted({f.stem for folder in sweep_dirs() for f in folder.glob("*.yaml")})


class SweepSearchPath(SearchPathPlugin):
    """Puts the sweeps folders (SweepSource) on Hydra's search path, after conf/."""

    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        search_path.append(provider="normbench-sweeps", path=f"{SweepSource.scheme()}://")


class SweepSource(FileConfigSource):
    """Hydra's config source for the sweeps folders (search path ``nbsweeps://``).

    It shows Hydra one tree: ``sweep/NAME`` is ``NAME.yaml`` at the top of a sweeps folder, and
    ``GROUP/NAME`` is ``GROUP/NAME.yaml`` in one. Only the ``sweep`` group is listed at the root,
    so the sweeps' own groups stay out of ``--help`` and completion yet compose (and ``glob(*)``
    over them lists their options). The folders are read once, when Hydra builds its repository;
    a sweep's parallel workers receive this object as it is.
    """

    def __init__(self, provider: str, path: str) -> None:
        super().__init__(provider, path)
        self.dirs = [str(folder) for folder in sweep_dirs()]

    @staticmethod
    def scheme() -> str:
        return "nbsweeps"

    def _file(self, config_path: str) -> Path | None:
        group, _, name = self._normalize_file_name(config_path).rpartition("/")
        for folder in map(Path, self.dirs):
            candidate = folder / name if group == SWEEP_GROUP else folder / group / name
            if group and candidate.is_file():
                return candidate
        return None

    def load_config(self, config_path: str) -> ConfigResult:
        path = self._file(config_path)
        if path is None:
            raise ConfigLoadError(f"Config not found : {config_path}")
        text = path.read_text(encoding="utf-8")
        return ConfigResult(config=OmegaConf.create(OmegaConf.load(path) or {}), path=f"{self.scheme()}://{path.parent}",
                            provider=self.provider, header=self._get_header_dict(text[:512]))

    def available(self) -> bool:
        return bool(self.dirs)

    def is_group(self, config_path: str) -> bool:
        path = config_path.strip("/")
        if path in ("", SWEEP_GROUP):
            return True
        return "/" not in path and any((Path(d) / path).is_dir() for d in self.dirs)

    def is_config(self, config_path: str) -> bool:
        return self._file(config_path) is not None

    def list(self, config_path: str, results_filter: ObjectType | None) -> list[str]:
        path = config_path.strip("/")
        if path == "":
            return [SWEEP_GROUP] if results_filter in (None, ObjectType.GROUP) else []
        if results_filter == ObjectType.GROUP or not self.is_group(path):
            return []
        folders = [Path(d) if path == SWEEP_GROUP else Path(d) / path for d in self.dirs]
        return sorted({f.stem for folder in folders if folder.is_dir() for f in folder.glob("*.yaml")})
