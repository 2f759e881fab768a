"""Regime gates (analysis/regime.py): a setup that cannot show an effect reads "not testable here" for
every claim part it touches, with its reason and what would make it testable, and never advises seeds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from normbench.analysis import regime
from normbench.analysis.aggregate import label_groups, runs_frame, summarize_groups, varying_axes
from normbench.analysis.claims import CONTRADICTED, NOT_TESTABLE, SUPPORTED, Claim, evaluate, judge
from normbench.analysis.claims.engine import SHOWN_NOT_JUDGED
from normbench.analysis.claims.vocabulary import better, equivalent, more_stable, not_worse
from normbench.analysis.result import claim_result, of_frames
from normbench.records.reading import find_records
from normbench.records.record import RunRecord
from normbench.report.answers import answers
from normbench.report.tables import part_rows

SEEDS = (0, 1, 2)
ARMS = {"ln": {"norm": "ln"}, "bn": {"norm": "bn"}}
# one claim with every score part kind: each must be gated where its regime takes the question away
SCORES = Claim("crafted_scores", "LN beats BN, and is at least as good, and alike.", "Crafted 2026", ARMS,
               (better("ln scores better than bn", "ln", "bn"), not_worse("ln is not worse than bn", "ln", "bn"),
                equivalent("ln and bn score alike", "ln", "bn")))
# a score part beside a stability part: "still improving" takes the first away, never the second
MIXED = Claim("crafted_mixed", "LN beats BN and is more stable.", "Crafted 2026", ARMS,
              (better("ln scores better than bn", "ln", "bn"), more_stable("ln is more stable than bn", "ln", "bn")))


def rows(ln: float, bn: float, task: str = "copy", spread: float = 0.002, **axes) -> list[dict]:
    return [{"seed": s, "best_val": value + spread * (s - 1), "axes": {"task": task, "norm": norm, **axes}}
            for s in SEEDS for norm, value in (("ln", ln), ("bn", bn))]


def assert_gated(verdict, reason: str, remedy: str, parts: int | None = None):
    gated = [p for p in verdict.parts if p.status == NOT_TESTABLE]
    assert verdict.status == NOT_TESTABLE, verdict.explanation
    assert len(gated) == (parts or len(verdict.parts))
    for part in gated:
        assert part.note.startswith("not testable here: ") and reason in part.note and f"testable with {remedy}" in part.note
        assert part.seeds_needed is None and part.mde is None and part.lean is None
        # what the runs show is printed beside the gate, never as a verdict (referee 17: a gate hiding the gap)
        assert all(e.label.startswith(SHOWN_NOT_JUDGED) for e in part.effects)
    text = verdict.explanation + " ".join(cell for row in part_rows(claim_result(None, verdict)) for cell in row)
    assert CONTRADICTED not in [p.status for p in verdict.parts]
    assert "would decide" not in text and "seeds/arm" not in text and "--budget" not in text


def test_every_arm_at_chance_is_not_testable_for_every_score_part(runs_of):
    verdict = judge(SCORES, runs_of(*rows(0.105, 0.11)))  # copy: chance 0.1, the band ends at 0.12
    assert_gated(verdict, "every arm is at chance (ln: mean 0.105; bn: mean 0.11; chance 0.1", "more steps or an easier task")


def test_every_arm_at_ceiling_is_not_testable_for_every_score_part(runs_of):
    verdict = judge(SCORES, runs_of(*rows(0.995, 0.998, spread=0.001)))
    assert_gated(verdict, "every arm is at the ceiling", "a harder task")
    mse = judge(SCORES, runs_of(*rows(0.0010, 0.0012, task="adding", spread=0.0001)))  # below 1% of chance 0.167
    assert_gated(mse, "every arm is at the ceiling", "a harder task")
    assert "0.01 × chance" in mse.parts[0].note


def test_the_scale_names_the_task_and_its_sequence_length(runs_of):
    """bn_gamma_small_flow's "what differs" named parameters, steps and examples, not that the runs were the adding
    task at length 64 where the paper's were sequential MNIST at 784 steps (referee, issue 45)."""
    found = runs_of(*rows(0.60, 0.50)).assign(**{"task.name": "adding", "task.seq_len": 64})
    assert ", adding at sequence length 64, 2-layer Transformer, CPU;" in regime.scale_text(found)
    found.loc[found.index[:2], ["task.name", "task.seq_len"]] = ["fortunes_lm", 32]
    assert ", adding/fortunes_lm at sequence length 32–64, 2-layer Transformer, CPU;" in regime.scale_text(found)


def test_the_scale_names_the_model(runs_of):
    """Referee 17: ln_batch_robust's "not reproduced" compared an in-cell BN LSTM with the paper's MLP and the scale
    sentence named no model."""
    found = runs_of(*rows(0.60, 0.50, model="lstm", layers=1)).assign(**{"task.name": "digits", "task.seq_len": 64})
    assert ", digits at sequence length 64, 1-layer LSTM, CPU;" in regime.scale_text(found)
    found.loc[found.index[:2], ["axes.model", "axes.layers"]] = ["transformer", 8]
    assert ", 1-layer LSTM / 8-layer Transformer, CPU;" in regime.scale_text(found)


def test_a_failed_run_keeps_the_ceiling_testable(runs_of):
    """All finished runs at 0.995, but one of bn's diverged: the divergence rate can still tell them apart."""
    crafted = rows(0.995, 0.998, spread=0.001)
    crafted[1]["status"] = "diverged"
    verdict = judge(SCORES, runs_of(*crafted))
    assert NOT_TESTABLE not in [p.status for p in verdict.parts], verdict.explanation


def test_the_learnable_middle_is_not_gated_and_states_its_scale(runs_of):
    verdict = judge(SCORES, runs_of(*rows(0.60, 0.50)))
    assert [p.status for p in verdict.parts][0] == SUPPORTED and NOT_TESTABLE not in [p.status for p in verdict.parts]
    assert verdict.scale == ("measured at parameters not recorded, 100 steps, 3.2k examples, copy, 2-layer Transformer, CPU; a verdict about "
                             "this scale, not the paper's")
    assert verdict.explanation.endswith(f"Scale: {verdict.scale}.")


def _write_curves(write_record, root: Path, final: float, rising: bool) -> Path:
    """Copy-task runs whose four evaluations either rise to the end or level off before it."""
    curve = [0.3, 0.5, 0.7, final] if rising else [0.3, final - 0.004, final - 0.002, final]
    for seed in SEEDS:
        for norm, shift in (("ln", 0.0), ("bn", -0.1)):
            run = write_record(root, f"{norm}-{seed}", seed=seed, best_val=final + shift + 0.002 * seed,
                               axes={"norm": norm})
            lines = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
            evals = iter(curve)
            for line in lines:
                if line["kind"] == "eval":
                    line["val_metric"] = next(evals) + shift + 0.002 * seed
            (run / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    runs = runs_frame(find_records([root]).runs)
    return label_groups(runs, varying_axes(runs))


def test_runs_still_improving_gate_final_quality_but_not_stability(write_record, tmp_path):
    runs = _write_curves(write_record, tmp_path / "rising", 0.9, rising=True)
    verdict = judge(MIXED, runs)
    score, stability = verdict.parts
    # both rise, and both gate: the arm ahead is not exempt (referee 19), its lead is a gap between moving curves
    assert score.status == NOT_TESTABLE and "still improving at the end (ln: 3 of 3 runs; bn: 3 of 3 runs" in score.note
    # at a constant learning rate (the records' default) the change that works first is a decaying one
    assert ("testable with a learning rate that decays to the end (optim.schedule=cosine) or more steps (at least 200)"
            in score.note and score.seeds_needed is None)
    assert stability.status != NOT_TESTABLE  # gradient kurtosis does not wait for the curve to level off
    flat = judge(MIXED, _write_curves(write_record, tmp_path / "flat", 0.9, rising=False))
    assert flat.parts[0].status == SUPPORTED, flat.explanation


def test_arms_that_differ_in_steps_are_confounded(runs_of):
    """ln ran 400 steps, bn 100: the arms meet in no setting, and the mix differs in more than the norm."""
    crafted = [r for r in rows(0.7, 0.5, steps=400) if r["axes"]["norm"] == "ln"] + \
              [r for r in rows(0.7, 0.5, steps=100) if r["axes"]["norm"] == "bn"]
    (claim, verdict), = evaluate([SCORES], runs_of(*crafted))
    assert_gated(verdict, "the arms differ in more than the claim is about (steps: ln 400; bn 100", "equal steps and data")
    assert "examples seen: ln 12800; bn 3200" in verdict.parts[0].note


def test_confounded_reads_the_task_settings_but_not_the_claims_own_axes(runs_of):
    ln, bn = runs_of(*rows(0.7, 0.5, **{"task.min_length": 10})), runs_of(*rows(0.7, 0.5, **{"task.min_length": 40}))
    arms = {"ln": ln[ln["axes.norm"] == "ln"], "bn": bn[bn["axes.norm"] == "bn"]}
    assert "task.min_length: ln 10; bn 40" in regime.confounded(arms).reason
    assert regime.confounded(arms, own=("norm", "task.min_length")) is None


def test_the_gates_per_part_kind():
    assert regime.gates_for("equivalent") == regime.SCORE_GATES  # two arms at chance are alike without information
    assert regime.STILL_IMPROVING not in regime.gates_for("converges_faster")
    assert regime.gates_for("higher_rate") == regime.gates_for("ratio") == (regime.CONFOUNDED,)
    assert regime.gates_for("better", task_score=False) == (regime.CONFOUNDED,)


def test_scale_reads_the_records_parameter_count(runs_of):
    from tests.report.conftest import make_record

    summaries = []
    for i, (params, steps, batch) in enumerate(((52_000, 600, 32), (210_000, 600, 32))):
        summary, _ = make_record(str(i), axes={"steps": steps, "batch_size": batch})
        summaries.append(RunRecord(Path(f"/runs/{i}"), {**summary, "parameters": params}))
    runs = runs_frame(summaries)
    assert regime.scale(runs)["parameters"] == (52_000, 210_000)
    assert regime.scale_text(runs) == ("measured at 52k–210k parameters, 600 steps, 19.2k examples, copy, 2-layer Transformer, CPU; a verdict "
                                       "about this scale, not the paper's")


def _answer(runs_of, ln: float, bn: float):
    study = {"schema": "normbench.study/1", "id": "abc", "name": "mine", "purpose": "Which norm?", "arms": ["norm"],
             "command": "python -m normbench -m norm=ln,bn seed=0,1,2"}
    runs = runs_of(*[{**r, "study": study} for r in rows(ln, bn, spread=0.02)])
    runs = label_groups(runs, varying_axes(runs))
    (answer,) = answers(of_frames(runs, summarize_groups(runs, varying_axes(runs))))
    return answer


@pytest.mark.parametrize("ln, bn, reason", [(0.105, 0.11, "every arm is at chance"), (0.995, 0.996, "every arm is at the ceiling")])
def test_the_answer_of_a_gated_comparison_says_so_and_offers_no_seeds(runs_of, ln, bn, reason):
    answer = _answer(runs_of, ln, bn)
    assert answer.regime.startswith("not testable here: ") and reason in answer.headline
    assert answer.headline.startswith("On copy: not testable here: ") and "ranks first" not in answer.headline
    assert "answers nothing here" in answer.also  # the ranking as it stands comes after the gate, named as such
    assert answer.command == "" and "seeds per arm" not in answer.also and "--budget" not in answer.also
    assert answer.caveat.startswith("Measured at ") and answer.scale[1:] in answer.caveat


def test_the_answer_in_the_middle_keeps_its_seed_advice(runs_of):
    answer = _answer(runs_of, 0.61, 0.60)
    assert answer.regime == "" and "cannot be told apart" in answer.also and "--budget 30m" in answer.command


def test_the_study_runner_buys_no_seeds_for_a_gated_comparison(runs_of):
    from normbench.studies.study import undecided

    def comparisons(ln, bn):
        runs = runs_of(*rows(ln, bn, spread=0.02))
        return [item for item in undecided(label_groups(runs, varying_axes(runs)), 0.05) if not item.startswith("claim ")]

    assert comparisons(0.995, 0.996) == []  # at the ceiling: decided as not testable here
    assert comparisons(0.61, 0.60) != []    # the middle: still open, more seeds may decide it


@pytest.mark.parametrize("none, expected", [(0.5, SUPPORTED), (0.7, NOT_TESTABLE), (0.8, NOT_TESTABLE)])
def test_a_failed_setup_check_makes_the_claim_not_testable_never_contradicted(runs_of, none, expected):
    """A crafted setup check (vocabulary.setup_check: a beats b here) gates every part unless it is supported.
    (dyt_matches_ln no longer uses one: whether LN beats no norm is its external validity, test_claims.py.)"""
    from normbench.analysis.claims.vocabulary import setup_check

    claim = Claim("crafted_dyt", "DyT is not worse than LN.", "Crafted 2026",
                  {"dyt": {"norm": "dyt", "placement": "pre"}, "ln": {"norm": "ln", "placement": "pre"},
                   "none": {"norm": "none", "placement": "none"}},
                  (setup_check("LN beats no normalization here", "ln", "none", "a setup where normalization matters"),
                   not_worse("DyT is not worse than LN", "dyt", "ln")))
    crafted = [{"seed": s, "best_val": value + 0.002 * (s - 1), "axes": {"norm": norm}}
               for s in SEEDS for norm, value in (("dyt", 0.7), ("ln", 0.7), ("none", none))]
    verdict = judge(claim, runs_of(*crafted))
    assert verdict.status == expected, verdict.explanation
    if expected == NOT_TESTABLE:
        assert all(p.status == NOT_TESTABLE and "testable with a setup where normalization matters" in p.note
                   for p in verdict.parts)
        assert verdict.parts[0].effects and ("is inconclusive" in verdict.parts[0].note or "is contradicted" in verdict.parts[0].note)


def _rising_arms(write_record, root: Path, rising: set[str]):
    """ln ends at 0.9 and bn at 0.6 (ln far ahead); the arms in ``rising`` still climb at the end."""
    for seed in SEEDS:
        for norm, final in (("ln", 0.9), ("bn", 0.6)):
            curve = iter([final - 0.6 + 0.3, final - 0.2, final - 0.1, final] if norm in rising
                         else [final - 0.3, final - 0.004, final - 0.002, final])
            run = write_record(root, f"{norm}-{seed}", seed=seed, best_val=final + 0.002 * seed, axes={"norm": norm})
            lines = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
            for line in lines:
                if line["kind"] == "eval":
                    line["val_metric"] = next(curve) + 0.002 * seed
            (run / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    runs = runs_frame(find_records([root]).runs)
    return label_groups(runs, varying_axes(runs))


def test_a_claim_part_whose_improving_arm_leads_is_gated_like_any_other(write_record, tmp_path):
    # referee 19: ln_beats_bn_varlen's part 3 read "supported" on a last-iterate lead of an arm still improving,
    # exempt as "the leader"; a lead between moving curves is not final quality, whichever arm is ahead
    lead = judge(MIXED, _rising_arms(write_record, tmp_path / "lead", {"ln"}))
    assert lead.parts[0].status == NOT_TESTABLE, lead.explanation
    assert "still improving at the end (ln: 3 of 3 runs" in lead.parts[0].note
    assert "could only widen its lead" not in lead.explanation
    trail = judge(MIXED, _rising_arms(write_record, tmp_path / "trail", {"bn"}))
    assert trail.parts[0].status == NOT_TESTABLE and "still improving at the end (bn: 3 of 3 runs" in trail.parts[0].note
    # the reverse claim is not contradicted on a lead that is still moving either
    reverse = Claim("crafted_reverse", "BN beats LN.", "Crafted 2026", ARMS, (better("bn scores better than ln", "bn", "ln"),))
    assert judge(reverse, _rising_arms(write_record, tmp_path / "reverse", {"ln"})).parts[0].status == NOT_TESTABLE


def test_a_setting_where_the_claim_is_not_testable_is_no_second_opinion(runs_of):
    # rnn_table: supported on one task, not testable on the other, read "depends on task"
    from normbench.analysis.claims.engine import SHOWN_NOT_JUDGED, in_study

    rows = [{"seed": s, "best_val": v + 0.002 * s, "axes": {"task": "copy", "norm": n}}
            for s in SEEDS for n, v in (("ln", 0.6), ("bn", 0.5))]
    rows += [{"seed": s, "best_val": v + 0.001 * s, "axes": {"task": "adding", "norm": n}}  # both at chance (mse 0.167)
             for s in SEEDS for n, v in (("ln", 0.166), ("bn", 0.167))]
    claim = Claim("crafted_one", "LN beats BN.", "Crafted 2026", ARMS, (better("ln scores better than bn", "ln", "bn"),))
    verdict = in_study(claim, runs_of(*rows), 0.05)
    assert verdict.status == SUPPORTED, verdict.status
    assert "not testable here at task=adding" in verdict.explanation and "depends" not in verdict.status


def test_an_arm_pooled_over_settings_is_judged_still_improving_in_each(write_record, tmp_path):
    """bn_masked_varlen pooled two lengths: 2 of 3 runs still improving at one, 1 of 3 at the other, 3 of 6
    in all (not more than half), and the gate passed. Each setting the arm pools is judged on its own."""
    for length in (12, 20):
        for seed in SEEDS:
            rising = length == 12 and seed < 2 or length == 20 and seed == 0
            curve = [0.3, 0.5, 0.7, 0.9] if rising else [0.3, 0.896, 0.898, 0.9]
            run = write_record(tmp_path, f"bn-{length}-{seed}", seed=seed, best_val=0.9, axes={"norm": "bn",
                               "task.min_length": length})
            lines = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
            evals = iter(curve)
            lines = [{**line, "val_metric": next(evals)} if line["kind"] == "eval" else line for line in lines]
            (run / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    runs = runs_frame(find_records([tmp_path]).runs)
    runs = label_groups(runs, varying_axes(runs))
    gate = regime.still_improving({"bn": runs}, runs)
    assert gate is not None and "bn at task.min_length=12: 2 of 3 runs" in gate.reason, gate
    assert "task.min_length=20" not in gate.reason
