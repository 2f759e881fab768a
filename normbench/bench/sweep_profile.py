"""``bench sweep --profile``: where a tiny run's wall time goes in a sweep, and what a run costs beyond
its training, against another checkout's code, measured side by side.

A sweep of tiny runs (a subset of the smoke sweep by default) is mostly fixed cost: Hydra composing
each job, the run's set-up, its data, evaluation and probes, its records. Two measurements:

- the **fixed cost per run**: (the sweep's wall time - its runs' summed training time) / its jobs,
  and the same with the sweep's CPU time (the subprocess's user + system seconds, which a busy
  machine disturbs less than wall time). With ``--against DIR`` the same sweep runs with the code
  of the checkout at DIR (``PYTHONPATH=DIR``) and with this one (``PYTHONPATH`` this package's checkout),
  each from the bench's temporary folder (``python -m`` puts its working folder first on the path, so a
  sweep started from a checkout ran that checkout's code, whatever PYTHONPATH said), each sweep's log
  naming the package it imported, one process at a time, in
  alternating order (A B, then B A, ...), so neither always runs on a warmer or quieter machine;
  then ``normbench compare A B --exact`` says whether their records are the same runs with the same
  numbers;
- the **parts** (``--profile``, left out with ``--no-parts``): one more sweep of this code under cProfile, and each part of PARTS
  as the cumulative seconds of the functions that do it. These are wall seconds under cProfile, whose
  per-call overhead inflates call-heavy Python (record parsing, YAML) far more than C work: they rank
  where to look and do not predict a saving; the side-by-side CPU column measures one.

Every sweep uses the basic launcher (one process), ``threads=1`` and no report.
"""

from __future__ import annotations

import fnmatch
import os
import pstats
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from normbench.bench.options import SUBSET
from normbench.bench.section import RatioLine, Section, bench_environment, markdown_table
from normbench.records import sweep_time
from normbench.records.reading import record_paths
from normbench.records.record import RunRecord, read_summary

TARGET = 0.5  # issue 48: the fixed cost per run at most half of the code compared against

# part -> the functions whose cumulative time is that part: (a file's path ending, a function name
# or fnmatch pattern). Entries of one name nest (a method calling a function of the same name):
# the largest counts; entries of different names add up.
PARTS = (
    ("composition (Hydra, per job)", (("hydra/_internal/config_loader_impl.py", "load_sweep_config"),)),
    ("set-up (config to model)", (("normbench/training/run.py", "prepare"),)),
    ("  of which data", (("normbench/tasks/tensors.py", "load_task"),)),
    ("  of which environment", (("normbench/training/environment.py", "environment"),)),
    ("evaluation", (("normbench/training/train.py", "evaluate"),)),
    ("probes", (("normbench/training/probes.py", "on_*"),)),
    ("finding finished records", (("normbench/training/run.py", "finished_record"),)),
    ("record writing", (("normbench/records/record.py", "write_atomic"),)),
    ("training loop (fit)", (("normbench/training/train.py", "fit"),)),
)


def sweep_command(overrides: list[str], sweep_dir: Path, profile_to: Path | None = None) -> list[str]:
    runner = ["-m", "cProfile", "-o", str(profile_to), "-m"] if profile_to is not None else ["-m"]
    return [sys.executable, *runner, "normbench", "-m", *overrides, "threads=1", "report=false",
            "progress=false", f"hydra.sweep.dir={sweep_dir}"]


class Refused(ValueError):
    """The sweep refused its overrides (exit status 2): its own one line, the reason."""


def refusal(log_text: str) -> str:
    """A refusing sweep's reason: its last line of error (``normbench: error: ...``) without the prefix."""
    lines = [line.strip() for line in log_text.splitlines() if line.strip()]
    said = next((line for line in reversed(lines) if "error:" in line), lines[-1] if lines else "no reason given")
    return said.split("error:", 1)[-1].strip()


THIS_CODE = Path(__file__).resolve().parents[2]  # the folder holding this normbench package


def code_env(code: Path | None) -> dict:
    """A sweep subprocess's environment: ``code`` (None: the folder holding this package) first on PYTHONPATH.
    It must run from a folder that holds no normbench of its own (``python -m`` puts the working folder first)."""
    paths = [str(code or THIS_CODE), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(paths)}


def imported_from(code: Path | None, where: Path) -> Path:
    """The normbench package a sweep started from ``where`` with code_env(code) imports."""
    said = subprocess.run([sys.executable, "-c", "import normbench; print(normbench.__file__)"], cwd=where,
                          env=code_env(code), capture_output=True, text=True, check=True)
    return Path(said.stdout.strip()).resolve().parent


def timed(command: list[str], code: Path | None, log: Path, timeout_s: float = 3600) -> dict:
    """Wall and CPU seconds of one sweep subprocess, run from the log's folder with ``code`` first on its
    PYTHONPATH (None: this package's checkout); RuntimeError when it would import another normbench.
    Refused when the sweep refuses its overrides (exit 2: an unknown option, a value no run takes; hostile
    B06, B21-B23), RuntimeError with its log's end when it fails otherwise."""
    env = code_env(code)
    package = imported_from(code, log.parent)
    if package.parent != (code or THIS_CODE).resolve():
        raise RuntimeError(f"a sweep meant to run the code at {code or THIS_CODE} would import {package}")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with open(log, "w") as out:
        out.write(f"normbench imported from {package}\n")
        out.flush()
        done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, env=env, timeout=timeout_s,
                              cwd=log.parent)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode == 2:
        raise Refused(refusal(log.read_text(errors="replace")))
    if done.returncode != 0:
        tail = "".join(log.read_text().splitlines(keepends=True)[-15:])
        raise RuntimeError(f"sweep {shlex.join(command[1:])} ended with status {done.returncode}:\n{tail}")
    return {"wall_s": wall, "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)}


def sweep_totals(sweep_dir: Path) -> dict:
    """Jobs (each writes its timestamps, normbench/records/sweep_time.py), their summed training seconds,
    and how many records of each status."""
    jobs = len(list((sweep_dir / sweep_time.FOLDER).glob("*.json")))
    summaries = [r.summary for p in record_paths(sweep_dir) if isinstance(r := read_summary(p), RunRecord)]
    statuses: dict[str, int] = {}
    for s in summaries:
        statuses[str(s.get("status"))] = statuses.get(str(s.get("status")), 0) + 1
    train = sum(float((s.get("time") or {}).get("train_s") or 0.0) for s in summaries)
    return {"jobs": jobs, "records": len(summaries), "train_s": train, "statuses": statuses}


def fixed_cost(row: dict) -> tuple[float, float]:
    """(wall, CPU) seconds per job beyond its training."""
    jobs = max(row["jobs"], 1)
    return (row["wall_s"] - row["train_s"]) / jobs, (row["cpu_s"] - row["train_s"]) / jobs


def parts(profile: Path) -> dict[str, float]:
    """Cumulative seconds of each part of PARTS in a cProfile file, and the whole profile's."""
    stats = pstats.Stats(str(profile)).stats  # (file, line, name) -> (calls, primitive, tottime, cumtime, callers)
    found = {}
    for part, functions in PARTS:
        by_name: dict[str, float] = {}
        for (path, _, name), (_, _, _, cumulative, _) in stats.items():
            if any(path.replace(os.sep, "/").endswith(end) and fnmatch.fnmatchcase(name, pattern)
                   for end, pattern in functions):
                by_name[name] = max(by_name.get(name, 0.0), cumulative)
        found[part] = sum(by_name.values())
    found["whole sweep"] = max((entry[3] for entry in stats.values()), default=0.0)
    return found


def side_means(rows: list[dict]) -> dict[str, dict[str, float]]:
    """Per side (base, new), the means over its rounds of the fixed cost per job (wall, cpu) and of the whole
    sweep's wall seconds (sweep)."""
    return {name: {"wall": statistics.mean(r["fixed_wall_s"] for r in mine),
                   "cpu": statistics.mean(r["fixed_cpu_s"] for r in mine),
                   "sweep": statistics.mean(r["wall_s"] for r in mine)}
            for name in ("base", "new") if (mine := [r for r in rows if r["code"] == name])}


def compare_exact(base: Path, new: Path) -> int:
    """``normbench compare BASE NEW --exact``'s exit status (0: the same runs with the same numbers)."""
    return subprocess.run([sys.executable, "-m", "normbench", "compare", str(base), str(new), "--exact"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode


def run(*, against: Path | None, rounds: int = 2, overrides: list[str] | None = None, profile: bool = True,
        command: str = "", keep: Path | None = None) -> Section:
    chosen = list(overrides or SUBSET)
    trees = ([("base", against)] if against is not None else []) + [("new", None)]
    rows: list[dict] = []
    exact: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="normbench-sweep-profile-") as tmp:
        root = keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        for k in range(rounds if against is not None else 1):
            order = trees if k % 2 == 0 else trees[::-1]
            for name, code in order:
                sweep_dir = root / f"{k}-{name}"
                print(f"sweep profile: round {k + 1}, {name} ...", flush=True)
                try:
                    result = timed(sweep_command(chosen, sweep_dir), code, sweep_dir.with_suffix(".log"))
                except Refused as err:
                    raise Refused(f"the code at {code}: {err}" if code is not None else str(err)) from None
                row = {"round": k, "code": name, "where": str(code or "this checkout"), **result,
                       **sweep_totals(sweep_dir)}
                row["fixed_wall_s"], row["fixed_cpu_s"] = fixed_cost(row)
                rows.append(row)
            if against is not None:
                exact[f"round {k + 1}"] = compare_exact(root / f"{k}-base", root / f"{k}-new")
        found = {}
        if profile:
            print("sweep profile: one more sweep of this code under cProfile ...", flush=True)
            sweep_dir = root / "profiled"
            timed(sweep_command(chosen, sweep_dir, root / "profile.prof"), None, sweep_dir.with_suffix(".log"))
            found = parts(root / "profile.prof")
            found["jobs"] = sweep_totals(sweep_dir)["jobs"]
    env = bench_environment("cpu")
    ratios = []
    if against is not None:
        mean = side_means(rows)
        for clock in ("wall", "cpu"):
            ratios.append(RatioLine(f"fixed cost per run ({clock} - training) / jobs, this code",
                                    mean["new"][clock] / mean["base"][clock], f"the code at {against}", command,
                                    target=f"<= {TARGET}", note=f"mean over {rounds} alternating rounds"))
        ratios.append(RatioLine("the whole sweep's wall time (training included), this code",
                                mean["new"]["sweep"] / mean["base"]["sweep"], f"the code at {against}", command,
                                note=f"mean over {rounds} alternating rounds; a study of tiny runs is such a sweep"))
    markdown = render(rows, found, exact, chosen, env, command, against)
    return Section("sweep-profile", command, env, rows, markdown, ratios,
                   {"overrides": chosen, "parts_s": found, "compare_exact_status": exact})


def render(rows, found, exact, overrides, env, command, against) -> str:
    out = [f"## Fixed cost per run of a sweep of tiny runs\n\n`{command}`\n\n{env['cpu_count']} cores "
           f"({env['device_name']}). Each sweep is "
           f"`python -m normbench -m {' '.join(overrides)} threads=1 report=false progress=false` (basic launcher, "
           "one process), timed from launch to exit; CPU: the process's user + system seconds."]
    if rows:
        out.append(markdown_table(
            ["round", "code", "jobs", "wall s", "CPU s", "training s", "fixed wall s / job", "fixed CPU s / job",
             "statuses"],
            [[r["round"] + 1, f"{r['code']} ({r['where']})", r["jobs"], f"{r['wall_s']:.1f}", f"{r['cpu_s']:.1f}",
              f"{r['train_s']:.2f}", f"{r['fixed_wall_s']:.3f}", f"{r['fixed_cpu_s']:.3f}",
              ", ".join(f"{k} {v}" for k, v in sorted(r["statuses"].items()))] for r in rows]))
    if against is not None and rows:
        means = side_means(rows)
        new, base = means["new"], means["base"]
        out.append(f"Fixed cost per job, mean: wall {new['wall']:.3f} s against {base['wall']:.3f} s "
                   f"({new['wall'] / base['wall']:.2f}x), CPU {new['cpu']:.3f} s against "
                   f"{base['cpu']:.3f} s ({new['cpu'] / base['cpu']:.2f}x); target <= {TARGET}x. The whole sweep, "
                   f"mean wall: {new['sweep']:.1f} s against {base['sweep']:.1f} s ({new['sweep'] / base['sweep']:.2f}x). "
                   "`normbench compare BASE NEW --exact` on each round's two sweeps: "
                   + ", ".join(f"{k}: {'identical' if v == 0 else f'exit {v} (differ)'}" for k, v in exact.items())
                   + ".")
    if found:
        whole = found["whole sweep"] or 1.0
        out.append(f"Where one sweep of this code's time goes (cProfile, {found['jobs']} jobs; cumulative seconds, "
                   "a part's 'of which' lines are inside it):")
        out.append(markdown_table(["part", "s", "share of the sweep", "s per job"],
                                  [[part, f"{found[part]:.2f}", f"{found[part] / whole:.0%}",
                                    f"{found[part] / max(found['jobs'], 1):.3f}"] for part, _ in PARTS]
                                  + [["whole sweep", f"{whole:.2f}", "100%", f"{whole / max(found['jobs'], 1):.3f}"]]))
    return "\n\n".join(out)


if __name__ == "__main__":
    from normbench.bench import as_command

    as_command("sweep", "--profile")
