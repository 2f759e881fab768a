"""The norms installed packages declare: the entry point group ``normbench.norms``, read from the package
metadata alone (nothing is imported), and the class references a user kind's descriptor holds.

kinds.py registers a descriptor for each (so every process that imports the kinds has them: joblib
workers, study rounds, rerun, evaluate); user.py resolves a reference to its class when a layer is built.
Imports nothing of normbench: kinds.py and user.py both stand on it.
"""

from __future__ import annotations

import re
import sys
from importlib import metadata

GROUP = "normbench.norms"                    # the entry point group an installed package declares
REGISTERED, ENTRY = "registered:", "entry:"  # class references: register_norm's (this process), an entry point's
NAME = re.compile(r"[a-z][a-z0-9_]{0,39}$")  # a user kind's name


def declared() -> list[tuple[str, str]]:
    """(name, "module:Class") of every norm an installed package declares."""
    try:
        points = metadata.entry_points(group=GROUP)
    except Exception:  # noqa: BLE001 - a broken distribution's metadata must not stop normbench
        return []
    return sorted({(point.name, point.value) for point in points})


def usable(taken: dict[str, str]) -> list[tuple[str, str]]:
    """The declared norms to register, as (name, class reference), given {name: reference} of the kinds
    registered already; says on stderr, once, which were left out and why (a package's mistake never
    stops normbench, and never replaces a built-in kind)."""
    found, skipped = [], []
    for name, value in declared():
        if not NAME.match(name) or ":" not in value:
            skipped.append(f"{name} ({value}): not a plain name and module:Class")
        elif name in taken:
            if taken[name] != ENTRY + value:
                skipped.append(f"{name} ({value}): the name is taken")
        else:
            found.append((name, ENTRY + value))
    if skipped:
        print(f"normbench: entry points of group {GROUP} left out: {'; '.join(skipped)}", file=sys.stderr)
    return found
