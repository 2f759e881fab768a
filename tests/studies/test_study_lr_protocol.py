"""The study runner's lr protocol: declared or inferred, refused when the sweep contradicts it, and a tuned
study's two stages (selection on seeds apart from the verdict seeds, rounds at each arm's chosen lr)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from normbench.studies import lr_protocol
from normbench.studies.lr_protocol import ProtocolError, declared, resolve
from normbench.studies.study import StudyArgumentError, lr_plan
from normbench.studies.tune import lr_values
from tests.waiting import HANG_S

ROOT = Path(__file__).resolve().parents[2]


def _sweep(tmp_path: Path, header: str, lr: str | None) -> Path:
    path = tmp_path / "s.yaml"
    params = {"norm": "ln,none", **({"lr": lr} if lr else {})}
    path.write_text(f"# @package _global_\n# A question.\n{header}\n" + yaml.safe_dump({"hydra": {"sweeper": {"params": params}}}))
    return path


@pytest.mark.parametrize("header, lr, command, kind, grid", [
    ("", "0.001,0.003,0.01", [], "tuned", (0.001, 0.003, 0.01)),       # a grid tunes by default
    ("", None, [], "shared", ()),                                       # no lr given: the config's, shared
    ("", None, ["lr=0.01"], "shared", (0.01,)),
    ("# lr protocol: fixed: warm-up fails at a large lr", "0.01", [], "fixed", (0.01,)),
    ("# lr protocol: swept: the question is the stable range", "0.001,0.01", [], "swept", (0.001, 0.01)),
    ("", "0.001,0.003,0.01", ["lr=0.02"], "shared", (0.02,)),           # the command line wins
])
def test_the_protocol_is_declared_or_inferred(tmp_path, header, lr, command, kind, grid):
    path = _sweep(tmp_path, header, lr)
    plan = resolve(command, {"lr": lr} if lr else {}, path)
    assert (plan.kind, plan.grid) == (kind, grid)
    if kind == "fixed":
        assert plan.why == "warm-up fails at a large lr"
        assert plan.stamp({"id": "x"}) == {"id": "x", "lr_protocol": "fixed", "lr_why": plan.why}


@pytest.mark.parametrize("header, lr, words", [
    ("", "0.001,0.01", "at least 3 values"),                             # two lrs cannot show a best inside the grid
    ("# lr protocol: tuned", "0.01", "at least 3 values"),
    ("# lr protocol: fixed: one lr", "0.001,0.003,0.01", "runs 3 lrs"),
    ("# lr protocol: tuneed", "0.01", "is not one of"),
])
def test_a_protocol_the_sweep_contradicts_is_refused_in_one_line(tmp_path, header, lr, words):
    path = _sweep(tmp_path, header, lr)
    with pytest.raises(ProtocolError, match=words):
        resolve([], {"lr": lr}, path)


def test_the_runner_refuses_a_two_value_grid_before_any_round():
    with pytest.raises(StudyArgumentError, match="at least 3 values"):
        lr_plan(["norm=ln,none", "lr=0.001,0.01"])


def test_every_shipped_sweep_states_a_protocol_that_runs():
    """Each shipped sweep's header declares its protocol, and the runner can resolve it."""
    for path in sorted((ROOT / "sweeps").glob("*.yaml")):
        if path.stem == "smoke":
            continue
        said = declared(path)
        assert said is not None, f"{path.name} has no '# lr protocol:' line"
        params = yaml.safe_load(path.read_text())["hydra"]["sweeper"]["params"]
        plan = resolve([f"+sweep={path.stem}"], {k: str(v) for k, v in params.items()}, path)
        assert plan.kind == said[0]
        if plan.kind in ("fixed", "swept"):
            assert plan.why, f"{path.name}: a fixed or swept lr says why"


def test_lr_values_reads_hydra_sweeps():
    assert lr_values(["lr=range(1,4)"], None) == (1.0, 2.0, 3.0)
    assert lr_values([], {"lr": "choice(0.1,0.01)"}) == (0.01, 0.1)


def test_the_rounds_run_each_chosen_arm_by_name_as_evaluation(tmp_path):
    rounds = lr_protocol.evaluation_overrides(["norm=ln,none", "lr=0.001,0.003,0.01", "threads=1"], tmp_path,
                                              ["arm000", "arm001"])
    assert rounds[:2] == ["+tuned_arm=arm000,arm001", "role=evaluation"]
    assert f"file://{tmp_path / 'arms'}" in rounds[2] and rounds[3:] == ["threads=1"]  # the arms live in the files
    assert not set(lr_protocol.SELECTION_SEEDS) & set(range(1000))  # apart from every verdict seed


@pytest.mark.slow
def test_a_tiny_tuned_study_selects_then_compares_at_each_arms_lr(tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    result = subprocess.run([sys.executable, "-m", "normbench", "study", "norm=ln,none", "lr=0.001,0.003,0.01",
                             "steps=4", "eval_every=2", "--pilot", "2", "--max-seeds", "2", "--jobs", "1",
                             "--out", str(tmp_path)], capture_output=True, text=True, cwd=ROOT, env=env, timeout=HANG_S)
    assert result.returncode == 0, result.stderr[-2000:]
    records = [json.loads(p.read_text()) for p in tmp_path.rglob("summary.json")]
    selection = [r for r in records if r["config"]["role"] == "selection"]
    evaluation = [r for r in records if r["config"]["role"] == "evaluation"]
    assert {r["seed"] for r in selection} == set(lr_protocol.SELECTION_SEEDS) and len(selection) == 12
    assert {r["seed"] for r in evaluation} == {0, 1} and len(evaluation) == 4
    assert {r["study"]["id"] for r in records} == {json.loads((tmp_path / "sequential.json").read_text())["study"]}
    assert all(r["study"]["lr_protocol"] == "tuned" for r in records)
    assert result.stdout.count("normbench.study: selected lr ") == 2
    report = (tmp_path / "report.md").read_text()
    assert "Learning rate: tuned per arm: grid 0.001, 0.003, 0.01 on selection seeds 1000, 1001" in report


def _record_factory():
    """tests/report/conftest.py's crafted-record writer (as tests/analysis/conftest.py loads it)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("record_factory", ROOT / "tests" / "report" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.write_record


def test_an_arm_without_a_chosen_lr_is_left_out_not_a_crash(tmp_path):
    """One arm trains at some lr, the other never trains (its lr column is NaN beside a float): the arm files
    hold the first only (a NaN once passed the 'no lr chosen' check and stopped the study)."""
    from normbench.studies.tune import write_arms

    write_record, index = _record_factory(), 0
    for norm, scores in (("ln", {1e-3: 0.9, 1e-2: 0.95, 3e-2: 0.92}), ("none", {1e-3: None, 1e-2: None, 3e-2: None})):
        for lr, score in scores.items():
            for seed in lr_protocol.SELECTION_SEEDS:
                write_record(tmp_path / "selection", f"r{index}", seed=seed, status="ok" if score else "diverged",
                             best_val=score, axes={"norm": norm, "lr": lr, "role": "selection",
                                                   "placement": "none" if norm == "none" else "pre"})
                index += 1
    written = write_arms(tmp_path / "selection", tmp_path / "arms")
    assert [(label.split(": ")[1], lr) for _, label, lr in written] == [("norm=ln, placement=pre", 1e-2)]
