"""What one subcommand measured, and how it lands on disk: NAME.json, NAME.csv and NAME.md (and its figures).

Every file a benchmark writes into --out goes through `bench_files` (report/output.py: OwnFiles): placed
atomically, never through a link, and listed in the folder's BENCH_MANIFEST, so that a later benchmark
replaces only files a benchmark wrote and nobody changed since.

A section is self-describing (command, environment, every measurement), so a report can be made
from the files alone. Its ``ratios`` are the headline figures: each says what was compared with
what, the command that measured it, and the target it is held to, if any.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import platform
from dataclasses import dataclass, field
from pathlib import Path

import torch

from normbench.checks import cores
from normbench.report.output import OwnFiles
from normbench.training.environment import environment

# What lowers the instruction set each part of torch uses: ATen's own kernels, MKL's BLAS (nn.LSTM's
# and every layer's matrix products), oneDNN. An AVX2 machine is imitated faithfully only with all three.
ISA_LIMITS = ("ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS", "ONEDNN_MAX_CPU_ISA")
BENCH_MANIFEST = ".normbench-bench.json"
BENCH_FILES_FORMAT = "normbench.bench-files/1"


def bench_files(out: Path) -> OwnFiles:
    """The one writer of a benchmark's files in ``out``."""
    return OwnFiles(out, BENCH_MANIFEST, BENCH_FILES_FORMAT, "a normbench benchmark")


def section_files(name: str, figures: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The files a section called ``name`` writes."""
    return (f"{name}.json", f"{name}.csv", f"{name}.md", *figures)


def bench_environment(device: torch.device | str) -> dict:
    """normbench's run environment plus what decides a timing: threads, cores, the CPU capability
    torch dispatches for (ATEN_CPU_CAPABILITY lowers it), the other ISA limits set. The load and CPU pressure
    are the bench CLI's (``condition_line``): read here, whenever a section calls this, they would be no
    one moment's."""
    device = torch.device(device)
    env = environment(device)
    env.update(interop_threads=torch.get_num_interop_threads(), cpu_count=cores(),  # as a run's record counts them
               machine=platform.machine(), cpu_capability=torch.backends.cpu.get_cpu_capability(),
               isa_limits={name: os.environ[name] for name in ISA_LIMITS if name in os.environ})
    return env


def condition_line(environment: dict) -> str:
    """The machine's condition over a benchmark's whole timing, as measured around it (machine.Condition,
    OtherLoad): the 1-minute load and CPU pressure at its start and end, the pressure over the span, and
    the share of the CPUs that other processes used."""
    def number(value, spec: str, unit: str = "") -> str:
        return "n/a" if value is None or not math.isfinite(value) else format(value, spec) + unit
    load = environment.get("load_1m") or {}
    pressure = environment.get("cpu_pressure") or {}
    return (f"Machine: 1-minute load {number(load.get('start'), '.2f')} at start, {number(load.get('end'), '.2f')} "
            f"at the end; CPU pressure (PSI some avg10) {number(pressure.get('start'), '.1f', '%')} at start, "
            f"{number(pressure.get('end'), '.1f', '%')} at the end, {number(pressure.get('over_span'), '.1f', '%')} "
            f"over the span; other processes used {number(environment.get('other_processes_cpu_share'), '.0%')} of "
            "the CPUs meanwhile.")


class OtherLoad:
    """The share of all cores that *other* processes used between construction and ``fraction()``.

    The machine's busy time (/proc/stat) less this process's and its children's CPU time: a load
    average cannot tell the benchmark's own threads from someone else's test suite.
    """

    def __init__(self):
        self.start = self._snapshot()

    @staticmethod
    def _snapshot() -> tuple[float, float, float] | None:
        """(all cores' seconds, their busy seconds, this process's and its children's CPU seconds)."""
        try:
            fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
            tick = os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            return None
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
        own = os.times()
        own_s = own.user + own.system + own.children_user + own.children_system
        return sum(fields) / tick, (sum(fields) - idle) / tick, own_s

    def fraction(self) -> float | None:
        end = self._snapshot()
        if self.start is None or end is None or end[0] <= self.start[0]:
            return None
        total, busy, own = (b - a for a, b in zip(self.start, end))
        return min(max((busy - own) / total, 0.0), 1.0)


@dataclass
class RatioLine:
    """One headline figure: ``value`` = time (or speed) of ``what`` relative to ``against``."""

    name: str
    value: float | None
    against: str
    command: str
    target: str | None = None      # e.g. "<= 1.5"
    note: str = ""

    @property
    def met(self) -> bool | None:
        if self.target is None or self.value is None or not math.isfinite(self.value):
            return None
        op, bound = self.target.split()
        return self.value <= float(bound) if op == "<=" else self.value >= float(bound)

    def __str__(self) -> str:
        value = "n/a" if self.value is None else f"{self.value:.2f}x"
        verdict = "" if self.met is None else f"  [target {self.target}: {'met' if self.met else 'NOT met'}]"
        note = f"  ({self.note})" if self.note else ""
        return f"{self.name}: {value} vs {self.against}{verdict}{note}"

    def to_dict(self) -> dict:
        return {"name": self.name, "value": self.value, "against": self.against, "target": self.target,
                "met": self.met, "note": self.note, "command": self.command}


@dataclass
class Section:
    name: str                      # kernels | cells | harness | sweep
    command: str
    environment: dict
    rows: list[dict]               # one per measurement; the CSV
    markdown: str                  # a section of the benchmark report
    ratios: list[RatioLine] = field(default_factory=list)
    extra: dict = field(default_factory=dict)   # anything else the JSON should keep
    figures: dict[str, bytes] = field(default_factory=dict)  # file name: PNG, written beside the others

    def to_dict(self) -> dict:
        return {"section": self.name, "command": self.command, "environment": self.environment,
                "ratios": [r.to_dict() for r in self.ratios], **self.extra, "rows": self.rows}

    def write(self, out_dir: Path) -> list[Path]:
        """NAME.json, .csv, .md and the figures into ``out_dir`` (bench_files); raises OutputError (one line)
        on a file in the way that a benchmark did not write."""
        files = bench_files(out_dir)
        json_name, csv_name, md_name, *figures = section_files(self.name, tuple(self.figures))
        return [files.write(json_name, json.dumps(finite_json(self.to_dict()), indent=2) + "\n"),
                files.write(csv_name, csv_text(self.rows)),
                files.write(md_name, self.markdown.rstrip() + "\n"),
                *(files.write(name, self.figures[name]) for name in figures)]


def csv_text(rows: list[dict]) -> str:
    columns: list[str] = []
    for row in rows:
        columns += [key for key in row if key not in columns]
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=columns)
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _cell(v) for k, v in row.items()})
    return text.getvalue()


def _cell(value):
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value)
    return value


def finite_json(obj):
    """NaN/inf become null: strict JSON, readable by any tool."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): finite_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite_json(v) for v in obj]
    return obj


def markdown_table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)
