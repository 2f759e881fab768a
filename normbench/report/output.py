"""Where the report writes: it replaces only files it wrote itself, and deletes nothing else.

The output directory is often shared: a sweep directory (the report is rebuilt there on every
resume), or a paper's folder next to the user's own figures. So every report is rendered first
into a fresh staging folder inside the output directory, then moved into place, and the files it
placed are listed with their sha256 in MANIFEST. A later report may replace or delete a file only
when the manifest lists it and its content is still the one written; anything else in the way
(a user's report.md, a figure they edited, a folder named runs.csv) stops the report before it
has touched the directory, with one line naming the file.

Tools that write a few named files straight into a folder of the user's (the benchmarks' --out, page_check's
screenshots) follow the same rule with `OwnFiles`: their own manifest, checked before any work, and each
file placed atomically and listed as it is written.

A report killed mid-way (kill -9, a sweep killed during its end-of-sweep report) leaves its staging
folder behind; the next report into that folder removes it. A build holds a lock on its own staging
folder while it runs (it dies with its process), so only the folders of dead builds are removed,
never those of a report running beside this one.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import tempfile
import time
from pathlib import Path

from filelock import lock_descriptor  # flock on POSIX, LockFileEx on Windows: a lock dies with its process

from normbench.records.record import Unreadable, read_json_file, write_file

MANIFEST = ".normbench-report.json"
STAGING = ".normbench-report-staging-"
STAGING_GRACE_S = 2.0  # a staging folder this young may be a running build's, made but not yet locked
MAX_MANIFEST_BYTES = 4 << 20
REPORT_FILES_FORMAT = "normbench.report-files/1"


class OutputError(Exception):
    """The report cannot be written where asked; the message is one line and names the path."""


def inside(folder: Path, path: Path | str) -> bool:
    """Whether ``path`` (relative to ``folder``, or absolute) lies strictly inside ``folder`` once
    ``..`` and links are resolved: the one test for every path the suite writes or deletes."""
    root = Path(os.path.realpath(folder))
    target = Path(os.path.realpath(Path(folder) / path))
    return target != root and target.is_relative_to(root)


# A spreadsheet reads a cell that starts with one of these as a formula (=HYPERLINK(...), +cmd|...);
# OWASP's advice: prefix such a text cell with a quote, so it is shown as the text it is.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(frame):
    """``frame`` with every text cell that a spreadsheet would run as a formula prefixed with "'".
    Numbers stay numbers (a negative number is a number, not text)."""
    import pandas as pd

    def cell(value):
        return "'" + value if isinstance(value, str) and value.startswith(_FORMULA_START) else value
    safe = frame.copy()
    for column in safe.columns:
        if not pd.api.types.is_numeric_dtype(safe[column]):  # object or str: may hold text
            safe[column] = safe[column].map(cell)
    return safe.rename(columns=cell)  # a header is a cell too (an axis named by a record)


def _plain_relative(rel: str) -> bool:
    """A manifest entry names a file below the report folder by a plain relative path."""
    parts = Path(rel).parts
    return bool(parts) and not Path(rel).is_absolute() and ".." not in parts and "\0" not in rel


class ReportOutput:
    """A staging folder to render into (`staging`), and `commit` to move what it holds into `out`.

    Use as a context manager: the staging folder is removed on the way out, committed or not.
    """

    def __init__(self, out: Path):
        self.out = Path(out)
        self.staging: Path | None = None
        self._lock: int | None = None

    def __enter__(self) -> "ReportOutput":
        try:
            self.out.mkdir(parents=True, exist_ok=True)
            self.staging = Path(tempfile.mkdtemp(prefix=STAGING, dir=self.out))
            self._lock = _locked(self.staging)
        except FileExistsError:
            raise OutputError(f"cannot write the report to {self.out}: it exists and is not a folder") from None
        except OSError as error:
            raise OutputError(f"cannot write the report to {self.out}: {error.strerror or error}") from None
        remove_stale_staging(self.out)
        return self

    def __exit__(self, *exc_info) -> None:
        if self.staging is not None:
            shutil.rmtree(self.staging, ignore_errors=True)
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    def commit(self) -> None:
        """Moves every staged file into `out`, after checking that each one it replaces is its own."""
        assert self.staging is not None, "commit() outside the with block"
        written = self._read_manifest()
        staged = sorted(_relative_files(self.staging))
        conflicts = [rel for rel in staged if not self._replaceable(rel, written)]
        blocked = next(filter(None, (in_the_way(self.out, rel) for rel in conflicts)), None)
        if blocked is not None:  # not the files under it: a link's target may hold none of them (hostile h14 V09)
            what = "is a symbolic link" if blocked.is_symlink() else "exists and is not a folder"
            raise OutputError(f"{blocked} {what}, where the report puts a folder of its own; move it away or "
                              f"choose another --out (nothing was written)")
        if conflicts:
            first = self.out / conflicts[0]
            more = f" (and {len(conflicts) - 1} more)" if len(conflicts) > 1 else ""
            raise OutputError(f"{first} exists and was not written by a normbench report{more}; move it "
                              f"away or choose another --out (nothing was written)")
        hashes = {rel: _sha256(self.staging / rel) for rel in staged}
        for rel in staged:
            if not inside(self.out, rel):  # a staged name is the report's own, but a link may lie on the way
                raise OutputError(f"{self.out / rel} would be written outside {self.out} (a link on the way); "
                                  f"nothing was written")
            (self.out / rel).parent.mkdir(parents=True, exist_ok=True)
            os.replace(self.staging / rel, self.out / rel)
        for rel in sorted(set(written) - set(staged)):  # e.g. a figure this report no longer draws
            if inside(self.out, rel) and _holds(self.out / rel, written[rel]):
                (self.out / rel).unlink()
        manifest = {"schema": REPORT_FILES_FORMAT, "files": hashes}
        write_file(self.out / MANIFEST, json.dumps(manifest, indent=1) + "\n")  # the one writer: atomic, fsynced

    def _read_manifest(self) -> dict[str, str]:
        return read_manifest(self.out / MANIFEST, REPORT_FILES_FORMAT, "a normbench report manifest")

    def _replaceable(self, rel: str, written: dict[str, str]) -> bool:
        return replaceable(self.out, rel, written)


def read_manifest(path: Path, schema: str, what: str) -> dict[str, str]:
    """The files a manifest at ``path`` lists (relative path: sha256); {} when there is none. Raises
    OutputError when ``path`` is a link, not a regular file, or not ``what`` (a manifest of ``schema``)."""
    out = path.parent
    if not os.path.lexists(path):
        return {}
    problem = f"{path} is not {what}; move it away or choose another folder"
    if not _regular(path):
        raise OutputError(problem)
    try:
        manifest = read_json_file(path, MAX_MANIFEST_BYTES)
    except Unreadable:
        raise OutputError(problem) from None
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, dict) or manifest.get("schema") != schema or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
        raise OutputError(problem)
    # An entry outside the folder (../x, /x) is not the writer's file, whatever its checksum:
    # it is never replaced or deleted, only forgotten.
    return {rel: digest for rel, digest in files.items() if _plain_relative(rel) and inside(out, rel)}


def in_the_way(out: Path, rel: str) -> Path | None:
    """The first folder on ``rel``'s way inside ``out`` (e.g. figures/) that is a link or not a folder, or None:
    each must be a real folder, or nothing yet."""
    for parent in reversed(Path(rel).parents[:-1]):
        folder = out / parent
        if os.path.lexists(folder) and (folder.is_symlink() or not folder.is_dir()):
            return folder
    return None


def replaceable(out: Path, rel: str, written: dict[str, str]) -> bool:
    """Free to write: nothing there yet, or the very file an earlier writer listed in ``written``, unchanged."""
    target = out / rel
    if in_the_way(out, rel) is not None:
        return False
    if not os.path.lexists(target):
        return True
    return rel in written and _holds(target, written[rel])


def folder_problem(out: Path) -> str | None:
    """Why nothing can be written into ``out`` as a folder of its own, or None: ``out`` is a link (what is
    written would land wherever it points), or it, or the nearest of its parents that exists, is not a folder."""
    out = Path(out)
    if out.is_symlink():
        return f"{out} is a link; files are written only into a folder itself: name the folder it points to, or another"
    for folder in (out, *out.parents):
        if os.path.lexists(folder):
            return None if folder.is_dir() else f"{folder} exists and is not a folder"
    return None


class OwnFiles:
    """A few named files one tool writes straight into a folder it may share with its user's own files (a
    benchmark's --out, a folder of screenshots): the report's rule, without its staging folder. `refusal`
    says, before any work, which file in the way is not the tool's; `write` places one file atomically
    (record.write_file: a link of that name is replaced, never written through) and lists it with its
    sha256 in the folder's ``manifest``, so that a later run replaces it only while it holds what was written."""

    def __init__(self, out: Path, manifest: str, schema: str, tool: str):
        self.out, self.manifest, self.schema, self.tool = Path(out), manifest, schema, tool

    def _written(self) -> dict[str, str]:
        return read_manifest(self.out / self.manifest, self.schema, f"a manifest of {self.tool}'s files")

    def refusal(self, names) -> str | None:
        """One line on the first of ``names`` (files of ``out``) that may not be written, or None."""
        problem = folder_problem(self.out)
        if problem or not os.path.lexists(self.out):
            return problem
        try:
            written = self._written()
        except OutputError as error:
            return str(error)
        for name in names:
            if not replaceable(self.out, name, written):
                path = self.out / name
                what = ("is not a regular file (a link, a folder or a FIFO)" if os.path.lexists(path)
                        and not _regular(path) else f"exists and was not written by {self.tool} (or was changed since)")
                return f"{path} {what}; move it away or choose another folder"
        return None

    def write(self, name: str, data: str | bytes) -> Path:
        """``data`` as ``out/name``; raises OutputError (one line) when refusal() refuses it now."""
        problem = self.refusal([name])
        if problem:
            raise OutputError(problem)
        try:
            self.out.mkdir(parents=True, exist_ok=True)
            folder, written = self.out, self._written()
            raw = data.encode("utf-8") if isinstance(data, str) else data  # the very bytes the checksum is of
            write_file(folder / name, raw)
            written[name] = hashlib.sha256(raw).hexdigest()
            write_file(folder / self.manifest, json.dumps({"schema": self.schema, "files": written}, indent=1) + "\n")
        except OSError as error:
            raise OutputError(f"cannot write {self.out / name}: {error.strerror or error}") from None
        return folder / name


_DIRECTORY = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _locked(folder: Path) -> int | None:
    """An exclusive lock on ``folder`` (its descriptor), or None when a live process holds one."""
    fd = os.open(folder, _DIRECTORY)
    try:
        held = lock_descriptor(fd, blocking=False)
    except OSError:  # a folder this system cannot lock: treated as held, so it is left alone
        held = False
    if not held:
        os.close(fd)
        return None
    return fd


def remove_stale_staging(out: Path) -> list[Path]:
    """Removes the staging folders in ``out`` that no live build holds (a killed report's); returns them.
    Only real folders of that name, never a link: what is removed lies inside ``out``."""
    removed = []
    try:
        entries = [e for e in os.scandir(out) if e.name.startswith(STAGING) and e.is_dir(follow_symlinks=False)]
    except OSError:
        return removed
    for entry in entries:
        try:
            if time.time() - entry.stat(follow_symlinks=False).st_mtime < STAGING_GRACE_S:
                continue
            fd = _locked(Path(entry.path))
        except OSError:  # gone already, or not ours to open
            continue
        if fd is None:  # a build running beside this one
            continue
        try:
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(Path(entry.path))
        finally:
            os.close(fd)
    return removed


def _relative_files(root: Path) -> list[str]:
    return [Path(folder, name).relative_to(root).as_posix()
            for folder, _, names in os.walk(root) for name in names]


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _holds(path: Path, digest: str) -> bool:
    """A regular file (not a link) whose content is the one `digest` names."""
    return _regular(path) and _sha256(path) == digest


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()
