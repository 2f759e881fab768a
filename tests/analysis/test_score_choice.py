"""The score is chosen once (analysis/rules.py: primary; records/metrics.py: record_score) from the runs' optimized_metric, and every
consumer asks there: with optimized_metric=best_val the leaderboard, the answer, the claims, compare, the sweep's
table and objective all use best_val, and the lr-tuning section, which keeps final_val on purpose, says why.

The crafted records disagree on purpose: best_val ranks ln first, final_val ranks rms first."""

import json

import pytest

from normbench.analysis import aggregate, rules, tuning
from normbench.analysis.claims import comparison, engine, vocabulary
from normbench.records.metrics import record_score
from normbench.studies.app import describe, objective
from normbench.studies.compare import main as compare_main
from normbench.studies.sweep_end import sweep_table

STUDY = {"name": "scores", "purpose": "which score", "kind": "grid"}


def _rows() -> list[dict]:
    return [{"seed": s, "axes": {"norm": norm, "task": "copy"}, "study": STUDY, "best_val": best,
             "metrics": {"final_val": final}}
            for norm, best, finals in (("ln", 0.95, (0.80, 0.81, 0.79)), ("rms", 0.90, (0.88, 0.89, 0.87)))
            for s, final in enumerate(finals)]


def _runs(runs_of, optimized: str | None):
    runs = runs_of(*_rows())
    return runs if optimized is None else runs.assign(optimized_metric=optimized)


@pytest.mark.parametrize("optimized,first", [(None, "norm=rms"), ("best_val", "norm=ln")])
def test_the_leaderboard_the_answer_and_the_claims_read_one_score(runs_of, optimized, first):
    from normbench.analysis.result import of_frames
    from normbench.report.answers import answers

    runs = _runs(runs_of, optimized)
    score = optimized or "final_val"
    assert rules.primary(runs) == score
    runs = aggregate.label_groups(runs, aggregate.varying_axes(runs))
    summary = aggregate.summarize_groups(runs, aggregate.varying_axes(runs))
    assert summary.iloc[0]["arm"] == first and summary.iloc[0]["score"] == score   # the leaderboard
    (answer,) = answers(of_frames(runs, summary))
    assert first.split("=")[1] in answer.headline                                  # the answer
    assert vocabulary.SCORE.values(runs).tolist() == runs[f"metrics.{score}"].tolist()  # every claim part's score
    ok = runs.assign(**{"task.chance": 0.1})
    assert comparison.learned(ok[ok["axes.norm"] == "ln"], ok)[1].startswith(
        f"mean {0.95 if score == 'best_val' else 0.8:.4g}")                        # the claims' "learned" gate
    assert ("ranks its arms on best_val" in tuning.score_note(runs)) == (optimized == "best_val")  # why not best_val


def test_the_claims_engine_names_the_study_score_in_its_arm_table(runs_of):
    runs = _runs(runs_of, "best_val")
    claim = vocabulary.Claim("toy", "LN beats RMSNorm", "a test", {"ln": {"norm": "ln"}, "rms": {"norm": "rms"}},
                             (vocabulary.better("LN beats RMSNorm", "ln", "rms"),))
    ((_, verdict),) = engine.evaluate([claim], runs)
    assert any(column.startswith("accuracy (best_val)") for column in verdict.evidence.columns), list(verdict.evidence.columns)
    assert verdict.status == vocabulary.SUPPORTED  # on best_val LN is better (on final_val it is worse)


def test_compare_defaults_to_the_baseline_score(write_record, tmp_path, capsys):
    """best_val degrades while final_val holds: compare without --metric fails on best_val."""
    for root, best in (("base", 0.90), ("new", 0.80)):
        for seed in (0, 1, 2):
            run_dir = write_record(tmp_path / root, f"run-{seed}", seed=seed, best_val=best + 0.001 * seed)
            summary = json.loads((run_dir / "summary.json").read_text())
            summary["config"]["optimized_metric"] = "best_val"
            summary["metrics"]["final_val"] = 0.7 + 0.001 * seed
            (run_dir / "summary.json").write_text(json.dumps(summary))
    assert compare_main([str(tmp_path / "base"), str(tmp_path / "new")]) == 1
    assert "best_val worse by 0.1" in capsys.readouterr().out


def test_the_sweep_end_table_and_the_objective_read_the_record_score():
    record = {"status": "ok", "config": {"optimized_metric": "best_val"}, "metrics": {"best_val": 0.9, "final_val": 0.7},
              "task": {"metric": "accuracy", "chance": 0.1, "target": 0.99, "higher_is_better": True}}
    assert record_score(record) == "best_val" and record_score({"config": {}}) == "final_val"
    assert objective(record) == -0.9
    assert describe(record).startswith("ok | best val accuracy 0.9 (chance 0.1, final val 0.7")
    from pathlib import Path
    table = sweep_table({Path("/s/0/summary.json"): {**record, "axes": {"norm": "ln"}}})
    assert list(table.columns)[-4:-2] == ["best_val", "final_val (secondary)"]
