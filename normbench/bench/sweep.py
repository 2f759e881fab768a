"""A sweep of N runs on the Hydra joblib launcher (parallel workers) against the basic one (in turn).

Both are real ``python -m normbench -m ...`` subprocesses, timed by wall clock from launch to exit,
so interpreter and launcher start-up are counted: the speed-up is what a user waiting for the
sweep gets. Each sweep's own account of its time (its ``efficiency.json``, normbench/records/sweep_time.py)
gives its efficiency, summed training time / (wall time x workers), and where the rest went.
Every run uses one thread (``threads=1``), so the parallel sweep does not oversubscribe the
cores, and writes no report (``report=false``). The pair is run in both orders (parallel then
sequential, then sequential then parallel) and the two speed-ups averaged, so neither always
runs on a warmer or quieter machine.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from normbench.bench.section import RatioLine, Section, bench_environment, markdown_table
from normbench.records import sweep_time
from normbench.records.record import RunRecord, read_summary

SPEEDUP_TARGET = 1.0  # sequential wall time / parallel wall time with 2 workers on 2 cores: the parallel sweep is faster
EFFICIENCY_TARGET = 0.8  # the sequential sweep's summed training time / its wall time
# Small runs of the default setup: start-up (~seconds) must not dominate, the whole comparison must stay short.
DEFAULT_OVERRIDES = ["steps=800"]
QUICK_OVERRIDES = ["task=adding", "task.length=10", "task.n_train=256", "task.n_val=64", "task.n_test=64",
                   "model.hidden=16", "model.embed=8", "steps=60", "eval_every=30"]


def sweep_command(runs: int, overrides: list[str], jobs: int | None) -> list[str]:
    """``python -m normbench -m`` over seeds 0..runs-1; joblib with ``jobs`` workers, or basic if None."""
    command = [sys.executable, "-m", "normbench", "-m", f"seed={','.join(str(s) for s in range(runs))}",
               *overrides, "threads=1", "report=false", "progress=false"]
    if jobs is not None:  # the project's joblib preset (conf/hydra/launcher/local.yaml)
        command += ["hydra/launcher=local", f"hydra.launcher.n_jobs={jobs}"]
    return command


def timed_sweep(command: list[str], sweep_dir: Path, runs: int, timeout_s: float = 900) -> dict:
    """Wall seconds of one sweep subprocess, its runs' in-process seconds, and its own account of its time."""
    log = sweep_dir.with_suffix(".log")
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with open(log, "w") as out:
        done = subprocess.run([*command, f"hydra.sweep.dir={sweep_dir}"], stdout=out, stderr=subprocess.STDOUT,
                              timeout=timeout_s, env={**os.environ, "HYDRA_FULL_ERROR": "1"})
    wall = time.perf_counter() - start
    summaries = [r.summary for p in sorted(sweep_dir.rglob("summary.json"))
                 if isinstance(r := read_summary(p), RunRecord)]
    statuses = [s["status"] for s in summaries]
    if done.returncode != 0 or len(summaries) != runs or any(st != "ok" for st in statuses):
        tail = "".join(log.read_text().splitlines(keepends=True)[-15:])
        raise RuntimeError(f"sweep {' '.join(command[1:])} ended with status {done.returncode}, run statuses "
                           f"{statuses} (expected {runs} ok):\n{tail}")
    account = _account(sweep_dir)
    shares = account.get("shares", {})
    return {"wall_s": wall, "runs_wall_s": sum(s["time"]["wall_s"] for s in summaries),
            "runs_train_s": sum(s["time"].get("train_s", 0.0) for s in summaries),
            "efficiency": account.get("efficiency"), "loop_efficiency": account.get("loop_efficiency"),
            "sweep_wall_s": account.get("wall_s"),
            "after_end_s": None if account.get("wall_s") is None else wall - account["wall_s"],
            **{f"share_{k}": shares.get(k) for k in sweep_time.SHARES}}


def _account(sweep_dir: Path) -> dict:
    """The sweep's efficiency.json, or {} when it wrote none."""
    path = sweep_dir / sweep_time.RECORD
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def run(*, runs: int = 4, jobs: int = 2, steps: int | None = None, overrides: list[str] | None = None,
        quick: bool = False, command: str = "") -> Section:
    chosen = list(overrides or (QUICK_OVERRIDES if quick else DEFAULT_OVERRIDES))
    if steps is not None:
        chosen = [o for o in chosen if not o.startswith("steps=")] + [f"steps={steps}"]
    runs = min(runs, jobs) if quick else runs  # quick: one round of workers, the launcher path end to end
    orders = [("parallel", "sequential")] if quick else [("parallel", "sequential"), ("sequential", "parallel")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="normbench-sweep-") as tmp:
        for k, order in enumerate(orders):
            walls = {}
            for launcher in order:
                sweep_dir = Path(tmp) / f"{k}-{launcher}"
                cmd = sweep_command(runs, chosen, jobs if launcher == "parallel" else None)
                print(f"sweep: pair {k + 1}/{len(orders)}, {launcher} ({runs} runs) ...", flush=True)
                result = timed_sweep(cmd, sweep_dir, runs)
                walls[launcher] = result["wall_s"]
                rows.append({"pair": k, "order": ",".join(order), "launcher": launcher,
                             "jobs": jobs if launcher == "parallel" else 1, "runs": runs, **result,
                             "command": " ".join(["python", *cmd[1:]])})
            for row in rows[-2:]:
                row["speedup"] = walls["sequential"] / walls["parallel"]
    speedups = [rows[2 * k]["speedup"] for k in range(len(orders))]
    speedup = statistics.mean(speedups)
    efficiency = {launcher: _mean([r["efficiency"] for r in rows if r["launcher"] == launcher])
                  for launcher in ("sequential", "parallel")}
    env = bench_environment("cpu")
    ratios = [RatioLine(f"sweep of {runs} runs, joblib n_jobs={jobs} (threads=1 each)", speedup,
                        "the same runs in sequence (basic launcher)", command, target=f">= {SPEEDUP_TARGET}",
                        note="speed-up = sequential / parallel wall time, mean over "
                             + " and ".join("/".join(o) for o in orders)),
              RatioLine(f"efficiency of the sequential sweep of {runs} runs", efficiency["sequential"],
                        "its wall time (summed training time / wall time)", command,
                        target=f">= {EFFICIENCY_TARGET}", note="mean over its sweeps; efficiency.json of each"),
              RatioLine(f"efficiency of the parallel sweep ({jobs} workers)", efficiency["parallel"],
                        f"its wall time x {jobs} workers", command)]
    markdown = render_markdown(rows, speedup, chosen, env, command, jobs)
    return Section("sweep", command, env, rows, markdown, ratios,
                   {"overrides": chosen, "speedups": speedups, "efficiency": efficiency})


def _mean(values: list) -> float | None:
    known = [v for v in values if isinstance(v, (int, float))]
    return statistics.mean(known) if known else None


def render_markdown(rows, speedup, overrides, env, command, jobs) -> str:
    def share(r, key):
        value = r.get(f"share_{key}")
        return "—" if value is None else f"{value:.0%}"

    def number(value, form):
        return "—" if value is None else format(value, form)

    overhead = ("startup", "composition", "environment", "setup", "evaluation", "writing", "report", "idle")
    table = markdown_table(
        ["pair", "launcher", "wall s (launch to exit)", "sum of runs' training s", "efficiency",
         "with evaluation",
         *[f"{k} share" for k in overhead], "exit s", "speed-up"],
        [[r["pair"], r["launcher"], f"{r['wall_s']:.1f}", f"{r['runs_train_s']:.1f}", number(r["efficiency"], ".2f"),
          number(r.get("loop_efficiency"), ".2f"), *[share(r, k) for k in overhead], number(r["after_end_s"], ".1f"), f"{r['speedup']:.2f}"] for r in rows])
    return "\n\n".join([
        f"## Sweep launcher: joblib ({jobs} workers) vs sequential\n\n`{command}`\n\n{env['cpu_count']} cores "
        f"({env['device_name']}). Each sweep is "
        f"`python -m normbench -m seed=... {' '.join(overrides)} threads=1 report=false`, timed from launch to exit.",
        table,
        f"Mean speed-up {speedup:.2f}x (target >= {SPEEDUP_TARGET}: the parallel sweep is faster). Efficiency: the runs' "
        f"summed training time / (the sweep's wall time x workers), target >= {EFFICIENCY_TARGET} in sequence; the "
        "shares say where the rest of the workers' time went (normbench/records/sweep_time.py), from the sweep's "
        "efficiency.json, whose wall time ends with its last line; with evaluation: the runs' whole training "
        "loops (evaluation, probes, logging) counted as training; exit s: the process's exit after its last line.",
    ])


if __name__ == "__main__":
    from normbench.bench import as_command

    as_command("sweep")
