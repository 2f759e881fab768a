"""Finding and reading run records (docs/run-record.md). The report's only input.

A sweep can be half-written when the report runs: a job still running, a job killed mid-write, a
directory from another tool. None of that may stop the report, so every record is either read or
set aside with a one-phrase reason, and the caller decides how to say so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

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
_PROBE_MARKERS = ('"kind": "probe"', '"kind":"probe"')
CURVE_COLUMNS = ["run_dir", "kind", "step", "time_s", "val_metric", "val_loss", "loss", "grad_norm"]


def read_curves(run_dirs: Iterable[Path]) -> pd.DataFrame:
    """The train and eval lines of each run's metrics.jsonl, long format (CURVE_COLUMNS).

    A line that does not parse (the runner flushes per line, so a killed run can leave the last
    one cut short) is skipped; so is a missing file.
    """
    rows: list[dict] = []
    for run_dir in run_dirs:
        path = Path(run_dir) / "metrics.jsonl"
        try:
            handle = path.open(encoding="utf-8", errors="replace")
        except OSError:
            continue
        with handle:
            for line in handle:
                if any(marker in line for marker in _PROBE_MARKERS):
                    continue
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if not isinstance(entry, dict) or entry.get("kind") not in ("train", "eval"):
                    continue
                rows.append(
                    {
                        "run_dir": str(run_dir),
                        "kind": entry["kind"],
                        "step": entry.get("step"),
                        "time_s": entry.get("time_s"),
                        "val_metric": entry.get("val_metric"),
                        "val_loss": entry.get("val_loss"),
                        "loss": entry.get("loss"),
                        "grad_norm": entry.get("grad_norm"),
                    }
                )
    curves = pd.DataFrame(rows, columns=CURVE_COLUMNS)
    for column in CURVE_COLUMNS[2:]:
        curves[column] = pd.to_numeric(curves[column], errors="coerce")
    return curves.dropna(subset=["step"])
