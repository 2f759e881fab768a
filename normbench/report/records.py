"""Finding and reading run records (docs/run-record.md). The report's only input.

A sweep can be half-written when the report runs: a job still running, a job killed mid-write, a
directory from another tool. None of that may stop the report, so every record is either read or
set aside with a one-phrase reason, and the caller decides how to say so.
"""

from __future__ import annotations

import json
import math
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from normbench.contract import READABLE


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
        if not root.exists():
            missing.append(root)
            continue
        candidates = [root] if root.name == "summary.json" else sorted(root.rglob("summary.json"))
        for summary_path in candidates:
            resolved = summary_path.resolve()
            if resolved in seen:
                continue
            seen.add(resolved)
            record = read_summary(resolved)
            if isinstance(record, SetAside):
                set_aside.append(record)
            else:
                runs.append(record)
    return Records(runs, set_aside, missing)


def read_summary(path: Path) -> RunRecord | SetAside:
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return SetAside(path, "unreadable summary.json")
    if not isinstance(summary, dict):
        return SetAside(path, "summary.json is not an object")
    schema = summary.get("schema")
    if schema not in READABLE:
        return SetAside(path, "no schema" if schema is None else f"schema {schema!r}")
    return RunRecord(path.parent, summary)


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

    A metrics.jsonl that is a FIFO, a device or a folder yields nothing: opened without blocking
    and checked after opening, it can neither hang the report nor feed it without end.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
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
            except (json.JSONDecodeError, RecursionError):
                continue
            if isinstance(entry, dict):
                yield entry
