"""A study runs where a sweep runs: `normbench study` and `normbench tune` take the sweep's launcher
choice (hydra/launcher=NAME), each round (each stage) one launch of it; real submitit, tiny."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from normbench.studies.study import launch_overrides

ROOT = Path(__file__).resolve().parents[2]
TINY = ["steps=4", "eval_every=2", "model.hidden=8"]


@pytest.mark.parametrize("overrides, jobs, expected", [
    ([], 2, ["hydra/launcher=local", "hydra.launcher.n_jobs=2", "threads=1"]),   # the default pool
    ([], 1, ["threads=1"]),
    (["hydra/launcher=submitit_local"], 2, ["threads=1"]),
    (["hydra/launcher=joblib"], 3, ["hydra.launcher.n_jobs=3", "threads=1"]),
    (["hydra/launcher=slurm", "hydra.launcher.partition=gpu"], 2, []),          # the cluster's config decides
    (["hydra/launcher=local", "hydra.launcher.n_jobs=4", "threads=2"], 2, []),  # what the user typed stands
])
def test_the_runner_keeps_the_launcher_the_user_names(overrides, jobs, expected):
    assert launch_overrides(overrides, jobs) == expected
    assert "hydra/launcher=local" not in launch_overrides(overrides, jobs) or not overrides


def _run(module: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    # no wall-clock bound on the verdict: a loaded machine only makes it slower (the suite's timeout guards hangs)
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, cwd=ROOT, env=env)


def _records(folder: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in folder.rglob("summary.json")]


def test_a_study_runs_its_rounds_through_submitit(tmp_path):
    out = tmp_path / "study"
    result = _run("normbench.studies.study", "hydra/launcher=submitit_local", "norm=ln,none", *TINY,
                  "--pilot", "2", "--step", "1", "--max-seeds", "3", "--jobs", "2", "--out", str(out))
    assert result.returncode == 0, result.stderr[-2000:]
    rounds = sorted(p.name for p in out.glob("round-*"))
    assert rounds and all((out / r / ".submitit").is_dir() for r in rounds)  # each round one submitit launch
    assert "hydra/launcher=local" not in result.stdout and "hydra/launcher=submitit_local" in result.stdout
    found = _records(out)
    assert {r["status"] for r in found} == {"ok"} and len({r["study"]["id"] for r in found}) == 1
    assert len(found) == 2 * (len(rounds) + 1)  # 2 arms x (2 pilot seeds + 1 a further round)
    assert "normbench.study: answer after" in result.stdout and (out / "report.md").is_file()


@pytest.mark.slow
def test_tune_runs_both_stages_through_submitit(tmp_path):
    out = tmp_path / "tune"
    result = _run("normbench.studies.tune", "--out", str(out), "--evaluation-seeds", "100,101",
                  "hydra/launcher=submitit_local", "norm=ln", "lr=0.003,0.01,0.03",
                  *TINY)
    assert result.returncode == 0, result.stderr[-2000:]
    assert (out / "selection" / ".submitit").is_dir() and (out / "evaluation" / ".submitit").is_dir()
    assert len(_records(out / "selection")) == 6 and len(_records(out / "evaluation")) == 2
