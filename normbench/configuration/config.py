"""Hydra's side of the schema: registers normbench/configuration/schema.py's dataclasses, builds a typed Config
from a composition, finds ``conf/`` in a checkout or a wheel, and serves the sweep files.

Sweep files live in ``sweeps/`` (a checkout) or ``normbench/sweeps/`` (the wheel), and in the
folders named by the environment variable ``NORMBENCH_SWEEPS`` (``os.pathsep``-separated, searched
first, so a file of the same name replaces a shipped one). In a sweeps folder every ``*.yaml`` is a
sweep (``+sweep=NAME``) and every subfolder is a group its sweeps use (``+smoke=ln_fp32``): those
groups compose but are not listed by ``--help`` or completion, which show what users type.

A sweep file is config, never code (``read_sweep_file``): a regular file of at most 1 MiB, YAML
whose aliases expand to at most MAX_SWEEP_NODES nodes (an anchor bomb is refused before it
expands), no ``_target_`` (Hydra would instantiate it) or logging factory (``()``) anywhere, and
under ``hydra`` only what says how to sweep (``SWEEP_HYDRA_KEYS``): never ``hydra.callbacks``,
its logging configs, search path, environment or a launcher's shell lines; its ``defaults`` may
choose no Hydra group but ``hydra/launcher`` and ``hydra/sweeper`` (no ``override /hydra/job_logging``). A file that breaks
any of these, or is not YAML, is one line (ConfigError, exit 2).

Hydra composes YAML from ``conf/`` onto the dataclasses (types are checked while composing);
``to_config`` then builds them, whose ``__post_init__`` checks ranges, so a bad value fails before
any data is loaded or any model built.
"""

from __future__ import annotations

import copy
import importlib.util
import math
import os
import re
import stat
from dataclasses import fields
from pathlib import Path

import yaml
from hydra._internal.core_plugins.file_config_source import FileConfigSource
from hydra._internal.core_plugins.structured_config_source import StructuredConfigSource
from hydra._internal.sources_registry import SourcesRegistry
from hydra.core.config_search_path import ConfigSearchPath
from hydra.core.config_store import ConfigStore
from hydra.core.object_type import ObjectType
from hydra.core.plugins import Plugins
from hydra.plugins.config_source import ConfigLoadError, ConfigResult
from hydra.plugins.search_path_plugin import SearchPathPlugin
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from normbench.configuration import hydra_files
from normbench.configuration.schema import (
    TASK_CONFIGS,
    Config,
    ConfigError,
    ModelShape,
    NormSpec,
    OptimConfig,
    PlacementConfig,
    PrecisionConfig,
)
from normbench.configuration.templates import KeptResult
from normbench.norms import user as user_norms

__all__ = ["ADDED_GROUPS", "ALLOW_CODE_ENV", "Config", "ConfigError", "SWEEPS_ENV", "command_line_code",
           "command_line_flag", "command_line_guard", "command_line_place", "config_dir", "node_builder", "plain_groups", "register",
           "sweep_dirs", "to_config"]
SWEEPS_ENV = "NORMBENCH_SWEEPS"
# The user's explicit opt-in (``normbench --allow-code ...`` sets it, and says so on stderr): configs
# from outside conf/ and command-line keys that run code are used as given.
ALLOW_CODE_ENV = "NORMBENCH_ALLOW_CODE"
SWEEP_GROUP = "sweep"
# Groups a run adds on top of the base config: none is in config.yaml's defaults, so Hydra takes them as
# `+GROUP=NAME`, appended after the base config's _self_ (their values win). Users of
# lightning-hydra-template type `experiment=NAME`, `debug=NAME`: the same composition, so the command
# line is given to Hydra with the `+` (plain_groups). Listing them as `GROUP: null` defaults instead
# would make the `+` spelling, which every earlier command, script and record uses, an error.
ADDED_GROUPS = ("experiment", SWEEP_GROUP, "debug")
OPTIONAL = Path(__file__).resolve().parents[1] / "optional"  # configs offered only with their extra


def register() -> None:
    # ${ceil_div:a,b}: a sweep file can tie one setting to another (equal data: steps = examples / batch)
    if not OmegaConf.has_resolver("ceil_div"):
        OmegaConf.register_new_resolver("ceil_div", lambda a, b: -(-int(a) // int(b)))
    hydra_files.register_job_folder()
    store = ConfigStore.instance()
    store.store(name="base_config", node=Config)
    # Outside any group (conf/task/NAME.yaml: ``- /task_NAME_schema@_here_``): not a choice of ``task``.
    for name, node in TASK_CONFIGS.items():
        store.store(name=f"task_{name}_schema", node=node)
    # hydra/sweeper=optuna_lr only where the [optuna] extra is installed (else it is no choice to offer)
    if importlib.util.find_spec("hydra_plugins.hydra_optuna_sweeper") is not None:
        store.store(group="hydra/sweeper", name="optuna_lr", node=OmegaConf.load(OPTIONAL / "optuna_lr.yaml"))
    for name in user_norms.sources():  # a user's norm (normbench/norms/user.py): norm=NAME, as a conf/norm/ file would
        offer_norm_kind(name)
    # Hydra's manual plugin registration: every search path (hydra.main, compose, a glob(*) of a sweep) gets the sweeps
    Plugins.instance().register(SweepSource)
    Plugins.instance().register(SweepSearchPath)
    # Every ``file://`` config Hydra reads outside conf/ (--config-dir, --config-path, hydra.searchpath)
    # is held to the sweep files' rules. Hydra's registry keeps the first class of a scheme, so the
    # entry is replaced, not registered.
    SourcesRegistry.instance().types[CheckedFileSource.scheme()] = CheckedFileSource
    SourcesRegistry.instance().types[SharedStoreSource.scheme()] = SharedStoreSource


def plain_groups(overrides: list[str]) -> list[str]:
    """``experiment=NAME`` as ``+experiment=NAME`` (and so for each ADDED_GROUPS); every other argument,
    ``+experiment=NAME`` and ``logger.mlflow.experiment=NAME`` included, as it is."""
    return [f"+{arg}" if arg.split("=", 1)[0] in ADDED_GROUPS and "=" in arg else arg for arg in overrides]


def offer_norm_kind(name: str) -> None:
    """``norm=NAME`` for a kind with no conf/norm/NAME.yaml (a user's norm): the option holds its kind alone."""
    if not (config_dir() / "norm" / f"{name}.yaml").is_file():
        ConfigStore.instance().store(group="norm", name=name, node={"kind": name})


# The run's parts, each one option of its group, built from its config class; with the task, the groups a run holds
# exactly one of. A list given to one (norm=[ln,rms]) is Hydra's multi-select, which merges the options' configs
# into one run (require_one_option); logger is not one: several loggers at once is a list.
PART_GROUPS = {"model": ModelShape, "norm": NormSpec, "placement": PlacementConfig, "precision": PrecisionConfig,
               "optim": OptimConfig}
ONE_OPTION_GROUPS = (*PART_GROUPS, "task")
# The groups whose identity key, given another option's name on top of the option chosen, would run that one at the
# chosen one's settings, recorded as the plain one (``model=lstm model.family=transformer``: a 1-layer Transformer;
# hostile h18 H4): {group: (its identity key, what its options set besides)}. Refused where the two options' files
# set different settings; where they set the same (model=lstm model.family=gru) the run is the named option's.
# norm, placement and precision are not here: the shipped sweep files name a kind, a placement or a dtype so on top
# of the default option on purpose (sweeps/smoke/bn_bf16.yaml: BatchNorm without conf/norm/bn.yaml's re-estimation).
GROUP_IDENTITY = {"task": ("name", "length, sizes and target"), "model": ("family", "layers and sizes"),
                  "optim": ("name", "weight decay and momentum")}


def _option_settings(group: str, name: object, key: str) -> dict | None:
    """What conf/GROUP/NAME.yaml sets besides its identity key (its defaults list left out); None without the file,
    or where the file is not the option of that name itself (task=digits_rows: digits read by rows)."""
    path = config_dir() / group / f"{name}.yaml"
    if not isinstance(name, str) or "/" in name or not path.is_file():
        return None
    doc = yaml.safe_load(path.read_text())
    if not isinstance(doc, dict) or doc.get(key) != name:
        return None
    return {k: v for k, v in doc.items() if k not in ("defaults", key)}


def require_own_identity(choices, node: DictConfig) -> None:
    """ConfigError (one line) where a group's identity key names another option than the one chosen (``choices``:
    Hydra's runtime choices) whose file sets other settings: ``task=adding task.name=copy`` is copy at adding's
    sizes, ``model=lstm model.family=transformer`` a Transformer at the LSTM's depth."""
    for group, (key, holds) in GROUP_IDENTITY.items():
        chosen, part = choices.get(group), node.get(group)
        value = part.get(key) if isinstance(part, DictConfig) else None
        if value == chosen:
            continue
        own, named = _option_settings(group, chosen, key), _option_settings(group, value, key)
        if own is not None and named is not None and own != named:
            raise ConfigError(f"{group}.{key}={value!r} does not match {group}={chosen} (its {holds} are {chosen}'s); "
                              f"choose the {group} with {group}={value}")


def to_config(cfg: DictConfig) -> Config:
    """Typed, range-checked config from Hydra's composition (raises ConfigError/ValueError, one line)."""
    plain = OmegaConf.to_container(cfg, resolve=True)
    plain.pop("hydra", None)
    task = dict(plain.pop("task") or {})
    name = task.get("name")
    if name not in TASK_CONFIGS:
        raise ConfigError(f"task.name={name!r} is not valid; valid: {', '.join(TASK_CONFIGS)}")
    _known_keys("", plain, Config)
    _known_keys("task.", task, TASK_CONFIGS[name])
    for key, cls in PART_GROUPS.items():
        _known_keys(f"{key}.", plain[key], cls)
    built = {key: cls(**plain.pop(key)) for key, cls in PART_GROUPS.items()}
    return Config(task=TASK_CONFIGS[name](**task), **built, **plain)


def _known_keys(prefix: str, values: dict, schema: type) -> None:
    """An added key (``+unknown=1``) the schema does not define is a typo, not a setting."""
    known = {f.name for f in fields(schema)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ConfigError(f"unknown key {prefix}{unknown[0]}; {prefix or 'top-level '}keys are: {', '.join(sorted(known))}")


def config_dir() -> Path:
    """conf/ inside an installed wheel (normbench/conf) or beside the package in a source checkout."""
    here = Path(__file__).resolve().parents[1]  # the package: conf/ and sweeps/ are its, or its checkout's
    for candidate in (here / "conf", here.parent / "conf"):
        if (candidate / "config.yaml").is_file():
            return candidate
    raise FileNotFoundError(f"normbench's config folder is missing (looked in {here / 'conf'} and {here.parent / 'conf'})")


def sweep_dirs() -> list[Path]:
    """The sweeps folders, searched in this order: ``$NORMBENCH_SWEEPS``'s, then the shipped one.
    A folder named there that does not exist is the user's mistake (ConfigError)."""
    from normbench.checks import name_too_long, shown

    named = [Path(d).expanduser() for d in os.environ.get(SWEEPS_ENV, "").split(os.pathsep) if d.strip()]
    for folder in named:
        too_long = name_too_long(str(folder))  # is_dir would raise ENAMETOOLONG, read as a failure to write (h16 N17)
        if too_long:
            raise ConfigError(f"{SWEEPS_ENV} entry {shown(str(folder), 100)}: {too_long}")
        if not folder.is_dir():
            raise ConfigError(f"{SWEEPS_ENV}: {folder} is not a folder (it names folders of sweep files, "
                              f"separated by {os.pathsep!r})")
    here = Path(__file__).resolve().parents[1]  # the package: conf/ and sweeps/ are its, or its checkout's
    shipped = [c for c in (here / "sweeps", here.parent / "sweeps") if c.is_dir()][:1]
    return [folder.resolve() for folder in named] + shipped


def commands_for(claim_id: str) -> list[str]:
    """The commands the shipped sweep files' headers give for a claim (``#   python -m normbench … +sweep=NAME
    … (claim: ID)``), so a report can say which sweep would judge a claim its runs cannot."""
    found = []
    for folder in sweep_dirs()[-1:]:
        for file in sorted(folder.glob("*.yaml")):
            header = "".join(line[1:] for line in file.read_text(encoding="utf-8").splitlines(keepends=True)
                             if line.startswith("#"))
            command = re.search(r"python -m normbench[^\n(]*?\+sweep=" + re.escape(file.stem) + r"\b", header)
            if command and re.search(r"\(claims?:[^)]*\b" + re.escape(claim_id) + r"\b", header):
                found.append(" ".join(command.group(0).split()))
    return found


def pilots_for(claim_id: str) -> list[str]:
    """What the shipped sweep files' headers record of a pilot that judged a claim (``#   pilot (claim: ID):
    TEXT``, one line, its details in docs/claim-sources.md), so a report that cannot judge the claim points to
    it: ``"NAME: TEXT"`` per sweep file."""
    found = []
    for folder in sweep_dirs()[-1:]:
        for file in sorted(folder.glob("*.yaml")):
            for line in file.read_text(encoding="utf-8").splitlines():
                pilot = re.match(r"#\s*pilot \(claims?:([^)]*)\):\s*(.+)", line)
                if pilot and re.search(r"\b" + re.escape(claim_id) + r"\b", pilot.group(1)):
                    found.append(f"{file.stem}: {pilot.group(2).strip()}")
    return found


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
            if group and os.path.lexists(candidate):  # a FIFO or folder too: _sweep_text says it is not a regular file
                return candidate
        return None

    def load_config(self, config_path: str) -> ConfigResult:
        path = self._file(config_path)
        if path is None:
            raise ConfigLoadError(f"Config not found : {config_path}")
        return parsed_once(path, (self.scheme(), config_path), lambda: self._read(path, config_path))

    def _read(self, path: Path, config_path: str) -> ConfigResult:
        text = _sweep_text(path)
        header = self._get_header_dict(text[:512])
        group = self._normalize_file_name(config_path).rpartition("/")[0]
        package = _package(header.get("package"), group)
        config = read_sweep_file(path, text, package)
        if group == SWEEP_GROUP:  # Hydra's words were "Key 'sweep' not in 'Config'" for both (hostile h25 g012)
            if not config:
                raise ConfigError(f"sweep file {path} is empty (it sets nothing): {SWEEP_FILE_HOLDS}")
            if package[:1] == (SWEEP_GROUP,):
                raise ConfigError(f"sweep file {path} lacks its first line '# @package _global_': without it its "
                                  f"settings would land under '{SWEEP_GROUP}.', which is no setting")
        return ConfigResult(config=config, path=f"{self.scheme()}://{path.parent}", provider=self.provider,
                            header=header)

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
        # the sweep files one can choose: a FIFO or folder named NAME.yaml is not one (hostile h21 B5)
        return sorted({f.stem for folder in folders if folder.is_dir() for f in folder.glob("*.yaml") if f.is_file()})


# -- a sweep file is config, not code --------------------------------------------------------------
MAX_SWEEP_BYTES = 1 << 20
MAX_SWEEP_NODES = 100_000  # YAML nodes once every alias is expanded; a sweep file has tens
# What a sweep file may set under ``hydra``: how to sweep and where to write. Everything else Hydra
# reads there can run code or commands (callbacks, logging handlers and factories, env_set for
# subprocesses, a search path to unchecked configs, a launcher's setup lines in its job script).
# (not output_subdir: Hydra writes its .hydra files there, and a relative one climbs out of the job folder;
# the project keeps it null)
SWEEP_HYDRA_KEYS = ("mode", "sweeper", "sweep", "run", "launcher", "job.name", "verbose")
REFUSED_HYDRA_KEYS = ("launcher.setup", "launcher.srun_args", "launcher.additional_parameters")
CODE_KEYS = ("_target_", "()")
SMUGGLING = ("_target_", "oc.create", "oc.decode")
INTERPOLATED_HYDRA_KEYS = ("sweep.dir", "sweep.subdir", "run.dir", "job.name")  # paths: ${now:...}, ${hydra.job.num}


SWEEP_FILE_HOLDS = ("a sweep file holds the line '# @package _global_' and then settings (key: value lines), e.g. "
                    "hydra: {mode: MULTIRUN, sweeper: {params: {norm: 'ln,rms'}}} (docs/sweeps.md)")


def _sweep_text(path: Path) -> str:
    """A sweep file's text: a regular file (a FIFO or device is never waited on), at most MAX_SWEEP_BYTES."""
    try:
        with open(path, "rb", opener=lambda p, flags: os.open(p, flags | getattr(os, "O_NONBLOCK", 0))) as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise ConfigError(f"sweep file {path} is not a regular file")
            data = handle.read(MAX_SWEEP_BYTES + 1)
    except IsADirectoryError:  # Python's open refuses a folder before fstat can say what it is
        raise ConfigError(f"sweep file {path} is not a regular file") from None
    except OSError as error:
        raise ConfigError(f"sweep file {path} cannot be read ({error.strerror or error})") from None
    if len(data) > MAX_SWEEP_BYTES:
        raise ConfigError(f"sweep file {path} is larger than {MAX_SWEEP_BYTES >> 20} MiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"sweep file {path} is not UTF-8 text") from None


def _package(package: str | None, group: str) -> tuple[str, ...]:
    """Where a file's keys land in the composed config (its ``# @package``, else its group's place)."""
    package = (package or "_group_").replace("_group_", group.replace("/", "."))
    parts = tuple(p for p in package.split(".") if p)
    return parts[1:] if parts[:1] == ("_global_",) else parts


def _expanded_size(root: yaml.Node) -> int:
    """How many nodes ``root`` becomes once every alias is copied out, counted without copying;
    ConfigError for an alias of a node that contains it (endless)."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in open_nodes:
            raise ConfigError("an alias refers to a node that contains it")
        open_nodes.add(key)
        children = [c for pair in node.value for c in pair] if isinstance(node, yaml.MappingNode) else \
            node.value if isinstance(node, yaml.SequenceNode) else []
        total = 1 + sum(size(child) for child in children)
        open_nodes.discard(key)
        sizes[key] = min(total, MAX_SWEEP_NODES + 1)  # saturate: the count stays small however deep
        return sizes[key]
    return size(root)


def _under(rest: str, keys: tuple[str, ...]) -> bool:
    return any(rest == k or rest.startswith(k + ".") for k in keys)


def _refused_hydra_setting(rest: str) -> bool:
    """Whether ``hydra.<rest>`` is a setting a sweep file may not hold (one not on the way to SWEEP_HYDRA_KEYS)."""
    if not rest:
        return False
    allowed = _under(rest, SWEEP_HYDRA_KEYS) or any(k.startswith(rest + ".") for k in SWEEP_HYDRA_KEYS)
    return not allowed or _under(rest, REFUSED_HYDRA_KEYS)


def _refused_override_key(key: str) -> bool:
    """A sweeper parameter is an override of each job's config: ``hydra.job.env_set.X`` there sets
    what the file may not, ``+hydra/job_logging`` chooses a logging config, ``x._target_`` plants code."""
    name = key.lstrip("+~")
    if any(word in name for word in SMUGGLING) or name.rpartition(".")[2] in CODE_KEYS:
        return True
    if name.split("/")[0] == "hydra":
        return name.rpartition("/")[0] != "hydra" or name.partition("/")[2] not in ("launcher", "sweeper")
    # Hydra's own settings are never a swept axis: hydra.sweep.dir there would move the jobs' folders
    # outside the sweep's (a held-out pass: a sweep file's params beat the command line's sweep.dir)
    return name.split(".")[0] == "hydra"


_NOT_CODE = f"a sweep file is config, not code (no {', '.join(CODE_KEYS)}, callbacks or logging)"
_HYDRA_ONLY = (f"{_NOT_CODE}; under hydra it may set only {', '.join(SWEEP_HYDRA_KEYS)} (not "
               f"{', '.join(REFUSED_HYDRA_KEYS)})")
_SMUGGLED = f"a sweep file is config, not code (no {', '.join(SMUGGLING)}: each builds a node from a string, which can run code)"
_INTERPOLATED = (f"under hydra only {', '.join(INTERPOLATED_HYDRA_KEYS)} may interpolate (the value is not seen until "
                 f"Hydra resolves it, and could bring a whole node into its settings); write the values out")
_PARAM_REFUSED = ("a sweep parameter may not set Hydra's own settings, choose one of its groups other than hydra/launcher "
                  "and hydra/sweeper, or name code")


def _code_or_hydra_key(value, at: tuple[str, ...]) -> tuple[str, str] | None:
    """The first setting of ``value`` (whose keys land at ``at``) that a sweep file may not hold, dotted, and why: the
    rest of the line, ": …" or " to …" (hostile h16 N18: an interpolation was refused as a forbidden key)."""
    dotted = ".".join(at) or "the top level"
    rest = ".".join(at[1:]) if at[:1] == ("hydra",) else None
    if rest is not None and _refused_hydra_setting(rest):
        return dotted, f": {_HYDRA_ONLY}"
    if isinstance(value, str):
        word = next((word for word in SMUGGLING if word in value), None)
        if word:  # a node built from a string at resolution; the reason is the value, not the key (hostile h13 X08b)
            return dotted, f" to a value holding {word}: {_SMUGGLED}"
        if rest is not None and "${" in value and not _under(rest, INTERPOLATED_HYDRA_KEYS):
            return dotted, f" to an interpolation: {_INTERPOLATED}"
        return None
    if isinstance(value, dict):
        for key, inner in value.items():
            here = ".".join((*at, str(key)))
            if str(key) in CODE_KEYS or "_target_" in str(key):
                return here, f": {_NOT_CODE}"
            if str(key) == "hydra" and at:  # hydra's settings anywhere but at the top of the config
                return here, f": {_NOT_CODE}; Hydra's settings stand only at the top of the config (# @package _global_)"
            if at == ("hydra", "sweeper", "params") and _refused_override_key(str(key)):
                return here, f": {_PARAM_REFUSED}"
            found = _code_or_hydra_key(inner, (*at, str(key)))
            if found:
                return found
    elif isinstance(value, list):
        for inner in value:
            found = _code_or_hydra_key(inner, at)
            if found:
                return found
    return None


def _defaults_problem(defaults) -> str | None:
    """A defaults entry that would put a config into ``hydra`` under another package (``@hydra...``),
    or choose one of Hydra's own groups other than its launcher or sweeper
    (``override /hydra/job_logging: X``: a logging config, its handlers and their files)."""
    for entry in defaults if isinstance(defaults, list) else []:
        names = [entry] if isinstance(entry, str) else list(entry) if isinstance(entry, dict) else []
        for name in map(str, names):
            group, _, package = name.partition("@")
            if package and _package(package, "")[:1] == ("hydra",):
                return f"defaults entry {name!r} puts a config into hydra's settings"
            words = group.split()
            group = words[-1].strip("/") if words else ""
            if group.split("/")[0] == "hydra" and group not in ("hydra/launcher", "hydra/sweeper"):
                return (f"defaults entry {name!r} chooses a config of Hydra's group {group}: a sweep file may choose "
                        f"only hydra/launcher and hydra/sweeper")
            options = entry.get(name) if isinstance(entry, dict) else None
            if isinstance(options, list) and group in ONE_OPTION_GROUPS:  # multi-select: one run, merged (h16 N11)
                return (f"defaults entry {name!r} chooses a list: {group} takes one option, and a list would merge the "
                        f"options' configs into one run; to run each, sweep them (hydra.sweeper.params: {group}: "
                        f"{','.join(map(str, options))[:120] or 'A,B'})")
    return None


def code_allowed() -> bool:
    return os.environ.get(ALLOW_CODE_ENV) == "1"


class CheckedFileSource(FileConfigSource):
    """Hydra's ``file://`` config source, with every file outside conf/ read as a sweep file is
    (``read_sweep_file``): a primary config from ``--config-dir/--config-name/--config-path`` or a
    group from ``hydra.searchpath`` is config, never code (no ``hydra.callbacks``, ``_target_`` or
    logging). conf/ is the project's own and is read as Hydra reads it."""

    def load_config(self, config_path: str) -> ConfigResult:
        path = Path(os.path.realpath(os.path.join(self.path, self._normalize_file_name(config_path))))
        if not path.exists():
            return super().load_config(config_path)  # Hydra's own "not found"
        return parsed_once(path, (self.scheme(), self.path, config_path, code_allowed()),
                           lambda: self._read(path, config_path))

    def _read(self, path: Path, config_path: str) -> ConfigResult:
        if code_allowed() or path.is_relative_to(config_dir()):
            return super().load_config(config_path)
        group = self._normalize_file_name(config_path).rpartition("/")[0]
        try:
            text = _sweep_text(path)
            header = self._get_header_dict(text[:512])
            config = read_sweep_file(path, text, _package(header.get("package"), group))
        except ConfigError as error:
            raise _named_as(error, path, group) from None
        return ConfigResult(config=config, path=f"{self.scheme()}://{self.path}", provider=self.provider, header=header)


class SharedStoreSource(StructuredConfigSource):
    """Hydra's source of the configs registered in its ConfigStore (the schema's), which a copy of shares the
    store instead of copying it. Hydra deep-copies its config repository, sources and all, for every
    composition (``CachingConfigRepository``): the copy of the store, every node registered in it, took about
    15 ms on a 2-core CPU, most of ``normbench --help``'s 2.4 s (105 compositions). The store is the process's
    one ConfigStore, which hands out a copy of each node it loads, and a composition changes a source's list in
    the repository, never a source: nothing is shared that is changed."""

    def __deepcopy__(self, memo: dict) -> SharedStoreSource:
        twin = memo[id(self)] = copy.copy(self)
        return twin


def _named_as(error: ConfigError, path: Path, group: str) -> ConfigError:
    """A sweep file's refusal of a config that is not one (hostile h26 h05, h06, h23, h33 were told "sweep
    file"): a primary config (``-cn`` from ``-cd``/``-cp``) or a group's option in a config directory
    (``-cd``, ``hydra.searchpath``) is named as what it is; the rules are the same."""
    if group.split("/")[0] == "sweep":
        return error
    kind = "primary config" if not group else f"{group} config"
    text = str(error).replace(f"sweep file {path}", f"{kind} {path}", 1)
    return ConfigError(re.sub(r"\ba sweep file (is|may)\b", r"a config from outside conf/ \1", text))


# (file, what asked for it) -> (the file's bytes when read, what it read). Hydra composes every job of a
# sweep from the files again (twice: its sweeper checks the batch, its launcher composes each job); what
# is kept is the parsing (YAML, OmegaConf, a sweep file's checks), not the reading: a file is read each
# time and parsed again when its bytes changed (a file's mtime can stay the same over an edit). Only a
# regular file within MAX_SWEEP_BYTES is kept (anything else goes to `read`, which refuses it). Hydra
# edits what it is given (it takes the defaults list out), so each caller gets its own copy (a Template's:
# configuration/templates.py).
_parsed: dict[tuple, tuple[bytes, KeptResult]] = {}


def parsed_once(path: Path, key: tuple, read) -> ConfigResult:
    info = os.stat(path)
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_SWEEP_BYTES:
        return read()
    try:
        data = path.read_bytes()
    except OSError:
        return read()
    known = _parsed.get((str(path), *key))
    if known is None or known[0] != data:
        known = _parsed[(str(path), *key)] = (data, KeptResult(read()))
    return known[1].fresh()


# Hydra's registry tells sources apart by class name, and registers its own file source again in
# every process it restores its state in (a joblib worker): under the same name, this one stays.
CheckedFileSource.__name__ = FileConfigSource.__name__  # (its __qualname__ stays: a worker unpickles this class)
SharedStoreSource.__name__ = StructuredConfigSource.__name__


# Hydra's settings that run code or commands: a key under one of these, typed on the command line, is
# refused as a sweep file's is (its logging configs name handler classes and factories, env_set
# reaches every subprocess the run starts, such as the C++ compiler).
COMMAND_LINE_CODE_HYDRA_KEYS = ("callbacks", "job_logging", "hydra_logging", "job.env_set", "job.env_copy",
                                *REFUSED_HYDRA_KEYS)


def command_line_code(arguments: list[str]) -> str | None:
    """The first ``key=value`` of ``arguments`` (the command line) that would run code: a
    ``_target_`` or logging factory (``()``) anywhere, a value Hydra builds a node from
    (``oc.create``, ``oc.decode``), or a Hydra setting of COMMAND_LINE_CODE_HYDRA_KEYS (or a node
    above one). None when there is none or the user opted in (``--allow-code``)."""
    if code_allowed():
        return None
    for argument in arguments:
        if argument.startswith("-") or "=" not in argument:
            continue
        key, _, value = argument.partition("=")
        name = key.lstrip("+~").partition("@")[0]
        if any(word in argument for word in SMUGGLING) or name.rpartition(".")[2] in CODE_KEYS \
                or any(part in CODE_KEYS for part in name.split(".")):
            return key
        if name.split(".")[0] != "hydra":
            continue
        rest = name.partition(".")[2]
        if not rest or _under(rest, COMMAND_LINE_CODE_HYDRA_KEYS) \
                or any(k.startswith(rest + ".") for k in COMMAND_LINE_CODE_HYDRA_KEYS):
            return key
    return None


def node_builder(arguments: list[str], key: str) -> str | None:
    """The resolver (``oc.create``, ``oc.decode``) that made command_line_code refuse ``key``, when that and
    no ``_target_`` is the reason: the refusal then names it, not "a _target_, Hydra callbacks, ..." (h26 h15)."""
    argument = next((a for a in arguments if a.partition("=")[0] == key), "")
    if CODE_KEYS[0] in argument:
        return None
    return next((word for word in SMUGGLING if word in argument), None)


# What normbench's own config puts in place to keep a run's files where they belong: its callbacks (no
# multirun.yaml through a link, orphaned workers stopped), its logging, the run and sweep folders and the
# paths they are made from. A command line may set them (each value is checked), never take them away.
GUARD_KEYS = ("hydra.callbacks", "hydra.job_logging", "hydra.hydra_logging", "hydra.run", "hydra.sweep",
              "hydra.output_subdir", "paths")


def command_line_guard(arguments: list[str]) -> str | None:
    """The first deletion on the command line (``~KEY``, ``~KEY=VALUE``, ``~GROUP``) that removes one of
    GUARD_KEYS, a node above one (``~hydra``) or anything under one (``~hydra.callbacks.hydra_files``), as
    typed; or None. Refused whatever ``--allow-code`` says: removing a guard runs no code of the user's."""
    for argument in arguments:
        if not argument.startswith("~"):
            continue
        key = argument[1:].partition("=")[0].partition("@")[0].strip().replace("/", ".")
        if any(key == k or key.startswith(k + ".") or k.startswith(key + ".") for k in GUARD_KEYS):
            return argument.partition("=")[0]
    return None


def require_flat_sweep_params(arguments: list[str]) -> None:
    """A ``hydra.sweeper.params.KEY=...`` on the command line whose KEY has a dot builds a nested
    node, where the sweeper needs one override per entry (it fails deep in OmegaConf): ConfigError."""
    for argument in arguments:
        key = argument.partition("=")[0].lstrip("+~").partition("@")[0]
        if argument.startswith("-") or "=" not in argument or not key.startswith("hydra.sweeper.params."):
            continue
        if "." in key[len("hydra.sweeper.params."):]:
            raise ConfigError(f"{key[:120]}: a sweep parameter with a dotted name cannot be given on the command "
                              "line (it would nest); sweep it directly (KEY=a,b) or in a sweep file")


def require_one_option(overrides: list[str], where: str = "", sweep_flag: str = "-m ") -> None:
    """ConfigError (one line) for a list given to a group a run holds one option of (ONE_OPTION_GROUPS):
    ``norm=[ln,rms]`` ran one run of the options' configs merged, the last winning, without a word (hostile
    h16 N11); a sweep of them is ``-m norm=ln,rms``. ``where`` names a sweep file's params; ``sweep_flag`` is
    what the command sweeps with ("" for a study, which sweeps every comma list)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import ChoiceSweep

    for argument in overrides:
        if argument.startswith("-") or "=" not in argument:
            continue
        try:
            override = OverridesParser.create().parse_override(argument)
        except Exception:  # noqa: BLE001 - what Hydra cannot parse it reports itself, in one line
            continue
        value = override.value()
        listed = next((v for v in (value.list if isinstance(value, ChoiceSweep) else [value]) if isinstance(v, list)), None)
        if override.key_or_group in ONE_OPTION_GROUPS and listed is not None:
            group, options = override.key_or_group, ",".join(map(str, listed))[:120]
            sweep = f"{group}: {options or 'A,B'}" if where else f"{sweep_flag}{group}={options or 'A,B'}"
            raise ConfigError(f"{where}{group}=[{options}]: {group} takes one option, and a list would merge the "
                              f"options' configs into one run; to run each, sweep them: {sweep}")


# Where Hydra writes the run's config.yaml, hydra.yaml and overrides.yaml, relative to the run folder:
# an absolute path, a ``..`` or an interpolation (whose value is not seen here) puts them outside it,
# over someone's files. Not code, so ``--allow-code`` does not open it.
PLACE_HYDRA_KEYS = ("output_subdir",)


def command_line_place(arguments: list[str]) -> str | None:
    """The first ``key=value`` of ``arguments`` (the command line) that would make Hydra write outside
    the run folder (a PLACE_HYDRA_KEYS setting that is absolute, climbs with ``..`` or interpolates),
    or None. ``hydra.output_subdir=null`` (no files) and a plain relative folder stay allowed."""
    for argument in arguments:
        if argument.startswith("-") or "=" not in argument:
            continue
        key, _, value = argument.partition("=")
        name = key.lstrip("+~").partition("@")[0]
        if name.partition(".")[0] != "hydra" or name.partition(".")[2] not in PLACE_HYDRA_KEYS:
            continue
        # a sweep (a,b), a choice(...) or quotes: every piece of the value is a folder name to check
        pieces = [p for p in re.split(r"[\s,()\[\]{}'\"=:]+", value) if p]
        if "$" in value or "\\" in value or any(p.startswith(("/", "~")) or ".." in p.split("/") for p in pieces):
            return argument
        if any(os.path.normpath(p) == "." for p in pieces):  # the run folder itself, among the run's own files (H09)
            return argument
    return None


def command_line_flag(arguments: list[str]) -> str | None:
    """Why Hydra's own parser refuses ``arguments`` (the command line, without normbench's ``--allow-code``):
    an unknown ``--flag``, a flag without its value; or None. One line: argparse's answer is an 8-line usage
    block under the name __main__.py (N04, N23, N24). Hydra's flags parse exactly as Hydra parses them."""
    from hydra._internal.utils import get_args_parser

    from normbench.checks import ArgumentRefused

    def refuse(message: str):
        text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in " ".join(str(message).split()))
        raise ArgumentRefused(text if len(text) <= 400 else text[:399] + "…")

    parser = get_args_parser()
    parser.error = refuse
    try:
        parser.parse_args(arguments)
    except ArgumentRefused as refused:
        return str(refused)
    return None


MAX_SWEEP_JOBS = 100_000  # jobs one sweep may expand to: Hydra's basic sweeper lists them all before the first


def sweep_jobs(overrides: list[str]) -> int:
    """How many jobs ``overrides`` (``key=value`` strings, a sweep's) expand to, counted without
    expanding them (``seed=range(0,1000000000)`` is a billion, known at once). Raises ValueError for
    an override Hydra cannot parse."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import ChoiceSweep, RangeSweep

    total = 1
    for override in OverridesParser.create().parse_overrides(list(overrides)):
        value = override.value() if override.is_sweep_override() else None
        if isinstance(value, ChoiceSweep):
            total *= max(len(value.list), 1)
        elif isinstance(value, RangeSweep) and value.step:
            total *= max(math.ceil((value.stop - value.start) / value.step), 1)
    return total


def require_sweep_size(overrides: list[str], where: str) -> None:
    """ConfigError (one line) when the overrides make more than MAX_SWEEP_JOBS jobs."""
    try:
        jobs = sweep_jobs(overrides)
    except Exception:  # noqa: BLE001 - what Hydra cannot parse it reports itself, in one line
        return
    if jobs > MAX_SWEEP_JOBS:
        raise ConfigError(f"{where} makes {jobs:,} jobs; a sweep may have at most {MAX_SWEEP_JOBS:,}")


def _not_a_bool(values: dict, schema: type, prefix: str = "") -> str | None:
    """A bool setting given a number other than 0 or 1 (``save_model: 2``), which OmegaConf would take as
    true; the key and value as one phrase, or None."""
    import dataclasses

    for item in fields(schema):
        value = values.get(item.name) if isinstance(values, dict) else None
        if value is None:
            continue
        if str(item.type) == "bool" and not isinstance(value, (bool, str)) and value not in (0, 1):
            return f"{prefix}{item.name} must be true or false, got {str(value)[:40]}"
        if dataclasses.is_dataclass(item.default_factory) and isinstance(value, dict):  # a group: norm, model, ...
            found = _not_a_bool(value, item.default_factory, f"{prefix}{item.name}.")
            if found:
                return found
    return None


def read_sweep_file(path: Path, text: str | None = None, package: tuple[str, ...] = ()) -> DictConfig:
    """A sweep file's config, checked as data (the module docstring says what is refused); ``package``
    is where its keys land. Raises ConfigError with one line naming the file."""
    text = _sweep_text(path) if text is None else text
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        if root is not None and not isinstance(root, yaml.MappingNode):
            what = "a YAML list" if isinstance(root, yaml.SequenceNode) else "a single value"
            raise ConfigError(f"it holds {what}, not a mapping of settings (key: value lines)")
        if root is not None and _expanded_size(root) > MAX_SWEEP_NODES:
            raise ConfigError(f"its aliases expand to more than {MAX_SWEEP_NODES} YAML nodes (an alias bomb)")
        config = OmegaConf.create(text) if root is not None else OmegaConf.create({})
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise ConfigError(f"sweep file {path} is not valid YAML: {error.problem or error.context}{where}") from None
    except (yaml.YAMLError, RecursionError) as error:
        raise ConfigError(f"sweep file {path} is not valid YAML: {type(error).__name__}") from None
    except ConfigError as error:
        raise ConfigError(f"sweep file {path}: {error}") from None
    except (OmegaConfBaseException, ValueError) as error:  # a set, a null key, an int of 5000 digits
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise ConfigError(f"sweep file {path} holds what a config cannot: {first[:160]}") from None
    if not isinstance(config, DictConfig):
        raise ConfigError(f"sweep file {path} is not a mapping of settings")
    plain = OmegaConf.to_container(config, resolve=False)
    refused = _code_or_hydra_key(plain, package)
    if refused:
        key, why = refused
        raise ConfigError(f"sweep file {path} sets {key}{why}")
    why = _defaults_problem(plain.get("defaults"))
    if why:
        raise ConfigError(f"sweep file {path}: {why}")
    mistyped = _not_a_bool(plain, Config) if not package else None  # a global file's settings
    if mistyped:
        raise ConfigError(f"sweep file {path}: {mistyped}")
    params = plain
    for key in ("hydra", "sweeper", "params"):
        params = params.get(key) if isinstance(params, dict) else None
    if isinstance(params, dict):
        require_sweep_size([f"{k}={v}" for k, v in params.items()], f"sweep file {path}")
        require_one_option([f"{k}={v}" for k, v in params.items()], f"sweep file {path}: hydra.sweeper.params.")
    return config
