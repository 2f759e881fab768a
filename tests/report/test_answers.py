"""The first screen's answer: the best of what is shown, and plain words when arms cannot be told apart."""

from __future__ import annotations

import numpy as np

from normbench.analysis.ranking import design_power
from normbench.analysis.result import build, of_runs
from normbench.analysis.result import runs_of as distinct_runs_of
from normbench.report.answers import answers


def _answer(runs_of, values: dict[str, list[float]], **study):
    rows = [{"seed": s, "best_val": v, "axes": {"norm": norm},
             "study": {"schema": "normbench.study/1", "id": "abc", "name": "mine", "purpose": "Which norm?",
                       "arms": ["norm"], "command": "python -m normbench -m norm=ln,rms seed=0,1,2", **study}}
            for norm, vs in values.items() for s, v in enumerate(vs)]
    result = of_runs(runs_of(*rows))
    return answers(result), result.summary


def test_the_named_best_is_the_best_mean_shown(runs_of):
    (answer,), summary = _answer(runs_of, {"ln": [0.90, 0.91, 0.92], "rms": [0.95, 0.96, 0.97], "bn": [0.5, 0.51, 0.52]})
    top = summary.loc[summary["final_val_mean"].idxmax()]
    assert answer.headline.startswith(f"On copy, {top['arm']} ranks first") and top["rank"] == 1
    assert answer.study == "mine: Which norm?" and answer.also == "Every other arm is shown worse. "


def test_arms_that_cannot_be_told_apart_are_said_so_with_the_seeds_that_would(runs_of):
    (answer,), summary = _answer(runs_of, {"ln": [0.90, 0.80, 0.85], "rms": [0.88, 0.82, 0.84]})
    assert not summary["best"].any()
    assert "cannot be told apart at 3 seeds" in answer.also and "smallest difference this design detects" in answer.also
    assert answer.command.startswith("python -m normbench study norm=ln,rms") and "seed=" not in answer.command


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
    result = of_runs(runs_of(*rows))
    assert result.summary["comparison"].notna().all()
    assert [a.study.split(":")[0] for a in answers(result)] == ["plain", "tuned"]


def test_an_arm_whose_runs_all_diverged_is_listed_as_such_not_as_one_seed(runs_of):
    rows = [{"seed": s, "best_val": 0.9 + 0.01 * s, "axes": {"norm": "ln"}} for s in range(3)]
    rows += [{"seed": s, "status": "diverged", "best_val": None, "axes": {"norm": "rms"}} for s in range(3)]
    (answer,) = answers(of_runs(runs_of(*rows)))
    assert answer.single == ["norm=rms: all 3 runs diverged"]


def _answers_of(folders):
    from normbench.records.reading import find_records

    records = find_records(folders)
    runs, copies = distinct_runs_of(records)
    return answers(build(records, runs, copies))


def test_the_command_to_decide_carries_the_lr_optuna_found(tmp_path, write_record):
    study = {"schema": "normbench.study/1", "id": "abc", "name": "command line", "purpose": "", "arms": ["norm"],
             "command": "python -m normbench -m hydra/sweeper=optuna_lr norm=ln,rms seed=0"}
    for i, (norm, value) in enumerate((n, v) for n, vs in (("ln", (0.90, 0.80, 0.85)), ("rms", (0.88, 0.82, 0.84)))
                                      for v in vs):
        write_record(tmp_path / "sweep", str(i), seed=i % 3, best_val=value, axes={"norm": norm}, study=study)
    (answer,) = _answers_of([tmp_path / "sweep"])
    assert answer.command == "python -m normbench study norm=ln,rms --budget 30m"  # no Optuna results: as it was
    (tmp_path / "sweep" / "optimization_results.yaml").write_text(
        "name: optuna\nbest_params:\n  lr: 0.0081234\nbest_value: -0.9\n")
    (answer,) = _answers_of([tmp_path / "sweep"])
    assert answer.command == "python -m normbench study norm=ln,rms lr=0.0081234 --budget 30m"
    (tmp_path / "sweep" / "optimization_results.yaml").write_text("best_params: {lr: !!python/name:os.system}\n")
    (answer,) = _answers_of([tmp_path / "sweep"])  # read as data: a tag that would run code is no lr
    assert "lr=" not in answer.command


def test_a_tuned_studys_command_to_decide_is_tune_with_more_evaluation_seeds(tmp_path, write_record):
    study = {"schema": "normbench.study/1", "id": "def", "name": "tuned", "purpose": "", "arms": ["norm"],
             "command": "python -m normbench -m norm=ln,rms"}
    values = {"ln": (0.90, 0.80, 0.85), "rms": (0.88, 0.82, 0.84)}
    for i, (norm, seed) in enumerate((n, s) for n in values for s in range(3)):
        write_record(tmp_path / "tune" / "evaluation", str(i), seed=100 + seed, best_val=values[norm][seed],
                     axes={"norm": norm, "role": "evaluation", "lr": 0.01 if norm == "ln" else 0.003}, study=study)
    (answer,) = _answers_of([tmp_path / "tune" / "evaluation"])
    assert answer.command == (f"python -m normbench tune --out {tmp_path / 'tune'} --evaluation-seeds "
                              "100,101,102,103,104,105 norm=ln,rms")
