"""Trivial plateaus (analysis/rules.py, analysis/regime.py): a run held at a trivial solution of its task
"did not learn the task", and a comparison whose arms all sit on one reads "not testable here: on the
task's trivial plateau X — testable with CHANGE" on every surface: the claims, the answer, the
synthesis and the report built from records on disk."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from normbench.analysis import regime, rules
from normbench.analysis.aggregate import label_groups, summarize_groups, varying_axes
from normbench.analysis.claims import NOT_TESTABLE, SUPPORTED, Claim, judge
from normbench.analysis.claims.vocabulary import better, converges_faster, equivalent
from normbench.analysis.result import of_frames
from normbench.report.answers import answers
from normbench.report.sections import StudySection
from normbench.report.synthesis import synthesis

ARMS = {"ln": {"norm": "ln"}, "dyt": {"norm": "dyt"}}
CLAIM = Claim("crafted_plateau", "DyT matches LN, and LN beats DyT.", "Crafted 2026", ARMS,
              (equivalent("dyt and ln score alike", "dyt", "ln"), better("ln scores better than dyt", "ln", "dyt")))
MQAR = "on the task's trivial plateau any value from the context (0.25 accuracy"
MQAR_REMEDY = "testable with a set-up where recall is learned"
UNIGRAM = "on the task's trivial plateau unigram model (4.78 bpc"
STUDY = {"schema": "normbench.study/1", "id": "s1", "name": "plateau", "purpose": "Does DyT match LN?",
         "arms": ["norm"], "command": "python -m normbench -m norm=ln,dyt seed=0,1,2"}


def rows(ln: float, dyt: float, task: str = "mqar", spread: float = 0.0) -> list[dict]:
    return [{"seed": s, "best_val": value + spread * (s - 1), "axes": {"task": task, "norm": norm}, "study": STUDY}
            for s in (0, 1, 2) for norm, value in (("ln", ln), ("dyt", dyt))]


def named(plateaus: pd.Series) -> list:
    return [p if isinstance(p, str) else None for p in plateaus]


def labelled(runs: pd.DataFrame) -> pd.DataFrame:
    return label_groups(runs, varying_axes(runs))


def test_a_run_held_at_a_trivial_solution_did_not_learn_the_task(runs_of):
    runs = runs_of(*[{"seed": 0, "best_val": v, "axes": {"task": "mqar", "norm": n}}
                     for n, v in (("ln", 0.25), ("rms", 0.269), ("dyt", 0.30), ("bn", 0.01))])
    # 0.25 and 0.269 stay within 0.02 of 1/n_pairs; 0.30 learned recall; 0.01 never left chance (did not train)
    assert rules.not_learned(runs).tolist() == [True, True, False, False]
    assert named(rules.plateaus(runs)) == ["any value from the context", "any value from the context", None,
                                             "any value from the context"]
    assert rules.at_chance(runs).tolist() == [False, False, False, True]
    lm = runs_of(*[{"seed": 0, "best_val": v, "axes": {"task": "fortunes_lm", "norm": "ln"}} for v in (4.77, 3.76, 3.5)])
    # the worst plateau a run does not get beyond is the one it is held at (4.77 has not beaten the bigram either)
    assert named(rules.plateaus(lm)) == ["unigram model", "bigram model", None]
    assert rules.not_learned(lm).tolist() == [False, True, False]  # 4.77 is within chance's band: did not train


def test_a_task_without_trivial_solutions_has_no_plateau(runs_of):
    runs = runs_of(*rows(0.25, 0.25, task="copy"))
    assert not rules.trivial_columns(runs) and not rules.not_learned(runs).any()
    assert regime.on_plateau({"ln": runs[runs["axes.norm"] == "ln"], "dyt": runs[runs["axes.norm"] == "dyt"]}, runs) is None


@pytest.mark.parametrize("ln, dyt, task, reason", [
    (0.25, 0.25, "mqar", MQAR),            # exactly 1/n_pairs
    (0.251, 0.262, "mqar", MQAR),          # within the band
    (4.78, 4.78, "fortunes_lm", UNIGRAM),  # a character model at its unigram entropy
])
def test_arms_on_one_plateau_are_not_testable_in_the_claims(runs_of, ln, dyt, task, reason):
    verdict = judge(CLAIM, labelled(runs_of(*rows(ln, dyt, task))))
    assert verdict.status == NOT_TESTABLE, verdict.explanation
    for part in verdict.parts:
        assert part.status == NOT_TESTABLE and part.note.startswith("not testable here: " + reason)
        assert "testable with " in part.note and part.seeds_needed is None
    assert "ln: mean" in verdict.parts[0].note and "3 of 3 finished runs held at it" in verdict.parts[0].note


def test_an_arm_off_the_plateau_is_testable_but_arms_on_different_trivial_solutions_are_not(runs_of):
    learned = judge(CLAIM, labelled(runs_of(*rows(0.60, 0.25, spread=0.002))))
    assert learned.parts[1].status == SUPPORTED, learned.explanation  # one arm learned recall: a real difference
    # the referee's warmup_depth case: one arm at the bigram model's bpc, the other at the unigram model's:
    # the difference is the gap between two trivial solutions, not one between the arms
    apart = labelled(runs_of(*rows(3.75, 4.78, task="fortunes_lm")))
    gate = regime.on_plateau({a: apart[apart["axes.norm"] == a] for a in ("ln", "dyt")}, apart)
    assert gate is not None and "every arm at or below one of the task's trivial solutions" in gate.text
    assert "ln: mean 3.75, at the bigram model" in gate.text and "dyt: mean 4.78, at the unigram model" in gate.text
    beyond = labelled(runs_of(*rows(3.40, 4.78, task="fortunes_lm")))  # ln beyond the bigram model by 0.38 bpc
    assert regime.on_plateau({a: beyond[beyond["axes.norm"] == a] for a in ("ln", "dyt")}, beyond) is None


def test_convergence_to_a_plateau_is_not_testable_either():
    assert regime.ON_PLATEAU in regime.gates_for("converges_faster") and regime.ON_PLATEAU in regime.ANSWER_GATES
    assert regime.SCORE_GATES[0] == regime.ON_PLATEAU  # named before "at chance": an LM's unigram plateau is its chance
    assert callable(converges_faster)


def test_the_answer_and_the_synthesis_name_the_plateau(runs_of):
    runs = labelled(runs_of(*rows(0.25, 0.25)))
    axes = varying_axes(runs)
    summary = summarize_groups(runs, axes)
    (answer,) = answers(of_frames(runs, summary))
    assert answer.regime.startswith("not testable here: " + MQAR) and MQAR_REMEDY in answer.regime
    assert answer.command == "" and "seeds per arm" not in answer.also
    section = StudySection(str(runs["study"].iloc[0]), "study-x", "x", "", ["norm"], [])
    gates = of_frames(runs, summary)
    (line,) = [line for line in synthesis(summary, runs, [section], gates) if line.studies]
    assert line.favoured.startswith("not testable here: " + MQAR) and MQAR_REMEDY in line.favoured


def test_the_report_built_from_records_names_the_plateau(tmp_path, write_record):
    from normbench.report import build_report

    for r in rows(0.25, 0.25):
        write_record(tmp_path / "sweep", f"{r['axes']['norm']}{r['seed']}", **r)
    build_report([tmp_path / "sweep"], tmp_path / "out")
    md = (tmp_path / "out" / "report.md").read_text()
    synthesis_part, study_part = md.split("## Study plateau")
    for part in (synthesis_part, study_part):  # the synthesis's line, and the study's answer
        assert "on the task's trivial plateau any value from the context" in part.lower() and MQAR_REMEDY in part
    runs_csv = pd.read_csv(tmp_path / "out" / "runs.csv")
    assert (runs_csv["task.trivial.any value from the context"] == 0.25).all()


def test_a_real_tiny_sweep_held_at_its_trivial_solution_reads_not_testable(cli, tmp_path, tiny_args):
    """mqar with as many values as pairs: every value is in the context, so a model that has not bound
    keys to values answers 1/n_pairs = 0.5 exactly; two steps at a tiny lr learn nothing more."""
    tiny = [a for a in tiny_args if not a.startswith(("task", "steps", "eval_every"))]
    code, _, err = cli("-m", *tiny, "task=mqar", "task.n_pairs=2", "task.n_keys=2", "task.n_values=2",
                       "task.n_train=64", "task.n_val=2000", "task.n_test=8", "steps=2", "eval_every=1", "lr=1e-7",
                       "norm=ln,rms", "seed=0,1", "report=false", "hydra.sweep.dir=sweep")
    assert code == 0, err
    records = [json.loads(p.read_text()) for p in (tmp_path / "sweep").rglob("summary.json")]
    assert len(records) == 4 and all(r["task"]["trivial"] == {"any value from the context": 0.5} for r in records)
    from normbench.analysis.aggregate import runs_frame
    from normbench.records.reading import find_records

    runs = labelled(runs_frame(find_records([tmp_path / "sweep"]).runs))
    assert named(rules.plateaus(runs)) == ["any value from the context"] * 4  # 0.5 is chance too: did not train
    axes = varying_axes(runs)
    (answer,) = answers(of_frames(runs, summarize_groups(runs, axes)))
    assert answer.regime.startswith("not testable here: on the task's trivial plateau any value from the context (0.5 ")


@pytest.mark.parametrize("trivial, columns", [
    ("not a mapping", {}),
    ({"a": "0.25", "b": True, "c": None, "d": [0.25]}, {}),  # only numbers are trivial solutions
    ({f"p{i}": 0.01 * i for i in range(100)}, {f"task.trivial.p{i}": 0.01 * i for i in range(16)}),  # at most 16
])
def test_a_records_trivial_solutions_are_read_as_data(tmp_path, write_record, trivial, columns):
    from normbench.analysis.aggregate import runs_frame
    from normbench.records.reading import find_records

    run = write_record(tmp_path, "r", axes={"task": "mqar"})
    summary = json.loads((run / "summary.json").read_text())
    summary["task"]["trivial"] = trivial
    (run / "summary.json").write_text(json.dumps(summary))
    runs = runs_frame(find_records([tmp_path]).runs)
    assert {c: runs.at[0, c] for c in rules.trivial_columns(runs)} == pytest.approx(columns)
    assert not rules.not_learned(runs).any() or columns
