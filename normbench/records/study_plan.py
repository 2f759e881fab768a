"""A sequential study's plan file, DIR/sequential.json: whose it is, and which records it may touch.

The study runner (normbench/studies/study.py) writes it into its folder when its looks are done: the plan,
each look's level and what was undecided there. The report (normbench/report/build.py) tests a
study's claims at the level its last look reached. A level changes verdicts, so the file names
its study (the id each of the study's records carries, normbench/configuration/study_info.py) and its schema,
and the report applies it only to records of that study under the file's folder: a file of
another study, one without this schema or a planted one changes nothing and is named in one line.
A second study run into the same folder writes sequential-<id>.json beside the first's file.

Its format is the study runner's (only it writes one); it sits with the other files a run or study leaves on
disk because the report, which reads it, may not import the studies. Torch-free.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from normbench.records.record import Unreadable, read_json_file, write_inside

STUDY_PLAN_FORMAT = "normbench.sequential/2"
FILE = "sequential.json"
MAX_BYTES = 4 << 20  # a plan of a thousand looks is some hundred kB


@dataclass(frozen=True)
class Level:
    """What one plan file says: study ``study``'s runs under ``folder`` are tested at ``level``."""

    folder: Path
    study: str
    level: float
    path: Path
    data: dict = field(default_factory=dict, compare=False, repr=False)  # the whole plan: its design


def name_for(study: str) -> str:
    """The file a study writes: sequential.json, or its own beside another study's."""
    return f"sequential-{study}.json"


def own_file(out: Path, study: str) -> Path:
    """Where study ``study`` writes its plan in ``out``: sequential.json when nothing is there or it is
    already this study's plan (this schema, this study's id), else sequential-<id>.json beside it. A
    file there that cannot be read as this schema (an older format, another study's, garbage, a
    planted link) is the user's or another study's: never replaced, and the report ignores it."""
    path = Path(out) / FILE
    if not os.path.lexists(path):
        return path
    try:
        plan = read(path)
    except Unreadable:
        return Path(out) / name_for(study)
    return path if plan.study == study else Path(out) / name_for(study)


def write(out: Path, study: str, plan: dict) -> Path:
    """``plan`` as this study's file in ``out``, through the one writer (record.write_inside)."""
    path = own_file(out, study)
    text = json.dumps({"schema": STUDY_PLAN_FORMAT, "study": study, **plan}, indent=2, allow_nan=False) + "\n"
    return write_inside(out, path.name, text)


def read(path: Path) -> Level:
    """The plan file at ``path``; raises Unreadable with the phrase saying why it is not one."""
    plan = read_json_file(path, MAX_BYTES)
    if not isinstance(plan, dict):
        raise Unreadable("not an object")
    if plan.get("schema") != STUDY_PLAN_FORMAT:
        raise Unreadable("no schema" if plan.get("schema") is None else f"schema {str(plan['schema'])[:40]!r}")
    study, level = plan.get("study"), plan.get("final_level")
    if not isinstance(study, str) or not study:
        raise Unreadable("no study id")
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not (
            math.isfinite(level) and 0 < level < 0.5):
        raise Unreadable("no final_level in (0, 0.5)")
    return Level(Path(path).parent.resolve(), study, float(level), Path(path), plan)


def files(paths: Iterable[Path]) -> list[Path]:
    """Every plan file in each path and in the folders right below it (a study folder, or a folder of studies)."""
    found = []
    for path in map(Path, paths):
        for pattern in ("sequential.json", "sequential-*.json", "*/sequential.json", "*/sequential-*.json"):
            try:
                found += sorted(path.glob(pattern))
            except OSError:
                continue
    return list(dict.fromkeys(found))


def levels(paths: Iterable[Path]) -> tuple[list[Level], list[str]]:
    """The plan files found (files) that can be applied, and one phrase per file that cannot."""
    kept, ignored = [], []
    for path in files(paths):
        try:
            kept.append(read(path))
        except Unreadable as why:
            ignored.append(f"{path}: {why}")
    return kept, ignored

