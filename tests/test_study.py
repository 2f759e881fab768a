"""The study runner: arguments checked up front, rounds of seeds, the plan and report written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from normbench.study import StudyArgumentError, _parse, budget_seconds

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("argv, words", [
    (["--budget", "0"], "--budget"), (["--budget", "soon"], "--budget"), (["seed=0,1"], "seeds"),
    (["--pilot", "1"], "--pilot"), (["--max-seeds", "2", "--pilot", "3"], "--max-seeds"),
    (["--alpha", "0.7"], "--alpha"), (["--jobs", "0"], "--jobs"), (["--frobnicate"], "unknown option"),
])
def test_bad_arguments_are_one_line(argv, words):
    with pytest.raises(StudyArgumentError, match=words):
        _parse(argv)


def test_budget_units():
    assert budget_seconds("90s") == 90 and budget_seconds("2m") == 120 and budget_seconds("1.5h") == 5400


def test_bad_arguments_exit_2_without_a_traceback():
    result = subprocess.run([sys.executable, "-m", "normbench.study", "--budget", "-3"], capture_output=True,
                            text=True, cwd=ROOT)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_a_tiny_study_runs_rounds_and_writes_its_plan_and_report(tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    result = subprocess.run([sys.executable, "-m", "normbench.study", "norm=ln,none", "steps=4", "eval_every=2",
                             "--pilot", "2", "--step", "1", "--max-seeds", "3", "--jobs", "1", "--out", str(tmp_path)],
                            capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    plan = json.loads((tmp_path / "sequential.json").read_text())
    assert plan["looks"] == [2, 3] and abs(sum(plan["levels"]) - 0.05) < 1e-12
    seeds = {json.loads(p.read_text())["seed"] for p in tmp_path.rglob("summary.json")}
    assert seeds == set(range(len(plan["rounds"]) + 1))  # 2 seeds in the pilot, 1 more per further round
    studies = {json.loads(p.read_text())["study"]["id"] for p in tmp_path.rglob("summary.json")}
    assert len(studies) == 1  # every round belongs to one study
    assert (tmp_path / "report.html").is_file()
    assert "normbench.study: round 1 of at most 2: 2 seeds per arm" in result.stdout  # progress (normbench/progress.py)
    answer = result.stdout[result.stdout.index("normbench.study: answer after"):]  # the answer comes last
    assert "stopped at the maximum seed count" in answer or "every question decided" in answer
    assert "digits: ranked first " in answer and "  undecided: " in answer
