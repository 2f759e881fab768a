"""Your own norm: a class of yours as a norm kind, by name, in every process that runs it.

Two ways in, one descriptor each (kinds.NormKind, like a built-in kind's):

- ``normbench.register_norm("mynorm", MyNorm)`` in a script that then calls ``normbench.main(argv)``:
  the kind exists in that process only (a single run, a sweep on the basic launcher, a report).
- an installed package that declares the entry point group ``normbench.norms``
  (``mynorm = "mypackage.norms:MyNorm"`` under ``[project.entry-points."normbench.norms"]``): read
  from the package metadata when kinds.py is imported, so it reaches every process normbench starts
  (joblib workers, study rounds, resume, ``evaluate``, ``rerun``). Reading the metadata imports
  nothing; the class is imported when a layer of it is first built.

Never from a sweep file or a record: a name in a config only chooses among the kinds registered
here, so files stay data.

The class is built as ``cls(dim)`` (an ``nn.Module`` over the last dimension of its input); its
settings are its constructor's defaults, so a variant is another name (the name is what a run's
identity holds). It is wrapped in ``UserNorm`` (layers.py), which gives it the ``norm(x, step)``
call every consumer makes and marks its parameters as norm parameters (no weight decay, as for
every kind's gain and bias: ``optim.norm_weight_decay``).

Torch-free until a layer is built (kinds.py stands on it).
"""

from __future__ import annotations

import importlib
import re
import sys
from importlib import metadata

from normbench.checks import ConfigError

GROUP = "normbench.norms"              # the entry point group an installed package declares
REGISTERED, ENTRY = "registered:", "entry:"  # the class references a user kind's descriptor holds
_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}$")
_registered: dict[str, type] = {}      # name -> class, from register_norm (this process only)
_built: dict[str, type] = {}           # class reference -> its UserNorm subclass


def check_name(name: object) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError(f"a norm name must be lower-case letters, digits and _ (starting with a letter, at most "
                          f"40 characters), got {name!r}")
    return name


def _descriptor(name: str, reference: str):
    from normbench.norms.kinds import NormKind

    # no statistics of normbench's to guard (eps), no gain or bias of normbench's: the class owns its
    # parameters, so norm.eps/gamma_init/affine/gain_offset cannot change a run of it (kinds.inert_settings)
    return NormKind(name, {"native": reference, "reference": reference}, eps=False, gain="none", bias=False,
                    timed=False, user=True)


def register_norm(name: str, cls: type) -> None:
    """Make ``cls`` the norm kind ``name`` (``norm=NAME`` or ``norm.kind=NAME``) in this process.

    ``cls`` is an ``nn.Module`` subclass built as ``cls(dim)``. Registering the same class under
    the same name again is a no-op; another class under a taken name is refused (ConfigError)."""
    from torch import nn

    from normbench.norms import kinds

    check_name(name)
    if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
        raise ConfigError(f"register_norm({name!r}, ...): needs an nn.Module subclass, built as cls(dim); got {cls!r}")
    if name in kinds.kind_names():
        if _registered.get(name) is cls:
            return
        raise ConfigError(f"register_norm: the norm kind {name!r} is already registered "
                          f"({kinds.kind_of(name).classes['native']}); choose another name")
    _registered[name] = cls
    kinds.register(_descriptor(name, REGISTERED + name))
    _offer_to_hydra(name)


def _offer_to_hydra(name: str) -> None:
    """``norm=NAME`` as a choice of the norm group, once Hydra's side of the schema is loaded."""
    config = sys.modules.get("normbench.configuration.config")
    if config is not None:
        config.offer_norm_kind(name)


def installed() -> list[tuple[str, str]]:
    """(name, "module:Class") of every norm an installed package declares, from the metadata alone."""
    try:
        points = metadata.entry_points(group=GROUP)
    except Exception:  # noqa: BLE001 - a broken distribution's metadata must not stop normbench
        return []
    return sorted({(point.name, point.value) for point in points})


def register_installed() -> list[str]:
    """Registers every installed entry point whose name is free; says on stderr, once, which were
    left out and why (a package's mistake never stops normbench). Returns the names registered."""
    from normbench.norms import kinds

    done, skipped = [], []
    for name, value in installed():
        if not _NAME.match(name) or ":" not in value:
            skipped.append(f"{name} ({value}): not a plain name and module:Class")
        elif name in kinds.kind_names():
            if kinds.kind_of(name).classes["native"] != ENTRY + value:
                skipped.append(f"{name} ({value}): the name is taken")
        else:
            kinds.register(_descriptor(name, ENTRY + value))
            done.append(name)
    if skipped:
        print(f"normbench: entry points of group {GROUP} left out: {'; '.join(skipped)}", file=sys.stderr)
    return done


def sources() -> dict[str, str]:
    """{name: where its class comes from} of every user kind in this process (a record names them)."""
    from normbench.norms import kinds

    found = {}
    for name in kinds.kind_names():
        ref = kinds.kind_of(name).classes["native"]
        if ref.startswith(ENTRY):
            found[name] = ref.removeprefix(ENTRY)
        elif ref.startswith(REGISTERED):
            cls = _registered.get(name)
            found[name] = f"{cls.__module__}:{cls.__qualname__}" if cls is not None else "unknown"
    return found


def user_class(reference: str) -> type:
    """The layer class for a user kind's class reference: its class wrapped in UserNorm."""
    if reference not in _built:
        _built[reference] = _wrap(reference, _load(reference))
    return _built[reference]


def _load(reference: str) -> type:
    if reference.startswith(REGISTERED):
        return _registered[reference.removeprefix(REGISTERED)]
    if not reference.startswith(ENTRY):
        raise KeyError(reference)
    value = reference.removeprefix(ENTRY)
    module_name, _, attr = value.partition(":")
    try:
        found = importlib.import_module(module_name)
        for part in attr.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError) as error:
        raise ConfigError(f"the norm {value} (entry point group {GROUP}) cannot be loaded: {error}") from None
    return found


def _wrap(reference: str, cls: type) -> type:
    from torch import nn

    from normbench.norms.layers import UserNorm

    if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
        raise ConfigError(f"the norm {reference} is not an nn.Module subclass")
    return type(f"UserNorm_{cls.__name__}", (UserNorm,), {"inner_class": cls})
