"""A sweep's up-front check that its jobs compose, paid once per pair of overrides instead of once per job.

Hydra's sweepers compose every job of a batch before the launcher runs any (Sweeper.validate_batch_is_legal),
so that a bad override fails the sweep before its first job rather than in its middle; the launcher then
composes each job again to run it. On tiny runs the two compositions were most of a sweep's fixed cost
(issue 48: 64% of a 52-job smoke subset's time under cProfile, about 0.12 s each on the 2-core machine).

Whether a job composes depends on its overrides: a value (an unknown group option, a wrong type) or, where
one setting changes another's schema or defaults, a pair of them. So the check composes each job that
brings a value or a pair of values no job checked before it has brought, and skips the rest: every value
and every pair of values in the batch is still composed before the first job runs. A failure that needs
three settings together is found when that job is composed to run, as a failure of the launcher's.

A job the check composed is not composed again to run where the launcher composes in this process (Hydra's basic
launcher, the default): the check keeps its config and the launcher's composition of the same overrides from the
same master config takes it, once. A joblib or submitit worker composes its own; the parent keeps nothing for them.
(Every composition copies Hydra's config repository first, CachingConfigRepository: the ConfigStore inside it is
shared, not copied, by the source register() puts in Hydra's registry, configuration/config.py's SharedStoreSource.)
And Hydra builds, for every config in the defaults tree, the map a defaults-list interpolation (``- db: ${other}``)
is resolved against, an OmegaConf of every choice so far, about 20 of them per composition: it is built only for a
defaults list that holds such an interpolation (Hydra reads it nowhere else). Hydra's own packaged configs
(``pkg://hydra.conf``: its output, logging and help settings), parsed from YAML again in every composition, are
parsed once per process and each composition given its own copy, as normbench's own files are
(configuration/config.py, parsed_once); every such copy, and each ConfigStore node's (Hydra's schema and
``hydra/config``, normbench's schema), is made by unpickling the kept config's bytes (configuration/templates.py),
checked to be the deep copy's tree. A config with a package (``# @package model``) is moved under it rather than
deep-copied there (Hydra's ``_embed_result_config``) where its path sits once in the defaults list: a file placed
twice is copied at each place, as Hydra copies it (a move there, tried unguarded, let what was merged into the first
place leak into the second). OmegaConf's parse of an interpolation string, which merges and resolution repeat
(ANTLR, in Python), is kept per string: about 5 ms more.
"""

from __future__ import annotations

import contextvars
import copy
import functools
from collections import Counter
from collections.abc import Sequence
from itertools import combinations

from normbench.configuration.templates import KeptResult, Template


def covering_jobs(batch: Sequence[Sequence[str]]) -> list[int]:
    """The indices of the jobs to compose so that each override, and each pair of overrides that share a
    job, is composed at least once; in batch order, so a sweep's first bad job is still the one named."""
    seen: set = set()
    chosen = []
    for index, overrides in enumerate(batch):
        items = sorted(set(overrides))
        brings = {*((item,) for item in items), *combinations(items, 2)} - seen
        if brings or not chosen:
            chosen.append(index)
            seen |= brings
    return chosen


# (id of the master config, a job's overrides) -> (the master config, the job's config): the check's compositions
# of the batch it checked last, each taken once by the launcher's composition of the same job
_composed: dict[tuple, tuple] = {}


def _composes_here(sweeper) -> bool:
    """Whether ``sweeper``'s launcher composes its jobs in this process (Hydra's basic launcher)."""
    from hydra._internal.core_plugins.basic_launcher import BasicLauncher

    return isinstance(getattr(sweeper, "launcher", None), BasicLauncher)


def validate_covering(sweeper, batch: Sequence[Sequence[str]]) -> None:
    """Sweeper.validate_batch_is_legal on the covering jobs of ``batch`` alone; their configs kept for the launcher
    where it composes here."""
    loader = sweeper.hydra_context.config_loader if getattr(sweeper, "hydra_context", None) else sweeper.config_loader
    _composed.clear()
    keep = _composes_here(sweeper)
    for index in covering_jobs(batch):
        config = loader.load_sweep_config(master_config=sweeper.config, sweep_overrides=list(batch[index]))
        if keep:
            _composed[(id(sweeper.config), tuple(batch[index]))] = (sweeper.config, config)


def _taking_kept(load):
    """ConfigLoaderImpl.load_sweep_config that returns the check's config of the same job once, else composes."""

    def load_sweep_config(self, master_config, sweep_overrides):
        kept = _composed.pop((id(master_config), tuple(sweep_overrides)), None)
        if kept is not None and kept[0] is master_config:
            return kept[1]
        return load(self, master_config, sweep_overrides)

    load_sweep_config.takes_kept = True
    return load_sweep_config


def _when_interpolated(build):
    """hydra's defaults_list._create_interpolation_map, built only where ``defaults_list`` interpolates."""

    def create_interpolation_map(overrides, defaults_list, self_added):
        if any(d.is_interpolation() for d in defaults_list):
            return build(overrides, defaults_list, self_added)
        return None  # read by nothing: _create_defaults_tree_impl resolves only its interpolated defaults with it

    create_interpolation_map.lazy = True
    return create_interpolation_map


# (package, config path) -> the packaged config as first parsed: each caller gets its own copy (Hydra edits it)
_packaged: dict[tuple[str, str], KeptResult] = {}


def _parsed_once(load):
    """ImportlibResourcesConfigSource.load_config, each packaged config parsed once per process."""

    def load_config(self, config_path: str):
        key = (self.path, config_path)
        if key not in _packaged:
            _packaged[key] = KeptResult(load(self, config_path))  # a missing config raises, and is asked again
        return _packaged[key].fresh()

    load_config.parsed_once = True
    return load_config


def _stored_copied(self, config_path: str):
    """ConfigStore.load: the stored node, copied from its Template where Hydra deep-copies it. The Template is kept on
    the stored ConfigNode (it goes with it when the name is stored again) and made again when the node there is
    another object. What it cannot see: a stored node changed in place after its first load (nothing in Hydra or
    normbench does; Hydra hands out copies), or a class of it rebound in its module (a copy is built from the class
    found by name)."""
    stored = self._load(config_path)
    template = stored.__dict__.get("_normbench_template")
    if template is None or template.config is not stored.node:
        template = stored.__dict__["_normbench_template"] = Template(stored.node)
    ret = copy.copy(stored)  # Hydra's: the stored ConfigNode itself is left as it is
    ret.__dict__.pop("_normbench_template", None)
    ret.node = template.copy()
    return ret


# the config paths that sit once in the defaults list being composed; whether the config being loaded is one
_once: contextvars.ContextVar[frozenset] = contextvars.ContextVar("normbench_placed_once", default=frozenset())
_moving: contextvars.ContextVar[bool] = contextvars.ContextVar("normbench_moving", default=False)


def _while_set(var: contextvars.ContextVar, name: str, value_of):
    """A wrapper of a ConfigLoaderImpl method whose first argument is ``name`` (Hydra passes it by keyword) that sets
    ``var`` to ``value_of(that argument)`` while the method runs; the wrapped method's ``sets`` names the variable
    (install wraps once)."""

    def wrap(method):
        def wrapped(self, *args, **kwargs):
            token = var.set(value_of(kwargs[name] if name in kwargs else args[0]))
            try:
                return method(self, *args, **kwargs)
            finally:
                var.reset(token)

        wrapped.sets = var
        return wrapped

    return wrap


def _placed_once(defaults) -> frozenset:
    """The config paths a composition's defaults list holds once."""
    places = Counter(d.config_path for d in defaults)
    return frozenset(path for path, n in places.items() if n == 1)


def _moving_once(embed):
    """ConfigLoaderImpl._embed_result_config that moves a loaded config under its package (``@package model``) instead
    of deep-copying it there, where its path sits once in the composition's defaults list and it sits in no other
    config: the composition's cached copy is then read by nothing after (its defaults and header were read while the
    defaults list was built). A file placed twice (``db@src`` and ``db@dst``, on the command line or in two configs'
    defaults, a ConfigStore node twice) is copied at each place as Hydra copies it, so what ``_self_`` merges into one
    place never reaches the other (the hostile review of fc4b3ee: tests/studies/test_validation.py)."""

    def embed_result_config(ret, package_override):
        from omegaconf import OmegaConf, flag_override

        package = ret.header["package"] if package_override is None else package_override
        if not _moving.get() or not package or ret.config._get_parent() is not None:
            return embed(ret, package_override)
        cfg = OmegaConf.create()
        with flag_override(cfg, "no_deepcopy_set_nodes", True):
            OmegaConf.update(cfg, package, ret.config, merge=False)
        moved = copy.copy(ret)
        moved.config = cfg
        return moved

    embed_result_config.moves = True
    embed_result_config.hydras = embed
    return staticmethod(embed_result_config)


def _trees_kept(parse):
    """omegaconf's grammar_parser.parse with each interpolation string's parse tree kept (``${oc.env:X}``, ``a_${b}``):
    OmegaConf parses a string again with ANTLR every time it resolves or merges through it, about 0.5 ms each in
    Python, ten a composition. A tree is read, never changed, by the visitor that resolves it, and a string that does
    not parse raises each time (nothing is kept for it)."""
    kept = functools.lru_cache(maxsize=4096)(parse)
    kept.trees_kept = True
    return kept


def install() -> None:
    """Every sweeper that keeps Hydra's validate_batch_is_legal checks the covering jobs alone, the launcher in this
    process takes their configs, the ConfigStore's nodes are copied from their Templates, the interpolation map is
    built where a defaults list interpolates, Hydra's packaged configs are parsed once, a config placed once is moved
    under its package (once each)."""
    from hydra._internal import defaults_list
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra._internal.core_plugins.importlib_resources_config_source import ImportlibResourcesConfigSource
    from hydra.core.config_store import ConfigStore
    from hydra.plugins.sweeper import Sweeper
    from omegaconf import base as omegaconf_base

    if Sweeper.validate_batch_is_legal is not validate_covering:
        Sweeper.validate_batch_is_legal = validate_covering
    if not getattr(ConfigLoaderImpl.load_sweep_config, "takes_kept", False):
        ConfigLoaderImpl.load_sweep_config = _taking_kept(ConfigLoaderImpl.load_sweep_config)
    ConfigStore.load = _stored_copied
    if not getattr(ImportlibResourcesConfigSource.load_config, "parsed_once", False):
        ImportlibResourcesConfigSource.load_config = _parsed_once(ImportlibResourcesConfigSource.load_config)
    if getattr(ConfigLoaderImpl._compose_config_from_defaults_list, "sets", None) is not _once:
        ConfigLoaderImpl._compose_config_from_defaults_list = _while_set(_once, "defaults", _placed_once)(
            ConfigLoaderImpl._compose_config_from_defaults_list)
    if getattr(ConfigLoaderImpl._load_single_config, "sets", None) is not _moving:  # whether the config is placed once
        ConfigLoaderImpl._load_single_config = _while_set(
            _moving, "default", lambda default: default.config_path in _once.get())(ConfigLoaderImpl._load_single_config)
    if not getattr(ConfigLoaderImpl._embed_result_config, "moves", False):
        ConfigLoaderImpl._embed_result_config = _moving_once(ConfigLoaderImpl._embed_result_config)
    if not getattr(omegaconf_base.parse, "trees_kept", False):
        omegaconf_base.parse = _trees_kept(omegaconf_base.parse)
    if not getattr(defaults_list._create_interpolation_map, "lazy", False):
        defaults_list._create_interpolation_map = _when_interpolated(defaults_list._create_interpolation_map)
