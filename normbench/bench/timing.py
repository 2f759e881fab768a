"""How long a zero-argument callable takes: warm-up excluded, loops long enough to time, medians.

Every figure the benchmarks report is a *ratio* of candidates timed side by side in one process.
``measure`` runs them round-robin -- one timed loop of each candidate per repeat, the order shuffled
from repeat to repeat -- so a burst of load from another process lands on every candidate of that
repeat alike; ``paired_ratio`` then divides candidate by candidate *within* each repeat and takes
the median, which cancels load that drifts slowly over the run.

A single timed call of a fast kernel is mostly clock and dispatch noise, so each repeat times a
loop of ``loop`` calls sized to last at least ``min_loop_s`` (5 ms by default), and reports the
time per call.
"""

from __future__ import annotations

import ctypes
import gc
import math
import random
import statistics
import time
from dataclasses import dataclass
from typing import Callable, Mapping

import torch

Candidate = Callable[[], object]


@dataclass(frozen=True)
class Timing:
    """Seconds per call, one sample per repeat, each the mean over a loop of ``loop`` calls."""

    samples: tuple[float, ...]
    loop: int

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def quartiles(self) -> tuple[float, float]:
        if len(self.samples) < 2:
            return self.median, self.median
        q1, _, q3 = statistics.quantiles(self.samples, n=4, method="inclusive")
        return q1, q3

    @property
    def iqr(self) -> float:
        q1, q3 = self.quartiles
        return q3 - q1

    def to_dict(self) -> dict:
        q1, q3 = self.quartiles
        return {"median_ms": self.median * 1e3, "q1_ms": q1 * 1e3, "q3_ms": q3 * 1e3, "iqr_ms": self.iqr * 1e3,
                "repeats": len(self.samples), "loop": self.loop}


@dataclass(frozen=True)
class Ratio:
    """Median and quartiles of per-repeat ratios a_i / b_i of two interleaved timings."""

    median: float
    q1: float
    q3: float

    def __str__(self) -> str:
        return f"{self.median:.2f}x (IQR {self.q1:.2f}-{self.q3:.2f})"

    def to_dict(self) -> dict:
        return {"ratio": self.median, "q1": self.q1, "q3": self.q3}


def paired_ratio(a: Timing, b: Timing) -> Ratio:
    """a / b repeat by repeat: both were timed in the same round, under the same load."""
    ratios = [x / y for x, y in zip(a.samples, b.samples)]
    if len(ratios) < 2:
        return Ratio(ratios[0], ratios[0], ratios[0])
    q1, _, q3 = statistics.quantiles(ratios, n=4, method="inclusive")
    return Ratio(statistics.median(ratios), q1, q3)


def paired_difference(a: Timing, b: Timing) -> float:
    """Median over repeats of a_i - b_i, seconds per call: what a adds to b, load cancelled per round."""
    return statistics.median(x - y for x, y in zip(a.samples, b.samples))


class WallClock:
    """Times a loop of calls with a monotonic clock (the host's; any callable returning seconds)."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter):
        self.clock = clock

    def __call__(self, fn: Candidate, calls: int) -> float:
        start = self.clock()
        for _ in range(calls):
            fn()
        return self.clock() - start


class CudaEventClock:
    """Times a loop of calls on the GPU's own timeline: kernels queued by the loop are all counted.

    The device is synchronized before the start event, so no earlier work is billed to this loop,
    and the end event is waited for, so the loop's kernels have finished when it is read.
    """

    def __init__(self, device: torch.device):
        self.device = device
        self.start = torch.cuda.Event(enable_timing=True)
        self.end = torch.cuda.Event(enable_timing=True)

    def __call__(self, fn: Candidate, calls: int) -> float:
        torch.cuda.synchronize(self.device)
        self.start.record()
        for _ in range(calls):
            fn()
        self.end.record()
        self.end.synchronize()
        return self.start.elapsed_time(self.end) / 1e3


def clock_for(device: torch.device | str, clock: str = "wall") -> WallClock | CudaEventClock:
    """The clock a step on ``device`` is timed by: a GPU's own timeline, or on a CPU the wall time or ("cpu") the
    process's CPU time (time.process_time), which other processes on a busy machine inflate far less than the
    wall time; with one thread, the step's own."""
    device = torch.device(device)
    if device.type == "cuda":
        if clock != "wall":
            raise ValueError("--clock cpu times a CPU's work; a GPU's steps are timed on its own timeline")
        return CudaEventClock(device)
    return WallClock(time.process_time if clock == "cpu" else time.perf_counter)


def loop_length(fn: Candidate, timer, min_loop_s: float, max_loop: int) -> int:
    """Calls per loop such that one loop lasts at least ``min_loop_s`` (found by timing growing loops)."""
    calls = 1
    while calls < max_loop:
        elapsed = timer(fn, calls)
        if elapsed >= min_loop_s:
            break
        # aim 20% past the target so the confirming loop clears it despite jitter; at least double
        wanted = math.ceil(calls * 1.2 * min_loop_s / max(elapsed, 1e-9))
        calls = min(max_loop, max(2 * calls, wanted))
    return calls


def measure(candidates: Mapping[str, Candidate], *, repeats: int = 10, warmup: int = 2, min_loop_s: float = 5e-3,
            max_loop: int = 100_000, loop: int | None = None, timer=None) -> dict[str, Timing]:
    """Time every candidate, interleaved: per repeat one loop of each, in an order shuffled each repeat.

    Shuffled (seeded), not rotated: under rotation every candidate keeps the same predecessor, so
    one that leaves the allocator or the caches in a bad state (a large reference kernel freeing
    its temporaries) would bill the same neighbour in every round.

    warmup: calls of each candidate before anything is timed (compilation, allocator, caches).
    loop: calls per timed loop for every candidate; None sizes each candidate's loop to last
    ``min_loop_s`` (sizing loops are not recorded either). timer: ``timer(fn, calls) -> seconds``;
    a ``WallClock`` by default (pass ``clock_for(device)`` on CUDA).
    """
    if repeats < 1 or warmup < 0:
        raise ValueError(f"need repeats >= 1 and warmup >= 0, got repeats={repeats}, warmup={warmup}")
    timer = timer or WallClock()
    names = list(candidates)
    gc_was_enabled = gc.isenabled()
    gc.disable()  # a collection mid-loop would be billed to whichever candidate triggered it
    try:
        for name in names:
            for _ in range(warmup):
                candidates[name]()
        calls = {name: loop or loop_length(candidates[name], timer, min_loop_s, max_loop) for name in names}
        gc.collect()  # start from a clean heap; the timed rounds then run without the collector, as timeit does
        samples: dict[str, list[float]] = {name: [] for name in names}
        order = random.Random(0)
        for _ in range(repeats):
            for name in order.sample(names, len(names)):
                samples[name].append(timer(candidates[name], calls[name]) / calls[name])
    finally:
        if gc_was_enabled:
            gc.enable()
    return {name: Timing(tuple(samples[name]), calls[name]) for name in names}


def time_callable(fn: Candidate, **options) -> Timing:
    """``measure`` for one callable; for comparisons, measure the candidates together instead."""
    return measure({"fn": fn}, **options)["fn"]


def keep_freed_memory() -> str:
    """Ask glibc to keep freed memory in the heap (no mmap per large block, no trimming).

    By default glibc serves blocks above its mmap threshold (at most 32 MiB) with fresh pages and
    returns them on free, so every call of a kernel with large temporaries page-faults them in
    again. That cost lands unevenly from round to round (on this 2-core CPU a bf16 norm's IQR was
    a third of its median), which hides 10% differences between kernels. Returns what was done, for
    the benchmark's environment record.
    """
    m_trim_threshold, m_mmap_threshold = -1, -3
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError as err:
        return f"default (not glibc: {err})"
    # The mmap threshold first: setting the trim threshold also freezes glibc's adaptive mmap
    # threshold, so it is set only once the mmap threshold is raised. Some glibc versions cap the
    # latter at 32 MiB.
    for limit in (2**30, 2**25):
        if libc.mallopt(m_mmap_threshold, ctypes.c_int(limit)) == 1:
            libc.mallopt(m_trim_threshold, ctypes.c_int(2**31 - 1))
            return f"glibc, freed memory kept (blocks up to {limit // 2**20} MiB from the heap, no trimming)"
    return "default (mallopt refused)"

