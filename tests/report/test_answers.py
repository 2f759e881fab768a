"""The first screen's answer: the best of what is shown, and plain words when arms cannot be told apart."""

from __future__ import annotations

import numpy as np
import pandas as pd

from normbench.analysis.aggregate import label_groups, summarize_groups, varying_axes
from normbench.analysis.ranking import design_power
from normbench.report.answers import answers


def _answer(runs_of, values: dict[str, list[float]], **study):
    rows = [{"seed": s, "best_val": v, "axes": {"norm": norm},
             "study": {"schema": "normbench.study/1", "id": "abc", "name": "mine", "purpose": "Which norm?",
                       "arms": ["norm"], "command": "python -m normbench -m norm=ln,rms seed=0,1,2", **study}}
            for norm, vs in values.items() for s, v in enumerate(vs)]
    runs = runs_of(*rows)
    runs = label_groups(runs, varying_axes(runs))
    summary = summarize_groups(runs, varying_axes(runs))
    return answers(runs, summary, varying_axes(runs)), summary


def test_the_named_best_is_the_best_mean_shown(runs_of):
    (answer,), summary = _answer(runs_of, {"ln": [0.90, 0.91, 0.92], "rms": [0.95, 0.96, 0.97], "bn": [0.5, 0.51, 0.52]})
    top = summary.loc[summary["final_val_mean"].idxmax()]
    assert answer.headline.startswith(f"On copy, {top['arm']} ranks first") and top["rank"] == 1
    assert answer.study == "mine: Which norm?" and answer.also == "Every other arm is shown worse. "


def test_arms_that_cannot_be_told_apart_are_said_so_with_the_seeds_that_would(runs_of):
    (answer,), summary = _answer(runs_of, {"ln": [0.90, 0.80, 0.85], "rms": [0.88, 0.82, 0.84]})
    assert not summary["best"].any()
    assert "cannot be told apart at 3 seeds" in answer.also and "smallest difference this design detects" in answer.also
    assert answer.command.startswith("python -m normbench.study norm=ln,rms") and "seed=" not in answer.command


def test_one_seed_arms_are_listed_not_ranked(runs_of):
    (answer,), _ = _answer(runs_of, {"ln": [0.9], "rms": [0.8]})
    assert "no arm is ranked yet" in answer.headline and len(answer.single) == 2


def test_design_power_grows_seeds_for_small_differences():
    spread = np.array([-0.05, 0.0, 0.05])
    mde, needed, largest = design_power({"a": 0.90 + spread, "b": 0.88 + spread})
    assert mde > largest and needed is not None and needed > 3


def test_every_study_gets_its_answer_when_one_study_has_roles(runs_of):
    """A tuned study's runs carry a role; the other studies' runs do not (role is inert there)."""
    base = {"schema": "normbench.study/1", "arms": ["norm"], "command": ""}
    rows = [{"seed": s, "best_val": v + 0.01 * s, "axes": {"norm": n, **extra}, "study": {**base, "id": sid, "name": sid}}
            for sid, extra in (("plain", {}), ("tuned", {"role": "selection"}))
            for n, v in (("ln", 0.9), ("rms", 0.7)) for s in range(3)]
    runs = runs_of(*rows)
    runs = label_groups(runs, varying_axes(runs))
    summary = summarize_groups(runs, varying_axes(runs))
    assert summary["comparison"].notna().all()
    assert [a.study.split(":")[0] for a in answers(runs, summary, varying_axes(runs))] == ["plain", "tuned"]


def test_an_arm_whose_runs_all_diverged_is_listed_as_such_not_as_one_seed(runs_of):
    rows = [{"seed": s, "best_val": 0.9 + 0.01 * s, "axes": {"norm": "ln"}} for s in range(3)]
    rows += [{"seed": s, "status": "diverged", "best_val": None, "axes": {"norm": "rms"}} for s in range(3)]
    runs = runs_of(*rows)
    runs = label_groups(runs, varying_axes(runs))
    (answer,) = answers(runs, summarize_groups(runs, varying_axes(runs)), varying_axes(runs))
    assert answer.single == ["norm=rms: all 3 runs diverged"]
