"""Where a sweep's wall time went: each job's timestamps, and the sweep's efficiency from them.

Efficiency = the runs' summed training time (``time.train_s``: forward, backward and optimizer
steps) / (the sweep's wall time x its workers); ``loop_efficiency`` also counts the rest of the
runs' training loops (evaluation, probes, logging: the run's own measuring, not the sweep's). The
wall time runs from the start of the launching process (before Python imported anything) to the
end of the sweep's table and report; each worker slot is charged for all of it, so every second a
worker waits (for the launcher to start it, for another worker to finish, for the report) counts.

Each job writes its timestamps into ``<sweep>/.timing/<job>.json`` once its record is written
(``write_job``); ``account`` splits the slots' time into the shares below, which add up to 1:

- ``startup``: a process starting and importing (the launcher's before its workers exist; each
  worker's; torch, imported by a process's first job), and a worker slot's wait for its process;
- ``composition``: from a process's imports, or its previous job, to the next job's call: Hydra
  composing the job's config and dispatching it;
- ``environment``: collecting the run's environment (normbench/training/environment.py);
- ``setup``: inside the run, before and after its training loop: task data, model, first record;
- ``evaluation``: inside the training loop but not a training step: evaluation, probes, logging;
- ``writing``: writing the run's final record;
- ``report``: the sweep's end (table, report), charged to every slot;
- ``idle``: the rest: a slot with no job to run (the tail of a parallel sweep, spare workers).

A pass timed after the sweep on purpose (paired timing of the arms) is given as ``apart`` and
reported beside the efficiency, never in it. Imports no torch.
"""

from __future__ import annotations

import gc
import json
import math
import os
import time
from pathlib import Path

from normbench.records.record import Unreadable, read_run_file, write_json_atomic

FOLDER = ".timing"
RECORD = "efficiency.json"
SHARES = ("training", "startup", "composition", "environment", "setup", "evaluation", "writing", "report", "idle")
_started: float | None = None  # when this process's current run or sweep began (mark_start)


def mark_start(at: float) -> None:
    """The wall clock a sweep's time is counted from: the launching process's start when the
    command line started it (normbench/__main__.py), else when normbench.studies.app.main was called."""
    global _started
    _started = at


def start_mark() -> float | None:
    return _started


def write_job(sweep_dir: Path, job_num: int, marks: dict) -> None:
    """One job's timestamps (seconds since the epoch) and durations, after its record is written.

    ``marks``: pid, process_start, imported (the process's normbench.studies.app imported), called (the job
    handed to normbench), ready (its torch imports done), returned (its record written), and from
    its summary wall_s, train_s, span_s (the training loop's wall time), collect_env_s, status.
    """
    folder = Path(sweep_dir) / FOLDER
    folder.mkdir(exist_ok=True)
    write_json_atomic(folder / f"{int(job_num)}.json", marks)


def read_jobs(sweep_dir: Path, since: float | None = None) -> list[dict]:
    """The jobs' timestamps written under ``sweep_dir`` by jobs called at or after ``since`` (this
    invocation of the sweep; an earlier one's are left out). A file that is not such an object is passed over."""
    jobs = []
    folder = Path(sweep_dir) / FOLDER
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            marks = json.loads(read_run_file(path, 1 << 16).decode("utf-8"))
        except (Unreadable, UnicodeDecodeError, ValueError, RecursionError):
            continue
        if not isinstance(marks, dict) or not all(_number(marks.get(k)) for k in ("pid", "called", "ready", "returned")):
            continue
        if since is None or marks["called"] >= since - 1.0:  # a process's start is read from the boot clock
            jobs.append(marks)
    return jobs


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _seconds(marks: dict, key: str) -> float:
    value = marks.get(key)
    return max(float(value), 0.0) if _number(value) else 0.0


def most_at_once(jobs: list[dict]) -> int:
    """The largest number of jobs that ran at the same time (their [called, returned] spans)."""
    edges = sorted([(j["called"], 1) for j in jobs] + [(j["returned"], -1) for j in jobs])  # an end before a start at a tie
    running = most = 0
    for _, step in edges:
        running += step
        most = max(most, running)
    return max(most, 1)


def account(jobs: list[dict], started: float, ended: float, workers: int | None, report_s: float = 0.0,
            apart: dict | None = None) -> dict:
    """The sweep's efficiency and the shares of its slot time (workers x wall), from its jobs' marks.

    ``started``/``ended``: the sweep's wall clock (epoch seconds); ``workers``: the launcher's
    (joblib's n_jobs, at most one per job), or None where it has no such number (submitit): the
    most jobs that ran at once; ``report_s``: the part of the wall time its end took (table,
    report); ``apart``: seconds of passes timed after the sweep, not counted.
    """
    wall = max(ended - started, 1e-9)
    workers = most_at_once(jobs) if workers is None else max(1, min(int(workers), len(jobs) or 1))
    spent = dict.fromkeys(SHARES, 0.0)
    by_process: dict[int, list[dict]] = {}
    for job in jobs:
        by_process.setdefault(int(job["pid"]), []).append(job)
    # The first `workers` processes each fill a slot from the sweep's start: their wait for the
    # launcher to start them counts as start-up. A process started later (a replaced worker) takes
    # over a slot some other process held, so only its own imports count.
    order = sorted(by_process.values(), key=lambda own: min(j["called"] for j in own))
    for rank, own in enumerate(order):
        own.sort(key=lambda j: j["called"])
        first = own[0]
        imported = first["imported"] if _number(first.get("imported")) else first["called"]
        begun = first["process_start"] if _number(first.get("process_start")) else started
        spent["startup"] += max(imported - (started if rank < workers else max(begun, started)), 0.0)
        previous = max(imported, started)
        for job in own:
            spent["composition"] += max(job["called"] - previous, 0.0)
            spent["startup"] += max(job["ready"] - job["called"], 0.0)
            in_run = max(job["returned"] - job["ready"], 0.0)
            wall_s = min(_seconds(job, "wall_s"), in_run)
            span = min(_seconds(job, "span_s"), wall_s)
            train = min(_seconds(job, "train_s"), span) if span else min(_seconds(job, "train_s"), wall_s)
            collect = min(_seconds(job, "collect_env_s"), wall_s - span)
            spent["training"] += train
            spent["evaluation"] += max(span - train, 0.0)
            spent["environment"] += collect
            spent["setup"] += max(wall_s - span - collect, 0.0)
            spent["writing"] += in_run - wall_s
            previous = job["returned"]
    slots = wall * workers
    spent["report"] = min(max(report_s, 0.0) * workers, max(slots - sum(spent.values()), 0.0))
    spent["idle"] = max(slots - sum(spent.values()), 0.0)
    total = sum(spent.values())  # slots, unless a restarted worker's start-up overlapped another's
    return {"efficiency": spent["training"] / slots, "loop_efficiency": (spent["training"] + spent["evaluation"]) / slots,
            "wall_s": wall, "workers": workers, "jobs": len(jobs),
            "processes": len(by_process), "train_s": spent["training"],
            "seconds": spent, "shares": {k: v / total for k, v in spent.items()},
            "apart_s": dict(apart or {}), "started": started, "ended": ended}


def line(result: dict) -> str:
    """The sweep's end line: its efficiency, then where the rest went, largest first."""
    rest = sorted(((k, v) for k, v in result["shares"].items() if k != "training"), key=lambda kv: -kv[1])
    workers = result["workers"]
    text = (f"efficiency {result['efficiency']:.2f}: {result['train_s']:.1f} s training of "
            f"{result['wall_s']:.1f} s wall x {workers} worker{'s' if workers != 1 else ''} "
            f"({result['jobs']} jobs in {result['processes']} process{'es' if result['processes'] != 1 else ''}; "
            f"{result['loop_efficiency']:.2f} with the runs' evaluation and probes); "
            + ", ".join(f"{k} {v:.0%}" for k, v in rest if v >= 0.005))
    if result["apart_s"]:
        text += "; not counted: " + ", ".join(f"{k} {v:.1f} s" for k, v in result["apart_s"].items())
    return text


def record(sweep_dir: Path, result: dict) -> Path:
    """``result`` as the sweep's ``efficiency.json``, through the one atomic writer."""
    path = Path(sweep_dir) / RECORD
    write_json_atomic(path, {"what": "sweep efficiency: summed training time / (wall time x workers)", **result})
    return path


def job_marks(process_start: float | None, imported: float, called: float, ready: float,
              summary: dict) -> dict:
    """The marks write_job takes, with the durations read from the job's summary (none for a job that
    found its run done or running elsewhere in the sweep: that time is the other job's)."""
    copy = summary.get("duplicate_of") is not None
    times, env = ({}, {}) if copy else (summary.get("time") or {}, summary.get("environment") or {})
    return {"pid": os.getpid(), "process_start": process_start, "imported": imported, "called": called,
            "ready": ready, "returned": time.time(), "wall_s": times.get("wall_s"), "train_s": times.get("train_s"),
            "span_s": env.get("span_s"), "collect_env_s": env.get("collect_env_s"), "status": summary.get("status"),
            "gc_frozen": gc.get_freeze_count()}  # objects a worker froze after its first job (normbench.studies.app)
