"""How busy the machine was while something was timed: load average, CPU pressure, cores, parallel jobs.

A step time means little without the machine's condition beside it: the same step on a 2-core
machine shared by a test suite reads several times slower. So every run record and every bench
section keeps what the kernel says about contention at the start and at the end of its timed
work. CPU pressure (Linux PSI, /proc/pressure/cpu) is the better figure: the share of time some
runnable task waited for a CPU, which a load average cannot tell from the job's own threads.
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from normbench.checks import cores

PRESSURE = Path("/proc/pressure/cpu")
SWEEP_FREE_CORES = "NORMBENCH_SWEEP_FREE_CORES"  # free_cores() when the sweep started, for its jobs' threads


def load_1m() -> float | None:
    """The 1-minute load average; None where the platform has none."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def free_cores() -> int | None:
    """Cores other work leaves free now: this process's cores less the 1-minute load, rounded, at
    least 1; None where the platform has no load average. Read before a run starts its own threads."""
    load = load_1m()
    if load is None:
        return None
    here = cores()
    return max(1, min(here, int(here - load + 0.5)))


def process_started() -> float | None:
    """When this process started, in seconds since the epoch (``time.time()``'s clock); None where
    /proc has no answer. From /proc/self/stat's start time (clock ticks since boot, 10 ms steps)
    and the boot clock now, so a sweep's start-up is counted from the process's own beginning,
    before Python imported anything."""
    try:
        stat = Path("/proc/self/stat").read_text()
        ticks = int(stat.rsplit(")", 1)[1].split()[19])  # field 22; the name in () may hold spaces
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None
    return time.time() - max(age, 0.0)


def _pressure_some() -> tuple[float, int] | None:
    """(avg10 in %, total stalled µs) of the ``some`` line of /proc/pressure/cpu; None without PSI."""
    try:
        for line in PRESSURE.read_text().splitlines():
            kind, *fields = line.split()
            if kind == "some":
                values = dict(f.split("=", 1) for f in fields)
                return float(values["avg10"]), int(values["total"])
    except (OSError, ValueError, KeyError):
        pass
    return None


def cpu_pressure() -> float | None:
    """CPU pressure now: % of the last 10 s in which some runnable task waited for a CPU (PSI avg10)."""
    some = _pressure_some()
    return None if some is None else some[0]


class Condition:
    """The machine's condition from construction to ``finish()``: load and CPU pressure at both ends,
    the pressure over the span itself (stalled time / elapsed time, from PSI's running total), and
    the span's length (``span_s``: for a run, the wall time of its training loop)."""

    def __init__(self):
        self.started = time.monotonic()
        self.load_start = load_1m()
        self.pressure_start = _pressure_some()

    def finish(self) -> dict:
        elapsed = time.monotonic() - self.started
        end = _pressure_some()
        span = None
        if self.pressure_start is not None and end is not None and elapsed > 0:
            span = min(100.0, (end[1] - self.pressure_start[1]) / 1e6 / elapsed * 100)
        return {"load_1m": {"start": self.load_start, "end": load_1m()},
                "cpu_pressure": {"start": None if self.pressure_start is None else self.pressure_start[0],
                                 "end": None if end is None else end[0], "over_span": span},
                "span_s": elapsed}


@contextmanager
def on_record(environment: dict, parallel_jobs: int) -> Iterator[None]:
    """Adds cpu_count, parallel_jobs, load_1m and cpu_pressure to a record's ``environment`` around
    the timed work in the ``with`` block; the end is sampled however the block ends."""
    environment.update(cpu_count=cores(), parallel_jobs=parallel_jobs)
    condition = Condition()
    try:
        yield
    finally:
        environment.update(condition.finish())

