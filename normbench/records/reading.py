"""Finding run records in folders and reading their curves (docs/run-record.md). The report's only input.

A sweep can be half-written when the report runs: a job still running, a job killed mid-write, a
directory from another tool. None of that may stop the report, so every record is either read or
set aside with a one-phrase reason, and the caller decides how to say so.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import stat
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

import numpy as np

from normbench.records.record import SUMMARY, RunRecord, SetAside, read_summary

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Records:
    runs: list[RunRecord]  # includes records left "running"; the caller marks them incomplete
    set_aside: list[SetAside]
    missing_paths: list[Path]  # command-line paths that do not exist


def find_records(paths: Iterable[Path]) -> Records:
    """Every summary.json under each path (a sweep directory or a single run directory)."""
    runs: list[RunRecord] = []
    set_aside: list[SetAside] = []
    missing: list[Path] = []
    seen: set[Path] = set()
    for root in paths:
        root = Path(root)
        if not os.path.lexists(root):
            missing.append(root)
            continue
        if not utf8_name(root):  # not looked in: every record under it would be set aside for the same reason
            set_aside.append(SetAside(escaped(root if root.name == SUMMARY else root / SUMMARY), NOT_UTF8))
            continue
        candidates, unlisted = ([root], []) if root.name == SUMMARY else walk_records(root)
        set_aside += unlisted
        for summary_path in candidates:
            resolved = summary_path.resolve()
            if resolved in seen:
                continue
            seen.add(resolved)
            record = read_summary(summary_path)
            if isinstance(record, RunRecord) and (why := oversized_metrics(record.run_dir)):
                record = SetAside(summary_path, why)
            if isinstance(record, SetAside):
                set_aside.append(record)
            else:
                runs.append(record)
    return Records(runs, set_aside, missing)


# The most records one report reads. A report of 20,000 runs takes minutes on 2 cores and its page is
# already past reading; a set larger than this is refused in one line before anything is read, instead
# of silence for many minutes (100,000 records: no answer in 400 s). Report one sweep or study at a time.
MAX_REPORT_RECORDS = 20_000


def count_records(paths: Iterable[Path], limit: int = MAX_REPORT_RECORDS) -> int:
    """How many summary.json files lie under ``paths``, counted without reading them, stopping at
    ``limit + 1`` (so a huge tree costs the walk to its limit, not to its end)."""
    found = 0
    for root in map(Path, paths):
        if root.name == SUMMARY:
            found += 1
            continue
        for _, _, files in os.walk(root):
            found += SUMMARY in files
            if found > limit:
                return found
    return found


def record_paths(folder: Path) -> list[Path]:
    """Every summary.json under ``folder``, sorted (walk_records; the folders it passes over are not named)."""
    return walk_records(folder)[0]


NOT_UTF8 = "the folder name is not valid UTF-8"


def utf8_name(path: Path) -> bool:
    """Whether ``path`` is valid UTF-8. A name that is not (bytes Python keeps as lone surrogates) cannot
    be written to the report's tables or files (pandas, pyarrow, a UTF-8 file refuse it), so its records
    are set aside under the name escaped, rather than stopping every command."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def escaped(path: Path) -> Path:
    """``path`` with each byte that is not UTF-8 written as \\xNN: a name that can be shown and written anywhere."""
    return Path(os.fsencode(path).decode("utf-8", errors="backslashreplace"))


def walk_records(folder: Path) -> tuple[list[Path], list[SetAside]]:
    """Every summary.json under ``folder``, sorted, and each folder under it not looked in, set aside.

    A folder that cannot be listed, and a symbolic link to a folder (never followed: it may point
    anywhere, even to a record already counted), come back as SetAside of the summary.json they
    would hold, so a record lost to either is counted and named as an unreadable one is. So does a
    folder whose name is not valid UTF-8 (utf8_name).
    """
    found: list[Path] = []
    passed_over: list[SetAside] = []

    def unlisted(error: OSError) -> None:
        where = Path(error.filename if error.filename is not None else folder)
        passed_over.append(SetAside(where / SUMMARY, f"the folder cannot be listed ({error.strerror or error})"))

    for top, folders, files in os.walk(folder, onerror=unlisted):
        passed_over += [SetAside(Path(top, name, SUMMARY), "the folder is a symbolic link")
                        for name in folders if name != SUMMARY and os.path.islink(os.path.join(top, name))]
        if not utf8_name(Path(top)):
            passed_over.append(SetAside(escaped(Path(top, SUMMARY)), NOT_UTF8))
            folders[:] = []  # one line for the folder, none for each folder under it
        elif SUMMARY in files or SUMMARY in folders:  # a folder so named is read and set aside as one
            found.append(Path(top, SUMMARY))
    return sorted(found), sorted(passed_over, key=lambda aside: aside.path)


# The most bytes of one run's metrics.jsonl the curves read. The runner writes ~150 bytes a train or
# eval line and a few kB a probe line, so a long run's file is some MB; a file past this cap (a sparse
# file can claim terabytes, read at ~160 MB/s) would hold up the report for minutes, so its run is set
# aside instead.
MAX_METRICS_BYTES = 1 << 30
METRICS = "metrics.jsonl"


def oversized_metrics(run_dir: Path) -> str | None:
    """Why the run's metrics.jsonl is not read (it is larger than MAX_METRICS_BYTES), or None."""
    try:
        info = os.lstat(Path(run_dir) / METRICS)
    except OSError:
        return None  # missing or unreadable: the curve reader skips it
    if stat.S_ISREG(info.st_mode) and info.st_size > MAX_METRICS_BYTES:
        return f"{METRICS} is larger than {MAX_METRICS_BYTES >> 20} MiB"
    return None


@contextlib.contextmanager
def quiet_numerics():
    """numpy's and pandas' RuntimeWarnings (a mean of no values, NaN in a comparison) off stderr:
    missing and non-finite measurements are results here, and every table says how it treats them."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


# Probe lines carry per-layer dicts and are the bulk of a metrics.jsonl; the curves never need
# them, so they are recognised by substring and never parsed.
_PROBE_MARKERS = (b'"kind": "probe"', b'"kind":"probe"')
CURVE_COLUMNS = ["run_dir", "kind", "step", "time_s", "val_metric", "val_loss", "loss", "grad_norm"]
VALUE_COLUMNS = ["val_metric", "val_loss", "loss", "grad_norm"]
MAX_LINE_BYTES = 1 << 20  # a train or eval line is ~150 bytes; a longer line is not one of them
MAX_STEP = 2**53  # steps are ints; beyond this a float cannot tell neighbouring steps apart
# The runner logs float32 tensors' values (and NaN or inf when a run diverges). A finite number a
# float32 cannot hold did not come from it, and kept, it overflows the band and axis arithmetic.
_FLOAT32_MAX = float(np.finfo(np.float32).max)
_FLOAT32_TINY = float(np.finfo(np.float32).smallest_subnormal)


def read_curves(run_dirs: Iterable[Path]) -> pd.DataFrame:
    """The train and eval lines of each run's metrics.jsonl, long format (CURVE_COLUMNS).

    A line that does not parse (the runner flushes per line, so a killed run can leave the last
    one cut short), is not an object, or has no valid step (an int from 0 to 2**53) is skipped;
    so is a missing file, one that is not a regular file, and one larger than MAX_METRICS_BYTES
    (find_records sets its run aside with that reason, oversized_metrics). A value that is not a number, or a
    finite number outside float32's range, reads as missing (NaN); NaN and inf are kept, as the
    runner writes them for a diverged run, and `time_s` must be finite and >= 0. Within curves_kept, each
    version of a file is parsed once.
    """
    import pandas as pd  # here: a run's process reads records (finding its own), never curves
    dirs, parts = [], []
    for run_dir in run_dirs:
        lines = _curve_lines(Path(run_dir) / METRICS)
        if lines is not None and len(lines.is_eval):
            dirs.append(str(run_dir))
            parts.append(lines)
    if not parts:
        return pd.DataFrame([], columns=CURVE_COLUMNS).astype({c: float for c in CURVE_COLUMNS[2:]})
    counts = [len(part.is_eval) for part in parts]
    values = np.concatenate([part.values for part in parts])
    kinds = np.where(np.concatenate([part.is_eval for part in parts]), "eval", "train").astype(object)
    return pd.DataFrame({"run_dir": np.repeat(np.array(dirs, dtype=object), counts), "kind": kinds,
                         **{column: values[:, i] for i, column in enumerate(CURVE_COLUMNS[2:])}})


@dataclass(frozen=True)
class _CurveLines:
    """One metrics.jsonl's train and eval lines, in file order: whether each is an eval line, and its
    step, time_s and VALUE_COLUMNS as floats (NaN where read_curves reads missing)."""

    is_eval: np.ndarray
    values: np.ndarray  # (lines, 2 + len(VALUE_COLUMNS))


_PARSED: dict[tuple, _CurveLines] | None = None  # within curves_kept: (path, device, inode, mtime_ns, size) -> lines


@contextlib.contextmanager
def curves_kept():
    """Within it, read_curves parses each version of a file once (a report reads the same curves in several
    places: the published curves, the gates, the claims); leaving it lets them go, and outside it every read
    parses the file. A report's build is one such span (report/build.py)."""
    global _PARSED
    if _PARSED is not None:  # already within one
        yield
        return
    _PARSED = {}
    try:
        yield
    finally:
        _PARSED = None


def _curve_lines(path: Path) -> _CurveLines | None:
    """The file's lines; within curves_kept parsed once per version (its device, inode, modification time and
    size, read from the descriptor that reads it); None when it cannot be read (_open_regular)."""
    opened = _open_regular(path)
    if opened is None:
        return None
    fd, info = opened
    kept, key = _PARSED, (str(path), info.st_dev, info.st_ino, info.st_mtime_ns, info.st_size)
    if kept is not None and key in kept:
        os.close(fd)
        return kept[key]
    flags, rows = [], []
    for entry in _jsonl_objects(fd):
        kind = entry.get("kind")
        if kind not in ("train", "eval"):
            continue
        step = entry.get("step")
        if type(step) is not int or not 0 <= step <= MAX_STEP:
            continue
        time_s = _number(entry.get("time_s"))
        flags.append(kind == "eval")
        rows.append((step, time_s if math.isfinite(time_s) and time_s >= 0 else math.nan,
                     *(_number(entry.get(column)) for column in VALUE_COLUMNS)))
    lines = _CurveLines(np.array(flags, dtype=bool),
                        np.array(rows, dtype=float).reshape(len(rows), 2 + len(VALUE_COLUMNS)))
    if kept is not None:
        kept[key] = lines
    return lines


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return math.nan
    try:
        number = float(value)
    except OverflowError:  # an int with hundreds of digits
        return math.nan
    if math.isfinite(number) and number != 0 and not _FLOAT32_TINY <= abs(number) <= _FLOAT32_MAX:
        return math.nan
    return number


def _open_regular(path: Path) -> tuple[int, os.stat_result] | None:
    """A descriptor on ``path`` and its stat, opened as read_run_file opens (no link followed, no blocking),
    or None (nothing left open) when it is missing, a FIFO, a device, a folder or a link, or larger than
    MAX_METRICS_BYTES: checked after opening, such a file can neither hang the report nor feed it without end."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
    except OSError:
        info = None
    if info is None or not stat.S_ISREG(info.st_mode) or info.st_size > MAX_METRICS_BYTES:
        os.close(fd)
        return None
    return fd, info


def _jsonl_objects(fd: int) -> Iterable[dict]:
    """The JSON objects of the lines of a regular file opened by _open_regular (closed here), probe lines
    aside, no line read past MAX_LINE_BYTES. Its strings are not defused (record.bounded): read_curves keeps
    none of them, and a string with a lone surrogate is no kind it reads."""
    with os.fdopen(fd, "rb") as handle:
        while handle.tell() <= MAX_METRICS_BYTES and (line := handle.readline(MAX_LINE_BYTES)):  # a file still growing
            if not line.endswith(b"\n") and len(line) == MAX_LINE_BYTES:
                while (rest := handle.readline(MAX_LINE_BYTES)) and not rest.endswith(b"\n"):
                    pass  # skip the rest of an overlong line without holding it
                continue
            if any(marker in line for marker in _PROBE_MARKERS):
                continue
            try:
                entry = json.loads(line.decode("utf-8", errors="replace"))
            except (ValueError, RecursionError):  # JSONDecodeError, an int of thousands of digits
                continue
            if isinstance(entry, dict):
                yield entry
