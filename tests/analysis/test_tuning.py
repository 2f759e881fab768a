"""Learning-rate sensitivity, the tuned comparison, performance profiles and the lr claim, on crafted records."""

import math

import numpy as np
import pandas as pd
import pytest

from normbench.analysis import performance_profiles, tuning
from normbench.analysis.claims import CLAIMS, INCONCLUSIVE, NOT_APPLICABLE, SUPPORTED, judge

GRID = (1e-3, 3e-3, 1e-2, 3e-2, 1e-1)
LSTM = {"model": "lstm", "task": "copy", "layers": 1}


def _grid_runs(norm: str, placement: str, diverges_above: float, seeds=(0, 1, 2), role=None, accuracy=0.95):
    """An arm over GRID that finishes (accuracy ± a little per seed) up to `diverges_above` and diverges beyond."""
    records = []
    for lr in GRID:
        for seed in seeds:
            axes = {**LSTM, "norm": norm, "placement": placement, "lr": lr, **({"role": role} if role else {})}
            if lr > diverges_above * (1 + 1e-9):
                records.append({"status": "diverged", "seed": seed, "best_val": None, "axes": axes})
            else:
                records.append({"seed": seed, "best_val": accuracy - 0.002 * seed - 0.001 * GRID.index(lr), "axes": axes})
    return records


@pytest.fixture(scope="module")
def two_arms(runs_of):
    return runs_of(*_grid_runs("ln", "in_cell", 3e-2), *_grid_runs("none", "none", 3e-3))


def test_an_arm_that_diverges_early_has_a_smaller_and_narrower_stable_range(two_arms):
    points, arms = tuning.sensitivity(two_arms)
    by_norm = {("ln" if "ln" in a else "none"): row for a, row in zip(arms["arm_label"], arms.to_dict("records"))}
    assert by_norm["ln"]["largest_stable"] == pytest.approx(3e-2)
    assert by_norm["none"]["largest_stable"] == pytest.approx(3e-3)
    assert by_norm["ln"]["stable_range"] == pytest.approx(30.0)
    assert by_norm["none"]["stable_range"] == pytest.approx(3.0)
    assert by_norm["none"]["stable_range"] < by_norm["ln"]["stable_range"]
    assert by_norm["ln"]["tolerance"] == tuning.STABLE_ACCURACY
    # diverged runs are counted at their lr, never dropped
    none = points[points["arm_label"].str.contains("none")]
    assert none.set_index("lr").loc[1e-1, "diverged"] == 3 and none.set_index("lr").loc[1e-1, "finished"] == 0


def test_an_lr_far_below_the_best_is_not_stable(runs_of):
    records = [{"seed": s, "best_val": 0.5 if lr == 1e-3 else 0.95, "axes": {**LSTM, "norm": "ln", "lr": lr}}
               for lr in (1e-3, 1e-2) for s in (0, 1)]
    _, arms = tuning.sensitivity(runs_of(*records))
    assert arms["stable_lrs"].iloc[0] == [1e-2] and arms["stable_range"].iloc[0] == 1.0


def test_no_sensitivity_without_an_lr_grid(runs_of):
    _, arms = tuning.sensitivity(runs_of({"seed": 0, "axes": LSTM}, {"seed": 1, "axes": LSTM}))
    assert arms.empty


def _study(runs_of, evaluation_lr=1e-2, evaluation_scores=(0.99, 0.99, 0.99)):
    selection = _grid_runs("ln", "in_cell", 3e-2, seeds=(0, 1), role="selection")
    # the selection runs peak at lr 1e-3 (the accuracy falls with the grid index)
    evaluation = [{"seed": 100 + i, "best_val": score,
                   "axes": {**LSTM, "norm": "ln", "placement": "in_cell", "lr": evaluation_lr, "role": "evaluation"}}
                  for i, score in enumerate(evaluation_scores)]
    return selection, evaluation


def test_selection_never_uses_an_evaluation_seed(runs_of):
    selection, evaluation = _study(runs_of)
    alone = tuning.chosen_lrs(runs_of(*selection))
    both = tuning.chosen_lrs(runs_of(*selection, *evaluation))
    assert alone["chosen_lr"].tolist() == both["chosen_lr"].tolist() == [1e-3]
    assert both["selection_seeds"].iloc[0] == [0, 1]
    # an evaluation run that scores far better at another lr changes nothing
    assert 100 not in both["selection_seeds"].iloc[0]


def test_one_selection_seed_an_lr_chooses_the_best_finished_run_never_a_diverged_one(runs_of):
    """normbench study --selection-seeds 1: one run an lr, no test can rank them; the best score chooses."""
    one = [{"seed": 1000, "best_val": score, "axes": {**LSTM, "norm": "ln", "lr": lr, "role": "selection"}}
           for lr, score in ((1e-3, 0.80), (3e-3, 0.90), (1e-2, 0.85))]
    chosen = tuning.chosen_lrs(runs_of(*one))
    assert chosen["chosen_lr"].tolist() == [3e-3] and chosen["selection_seeds"].iloc[0] == [1000]
    # the best-looking lr diverged: it is never chosen, whatever its last finite score
    blown = [{**one[0]}, {**one[1], "status": "diverged", "best_val": None}, {**one[2]}]
    assert tuning.chosen_lrs(runs_of(*blown))["chosen_lr"].tolist() == [1e-2]
    nothing = [{**r, "status": "diverged", "best_val": None} for r in one]
    assert tuning.chosen_lrs(runs_of(*nothing))["chosen_lr"].isna().all()


def test_a_tie_on_the_final_score_goes_to_the_larger_curve_area_then_the_smaller_lr(runs_of):
    """Referee 17: three lrs tied at 0.9667 on 270 validation examples and the rule "the smaller lr" gave a
    convergence claim its slowest arm. A tie is broken by the area under the validation curve first."""
    def one(lr, auc, score=0.9667):
        return {"seed": 1000, "best_val": score, "metrics": {"val_auc": auc},
                "axes": {**LSTM, "norm": "ln", "lr": lr, "role": "selection"}}
    tied = [one(1e-3, 0.80), one(3e-3, 0.90), one(1e-2, 0.85)]
    assert tuning.chosen_lrs(runs_of(*tied))["chosen_lr"].tolist() == [3e-3]
    # a better final score still wins over a better curve, and equal areas fall back to the smaller lr
    assert tuning.chosen_lrs(runs_of(*tied[:2], one(1e-2, 0.5, score=0.97)))["chosen_lr"].tolist() == [1e-2]
    assert tuning.chosen_lrs(runs_of(one(1e-3, 0.9), one(3e-3, 0.9), one(1e-2, 0.9)))["chosen_lr"].tolist() == [1e-3]
    # a run without a curve loses the tie
    assert tuning.chosen_lrs(runs_of(one(1e-3, None), one(3e-3, 0.7)))["chosen_lr"].tolist() == [3e-3]


def test_the_tuned_leaderboard_reads_test_of_evaluation_runs_and_flags_a_wrong_lr(runs_of):
    selection, evaluation = _study(runs_of)  # evaluated at 1e-2, but 1e-3 was chosen
    (board,) = tuning.tuned_leaderboards(runs_of(*selection, *evaluation))
    (row,) = board["rows"]
    assert row["chosen_lr"] == 1e-3 and row["lr_run"] == [1e-2] and row["test_mean"] == pytest.approx(0.99)
    assert any("choose 0.001" in note for note in board["notes"])


def test_the_tuned_leaderboard_stars_with_the_ranking_rule(runs_of):
    selection = [*_grid_runs("ln", "in_cell", 3e-2, seeds=(0, 1), role="selection"),
                 *_grid_runs("none", "none", 3e-3, seeds=(0, 1), role="selection")]
    evaluation = [{"seed": s, "best_val": 0.95 + 0.001 * s,
                   "axes": {**LSTM, "norm": "ln", "placement": "in_cell", "lr": 1e-3, "role": "evaluation"}}
                  for s in (100, 101, 102)]
    evaluation += [{"seed": s, "best_val": 0.60 + 0.001 * s,
                    "axes": {**LSTM, "norm": "none", "placement": "none", "lr": 1e-3, "role": "evaluation"}}
                   for s in (100, 101, 102)]
    (board,) = tuning.tuned_leaderboards(runs_of(*selection, *evaluation))
    first, second = board["rows"]
    assert "ln" in first["arm_label"] and first["best"] and first["star"]
    assert not second["star"] and second["p"] < 0.05
    assert not board["notes"]


def test_performance_profiles_count_not_reached_as_infinite():
    steps = pd.DataFrame({"a": [100.0, 200.0, math.inf], "b": [200.0, 100.0, 300.0], "c": [math.inf] * 3},
                         index=["t1", "t2", "t3"])
    ratios, summary, left_out = performance_profiles.step_ratios(steps)
    rows = summary.set_index("arm")
    assert not left_out
    assert rows.loc["a", "rho_1"] == pytest.approx(1 / 3) and rows.loc["a", "rho_2"] == pytest.approx(2 / 3)
    assert rows.loc["a", "rho_4"] == pytest.approx(2 / 3)  # never reached on t3: never counted
    assert rows.loc["b", "rho_1"] == pytest.approx(2 / 3) and rows.loc["b", "rho_2"] == pytest.approx(1.0)
    assert rows.loc["c", "rho_4"] == 0.0 and rows.loc["c", "area"] == 0.0 and rows.loc["c", "reached"] == 0
    assert performance_profiles.profile_area(np.array([1.0, 1.0])) == pytest.approx(1.0)
    assert performance_profiles.profile_area(np.array([2.0])) == pytest.approx(0.5)  # log 2 / log 4 short of the top


def test_a_task_no_arm_reached_counts_for_no_arm():
    steps = pd.DataFrame({"a": [100.0, math.inf], "b": [50.0, math.inf]}, index=["t1", "t2"])
    _, summary, _ = performance_profiles.step_ratios(steps)
    assert summary.set_index("arm").loc["b", "rho_4"] == pytest.approx(0.5)


def _claim(runs):
    (check,) = [c for c in CLAIMS if c.id == "ln_larger_stable_lr"]
    return judge(check, runs)


def test_the_lr_claim_is_supported_when_ln_stays_stable_longer(two_arms):
    verdict = _claim(two_arms)
    assert verdict.status == SUPPORTED
    assert verdict.effect.estimate == pytest.approx(10.0) and verdict.effect.null == 1.0
    assert verdict.effect.interval[0] > 1


def test_the_lr_claim_is_not_testable_when_both_are_stable_everywhere(runs_of):
    # the regime predicate lr_top_unstable: a grid whose top never destabilizes the unnormalized arm cannot show
    # which arm tolerates the larger lr, so no verdict (it was "inconclusive" before the regime was checked)
    runs = runs_of(*_grid_runs("ln", "in_cell", 1.0), *_grid_runs("none", "none", 1.0))
    verdict = _claim(runs)
    assert verdict.status == "not testable here"
    assert "lr grid" in verdict.explanation


def test_the_lr_claim_is_inconclusive_on_one_seed_and_not_applicable_without_a_grid(runs_of):
    one_seed = runs_of(*_grid_runs("ln", "in_cell", 3e-2, seeds=(0,)), *_grid_runs("none", "none", 3e-3, seeds=(0,)))
    assert _claim(one_seed).status == INCONCLUSIVE
    no_grid = runs_of(*[{"seed": s, "axes": {**LSTM, "norm": n}} for n in ("ln", "none") for s in (0, 1)])
    assert _claim(no_grid).status == NOT_APPLICABLE


def test_a_tuned_study_over_two_tasks_gets_every_section(write_record, tmp_path):
    from normbench.report import build_report

    scores = {"copy": {"ln": 0.95, "none": 0.80}, "adding": {"ln": 0.004, "none": 0.02}}
    index = 0
    for task, by_norm in scores.items():
        for norm, score in by_norm.items():
            placement = "in_cell" if norm == "ln" else "none"
            base = {**LSTM, "task": task, "norm": norm, "placement": placement}
            for lr in (1e-3, 1e-2, 1e-1):
                for seed in (0, 1):
                    diverged = norm == "none" and lr == 1e-1
                    write_record(tmp_path / "selection", f"s{index}", seed=seed,
                                 status="diverged" if diverged else "ok", best_val=None if diverged else score,
                                 axes={**base, "lr": lr, "role": "selection"})
                    index += 1
            for seed in (100, 101, 102):
                write_record(tmp_path / "evaluation", f"e{index}", seed=seed, best_val=score,
                             axes={**base, "lr": 1e-3, "role": "evaluation"})
                index += 1
    build_report([tmp_path / "selection", tmp_path / "evaluation"], tmp_path)
    report = (tmp_path / "report.md").read_text()
    tuned = report.split("### Tuned leaderboard")[1]
    assert "figures/lr_sensitivity.png" in report and (tmp_path / "figures" / "lr_sensitivity.png").is_file()
    assert "lr 0.1: 2/2" in report  # diverged runs counted in the stable-range table
    assert "**Task adding**" in tuned and "**Task copy**" in tuned
    assert "figures/performance_profile.png" in report and "| ρ(1) |" in report
    assert "### ln_larger_stable_lr: " in report
    html = (tmp_path / "report.html").read_text()
    assert 'id="lr"' in html and 'id="profiles"' in html


def test_a_zero_width_interval_needs_the_sign_test_seeds(runs_of):
    """Every seed agreeing on a discrete grid gives no spread: the t interval says nothing, so
    support needs 5 agreeing seeds (exact sign test, p = 0.031), not 2."""
    def verdict(seeds):
        return _claim(runs_of(*_grid_runs("ln", "in_cell", 3e-2, seeds=seeds),
                              *_grid_runs("none", "none", 3e-3, seeds=seeds)))
    two = verdict((0, 1))
    assert two.status == INCONCLUSIVE and "5 would be needed" in two.explanation
    assert verdict((0, 1, 2, 3, 4)).status == SUPPORTED


def test_the_lr_figure_is_drawn_for_one_study_and_never_across_studies(tmp_path, write_record):
    # the example's one lr figure drew every study's arms on one axis, mostly legend: compare only within a study
    from normbench.report.build import build_report
    from tests.report.conftest import _study

    for name in ("first", "second"):
        study = _study(name, ["lr"], f"python -m normbench -m lr=0.001,0.01 +sweep={name}")
        for lr in (1e-3, 1e-2):
            for seed in (0, 1):
                write_record(tmp_path / "runs", f"{name}-{lr}-{seed}", seed=seed, best_val=0.8 + lr, study=study,
                             axes={"lr": lr, "norm": "ln" if name == "first" else "rms"})
    build_report([tmp_path / "runs"], tmp_path / "out")
    report = (tmp_path / "out" / "report.md").read_text()
    assert "figures/lr_sensitivity.png" not in report
    assert "No figure: these runs hold 2 studies" in report


def test_no_lr_chosen_says_what_is_missing_when_every_run_finished(runs_of):
    """Hostile E06: every selection run finished "ok", at or worse than chance, and the reason was "no lr has 2
    runs with one finished"; it says none trained, and how the runs ended."""
    adding = {"task": "adding", "model": "lstm", "norm": "ln", "role": "selection"}
    runs = [{"seed": seed, "best_val": score, "axes": {**adding, "lr": lr}}
            for lr, scores in ((0.1, (8.3, 14.9)), (0.01, (0.1641, 0.1695))) for seed, score in zip((0, 1), scores)]
    why = tuning.chosen_lrs(runs_of(*runs))["why"].iloc[0]
    assert "one finished" not in why and why == "no lr has 2 runs with one that trained (4 runs: 4 at or worse than chance)"
    one_each = [{"seed": 0, "best_val": 0.1, "axes": {**adding, "lr": 0.1}},
                {"seed": 0, "best_val": 0.2, "axes": {**adding, "lr": 0.01}},
                {"seed": 1, "status": "diverged", "best_val": None, "axes": {**adding, "lr": 0.01}},
                {"seed": 1, "status": "failed", "best_val": None, "axes": {**adding, "lr": 0.1}}]
    why = tuning.chosen_lrs(runs_of(*one_each))["why"].iloc[0]
    assert why == ("no lr has 2 runs with one that trained (3 runs: 1 diverged; 1 at or worse than chance; "
                   "1 lr with fewer than 2 finished runs)"), why


def test_one_selection_seed_whose_runs_stayed_at_chance_says_so(runs_of):
    """Hostile h15 B8 (N19): tune seed=0, every run finished at chance, and the reason was "no lr has a
    finished run"; it says none trained, and how the runs ended."""
    adding = {"task": "adding", "model": "lstm", "norm": "ln", "role": "selection"}
    runs = [{"seed": 0, "best_val": 0.17, "axes": {**adding, "lr": lr}} for lr in (0.1, 0.2, 0.3)]
    why = tuning.chosen_lrs(runs_of(*runs))["why"].iloc[0]
    assert why == "no lr has a run that trained (3 runs: 3 at or worse than chance)", why
    runs[0] = {"seed": 0, "status": "diverged", "best_val": None, "axes": {**adding, "lr": 0.1}}
    why = tuning.chosen_lrs(runs_of(*runs))["why"].iloc[0]
    assert why == "no lr has a run that trained (3 runs: 1 diverged; 2 at or worse than chance)", why


def test_an_lr_claim_in_a_tuned_study_says_its_lr_is_swept_not_chosen(runs_of):
    """Referee 27: ln_larger_stable_lr in a tuned study reads the selection runs, every lr of the grid, and chooses
    none; its page and claims.csv said "tuned per arm ... chosen on selection seeds; judged on the evaluation runs"."""
    from normbench.analysis.claims.engine import in_study

    (check,) = [c for c in CLAIMS if c.id == "ln_larger_stable_lr"]
    evaluation = [{"seed": s, "best_val": 0.9, "axes": {**LSTM, "norm": n, "placement": p, "lr": 1e-3,
                                                       "role": "evaluation"}}
                  for n, p in (("ln", "in_cell"), ("none", "none")) for s in (100, 101, 102)]
    runs = runs_of(*_grid_runs("ln", "in_cell", 3e-2, role="selection"),
                   *_grid_runs("none", "none", 3e-3, role="selection"), *evaluation)
    verdict = in_study(check, runs, 0.05)
    assert verdict.lr == "swept as an arm (the question is about the lr)", verdict.lr
    assert "no lr is chosen" in verdict.explanation and "chosen on selection seeds" not in verdict.explanation
    assert "3 seeds each" in verdict.explanation, verdict.explanation
