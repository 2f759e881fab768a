"""analysis/decisions.py: the study runner decides exactly when the report does. A comparison the
report calls "not testable here" is not testable for the runner either (it prints that line, never
"ranked first", and buys no seeds for it); crafted records, both readers."""

from __future__ import annotations

import json
from pathlib import Path

from normbench.analysis.aggregate import label_groups, runs_frame, summarize_groups, varying_axes
from normbench.analysis.decisions import DECIDED, GATED, UNDECIDED, decisions
from normbench.analysis.result import of_frames
from normbench.records.reading import find_records
from normbench.report.answers import answers
from normbench.studies import progress
from normbench.studies.study import GATED_STOP, gated_comparisons, undecided

SEEDS = (0, 1, 2)


def _runs(write_record, root: Path, rising: bool, gap: float = 0.1, spread: float = 0.002):
    """Copy-task runs of ln and bn (bn ``gap`` below); four evaluations that rise to the end or level off."""
    final = 0.9
    curve = [0.3, 0.5, 0.7, final] if rising else [0.3, final - 0.004, final - 0.002, final]
    for seed in SEEDS:
        for norm, shift in (("ln", 0.0), ("bn", -gap)):
            run = write_record(root, f"{norm}-{seed}", seed=seed, best_val=final + shift + spread * seed,
                               axes={"norm": norm})
            lines = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
            evals = iter(curve)
            for line in lines:
                if line["kind"] == "eval":
                    line["val_metric"] = next(evals) + shift + spread * seed
            (run / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    runs = runs_frame(find_records([root]).runs)
    return label_groups(runs, varying_axes(runs))


def _report_answer(runs):
    (answer,) = answers(of_frames(runs, summarize_groups(runs, varying_axes(runs))))
    return answer


def _answer_lines(runs, stopped: str = "decided") -> str:
    log = {"rounds": [{"seeds_per_arm": 3, "level": 0.05}], "seconds": 10, "stopped": stopped}
    return "\n".join(progress.study_answer(log, runs, undecided(runs, 0.05)))


def test_a_still_improving_comparison_is_not_testable_for_runner_and_report_alike(write_record, tmp_path):
    """The issue's case: the runner said "every question decided ... ranked first" where the report
    said "not testable here: still improving"."""
    runs = _runs(write_record, tmp_path, rising=True)
    (decision,) = decisions(runs, 0.05)
    report = _report_answer(runs)
    assert decision.status == GATED and report.regime == decision.gate.text
    assert decision.gate.text.startswith("not testable here: still improving at the end")
    assert undecided(runs, 0.05) == []  # buys no seeds: more seeds decide nothing there
    assert gated_comparisons(runs, 0.05) == [decision]
    lines = _answer_lines(runs, GATED_STOP)
    assert "ranked first" not in lines and "ranks first" not in lines and "every question decided" not in lines
    assert f"  copy: {report.regime}" in lines.splitlines()
    assert "every testable question decided, the rest not testable here" in lines


def test_a_testable_comparison_names_its_first_arm_as_the_report_does(write_record, tmp_path):
    runs = _runs(write_record, tmp_path, rising=False)
    (decision,) = decisions(runs, 0.05)
    report = _report_answer(runs)
    assert report.regime == "" and decision.gate is None
    assert decision.status == DECIDED and decision.best == "norm=ln" and decision.worse == ("norm=bn",)
    assert "Every other arm is shown worse" in report.also and "norm=ln ranks first" in report.headline
    assert "  copy: norm=ln ranks first; shown worse: norm=bn" in _answer_lines(runs).splitlines()


def test_arms_not_told_apart_stay_undecided_and_say_so(write_record, tmp_path):
    runs = _runs(write_record, tmp_path, rising=False, gap=0.02, spread=0.03)  # neither apart nor within 0.01
    (decision,) = decisions(runs, 0.05)
    assert decision.status == UNDECIDED and decision.open and undecided(runs, 0.05)
    assert "cannot be told apart" in _report_answer(runs).also
    lines = _answer_lines(runs, "maximum seeds")
    assert "the 2 arms are not told apart (norm=ln ranks first, not shown better)" in lines
    assert "  undecided: copy: " in lines


def _runs_rising(write_record, root: Path, rising: set[str], gap: float = 0.3):
    """ln at 0.9, bn ``gap`` below; the arms in ``rising`` still climb at the end, the others level off."""
    for seed in SEEDS:
        for norm, shift in (("ln", 0.0), ("bn", -gap)):
            final = 0.9 + shift + 0.002 * seed
            curve = iter([final - 0.6, final - 0.4, final - 0.2, final] if norm in rising
                         else [final - 0.6, final - 0.004, final - 0.002, final])
            run = write_record(root, f"{norm}-{seed}", seed=seed, best_val=final, axes={"norm": norm})
            lines = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
            for line in lines:
                if line["kind"] == "eval":
                    line["val_metric"] = next(curve)
            (run / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    runs = runs_frame(find_records([root]).runs)
    return label_groups(runs, varying_axes(runs))


def test_an_answer_whose_leader_is_still_improving_is_gated_as_a_trailing_arm_is(write_record, tmp_path):
    """Referee 19: the synthesis recommended LN on ln_vs_bn_varlen from a last-iterate lead of an arm still
    falling steeply, let through as "the leader". A lead between moving curves is not final quality: the arm
    ahead still improving gates the answer as a trailing one does."""
    runs = _runs_rising(write_record, tmp_path / "lead", {"ln"})
    (decision,) = decisions(runs, 0.05)
    assert decision.status == GATED and "still improving" in decision.gate.text and "ln: 3 of 3" in decision.gate.text
    assert _report_answer(runs).regime == decision.gate.text  # the report reads it alike
    trailing = _runs_rising(write_record, tmp_path / "trail", {"bn"})
    (gated,) = decisions(trailing, 0.05)
    assert gated.status == GATED and "still improving" in gated.gate.text and "bn" in gated.gate.text
    assert _report_answer(trailing).regime == gated.gate.text


def test_a_study_of_one_arm_says_nothing_was_compared(write_record, tmp_path):
    """One arm leaves nothing undecided because it asks nothing: its end line said "every question decided"."""
    from normbench.studies.study import NOTHING_COMPARED, compared_anything

    for seed in SEEDS:
        write_record(tmp_path / "one", f"ln-{seed}", seed=seed, best_val=0.9 + 0.002 * seed, axes={"norm": "ln"})
    runs = runs_frame(find_records([tmp_path / "one"]).runs)
    runs = label_groups(runs, varying_axes(runs))
    assert undecided(runs, 0.05) == [] and not compared_anything(runs, 0.05)
    lines = _answer_lines(runs, NOTHING_COMPARED)
    assert "every question decided" not in lines and "nothing compared" in lines
    assert compared_anything(_runs(write_record, tmp_path / "two", rising=False), 0.05)
