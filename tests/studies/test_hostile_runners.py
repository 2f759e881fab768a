"""The study and tune runners on hostile input (issue 50): every write under --out, bad input refused
before any run in one line with exit status 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from normbench.studies import children, study, tune


def sweep_dirs(args: list[str]) -> list[str]:
    return [a.split("=", 1)[1] for a in args if a.lstrip("+~").split("=", 1)[0] in ("hydra.sweep", "hydra.sweep.dir")]


@pytest.mark.parametrize("given", ["hydra.sweep.dir={}", "+hydra.sweep.dir={}", "++hydra.sweep.dir={}",
                                   "hydra.sweep={{dir:{}}}"])
def test_the_runners_child_sweeps_only_into_their_own_folder(given, tmp_path):
    args = children.into_folder(["-m", "norm=ln", given.format(tmp_path / "elsewhere"), "threads=1"], "mine")
    assert sweep_dirs(args) == ["mine"] and args[-1] == "hydra.sweep.dir=mine" and "threads=1" in args


def test_tune_writes_both_stages_under_out_whatever_hydra_sweep_dir_says(tmp_path, monkeypatch):
    # P123: the user's hydra.sweep.dir reached the evaluation stage after tune's own, and won
    stages = []
    monkeypatch.setattr(tune, "_normbench", lambda args: stages.append(args) or 0)
    monkeypatch.setattr(tune, "write_arms", lambda selection, arms: [("arm000", "adding: ln", 0.01)])
    out = tmp_path / "out"
    tune.main(["--out", str(out), "norm=ln", f"hydra.sweep.dir={tmp_path / 'elsewhere'}"])
    assert [sweep_dirs(args) for args in stages] == [[f"'{out / 'selection'}'"], [f"'{out / 'evaluation'}'"]]


def test_a_study_round_sweeps_only_into_its_own_folder(tmp_path, monkeypatch):
    ran = []
    monkeypatch.setattr(children, "run", lambda command, **kw: ran.append(command) or 2)
    monkeypatch.setattr(study, "check_config", lambda overrides: None)
    study.main(["--out", str(tmp_path / "out"), "norm=ln", f"hydra.sweep.dir={tmp_path / 'elsewhere'}"])
    assert [sweep_dirs(command) for command in ran] == [[str(Path(tmp_path / "out" / "round-1"))]]
