"""The run record's contract, shared by the runner and the report (docs/run-record.md).

What a record is (schema version, statuses) and what makes two records the same run: a run's
identity is its *effective* config, every setting that can change what is trained and measured,
after the settings that cannot change this run are removed (a norm's eps when there is no norm,
a Transformer's heads in an LSTM, ...). Which settings exist is read from the typed schema
(normbench/configuration/schema.py): a new config field is part of the identity, and an axis of the report,
without any change here. Imports no torch, so the report can use it.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import fields
from typing import NamedTuple

from normbench.configuration import families
from normbench.configuration.placements import described
from normbench.configuration.schema import (
    EARLIER_CELL_KERNELS,
    TASK_CONFIGS,
    Config,
    TaskConfig,
    cell_kernel_named,
    per_term_in_cell,
    with_present_names,
)
from normbench.norms.kinds import inert_settings, kind_names

RECORD_FORMAT = "normbench.run/2"
READABLE = ("normbench.run/1", RECORD_FORMAT)  # /1 hashed the raw config; its identity is recomputed from it
HARNESS = {f.name: f.metadata["harness"] for f in fields(Config) if "harness" in f.metadata}
# norm.impl=auto counts as native in a run's identity (effective_config): a record made with impl=native,
# the default before auto, is the same run as one made with auto, the default now
AUTO_IMPL, AUTO_IDENTITY = "auto", "native"
# model.cell_kernel as a run's hash reads it: the spelling it had when the first records were hashed (cpp,
# compile; schema.EARLIER_CELL_KERNELS). The hash canonicalises the present names back to those, so every
# record made before the rename keeps its config_hash and group_hash, and a run of the same setting made
# after it (compiled, torch_compile) has the same ones: resume, rerun, compare and the report pair them.
# Its settings (axes) show the present names.
HASHED_CELL_KERNELS = {present: earlier for earlier, present in EARLIER_CELL_KERNELS.items()}

# Short names the report and the claims use for the settings people sweep most.
ALIASES = {
    "model.family": "model", "task.name": "task", "norm.kind": "norm", "placement.name": "placement",
    "precision.dtype": "precision", "norm.impl": "impl", "norm.eps": "eps", "norm.gamma_init": "gamma_init",
    "norm.fp32": "norm_fp32", "model.layers": "layers", "model.hidden": "hidden", "optim.name": "optim",
}


def recorded_cell_kernel(value):
    """A record's environment.cell_kernel (the recurrence that ran) by its present name: records made before
    the rename say cpp-avx512 for compiled-avx512 and compile for torch_compile."""
    if isinstance(value, str) and value.startswith("cpp-"):
        return "compiled-" + value.removeprefix("cpp-")
    return cell_kernel_named(value)


def _get(config: dict, dotted: str, default=None):
    node = config
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node


def _drop(config: dict, dotted: str) -> None:
    *parents, leaf = dotted.split(".")
    node = config
    for part in parents:
        node = node.get(part) if isinstance(node, dict) else None
    if isinstance(node, dict):
        node.pop(leaf, None)


HASHED, INERT, AT_AUTO = "hashed", "inert", "at auto"


def cell_kernel_rule(config: dict) -> str:
    """How ``model.cell_kernel`` enters the identity of ``config`` (a config with present names, norm.impl as
    identity reads it). How an in-cell layer runs its recurrence (models/kernel_choice.py): auto, compiled and
    python choose between the family's hand-written recurrences (LN's; RMSNorm's), which only fp32
    and one group reach (a grouped norm runs the loop, InCellLayer); torch_compile acts on every in-cell layer.
    HASHED where the value changes what runs, INERT where it cannot. AT_AUTO: the in-cell RMSNorm LSTM's and
    GRU's kernels came after records of their runs (2026-12-06, 2026-12-07); at auto, the value they ran with (the
    loop then, the kernel now: one function, rounded differently), the value stays out of the hash so they keep
    their hashes, and in the settings (identity) so a study's arms are named by it; python and compiled are hashed."""
    kind = _get(config, "norm.kind")
    if not per_term_in_cell(_get(config, "placement.name"), _get(config, "placement.summed"), kind):
        return INERT
    cell_kernel = _get(config, "model.cell_kernel")
    if cell_kernel == "torch_compile":
        return HASHED
    impl = _get(config, "norm.impl") if _get(config, "norm.groups", 1) == 1 else "reference"
    if not families.hand_written_cell(_get(config, "model.family"), kind, impl, _get(config, "precision.dtype") == "fp32"):
        return INERT
    return AT_AUTO if kind == "rms" and cell_kernel == "auto" else HASHED


def _inert(config: dict) -> list[str]:
    """The settings of ``config`` that cannot change this run, each for the reason beside it."""
    kind = _get(config, "norm.kind")
    family = _get(config, "model.family")
    placement = _get(config, "placement.name")
    inert = []
    if kind in kind_names():  # what the kind does not use (its descriptor, normbench/norms/kinds.py)
        inert += inert_settings(kind, affine=_get(config, "norm.affine"), gain_offset=_get(config, "norm.gain_offset"),
                                bn_reestimate=_get(config, "norm.bn_reestimate"), settings=_get(config, "norm"))
    if _get(config, "precision.dtype") == "fp32":
        inert.append("norm.fp32")  # the fp32 policy only acts under autocast
    inert += described(placement).inert_settings(family)  # what the placement's layers do not read
    if cell_kernel_rule(config) != HASHED:
        inert.append("model.cell_kernel")
    inert += families.described(family).inert_parameters()  # the other families' (a Transformer's heads in an LSTM)
    optimizer = _get(config, "optim.name")
    inert += {"adamw": ["optim.momentum"], "sgd": ["optim.beta1", "optim.beta2"]}.get(optimizer, [])
    if "qk_norm" not in families.described(family).parameters or not _get(config, "model.qk_norm"):
        inert.append("model.qk_norm")  # attention only; off is how every earlier record ran
    task = TASK_CONFIGS.get(_get(config, "task.name"), TaskConfig)  # each task says which of its keys are inert

    def setting(key: str, default=None):
        return _get(config, f"task.{key}", default)

    if not task.padded(setting):  # every example as long as the longest: no padding to mask or bucket by
        inert += ["norm.bn_mask", "task.bucket"]
    inert += [f"task.{key}" for key in task.inert(setting)]
    if _get(config, "model.recurrent_init", "uniform") == "uniform":
        inert.append("model.recurrent_init")  # PyTorch's uniform init: how every earlier record ran
    if not _get(config, "model.bidirectional"):
        inert.append("model.bidirectional")  # off is how every earlier record ran
    if not _get(config, "model.dropout"):
        inert += ["model.dropout", "model.dropout_at", "model.dropout_recurrent"]  # off: as earlier records ran
    elif family == "transformer":  # (model.dropout_recurrent: a recurrent family's parameter)
        if not described(placement).dropout_meets_norm(family, _get(config, "model.layers")):
            inert.append("model.dropout_at")  # residual dropout sits before the add, after any norm but peri's
    elif kind == "none" or not described(placement).dropout_meets_norm(family, _get(config, "model.layers")):
        # no norm meets a layer output (in_cell, gate, none; pre with one layer: only the embedding enters one)
        inert.append("model.dropout_at")
    if not _get(config, "overfit_batches"):
        inert.append("overfit_batches")  # 0, the whole training split: how every earlier record ran
    if _get(config, "role", "single") == "single":
        inert.append("role")  # an ordinary run: its identity is what it was before roles existed
    return inert


# Settings added after records existed, with the value every earlier record ran with. At that value a run leaves
# the setting out of its identity (so those records keep their hashes); the analysis reads a run that leaves one
# out at this value where its family reads the setting (analysis/aggregate.py, read_back_defaults).
EARLIER_DEFAULTS = {"model.qk_norm": False, "model.bidirectional": False, "model.recurrent_init": "uniform"}


def family_reads(family: str, key: str) -> bool:
    """Whether a run of model family ``family`` reads the ``model.*`` setting ``key``: one of its own parameters,
    or bidirectional in a recurrent family (a Transformer refuses it)."""
    described_family = families.described(family)
    name = key.removeprefix("model.")
    return name in described_family.parameters or (name == "bidirectional" and described_family.recurrent)


def effective_config(config: dict) -> dict:
    """The recorded config without harness keys and without the settings that cannot change the run.

    ``config`` is a plain dict as the record stores it (``summary.json``'s ``config``). Without a
    norm, placement is recorded as ``none``: every placement builds the same un-normalised model.
    ``norm.impl=auto`` is the run with ``native``: auto runs native's arithmetic by whichever kernel of
    it runs fastest here (normbench/norms/dispatch.py), a choice of the machine like the thread count's,
    and the record's ``environment.norm_impls`` names the kernel each norm ran. ``model.cell_kernel`` is
    by its present name (``cpp`` reads ``compiled``; schema.EARLIER_CELL_KERNELS).
    """
    effective = _named(config)
    for dotted in _inert(effective):
        _drop(effective, dotted)
    if _get(effective, "norm.kind") == "none" and isinstance(effective.get("placement"), dict):
        effective["placement"]["name"] = "none"
    elif described(_get(effective, "placement.name")).same_as:  # another name for one model (sandwich: peri)
        effective["placement"]["name"] = described(_get(effective, "placement.name")).same_as
    return effective


def _named(config: dict) -> dict:
    """A copy of ``config`` without harness keys, with present names and norm.impl as identity reads it."""
    named = {k: copy.deepcopy(v) for k, v in with_present_names(config).items() if k not in HARNESS and k != "hydra"}
    if _get(named, "norm.impl") == AUTO_IMPL:
        named["norm"]["impl"] = AUTO_IDENTITY
    return named


def _digest(obj) -> str:
    canonical = json.dumps(with_present_names(obj, HASHED_CELL_KERNELS), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


class RunIdentity(NamedTuple):
    config_hash: str  # one run: the effective config, seed included
    group_hash: str   # one group of seeds: the same without the seed
    settings: dict    # every result-affecting setting but the seed, flat (the record's axes)


def identity(config: dict) -> RunIdentity:
    """A run's identity, from one effective config.

    ``settings`` uses dotted names that follow the config (``optim.weight_decay``), with the short
    names in ALIASES for the most swept ones; a setting that does not apply to this run is absent.
    """
    effective = effective_config(config)
    digest = _digest(effective)
    effective.pop("seed", None)
    flat: dict = {}

    def walk(node, prefix: str) -> None:
        for key, value in node.items():
            dotted = f"{prefix}{key}"
            if isinstance(value, dict):
                walk(value, dotted + ".")
            else:
                flat[ALIASES.get(dotted, dotted)] = value

    walk(effective, "")
    if cell_kernel_rule(_named(config)) == AT_AUTO:  # out of the hash, in the settings (cell_kernel_rule)
        flat["model.cell_kernel"] = "auto"
    return RunIdentity(digest, _digest(effective), flat)


def config_hash(config: dict) -> str:
    return identity(config).config_hash


def config_of(axes: dict, seed: int, steps: int) -> dict:
    """The resolved config a runner would record for these axes (ALIASES' short names undone): for records
    written by hand (the report's tests, bench.report_scale)."""
    config: dict = {"seed": seed, "steps": steps, "task": {"name": axes["task"]}}
    dotted = {short: full for full, short in ALIASES.items()}
    for key, value in axes.items():
        *parents, leaf = dotted.get(key, key).split(".")
        node = config
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return config


def group_hash(config: dict) -> str:
    return identity(config).group_hash


def settings(config: dict) -> dict:
    return identity(config).settings
