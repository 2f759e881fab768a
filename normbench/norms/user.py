"""Your own norm: a class of yours as a norm kind, by name, in every process that runs it.

Two ways in, one descriptor each (kinds.NormKind, like a built-in kind's):

- ``normbench.register_norm("mynorm", MyNorm)`` in a script that then calls ``normbench.main(argv)``:
  the kind exists in that process only (a single run, a sweep on the basic launcher, a report).
- an installed package that declares the entry point group ``normbench.norms``
  (``mynorm = "mypackage.norms:MyNorm"`` under ``[project.entry-points."normbench.norms"]``): read
  from the package metadata when kinds.py is imported (installed.py), so it reaches every process normbench starts
  (joblib workers, study rounds, resume, ``evaluate``, ``rerun``). Reading the metadata imports
  nothing; the class is imported when a layer of it is first built.

Never from a sweep file or a record: a name in a config only chooses among the kinds registered
here, so files stay data.

The class is built as ``cls(dim)`` (an ``nn.Module`` over the last dimension of its input); its
settings are its constructor's defaults, so a variant is another name (the name is what a run's
identity holds). It is wrapped in ``UserNorm`` (layers.py), which gives it the ``norm(x, step)``
call every consumer makes and marks its parameters as norm parameters (no weight decay, as for
every kind's gain and bias: ``optim.norm_weight_decay``).

Torch-free until a layer is built (the record contract and the report import it through the config).
"""

from __future__ import annotations

import importlib
import sys

from normbench.checks import ConfigError
from normbench.norms import kinds
from normbench.norms.installed import ENTRY, GROUP, NAME, REGISTERED

_registered: dict[str, type] = {}      # name -> class, from register_norm (this process only)


def check_name(name: object) -> str:
    if not isinstance(name, str) or not NAME.match(name):
        raise ConfigError(f"a norm name must be lower-case letters, digits and _ (starting with a letter, at most "
                          f"40 characters), got {name!r}")
    return name


def register_norm(name: str, cls: type) -> None:
    """Make ``cls`` the norm kind ``name`` (``norm=NAME`` or ``norm.kind=NAME``) in this process.

    ``cls`` is an ``nn.Module`` subclass built as ``cls(dim)``. Registering the same class under
    the same name again is a no-op; another class under a taken name is refused (ConfigError)."""
    from torch import nn

    check_name(name)
    if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
        raise ConfigError(f"register_norm({name!r}, ...): needs an nn.Module subclass, built as cls(dim); got {cls!r}")
    if name in kinds.kind_names():
        if _registered.get(name) is cls:
            return
        raise ConfigError(f"register_norm: the norm kind {name!r} is already registered "
                          f"({kinds.kind_of(name).classes['native']}); choose another name")
    _registered[name] = cls
    kinds.register(kinds.user_kind(name, REGISTERED + name))
    _offer_to_hydra(name)


def _offer_to_hydra(name: str) -> None:
    """``norm=NAME`` as a choice of the norm group, once Hydra's side of the schema is loaded."""
    config = sys.modules.get("normbench.configuration.config")
    if config is not None:
        config.offer_norm_kind(name)


def sources() -> dict[str, str]:
    """{name: where its class comes from} of every user kind in this process (a record names them)."""
    found = {}
    for name in kinds.kind_names():
        ref = kinds.kind_of(name).classes["native"]
        if ref.startswith(ENTRY):
            found[name] = ref.removeprefix(ENTRY)
        elif ref.startswith(REGISTERED):
            cls = _registered.get(name)
            found[name] = f"{cls.__module__}:{cls.__qualname__}" if cls is not None else "unknown"
    return found


def described(name: str, reference: str) -> str:
    """A user's norm as a line names it: its name and where its class comes from."""
    if reference.startswith(ENTRY):
        return f"{name} ({reference.removeprefix(ENTRY)}, entry point group {GROUP})"
    return f"{name} (normbench.register_norm)"


def load(reference: str) -> type:
    """The user's class for a user kind's class reference (an nn.Module subclass; ConfigError otherwise).
    layers.py wraps it in UserNorm."""
    from torch import nn

    if reference.startswith(REGISTERED):
        found = _registered[reference.removeprefix(REGISTERED)]
    elif reference.startswith(ENTRY):
        value = reference.removeprefix(ENTRY)
        module_name, _, attr = value.partition(":")
        try:
            found = importlib.import_module(module_name)
            for part in attr.split("."):
                found = getattr(found, part)
        except (ImportError, AttributeError) as error:
            raise ConfigError(f"the norm {value} (entry point group {GROUP}) cannot be loaded: {error}") from None
        except SystemExit as error:  # sys.exit at the module's import: it failed to load, normbench goes on
            raise ConfigError(f"the norm {value} (entry point group {GROUP}) cannot be loaded: its import called "
                              f"sys.exit({repr(error.code)[:100]})") from None
    else:
        raise KeyError(reference)
    if not (isinstance(found, type) and issubclass(found, nn.Module)):
        raise ConfigError(f"the norm {reference} is not an nn.Module subclass")
    return found
