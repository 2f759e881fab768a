"""Run records written by hand, following docs/run-record.md, for the report's tests."""

from __future__ import annotations

import fcntl
import json
import math
import os
import tempfile
from pathlib import Path

import pytest

from normbench.configuration.contract import RECORD_FORMAT, config_hash, config_of
from normbench.page_check.screenshot import NoBrowser, find_chromium

try:
    find_chromium()
    NO_BROWSER = ""
except NoBrowser as missing:
    NO_BROWSER = str(missing)
# the mark of every test that opens a page in Chromium: skipped, with the reason, where none is installed
needs_browser = pytest.mark.skipif(bool(NO_BROWSER), reason=NO_BROWSER or "chromium found")


DEFAULT_AXES = {
    "model": "transformer", "task": "copy", "norm": "ln", "placement": "pre", "precision": "fp32",
    "impl": "native", "eps": 1e-5, "gamma_init": 1.0, "batch_size": 32, "lr": 1e-3, "warmup_steps": 0,
    "layers": 2, "hidden": 64, "optim": "adamw", "steps": 100, "norm_fp32": False,
}
TASKS = {
    "copy": {"name": "copy", "metric": "accuracy", "higher_is_better": True, "chance": 0.1, "target": 0.9},
    "adding": {"name": "adding", "metric": "mse", "higher_is_better": False, "chance": 0.167, "target": 0.01},
    "digits": {"name": "digits", "metric": "accuracy", "higher_is_better": True, "chance": 0.1, "target": 0.9},
    # tasks that declare trivial solutions (normbench/tasks/trivial.py): 4 pairs, 64 values; a character model
    "mqar": {"name": "mqar", "metric": "accuracy", "higher_is_better": True, "chance": 1 / 64, "target": 0.9,
             "trivial": {"any value from the context": 0.25}},
    "fortunes_lm": {"name": "fortunes_lm", "metric": "bpc", "higher_is_better": False, "chance": 4.79, "target": 2.5,
                    "trivial": {"unigram model": 4.78, "bigram model": 3.75}},
}


def _curve(best: float, chance: float, evals: int) -> list[float]:
    """Validation values that move from chance to `best` over `evals` evaluations and level off at the
    end (a run that has converged: analysis/regime.py gates a comparison whose runs are still improving)."""
    return [chance + (best - chance) * (1 - math.exp(-8 * (i + 1) / evals)) / (1 - math.exp(-8)) for i in range(evals)]


def make_record(name: str = "run", *, status: str = "ok", seed: int = 0, best_val: float | None = 0.95,
                axes: dict | None = None, metrics: dict | None = None, throughput: dict | None = None,
                profiles: dict | None = None, reason: str | None = None, eval_every: int = 25,
                log_every: int = 10, recurrent: bool = False, study: dict | None = None,
                environment: dict | None = None) -> tuple[dict, list[dict]]:
    """The summary.json object and the metrics.jsonl lines of one run."""
    axes = {**DEFAULT_AXES, **(axes or {})}
    task = TASKS[axes["task"]]
    steps = axes["steps"]
    evals = steps // eval_every
    higher = task["higher_is_better"]
    values = _curve(best_val if best_val is not None else task["chance"], task["chance"], evals)
    eval_steps = [eval_every * (i + 1) for i in range(evals)]
    reached = [s for s, v in zip(eval_steps, values) if (v >= task["target"] if higher else v <= task["target"])]
    step_ms = 12.0
    train_s = steps * step_ms / 1000

    lines = []
    for step in range(log_every, steps + 1, log_every):
        lines.append({"kind": "train", "step": step, "loss": 2.0 / step ** 0.5, "lr": axes["lr"],
                      "grad_norm": 1.5 + 0.1 * seed + 10.0 / step, "time_s": step * step_ms / 1000})
        if step % 50 == 0:
            lines.append({"kind": "probe", "step": step, "grad_std": 0.01, "grad_kurtosis": 3.3,
                          "layer_grad_norm": {"layers.0": 0.5, "layers.1": 0.4},
                          "act_max_abs": {"layers.0": 3.0}, "act_rms": {"layers.0": 1.0}})
    for step, value in zip(eval_steps, values):
        lines.append({"kind": "eval", "step": step, "val_metric": value, "val_loss": 1.0 - value,
                      "time_s": step * step_ms / 1000})
    lines.sort(key=lambda line: (line["step"], line["kind"] != "train"))

    summary_profiles = {"layer_grad_norm_init": {"embed": 1.0, **{f"layers.{i}": 0.5 for i in range(axes["layers"])}}}
    summary_metrics = {
        "best_val": best_val, "final_val": best_val, "test": best_val, "final_train_loss": 0.1,
        "steps_to_target": reached[0] if reached else None,
        "seconds_to_target": reached[0] * step_ms / 1000 if reached else None,
        "diverged_at_step": None, "last_finite_loss": None, "loss_spikes": 0, "loss_spike_steps": [],
        "grad_norm_median": 1.6, "grad_norm_max": 5.0, "grad_std": 0.01, "grad_kurtosis": 3.3,
        "grad_kurtosis_max": 4.0, "act_max_abs": 3.0, "act_rms": 1.0,
        "grad_time_ratio_init": -1.0 if recurrent else None, "grad_time_ratio": -0.8 if recurrent else None,
        "bn_train_eval_gap": 0.01 if axes["norm"] == "bn" else None,
    }
    if recurrent:
        summary_profiles["grad_time_init"] = [10 ** (-1.0 * (20 - t) / 19) for t in range(1, 21)]
        summary_profiles["grad_time_final"] = [10 ** (-0.8 * (20 - t) / 19) for t in range(1, 21)]
    summary = {
        "schema": RECORD_FORMAT,
        "status": status,
        "reason": reason if reason is not None or status in ("ok", "running") else f"{status} for a test",
        "config": config_of(axes, seed, steps),
        "overrides": [f"norm={axes['norm']}", f"seed={seed}"],
        "config_hash": config_hash(config_of(axes, seed, steps)),  # as the runner stores it (compare checks)
        "axes": axes,
        "seed": seed,
        "task": task,
        "study": study,
        "metrics": {**summary_metrics, **(metrics or {})},
        "profiles": {**summary_profiles, **(profiles or {})},
        "throughput": {"step_ms_median": step_ms, "step_ms_p10": 11.0, "step_ms_p90": 14.0, "timed_steps": steps - 5,
                       "warmup_steps_excluded": 5, "samples_per_s": axes["batch_size"] / step_ms * 1000,
                       "tokens_per_s": axes["batch_size"] / step_ms * 1000 * 20, "peak_memory_mb": 150.0,
                       "memory_kind": "process_max_rss", **(throughput or {})},
        "environment": {"python": "3.11.9", "torch": "2.5.1", "device": "cpu", "device_name": "test-cpu",
                        "cuda": None, "cudnn": None, "threads": 2, "hostname": "host", "platform": "linux",
                        "normbench_version": "0.1.0", "git_commit": "abc1234", **(environment or {})},
        "time": {"started": "2025-01-02T10:00:00Z", "ended": "2025-01-02T10:00:05Z", "wall_s": 5.0,
                 "train_s": train_s},
    }
    return summary, lines


def write_record(root: Path, name: str, **fields) -> Path:
    """One run directory with summary.json and metrics.jsonl (see make_record); returns it."""
    summary, lines = make_record(name, **fields)
    run_dir = root / name
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    (run_dir / "summary.json").write_text(json.dumps(summary))
    return run_dir


def runs_of(*records: dict):
    """The report's runs table for in-memory records (make_record's keyword arguments each)."""
    from normbench.analysis.aggregate import runs_frame
    from normbench.records.record import RunRecord

    return runs_frame(RunRecord(Path(f"/runs/{i}"), make_record(f"{i}", **fields)[0])
                      for i, fields in enumerate(records))




@pytest.fixture(name="write_record", scope="session")
def write_record_fixture():
    return write_record


@pytest.fixture(name="runs_of", scope="session")
def runs_of_fixture():
    return runs_of


def _study(name: str, arms: list[str], command: str) -> dict:
    return {"schema": "normbench.study/1", "id": f"{abs(hash(name)) % 16**12:012x}", "name": name,
            "purpose": f"Which {' and '.join(arms)} to use ({name}).", "swept": [*arms, "seed"], "arms": arms,
            "command": command}


def write_crafted_sweep(sweep: Path, norms: int = 5, lrs: int = 4, claim_study: bool = False) -> Path:
    """Records of two studies. The first has norms x 2 placements x lrs arms on copy (5 x 2 x 4 = 40,
    what used to break the figures; past 5 arms the curves become small multiples), 3 seeds for one
    arm and 2 for the rest, a diverged run and long arm labels; the second is a 4-arm recurrent
    study on adding whose throughput timing is noisy."""
    wide = _study("norm_placement_lr", ["norm", "placement", "lr"],
                  "python -m normbench -m norm=ln,rms,bn,ws_ln,scale_norm placement=pre,post lr=1e-4,3e-4,1e-3,3e-3 seed=0,1")
    small = _study("adding_norms", ["norm", "placement"], "python -m normbench -m task=adding norm=ln,bn placement=pre,post seed=0,1,2")
    index = 0
    for n, norm in enumerate(("ln", "rms", "bn", "ws_ln", "scale_norm")[:norms]):
        for p, placement in enumerate(("pre", "post")):
            for k, lr in enumerate((1e-4, 3e-4, 1e-3, 3e-3)[-lrs:]):
                for seed in range(3 if n == 0 and p == 0 else 2):
                    diverged = (norm, placement, lr, seed) == ("bn", "post", 3e-3, 1)
                    write_record(sweep, f"w{index}", seed=seed, study=wide,
                                 best_val=0.55 + 0.08 * k - 0.03 * n - 0.02 * p + 0.004 * seed,
                                 status="diverged" if diverged else "ok",
                                 axes={"task": "copy", "norm": norm, "placement": placement, "lr": lr})
                    index += 1
    for norm in ("ln", "bn"):
        for placement in ("pre", "post"):
            for seed in range(3):
                write_record(sweep, f"s{index}", seed=seed, study=small, recurrent=True,
                             best_val=0.02 + 0.01 * (norm == "bn") + 0.002 * seed,
                             axes={"task": "adding", "model": "lstm", "norm": norm, "placement": placement},
                             throughput={"step_ms_p90": 40.0, "step_ms_p10": 10.0, "samples_per_s": 1500.0 + 900 * seed})
                index += 1
    if claim_study:  # a study a claim judges (dyt_matches_ln: Pre-LN, LN beats none), for its claim table
        dyt = _study("dyt_vs_ln", ["norm"], "python -m normbench -m norm=ln,dyt,none placement=pre seed=0,1,2")
        for norm, score in (("ln", 0.80), ("dyt", 0.81), ("none", 0.50)):
            for seed in range(3):
                write_record(sweep, f"d{index}", seed=seed, study=dyt, best_val=score + 0.003 * seed,
                             axes={"task": "copy", "norm": norm, "placement": "none" if norm == "none" else "pre"})
                index += 1
    return sweep


@pytest.fixture(name="crafted_report", scope="session")
def crafted_report_fixture(tmp_path_factory):
    """report.html of write_crafted_sweep's 40-arm records (built once per session; slow tests only)."""
    from normbench.report import build_report

    return build_report([write_crafted_sweep(tmp_path_factory.mktemp("crafted"))], tmp_path_factory.mktemp("crafted_out"))


@pytest.fixture(name="small_crafted_report", scope="session")
def small_crafted_report_fixture(tmp_path_factory):
    """The same with 8 arms in the first study (2 norms x 2 placements x 2 lrs): small multiples, quick; and a
    third study that a claim judges (its claim table must read whole too). Its figures are drawn in forked
    children, as on any machine of 2 or more cores (test_figures_in_parallel compares it with one drawn alone).

    Built once a run: under pytest-xdist, tests in several modules read it, and the first worker to need it builds
    it in the folder the workers' own temporary folders share, while the other waits on a lock; its tests only read
    it. (About 20 s a build on 2 cores.)"""
    from normbench.report import build_report

    def build(root: Path) -> Path:
        sweep = write_crafted_sweep(root / "crafted_small", norms=2, lrs=2, claim_study=True)
        return build_report([sweep], root / "crafted_small_out", jobs=2)  # figures in forked children

    if not os.environ.get("PYTEST_XDIST_WORKER"):  # one process: the parent folder is shared by every earlier run
        return build(tmp_path_factory.mktemp("crafted"))
    shared = tmp_path_factory.getbasetemp().parent  # this run's, above each worker's own
    with open(shared / "small_crafted_report.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        built = shared / "small_crafted_report.path"
        if built.is_file():
            return Path(built.read_text())
        report = build(Path(tempfile.mkdtemp(prefix="crafted", dir=shared)))
        built.write_text(str(report))
        return report
