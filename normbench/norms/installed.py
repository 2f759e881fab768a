"""The norms installed packages declare: the entry point group ``normbench.norms``, read from the package
metadata alone (nothing is imported), and the class references a user kind's descriptor holds.

kinds.py registers a descriptor for each (so every process that imports the kinds has them: joblib
workers, study rounds, rerun, evaluate); user.py resolves a reference to its class when a layer is built.
Imports nothing of normbench: kinds.py and user.py both stand on it.

The metadata is read here, not with ``importlib.metadata.entry_points()``: that opens every distribution's
``entry_points.txt`` with a blocking read (a FIFO there hangs the process) and stops at the first file that
is not UTF-8. Here a file that is not a small regular UTF-8 file is left out, with its path, and the others
are read.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

GROUP = "normbench.norms"                    # the entry point group an installed package declares
REGISTERED, ENTRY = "registered:", "entry:"  # class references: register_norm's (this process), an entry point's
NAME = re.compile(r"[a-z][a-z0-9_]{0,39}$")  # a user kind's name
MAX_BYTES = 1 << 20                          # an entry_points.txt is a few lines; a larger one is not read
_METADATA = (".dist-info", ".egg-info")


@dataclass(frozen=True)
class Declared:
    name: str     # the entry point's name: the norm kind's
    value: str    # "module:Class"
    package: str  # the metadata folder that declares it (``mypkg-1.0.dist-info``)


def _metadata_folders() -> list[Path]:
    """Every distribution's metadata folder on sys.path, the first of each name (as importlib.metadata
    sees them: an earlier path entry shadows a later copy of the same distribution)."""
    found, seen = [], set()
    for entry in sys.path:
        try:
            names = sorted(e.name for e in os.scandir(entry or ".") if e.name.lower().endswith(_METADATA)
                           and e.is_dir())
        except OSError:  # not a folder (a zip, a missing entry), or unreadable
            continue
        for folder in names:
            key = re.sub(r"[-_.]+", "_", folder.rpartition(".")[0].partition("-")[0]).lower()
            if key not in seen:
                seen.add(key)
                found.append(Path(os.path.abspath(entry or "."), folder))
    return found


def _read(path: Path) -> str | None:
    """The text of a metadata file, or None when there is none; ValueError (saying why) when it cannot be
    read without blocking or is not small UTF-8 text."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise ValueError("not a regular file")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise ValueError(error.strerror or str(error)) from None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):  # replaced since the stat above
            raise ValueError("not a regular file")
        data = file.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise ValueError(f"larger than {MAX_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None


def _group_lines(text: str) -> list[str]:
    """The lines of the group's section of an entry_points.txt (its ini-like format, as importlib.metadata
    reads it: ``[group]`` headers, ``#`` comments)."""
    lines, section = [], None
    for line in map(str.strip, text.splitlines()):
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line.strip("[]").strip()
        elif section == GROUP:
            lines.append(line)
    return lines


def declared() -> tuple[list[Declared], list[str]]:
    """Every norm an installed package declares, and the entry_points.txt files left unread (each with why)."""
    found, unread = [], []
    for folder in _metadata_folders():
        path = folder / "entry_points.txt"
        try:
            text = _read(path)
        except ValueError as why:
            unread.append(f"{path}: {why}")
            continue
        for line in _group_lines(text or ""):
            name, _, value = (part.strip() for part in line.partition("="))  # no "=": a value usable() refuses
            found.append(Declared(name, value, folder.name))
    return found, unread


def usable(taken: dict[str, str]) -> list[tuple[str, str]]:
    """The declared norms to register, as (name, class reference), given {name: reference} of the kinds
    registered already; says on stderr, in one line, which were left out and why (a package's mistake never
    stops normbench, never replaces a built-in kind, and a name two packages declare is neither's)."""
    points, unread = declared()
    if unread:
        # torch reads every distribution's entry points at import (its device-backend plugins) with a
        # blocking, UTF-8-only read: it would hang or fail on the same file
        os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    skipped = [f"{problem} (torch's device-backend plugins are not loaded)" for problem in unread]
    by_name: dict[str, dict[str, str]] = {}  # name -> {value: the package that declares it}
    for point in points:
        by_name.setdefault(point.name, {}).setdefault(point.value, point.package)
    found = []
    for name, values in sorted(by_name.items()):
        (value, package), *others = sorted(values.items())
        if others:
            named = ", ".join(f"{v} in {p}" for v, p in sorted(values.items()))
            skipped.append(f"{name} ({named}): declared by more than one package")
        elif not NAME.match(name) or ":" not in value:
            skipped.append(f"{name} ({value} in {package}): not a plain name and module:Class")
        elif name in taken:
            if taken[name] != ENTRY + value:
                skipped.append(f"{name} ({value} in {package}): the name is taken")
        else:
            found.append((name, ENTRY + value))
    if skipped:
        print(f"normbench: entry points of group {GROUP} left out: {'; '.join(skipped)}", file=sys.stderr)
    return found
