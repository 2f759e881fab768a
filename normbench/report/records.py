"""Finding and reading run records (docs/run-record.md). The report's only input.

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
from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from normbench.contract import READABLE, STATUSES
from normbench.schema import TASK_CONFIGS, Config


@dataclass(frozen=True)
class RunRecord:
    run_dir: Path
    summary: dict


@dataclass(frozen=True)
class SetAside:
    """A summary.json the report could not use, and why (a short phrase)."""

    path: Path
    why: str


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
        candidates = [root] if root.name == "summary.json" else record_paths(root)
        for summary_path in candidates:
            resolved = summary_path.resolve()
            if resolved in seen:
                continue
            seen.add(resolved)
            record = read_summary(summary_path)
            if isinstance(record, SetAside):
                set_aside.append(record)
            else:
                runs.append(record)
    return Records(runs, set_aside, missing)


def record_paths(folder: Path) -> list[Path]:
    """Every summary.json under ``folder``, sorted; a folder that cannot be listed yields nothing."""
    try:
        return sorted(Path(folder).rglob("summary.json"))
    except OSError:
        return []


# What one record may bring in. A record the runner writes is a few kB to a few hundred kB; the
# caps are far above that and far below what would hold up (or exhaust) a report.
MAX_RECORD_BYTES = 16 << 20
MAX_STRING = 10_000  # characters of one string (a failure reason, a path); longer ones end in "…"
DICT_FIELDS = ("config", "axes", "task", "metrics", "profiles", "throughput", "environment", "time",
               "precision", "rerun_of")


class Unreadable(Exception):
    """A run file that is not read; the message is the one phrase saying why."""


def read_run_file(path: Path, max_bytes: int) -> bytes:
    """The bytes of a regular file inside a run folder, at most ``max_bytes`` of them.

    Opened without following a link in its last component and without blocking, then checked
    with fstat: a FIFO, a device, a folder or a link (planted, or to /dev/zero) is refused, never
    waited on or read without end. Raises Unreadable.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise Unreadable(f"no {Path(path).name}") from None
    except OSError as error:
        link = os.path.islink(path)
        raise Unreadable(f"{Path(path).name} is a symbolic link" if link else
                         f"{Path(path).name} cannot be opened ({error.strerror or error})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Unreadable(f"{Path(path).name} is not a regular file")
        if info.st_size > max_bytes:
            raise Unreadable(f"{Path(path).name} is larger than {max_bytes >> 20} MiB")
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as error:
        raise Unreadable(f"{Path(path).name} cannot be read ({error.strerror or error})") from None
    finally:
        os.close(fd)
    if len(data) > max_bytes:  # grew while being read
        raise Unreadable(f"{Path(path).name} is larger than {max_bytes >> 20} MiB")
    return data


def bounded(value: object) -> object:
    """``value`` with every string (and key) cut to MAX_STRING characters, ending in "…"."""
    if isinstance(value, str):
        return value if len(value) <= MAX_STRING else value[: MAX_STRING - 1] + "…"
    if isinstance(value, dict):
        return {bounded(k): bounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [bounded(v) for v in value]
    return value


def _finite_float(text: str) -> float | None:
    number = float(text)
    return number if math.isfinite(number) else None  # 1e999: as the runner writes inf, null


def parse_record(data: bytes) -> dict:
    """A summary.json's object, bounded; raises Unreadable with the reason it is not one.

    NaN and ±Infinity (which JSON does not have, and the runner never writes: it writes null)
    read as null, like a number too large for a float.
    """
    try:
        summary = json.loads(data.decode("utf-8"), parse_constant=lambda _: None, parse_float=_finite_float)
        summary = bounded(summary)
    except (UnicodeDecodeError, ValueError):  # JSONDecodeError, an int of thousands of digits
        raise Unreadable("unreadable summary.json") from None
    except RecursionError:
        raise Unreadable("summary.json is nested too deeply") from None
    if not isinstance(summary, dict):
        raise Unreadable("summary.json is not an object")
    schema = summary.get("schema")
    if schema not in READABLE:
        raise Unreadable("no schema" if schema is None else f"schema {str(schema)[:60]!r}")
    status = summary.get("status")
    if not isinstance(status, str) or status not in (*STATUSES, "running"):
        raise Unreadable(f"status {str(status)[:60]!r} is not a run status")
    wrong = [key for key in DICT_FIELDS if summary.get(key) is not None and not isinstance(summary[key], dict)]
    if wrong:
        raise Unreadable(f"{wrong[0]} is not an object")
    mistyped = _mistyped(summary.get("config") or {}, Config, "config.")
    if mistyped:
        raise Unreadable(mistyped)
    return summary


# What a config value of each annotated type may be in JSON (a float setting may be written as 1).
_JSON_TYPES = {"float": (int, float), "int": (int,), "bool": (bool,), "str": (str,),
               "Optional[float]": (int, float, type(None)), "Optional[int]": (int, type(None)),
               "Optional[str]": (str, type(None))}


def _mistyped(values: dict, schema: type, prefix: str) -> str | None:
    """The first setting of a recorded config whose value is not of its schema type (a string where
    the schema has a number), or None. Keys the schema does not know are left alone (older records)."""
    for item in fields(schema):
        if item.name not in values:
            continue
        value, key = values[item.name], f"{prefix}{item.name}"
        group = TASK_CONFIGS.get(value.get("name")) if item.name == "task" and isinstance(value, dict) else (
            item.default_factory if is_dataclass(item.default_factory) else None)
        if group is not None or is_dataclass(item.default_factory):
            if not isinstance(value, dict):
                return f"{key} is not an object"
            found = _mistyped(value, group, f"{key}.") if group is not None else None
            if found:
                return found
            continue
        allowed = _JSON_TYPES.get(str(item.type))
        if allowed and (not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed)):
            return f"{key} is not of type {item.type}"
    return None


def read_summary(path: Path) -> RunRecord | SetAside:
    """The one reader of a summary.json, used by the report, load_runs, compare, rerun, tune, the
    runner's resume and folder claims, and the end of a sweep. Never raises, hangs or reads
    without bound: a record it cannot use comes back as SetAside with a one-phrase reason."""
    path = Path(path)
    try:
        return RunRecord(path.parent, parse_record(read_run_file(path, MAX_RECORD_BYTES)))
    except Unreadable as why:
        return SetAside(path, str(why))


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
    so is a missing file or one that is not a regular file. A value that is not a number, or a
    finite number outside float32's range, reads as missing (NaN); NaN and inf are kept, as the
    runner writes them for a diverged run, and `time_s` must be finite and >= 0.
    """
    rows: list[dict] = []
    for run_dir in run_dirs:
        for entry in _jsonl_objects(Path(run_dir) / "metrics.jsonl"):
            if entry.get("kind") not in ("train", "eval"):
                continue
            step = entry.get("step")
            if type(step) is not int or not 0 <= step <= MAX_STEP:
                continue
            time_s = _number(entry.get("time_s"))
            rows.append({"run_dir": str(run_dir), "kind": entry["kind"], "step": step,
                         "time_s": time_s if math.isfinite(time_s) and time_s >= 0 else math.nan,
                         **{column: _number(entry.get(column)) for column in VALUE_COLUMNS}})
    return pd.DataFrame(rows, columns=CURVE_COLUMNS).astype({c: float for c in CURVE_COLUMNS[2:]})


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


def _jsonl_objects(path: Path) -> Iterable[dict]:
    """The JSON objects of a regular file's lines, probe lines aside, with every line read bounded.

    A metrics.jsonl that is a FIFO, a device, a folder or a link yields nothing: opened as
    read_run_file opens (no link followed, no blocking) and checked after opening, it can neither hang the report nor feed it without end.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return
    try:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        regular = False
    if not regular:
        os.close(fd)
        return
    with os.fdopen(fd, "rb") as handle:
        while line := handle.readline(MAX_LINE_BYTES):
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
