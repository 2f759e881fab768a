"""Your own claims as data: YAML files in a folder you name, judged by the same engine as the shipped ones.

``normbench report DIR --claims MYDIR`` (and ``normbench study ... --claims MYDIR``) reads every
``*.yaml`` and ``*.yml`` in MYDIR (a folder with neither is refused); the folders travel to the processes a study starts in ``NORMBENCH_CLAIMS``
(``os.pathsep``-separated), which ``evaluate_claims`` reads. One file is one claim::

    id: ln_simple_as_good                 # lower-case, not a shipped claim's id
    statement: LayerNorm without gain and bias is not worse than LayerNorm.
    source: Xu et al. 2019, Understanding and Improving Layer Normalization, Abstract
    quote: "..."            # optional, like where / measures / regime / design: shown in the report
    arms:                   # arm name -> selector: setting -> value, or a predicate from PREDICATES
      ln: {norm: ln, norm.affine: true}
      ln-simple: {norm: ln, norm.affine: false}
    parts:                  # each from the engine's vocabulary (PART_KINDS)
      - {kind: not_worse, assertion: "LN-simple is not worse than LN", a: ln-simple, b: ln}
    requires: [transformer]  # which runs the claim is about, by name (REQUIRES), optional
    regime_checks:          # the regime as predicates by name (predicates.PREDICATES), each gating the parts it
      - off_ceiling         # names (1-based; every part when none); a claim with regime text needs at least one
      - {name: bn_pool_at_most, n: 16, parts: [1]}
    prepare: normalization_matters  # one of the engine's regime hooks by name (HOOKS), optional
    pool: [layers]          # axes it may average over, optional
    also_compare: []        # axes tied to the arms, optional

A file is data, never code: YAML read with the safe loader (no Python tags), at most 64 KiB, no key
written twice in one mapping, every key and name checked against the tables below, and anything that names code (a ``_target_``, a
module, a function, ``module:attribute``) refused. Each mistake is one line (ClaimFileError, exit
status 2 from the commands), naming the file and the key.
"""

from __future__ import annotations

import math
import os
import re
import sys
from dataclasses import MISSING, fields, is_dataclass
from pathlib import Path
from typing import Callable

import yaml

from normbench.analysis.claims import predicates, specs
from normbench.analysis.claims.vocabulary import (
    LARGEST,
    NOT_TRUE,
    POSITIVE,
    SCORE,
    SLOPE_DELTA,
    SMALLEST,
    TRUE,
    Claim,
    Is,
    Measure,
    PartSpec,
    Require,
    converges_faster,
    converges_grows,
    grows,
    named,
    one_of,
    recorded,
    slope,
)
from normbench.checks import ConfigError, name_too_long, shown
from normbench.configuration.contract import ALIASES, HARNESS
from normbench.configuration.schema import TASK_CONFIGS, Config, cell_kernel_named

CLAIMS_ENV = "NORMBENCH_CLAIMS"
MAX_BYTES = 64 * 1024
# A short file can still expand without bound through anchors and aliases ("billion laughs"): a claim
# needs a few hundred nodes, so a file whose aliases expand past MAX_NODES is refused before it is built.
MAX_NODES = 20_000
# A selector may only name a setting that can change the run (a run's identity, contract.py) or its short
# name: hydra.*, logger.*, paths.* and the other harness keys never differ between two arms' results.
_SELECTABLE = ({f.name for f in fields(Config)} - set(HARNESS)) | set(ALIASES.values())
_ID = re.compile(r"[a-z][a-z0-9_]{0,59}$")
_CODE_KEYS = {"_target_", "_partial_", "_args_", "module", "function", "callable", "class", "import", "code",
              "eval", "exec", "hook"}
_CODE_VALUE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")  # module:attribute, as an entry point names code
# The largest integer a claim file may hold: every number is used as a float, exact up to 2^53; a 4000-digit
# integer would raise OverflowError wherever it is first used (hostile h15 B4).
MAX_INT = 2**53


class ClaimFileError(ConfigError):
    """A claim file that cannot be used: one line naming the file and what is wrong."""


# A number in exponent form YAML 1.1 reads as text: 1e-3 (no dot), 1.0e3 and 1e+3 (its exponent needs a dot and
# a sign: 1.0e-3). To the file's writer each is a number (hostile h18 H7); a word stays text and is refused.
_EXPONENT_TEXT = re.compile(r"[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)[eE][-+]?[0-9]+")


def _number(name: str):
    def check(value, where):
        if isinstance(value, str) and _EXPONENT_TEXT.fullmatch(value.strip()):
            value = float(value)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or abs(value) > MAX_INT \
                or not math.isfinite(value):
            raise ClaimFileError(f"{where}: {name} needs a finite number, got {shown(value)}")
        return float(value)
    return check


# Selector predicates a value may be instead of a plain setting value: {name: argument}.
PREDICATES: dict[str, Callable] = {
    "one_of": lambda v, where: one_of(*_scalars(v, where)),
    "named": lambda v, where: named(*[str(x) for x in _scalars(v, where)]),
    "above": lambda v, where: (lambda n: Is(f"> {n:g}", lambda x: _num(x) is not None and _num(x) > n))(
        _number("above")(v, where)),
    "below": lambda v, where: (lambda n: Is(f"< {n:g}", lambda x: _num(x) is not None and _num(x) < n))(
        _number("below")(v, where)),
    "positive": lambda v, where: POSITIVE,
    "true": lambda v, where: TRUE,
    "not_true": lambda v, where: NOT_TRUE,
    "smallest": lambda v, where: SMALLEST,
    "largest": lambda v, where: LARGEST,
}
# Regime predicates by name: what the runs must be for the claim to apply (Require).
REQUIRES: dict[str, Require] = {
    "transformer": Require({"model": named("transformer")}, "model transformer"),
    "recurrent": specs.RECURRENT,
}
# The engine's regime hooks (specs.py), by name: a file picks one, never supplies one.
HOOKS: dict[str, Callable] = {
    "normalization_matters": specs.normalization_matters,
    "equal_data": specs.equal_data,
    "padded": specs.padded,
    "once_per_seed_at_init": specs.once_per_seed_at_init,
}
PART_KINDS = ("better", "not_worse", "equivalent", "more_stable", "faster", "higher_rate", "slope",
              "converges_faster", "grows", "converges_grows")
_TOP = {"id", "statement", "source", "quote", "where", "measures", "regime", "design", "arms", "parts",
        "requires", "prepare", "pool", "also_compare", "regime_checks", "paper_scale"}
_PART = {"kind", "assertion", "a", "b", "measure", "x", "claimed", "margin", "toward"}
_TEXT = ("statement", "source", "quote", "where", "measures", "regime", "design", "paper_scale")


def _num(value):
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _scalars(value, where) -> list:
    values = value if isinstance(value, list) else [value]
    for v in values:
        if not isinstance(v, (str, int, float, bool)):
            raise ClaimFileError(f"{where}: needs plain values, got {shown(v)}")
    return values


def _numbers_bounded(node, where: str, key: str = "") -> None:
    """Refuses an integer too large for a float's exact range, wherever it stands in the file (keys too)."""
    if isinstance(node, dict):
        for name, value in node.items():
            _numbers_bounded(name, where, key or "a key")
            _numbers_bounded(value, where, f"{key}.{name}" if key else str(name))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            _numbers_bounded(value, where, f"{key}[{i}]")
    elif isinstance(node, int) and not isinstance(node, bool) and abs(node) > MAX_INT:
        raise ClaimFileError(f"{where}: {key or 'the file'} needs a finite number of at most 2^53 in size, got a "
                             f"{int(math.log10(abs(node))) + 1}-digit integer")


def _names_code(node, where: str) -> None:
    """Refuses anything that names code, wherever it stands in the file."""
    if isinstance(node, dict):
        for key, value in node.items():
            if str(key) in _CODE_KEYS:
                raise ClaimFileError(f"{where}: {key} names code; a claim file is data (names from normbench's "
                                     f"tables only, docs/claims.md)")
            _names_code(value, f"{where}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            _names_code(value, f"{where}[{i}]")
    elif isinstance(node, str) and _CODE_VALUE.match(node.strip()):
        raise ClaimFileError(f"{where}: {shown(node)} names code (module:attribute); a claim file is data")


def _text(doc: dict, key: str, where: str, required: bool = False) -> str:
    value = doc.get(key, "")
    if required and not value:
        raise ClaimFileError(f"{where}: {key} is required")
    if not isinstance(value, str):
        raise ClaimFileError(f"{where}: {key} must be text, got {shown(value)}")
    return " ".join(value.split())


def _present_kernels(value):
    """A model.cell_kernel selector value, or a predicate's arguments, by the kernels' present names."""
    if isinstance(value, dict):
        return {name: [cell_kernel_named(v) for v in argument] if isinstance(argument, list) else cell_kernel_named(argument)
                for name, argument in value.items()}
    return cell_kernel_named(value)


def _selector(arm: str, selector, where: str) -> dict:
    if not isinstance(selector, dict) or not selector:
        raise ClaimFileError(f"{where}: arm {arm!r} needs a selector (setting: value), got {shown(selector)}")
    built = {}
    for key, value in selector.items():
        if not isinstance(key, str) or not re.fullmatch(r"[a-z_][a-z0-9_.]*", key):
            raise ClaimFileError(f"{where}: arm {arm!r}: {shown(key)} is not a setting name")
        _setting(key, f"{where}: arm {arm!r}", "a selector")
        if key == "model.cell_kernel":  # cpp, compile: the earlier names of compiled, torch_compile, which runs' settings carry
            value = _present_kernels(value)
        if isinstance(value, dict):
            if len(value) != 1 or next(iter(value)) not in PREDICATES:
                raise ClaimFileError(f"{where}: arm {arm!r}, {key}: a predicate is one of {', '.join(PREDICATES)}, "
                                     f"got {shown(value)}")
            name, argument = next(iter(value.items()))
            built[key] = PREDICATES[name](argument, f"{where}: arm {arm!r}, {key}")
        elif isinstance(value, (str, int, float, bool)):
            built[key] = value
        else:
            raise ClaimFileError(f"{where}: arm {arm!r}, {key}: needs a value or a predicate, got {shown(value)}")
    return built


def _setting(key: str, where: str, what: str) -> None:
    """Refuses a key that cannot tell two arms' results apart: a harness key (hydra.*, paths.*) or no setting."""
    if key.split(".")[0] not in _SELECTABLE:
        raise ClaimFileError(f"{where}: {key!r} is not a result-affecting setting; {what} names one of "
                             f"{', '.join(sorted(_SELECTABLE))} (or a key under it)")
    if not _known_setting(key):
        raise ClaimFileError(f"{where}: {key!r} is not a setting of the config (conf/, "
                             f"normbench/configuration/schema.py)")


def _margin(value, where: str) -> float:
    """A part's margin: a finite number > 0 (a margin of 0 or below would make "equivalent" mean nothing)."""
    margin = _number("margin")(value, where)
    if margin <= 0:
        raise ClaimFileError(f"{where}: margin must be > 0, got {shown(value)}")
    return margin


def _known_setting(key: str) -> bool:
    """Whether ``key`` names a setting of the config (schema.py's dataclasses; a task's keys are any
    task's), or under a free-form mapping in it: ``norm.__class__`` names none."""
    parts = key.split(".")
    if len(parts) == 1:
        return key in _SELECTABLE
    top = {f.name: f for f in fields(Config)}[parts[0]]
    holders = list(TASK_CONFIGS.values()) if parts[0] == "task" else [top.default_factory()]
    for part in parts[1:]:
        if any(isinstance(h, dict) for h in holders):
            return True  # keys under a mapping are the user's own
        found = [f for h in holders if is_dataclass(h) for f in fields(h) if f.name == part]
        if not found:
            return False
        holders = [f.default_factory() if f.default_factory is not MISSING else f.default for f in found]
    return True


def _measure(value, where: str) -> Measure:
    if value in (None, "score"):
        return SCORE
    if not isinstance(value, str):
        raise ClaimFileError(f"{where}: measure must be 'score' or a recorded metric's key, got {shown(value)}")
    try:
        return recorded(value)
    except KeyError:
        raise ClaimFileError(f"{where}: measure {value!r} is neither 'score' nor a metric of "
                             f"normbench/records/metrics.py") from None


def _part(spec, arms: dict, where: str) -> PartSpec:
    if not isinstance(spec, dict):
        raise ClaimFileError(f"{where}: a part is a mapping (kind, assertion, a, b, ...), got {shown(spec)}")
    unknown = sorted(set(map(str, spec)) - _PART)
    if unknown:
        raise ClaimFileError(f"{where}: unknown key {_key_shown(unknown[0])}; a part's keys are {', '.join(sorted(_PART))}")
    kind = spec.get("kind")
    if kind not in PART_KINDS:
        raise ClaimFileError(f"{where}: kind must be one of {', '.join(PART_KINDS)}, got {shown(kind)}")
    assertion = _text(spec, "assertion", where, required=True)
    a, b = spec.get("a"), spec.get("b")
    for role, arm in (("a", a), ("b", b)):
        if arm is None and (role == "a" or kind != "slope"):
            raise ClaimFileError(f"{where}: {role} (an arm name) is required")
        if arm is not None and not isinstance(arm, str):  # YAML reads true, no, 1 as other types (hostile h15 B15)
            raise ClaimFileError(f"{where}: {role}={shown(arm)} must be an arm's name as text (quote it: "
                                 f"{role}: \"{_yaml_text(arm)}\")")
        if arm is not None and arm not in arms:
            raise ClaimFileError(f"{where}: {role}={shown(arm)} is not an arm; arms are {', '.join(arms)}")
    if a is not None and a == b:
        raise ClaimFileError(f"{where}: a and b are both {a!r}; a part compares two different arms")
    measure = _measure(spec.get("measure"), where)
    if kind == "slope":
        claimed = spec.get("claimed")
        if claimed not in (-1, 0, 1) or not isinstance(spec.get("x"), str):
            raise ClaimFileError(f"{where}: a slope needs x (an axis) and claimed (-1 shrinks, 0 flat, 1 grows)")
        margin = _margin(spec["margin"], where) if "margin" in spec else SLOPE_DELTA
        return slope(assertion, a, spec["x"], measure, claimed, margin)
    if kind in ("grows", "converges_grows"):
        if not isinstance(spec.get("x"), str) or spec.get("toward", "largest") not in ("largest", "smallest"):
            raise ClaimFileError(f"{where}: {kind} needs x (an axis) and toward largest or smallest")
        return (grows if kind == "grows" else converges_grows)(assertion, a, b, spec["x"], spec.get("toward", "largest"))
    if kind == "converges_faster":
        return converges_faster(assertion, a, b)
    learned = kind not in ("more_stable", "faster", "higher_rate")
    margin = _margin(spec["margin"], where) if "margin" in spec else None
    return PartSpec(kind, assertion, a, b, measure, margin=margin, learned=learned,
                    margin_text=f"δ = {margin:g}, fixed in the claim file" if margin is not None else "")


def _yaml_text(value) -> str:
    """How YAML wrote a value it read as a bool or a number (true, 1): what the user meant as a name."""
    return "null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def _names(doc: dict, key: str, table: dict | None, where: str) -> tuple:
    value = doc.get(key, [])
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ClaimFileError(f"{where}: {key} must be a list of names, got {shown(value)}")
    if table is not None:
        for v in values:
            if v not in table:
                raise ClaimFileError(f"{where}: {key} {v!r} is not one of {', '.join(table)}")
    return tuple(values)


def _compared(doc: dict, where: str) -> tuple:
    """also_compare: settings tied to the arms, under the selectors' rule (no harness key: hostile h15 B10)."""
    keys = _names(doc, "also_compare", None, where)
    for key in keys:
        top = key.split(".")[0]
        if top in HARNESS or top == "hydra":  # the rule a selector's key meets (_setting); an axis name is free
            raise ClaimFileError(f"{where}: also_compare {key!r} is not a result-affecting setting ({top}.* never "
                                 f"differs between arms' results)")
    return keys


# What each regime predicate reads from its arguments (predicates.py's checks and texts): {argument: (kind, whether
# required: every one its texts name is)}; a predicate not here takes none. A file gives only these, each of its kind, and every required one
# (hostile h16 N7: a count as text, a missing default, an unknown arm or argument reached the report as "The check
# itself failed", or hid the check behind a gate).
_COUNT, _POSITIVE, _ARM, _SETTING, _VALUE, _WORDS = "count", "positive", "arm", "setting", "value", "text"
REGIME_ARGUMENTS: dict[str, dict[str, tuple[str, bool]]] = {
    "bn_pool_at_most": {"n": (_COUNT, True)},
    "bn_pool_at_least": {"n": (_COUNT, True)},
    "unnormalized_grad_grows": {"growth": (_POSITIVE, True)},
    "recorded": {"column": (_WORDS, True)},
    "flow_window": {"steps": (_POSITIVE, True)},
    "arm_trains": {"arm": (_ARM, True), "share": (_POSITIVE, False)},
    "depth_spread": {"levels": (_COUNT, True), "factor": (_POSITIVE, True)},
    "pre_variance_grows": {"arm": (_ARM, False)},
    "setting_is": {"key": (_SETTING, True), "value": (_VALUE, True), "default": (_VALUE, True),
                   "paper": (_WORDS, False)},
    "deep_blocks_idle": {"arm": (_ARM, True), "share": (_POSITIVE, True)},
    "flow_vanishes": {"arm": (_ARM, True), "decades": (_POSITIVE, True)},
    "timed_as_paper": {"device": (_WORDS, True), "precision": (_WORDS, True)},
    "data_regimes": {"scarce": (_POSITIVE, True), "rich": (_POSITIVE, True)},
    "lr_top_fails": {"arm": (_ARM, True)},
    "lr_top_unstable": {"arm": (_ARM, True)},
    "quoted_domain": {"domains": (_WORDS, True), "tasks": (_WORDS, True)},
    "output_norm_moves_recurrence": {"output": (_ARM, True), "arm": (_ARM, True)},
}
_KIND_TEXT = {_COUNT: "a whole number of at least 1", _POSITIVE: "a finite number > 0", _ARM: "an arm's name",
              _SETTING: "a setting's name", _VALUE: "a setting's value", _WORDS: "a name or words"}
_ARGUMENT_TEXT = {"default": "the setting's default: the value of a run whose record leaves the key out"}


def _regime_checks(doc: dict, n_parts: int, arms: dict, where: str) -> tuple:
    """The file's regime_checks: names of predicates.PREDICATES, or {name, parts, and the predicate's arguments}."""
    value = doc.get("regime_checks", [])
    if not isinstance(value, list):
        raise ClaimFileError(f"{where}: regime_checks must be a list of predicate names or mappings, got {shown(value)}")
    built = []
    for i, entry in enumerate(value):
        entry = {"name": entry} if isinstance(entry, str) else entry
        if not isinstance(entry, dict) or entry.get("name") not in predicates.PREDICATES:
            raise ClaimFileError(f"{where}: regime_checks[{i}]: a predicate is one of {', '.join(predicates.PREDICATES)}, "
                                 f"got {shown(entry)}")
        at = f"{where}: claim {doc['id']}, regime_checks[{i}] {entry['name']}"
        parts = entry.get("parts", [])
        if not isinstance(parts, list) or not all(isinstance(p, int) and not isinstance(p, bool) and 1 <= p <= n_parts
                                                   for p in parts):
            raise ClaimFileError(f"{at}: parts must list part numbers from 1 to {n_parts}, got {shown(parts)}")
        args = {k: v for k, v in entry.items() if k not in ("name", "parts")}
        args = _regime_arguments(entry["name"], args, arms, at)
        built.append(predicates.needs(entry["name"], *parts, **args))
    return tuple(built)


def _regime_arguments(name: str, args: dict, arms: dict, at: str) -> dict:
    """Refuses a regime check's argument it does not read, one it reads that is missing, or one not of its kind;
    returns the arguments as the predicate reads them (a number YAML read as text, 1e-3, as the number)."""
    table = REGIME_ARGUMENTS.get(name, {})
    takes = f"{name} takes {', '.join(table)}" if table else f"{name} takes no argument"
    for key in args:
        if key not in table:
            raise ClaimFileError(f"{at}: unknown argument {_key_shown(key)}; {takes}")
    for key, (kind, required) in table.items():
        if key not in args:
            if required:
                raise ClaimFileError(f"{at}: needs the argument {key!r} ({_ARGUMENT_TEXT.get(key, _KIND_TEXT[kind])}); "
                                     f"{takes}")
            continue
        arg = args[key]
        if not isinstance(arg, (str, int, float)) or isinstance(arg, bool):
            raise ClaimFileError(f"{at}: {key} must be a plain value, got {shown(arg)}")
        args = {**args, key: _regime_argument(kind, key, arg, arms, at)}
    return args


def _regime_argument(kind: str, key: str, arg, arms: dict, at: str):
    """One argument of its kind, as the predicate reads it: a count (n, levels) a whole number ≥ 1, a number (growth)
    finite and > 0, an arm one of the file's, a setting one a selector may name, text (a column, a device) text."""
    if kind in (_COUNT, _POSITIVE):
        number = _number(key)(arg, at)
        if kind == _COUNT and (not isinstance(arg, int) or arg < 1):
            raise ClaimFileError(f"{at}: {key} counts {'vectors' if key == 'n' else 'depths'}: {_KIND_TEXT[kind]}, got "
                                 f"{shown(arg)}")
        if number <= 0:
            raise ClaimFileError(f"{at}: {key} must be > 0, got {shown(arg)}")
        return number if isinstance(arg, str) else arg
    if kind in (_ARM, _SETTING, _WORDS) and not isinstance(arg, str):
        raise ClaimFileError(f"{at}: {key} must be {_KIND_TEXT[kind]} written as text (quote it: {key}: \"{_yaml_text(arg)}\"), "
                             f"got {shown(arg)}")
    elif kind == _ARM and arg not in arms:
        raise ClaimFileError(f"{at}: {key}={shown(arg)} is not an arm; arms are {', '.join(arms)}")
    elif kind == _SETTING:
        _setting(arg, at, key)
    return arg


def parse(doc, where: str, taken: set[str] = frozenset()) -> Claim:
    """One claim from one YAML document (already loaded); ClaimFileError on any mistake."""
    if not isinstance(doc, dict):
        raise ClaimFileError(f"{where}: a claim file holds one mapping (id, statement, arms, parts, ...)")
    _names_code(doc, where)
    _numbers_bounded(doc, where)
    unknown = sorted(set(map(str, doc)) - _TOP)
    if unknown:
        raise ClaimFileError(f"{where}: unknown key {_key_shown(unknown[0])}; keys are {', '.join(sorted(_TOP))}")
    claim_id = doc.get("id")
    if not isinstance(claim_id, str) or not _ID.match(claim_id):
        raise ClaimFileError(f"{where}: id must be at most 60 lower-case letters, digits and _ (a letter first), got "
                             f"{shown(claim_id)}")
    if claim_id in taken:
        raise ClaimFileError(f"{where}: id {claim_id!r} is already a claim's; choose another")
    texts = {key: _text(doc, key, where, required=key in ("statement", "source")) for key in _TEXT}
    arms = doc.get("arms")
    if not isinstance(arms, dict) or len(arms) < 1:
        raise ClaimFileError(f"{where}: arms must map arm names to selectors")
    named_not = [name for name in arms if not isinstance(name, str)]
    if named_not:  # `true:` is a bool to YAML, shown back as True (hostile h15 B15); `null:` and `~:` are None (h16 N2)
        name = named_not[0]
        raise ClaimFileError(f"{where}: arm names must be text; YAML read {_yaml_text(name)!r} as "
                             f"{type(name).__name__}: quote it (\"{_yaml_text(name)}\")")
    built_arms = {name: _selector(name, sel, where) for name, sel in arms.items()}
    parts = doc.get("parts")
    if not isinstance(parts, list) or not parts:
        raise ClaimFileError(f"{where}: parts must be a non-empty list")
    built_parts = tuple(_part(p, built_arms, f"{where}: parts[{i}]") for i, p in enumerate(parts))
    requires = tuple(REQUIRES[name] for name in _names(doc, "requires", REQUIRES, where))
    prepare = doc.get("prepare")
    if prepare is not None and prepare not in HOOKS:
        raise ClaimFileError(f"{where}: prepare must be one of {', '.join(HOOKS)}, got {shown(prepare)}")
    return Claim(claim_id, texts["statement"], texts["source"], built_arms, built_parts, requires=requires,
                 pool=_names(doc, "pool", None, where), also_compare=_compared(doc, where),
                 prepare=HOOKS.get(prepare), design=texts["design"], quote=texts["quote"], where=texts["where"],
                 measures=texts["measures"], regime=texts["regime"], paper_scale=texts["paper_scale"],
                 needs=_regime_checks(doc, len(built_parts), built_arms, where))


class _TooLarge(Exception):
    pass


class _KeyTwice(Exception):
    pass


def _expanded_size(node, sizes: dict) -> int:
    """How many nodes the document has once every alias is expanded, counted without expanding any.

    An alias is the same node object as its anchor, so each distinct node is sized once (``sizes``):
    a nested-alias bomb ("billion laughs") is measured in a few hundred steps and refused, where
    walking the loaded data would never end.
    """
    if id(node) in sizes:
        if sizes[id(node)] is None:  # still being sized: an alias inside its own anchor, expanding forever
            raise _TooLarge("an alias refers to a node that contains it (a recursive anchor)")
        return sizes[id(node)]
    sizes[id(node)] = None
    if isinstance(node, yaml.SequenceNode):
        size = 1 + sum(_expanded_size(child, sizes) for child in node.value)
    elif isinstance(node, yaml.MappingNode):
        size = 1 + sum(_expanded_size(k, sizes) + _expanded_size(v, sizes) for k, v in node.value)
    else:
        size = 1
    sizes[id(node)] = size
    return size


def _duplicate_key(node, seen: set) -> str | None:
    """The first key a mapping of the document names twice, with its line ("'id' (line 3)"), or None. PyYAML keeps
    the last value silently, so a claim whose id or arm was written twice was judged under the second (hostile h31
    c12); sweep files refuse the same mistake. Each node is visited once (aliases share nodes)."""
    if id(node) in seen:
        return None
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        keys = set()
        for key, _ in node.value:
            if isinstance(key, yaml.ScalarNode):
                if key.value in keys:
                    return f"{_key_shown(key.value)} (line {key.start_mark.line + 1})"
                keys.add(key.value)
    children = ([v for pair in node.value for v in pair] if isinstance(node, yaml.MappingNode)
                else node.value if isinstance(node, yaml.SequenceNode) else [])
    return next((found for child in children if (found := _duplicate_key(child, seen))), None)


def _bounded_load(text: str):
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is not None and _expanded_size(node, {}) > MAX_NODES:
            raise _TooLarge(f"expands past {MAX_NODES} YAML nodes (anchors and aliases)")
        twice = None if node is None else _duplicate_key(node, set())
        if twice:
            raise _KeyTwice(f"names the key {twice} twice; a claim file names each key once")
        return loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()


def _key_shown(key: object) -> str:
    """An unknown key as the error names it: a name (a typo: ``stament``) is shown; anything else, such as the
    first line of a file that is no claim (a password file hard-linked in, hostile C24), is not echoed."""
    text = str(key)
    return repr(text) if re.fullmatch(r"[A-Za-z_][\w.-]{0,40}", text) else "(not a name; not shown)"


def _shown(path: Path) -> str:
    """A claim file's name as one printable line: a terminal escape in a file name is shown, not acted on."""
    text = str(path)[-200:]
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _unbuilt(error: ValueError) -> str:
    """Why PyYAML could not build a value, as one short phrase: Python's own line on a long integer ends in
    advice to a programmer (sys.set_int_max_str_digits), which was then cut mid-word (hostile h14 K10)."""
    if "integer string conversion" in str(error):
        return f"a number has more than {getattr(sys, 'get_int_max_str_digits', lambda: 4300)()} digits"
    return " ".join(str(error).split())[:120]


def read_file(path: Path, taken: set[str] = frozenset()) -> Claim:
    where = _shown(path)
    try:
        if path.is_symlink():  # a claim is a file of the folder, never what a link points at (hostile R09, S16)
            raise ClaimFileError(f"{where}: a link, not a claim file; put the file itself in the folder")
        if not path.is_file():
            raise ClaimFileError(f"{where}: not a regular file")
        if path.stat().st_size > MAX_BYTES:
            raise ClaimFileError(f"{where}: larger than {MAX_BYTES // 1024} KiB; a claim is a short file")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ClaimFileError(f"{where}: cannot be read ({getattr(error, 'strerror', None) or error})") from None
    try:
        doc = _bounded_load(text)  # no Python tags: !!python/... is an error, never an object
    except _TooLarge as error:
        raise ClaimFileError(f"{where}: {error}; a claim is a short file") from None
    except _KeyTwice as error:
        raise ClaimFileError(f"{where}: {error}") from None
    except RecursionError:  # PyYAML's parser recurses once per nesting level: 5,000 "[" overflow it
        raise ClaimFileError(f"{where}: nested deeper than YAML can be read here; a claim is a short, flat file") from None
    except ValueError as error:  # a value PyYAML cannot build: an integer past Python's 4300 digits
        raise ClaimFileError(f"{where}: not a claim file's YAML: {_unbuilt(error)}") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        at = f" (line {mark.line + 1})" if mark is not None else ""
        problem = " ".join(str(getattr(error, "problem", "") or error).split())[:120]
        raise ClaimFileError(f"{where}: not a claim file's YAML{at}: {problem}") from None
    return parse(doc, where, taken)


CLAIM_SUFFIXES = (".yaml", ".yml")  # both YAML spellings are claim files (Y05: .yml was passed over)


def read_folder(folder: Path, taken: set[str], what: str = "--claims") -> list[Claim]:
    """The claims of one folder; ``what`` names where the folder was given (--claims, or NORMBENCH_CLAIMS)."""
    folder = Path(folder).expanduser()
    too_long = name_too_long(str(folder))  # is_dir would raise ENAMETOOLONG, read as a failure to write (h16 N17)
    if too_long:
        raise ClaimFileError(f"{what} {shown(str(folder), 100)}: {too_long}")
    if not folder.is_dir():
        raise ClaimFileError(f"{what} {str(folder)[-200:]}: not a folder of claim files (*.yaml, *.yml)")
    found = []
    paths = sorted(p for suffix in CLAIM_SUFFIXES for p in folder.glob(f"*{suffix}"))
    if not paths:  # a folder of .txt or a typo'd folder would otherwise judge nothing without a word (Y05)
        raise ClaimFileError(f"{what} {str(folder)[-200:]}: holds no claim files (*.yaml, *.yml)")
    for path in paths:
        claim = read_file(path, taken | {c.id for c in found})
        found.append(claim)
    return found


def read_folders(folders, shipped: list[Claim], what: str = "--claims") -> list[Claim]:
    """Every claim in ``folders``, checked against the shipped ids and each other."""
    claims: list[Claim] = []
    for folder in folders:
        claims += read_folder(Path(folder), {c.id for c in shipped} | {c.id for c in claims}, what)
    return claims


_cache: dict[str, list[Claim]] = {}


def from_environment(shipped: list[Claim]) -> list[Claim]:
    """The claims of the folders ``NORMBENCH_CLAIMS`` names (none when unset), read once per value."""
    value = os.environ.get(CLAIMS_ENV, "")
    if value not in _cache:
        _cache[value] = read_folders([f for f in value.split(os.pathsep) if f.strip()], shipped, f"{CLAIMS_ENV} entry")
    return _cache[value]


def use_folders(folders) -> None:
    """``--claims``: read (and so check) the folders now, and name them for this process and the ones it starts."""
    from normbench.analysis.claims import SHIPPED

    if not folders:
        return
    read_folders(folders, SHIPPED)
    os.environ[CLAIMS_ENV] = os.pathsep.join(str(Path(f).expanduser().resolve()) for f in folders)
