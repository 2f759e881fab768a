"""Benchmark: how long and how much memory the report takes over a large synthetic sweep.

    python -m normbench.bench.report_scale --runs 500 [--jobs N]

Writes `--runs` synthetic records (a norm x placement x lr x batch grid over two models, with
seeds; about 1 in 12 diverged, a few still "running") into a temporary directory, then times
`python -m normbench.report` on them in a child process (with `--jobs N` where given: the processes its
figures are drawn in) and prints its wall seconds and peak RSS (the largest of its processes).
The budget is 30 s and 1 GB for 500 runs. A benchmark, not a test.
"""

from __future__ import annotations

import itertools
import json
import math
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from normbench.checks import OneLineParser
from normbench.configuration.contract import RECORD_FORMAT, config_hash, config_of

_NORMS = ("none", "ln", "rms", "bn", "scale")  # a fixed sample of the kinds: docs/performance.md times this grid
_PLACEMENTS = {"transformer": ("pre", "post"), "lstm": ("in_cell", "post")}
_LRS = (3e-4, 1e-3, 3e-3)
_BATCHES = (8, 64)


def _settings():
    for model, norm, lr, batch in itertools.product(_PLACEMENTS, _NORMS, _LRS, _BATCHES):
        for placement in (("none",) if norm == "none" else _PLACEMENTS[model]):
            yield {"model": model, "task": "copy", "norm": norm, "placement": placement, "precision": "fp32",
                   "impl": "torch", "eps": 1e-5, "gamma_init": 1.0, "batch_size": batch, "lr": lr,
                   "warmup_steps": 100, "layers": 4, "hidden": 256, "optim": "adamw", "steps": 2000,
                   "norm_fp32": False}


def write_sweep(root: Path, runs: int, seed: int = 0) -> None:
    """``runs`` synthetic run records under ``root/multirun``, the same for the same ``seed``."""
    rng = random.Random(seed)
    settings = list(_settings())
    seeds = max(1, math.ceil(runs / len(settings)))
    jobs = [(axes, s) for s in range(seeds) for axes in settings][:runs]
    for index, (axes, run_seed) in enumerate(jobs):
        run_dir = root / "multirun" / str(index)
        run_dir.mkdir(parents=True)
        quality = 0.55 + 0.3 * (axes["norm"] != "none") + rng.gauss(0, 0.03)
        status = "diverged" if rng.random() < 0.08 else "running" if rng.random() < 0.01 else "ok"
        step_ms = 20 + 5 * (axes["norm"] == "ln") + rng.random()
        lines, reached = _lines(axes, quality, step_ms, rng)
        text = "".join(json.dumps(line) + "\n" for line in lines)
        if status == "running":
            text = text[: len(text) // 2]  # killed mid-run: the last line is cut short
        (run_dir / "metrics.jsonl").write_text(text)
        summary = _summary(axes, run_seed, status, quality, step_ms, reached, rng)
        (run_dir / "summary.json").write_text(json.dumps(summary))


def _lines(axes: dict, quality: float, step_ms: float, rng: random.Random) -> tuple[list[dict], int | None]:
    """One run's metrics.jsonl lines (train every 10 steps, eval every 100, probe every 200), and the step
    its evaluation first reached the target 0.8."""
    lines, reached = [], None
    for step in range(10, axes["steps"] + 1, 10):
        lines.append({"kind": "train", "step": step, "loss": 2.5 / math.sqrt(step), "lr": axes["lr"],
                      "grad_norm": 0.5 + 20 / math.sqrt(step) * rng.random(), "time_s": step * step_ms / 1e3})
        if step % 100 == 0:
            value = quality * (1 - math.exp(-step / 400))
            reached = reached or (step if value >= 0.8 else None)
            lines.append({"kind": "eval", "step": step, "val_metric": value, "val_loss": 1 - value,
                          "time_s": step * step_ms / 1e3})
        if step % 200 == 0:
            layers = {f"layers.{i}.{part}": rng.random() for i in range(axes["layers"])
                      for part in ("attn", "mlp", "norm1", "norm2")}
            lines.append({"kind": "probe", "step": step, "grad_std": 0.01, "grad_kurtosis": 3 + rng.random(),
                          "layer_grad_norm": layers, "act_max_abs": layers, "act_rms": layers})
    return lines, reached


def _summary(axes: dict, run_seed: int, status: str, quality: float, step_ms: float,
             reached: int | None, rng: random.Random) -> dict:
    """One run's summary.json, as the runner writes it."""
    recurrent = axes["model"] == "lstm"
    profiles = {"layer_grad_norm_init": {f"layers.{i}": 1 / math.sqrt(i + 1) for i in range(axes["layers"])}}
    if recurrent:
        profiles["grad_time_init"] = [10 ** (-2 * (100 - t) / 99) for t in range(1, 101)]
        profiles["grad_time_final"] = [10 ** (-1 * (100 - t) / 99) for t in range(1, 101)]
    config = config_of(axes, run_seed, axes["steps"])
    return {
        "schema": RECORD_FORMAT, "status": status,
        "reason": None if status in ("ok", "running") else f"{status} (synthetic)",
        "config": config, "overrides": [], "config_hash": config_hash(config),
        "axes": axes, "seed": run_seed, "study": None,
        "task": {"name": "copy", "metric": "accuracy", "higher_is_better": True, "chance": 0.1, "target": 0.8},
        "metrics": {"best_val": quality, "final_val": quality, "test": quality, "final_train_loss": 0.05,
                    "steps_to_target": reached, "seconds_to_target": reached and reached * step_ms / 1e3,
                    "diverged_at_step": 700 if status == "diverged" else None,
                    "last_finite_loss": 4.0 if status == "diverged" else None, "loss_spikes": 0,
                    "loss_spike_steps": [], "grad_norm_median": 1.0, "grad_norm_max": 30.0, "grad_std": 0.01,
                    "grad_kurtosis": 3 + rng.random() * 5, "grad_kurtosis_max": 9.0, "act_max_abs": 5.0,
                    "act_rms": 1.0, "grad_time_ratio_init": -2.0 if recurrent else None,
                    "grad_time_ratio": -1.0 if recurrent else None, "bn_train_eval_gap": None},
        "profiles": profiles,
        "throughput": {"step_ms_median": step_ms, "step_ms_p10": step_ms - 1, "step_ms_p90": step_ms + 2,
                       "timed_steps": 1900, "warmup_steps_excluded": 10,
                       "samples_per_s": axes["batch_size"] / step_ms * 1e3,
                       "tokens_per_s": axes["batch_size"] / step_ms * 1e3 * 64,
                       "peak_memory_mb": 300 + axes["batch_size"], "memory_kind": "cuda_max_allocated"},
        "environment": {"python": "3.11", "torch": "2.5.1", "device": "cuda", "device_name": "synthetic GPU",
                        "cuda": "12.4", "cudnn": 90100, "threads": 16, "hostname": "bench", "platform": "linux",
                        "normbench_version": "0.1.0", "git_commit": "synthetic"},
        "time": {"started": "2025-01-01T00:00:00Z", "ended": "2025-01-01T00:01:00Z", "wall_s": 60.0,
                 "train_s": axes["steps"] * step_ms / 1e3},
    }


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m normbench.bench.report_scale", description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--jobs", type=int, default=None, help="the report's --jobs (default: its own default)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="normbench-bench-") as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        write_sweep(root, args.runs)
        print(f"wrote {args.runs} records in {time.perf_counter() - started:.1f} s")
        started = time.perf_counter()
        jobs = [] if args.jobs is None else ["--jobs", str(args.jobs)]
        result = subprocess.run([sys.executable, "-m", "normbench.report", str(root / "multirun"),
                                 "--out", str(root / "report"), *jobs], capture_output=True, text=True)
        seconds = time.perf_counter() - started
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # KiB on Linux
        if result.returncode != 0:
            print(result.stderr, file=sys.stderr)
            return result.returncode
        drawn = "default jobs" if args.jobs is None else f"--jobs {args.jobs}"
        print(f"report over {args.runs} runs ({drawn}): {seconds:.1f} s, peak RSS {peak_mb:.0f} MB "
              f"(budget: 30 s, 1024 MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
