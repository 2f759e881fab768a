"""Each arm at its own learning rate: a tuned study's claims, answers and protocol, on crafted records."""

import pandas as pd
import pytest

from normbench.analysis import lr_protocol
from normbench.analysis.claims import CONTRADICTED, NOT_APPLICABLE, SUPPORTED, evaluate_claims

GRID = (1e-3, 3e-3, 1e-2)
PREFERS = {"ln": 1e-2, "dyt": 1e-2, "none": 1e-3}  # the arms' best lrs differ: no shared lr serves all three
STUDY = {"schema": "normbench.study/1", "id": "0123456789ab", "name": "dyt_vs_ln", "purpose": "DyT vs LN.",
         "swept": ["norm", "lr", "seed"], "arms": ["norm", "lr"], "command": "python -m normbench -m +sweep=dyt_vs_ln"}


def _axes(norm: str, lr: float, role: str) -> dict:
    return {"model": "transformer", "norm": norm, "placement": "none" if norm == "none" else "pre", "lr": lr,
            "role": role}


def _score(norm: str, lr: float, seed: int) -> float:
    """0.90 at the arm's own lr (none 0.85), 0.3 lower at every other: at any one shared lr some arm is far
    off its best, so only a comparison at each arm's own lr sees LN beat none and DyT match LN."""
    best = 0.85 if norm == "none" else 0.90
    return best - (0 if lr == PREFERS[norm] else 0.3) + 0.002 * (seed % 3 - 1)


def tuned_records(protocol: str | None = "tuned") -> list[dict]:
    study = {**STUDY, **({"lr_protocol": protocol} if protocol else {})}
    selection = [{"seed": seed, "best_val": _score(norm, lr, seed), "axes": _axes(norm, lr, "selection"),
                  "study": study} for norm in PREFERS for lr in GRID for seed in (1000, 1001)]
    evaluation = [{"seed": seed, "best_val": _score(norm, PREFERS[norm], seed),
                   "axes": _axes(norm, PREFERS[norm], "evaluation"), "study": study}
                  for norm in PREFERS for seed in (0, 1, 2)]
    return selection + evaluation


def test_a_tuned_study_compares_each_arm_at_its_own_lr(runs_of):
    runs = runs_of(*tuned_records())
    verdicts = {c.id: v for c, v in evaluate_claims(runs)}
    dyt = verdicts["dyt_matches_ln"]
    # judged on the evaluation runs (3 seeds an arm), not split by lr or role: DyT at 0.01 matches LN at 0.01,
    # LN at 0.01 beats no norm at its own 0.001
    assert dyt.status == SUPPORTED, dyt.explanation
    # each arm's own lr, by arm (the page listed the study's lrs, and a referee read 0.01 as one LN arm's)
    # an lr chosen at an end of the grid is named so (gamma_init in the example: both LN arms at 0.003, the grid's
    # lowest, and the page read it as their tuned best): the grid did not bracket the arm's best
    assert ("own learning rate (dyt: 0.01 (the grid's highest); ln: 0.01 (the grid's highest); none: 0.001 (the "
            "grid's lowest))") in dyt.explanation
    assert "did not bracket that arm's best" in dyt.explanation
    # the score that chose the lrs is named (a referee read ln_gamma_one_better's lrs as chosen on its val_auc)
    assert "chosen on selection seeds by the final validation score (equal scores: the larger area under the validation curve, then the smaller lr)" in dyt.explanation
    assert "not the score that chose the lrs" not in dyt.explanation  # dyt_matches_ln decides on the final score
    view, _ = lr_protocol.claim_runs(runs, compares_lr=False)
    assert set(view["seed"]) == {0, 1, 2} and "axes.lr" not in view


def test_an_lr_inside_the_grid_is_not_named_an_end():
    grid = [0.001, 0.003, 0.01]
    assert [lr_protocol.grid_edge(lr, grid) for lr in (0.001, 0.003, 0.01)] == ["lowest", "", "highest"]
    assert lr_protocol.grid_edge(0.003, [0.003]) == ""  # one lr is no grid
    assert lr_protocol.arm_lrs(pd.Series([0.003, 0.003]), pd.Series(["", ""])) == "0.003"


def test_the_same_records_at_each_lr_alone_would_not_compare_the_arms_at_their_best(runs_of):
    """The crafted design is one where the protocol matters: on the selection runs (each lr a setting) the
    claim splits by lr and no lr gives the tuned answer everywhere."""
    selection = [r for r in tuned_records(protocol=None) if r["axes"]["role"] == "selection"]
    verdict = {c.id: v for c, v in evaluate_claims(runs_of(*selection))}["dyt_matches_ln"]
    # judged lr by lr (a shared lr each), never as the tuned answer: the verdict names its lr and each setting
    # (at lr=0.001 LN does not beat none: since referee 19 that is the verdict's external validity, not a gate)
    assert verdict.setting.startswith("lr=") and "Judged at each of 3 settings" in verdict.explanation


def test_a_claim_about_the_lr_reads_the_selection_grid(runs_of):
    runs = runs_of(*tuned_records())
    view, note = lr_protocol.claim_runs(runs, compares_lr=True)
    assert set(view["axes.role"]) == {"selection"} and not note


def test_each_answer_states_the_protocol_the_grid_and_each_arms_lr(runs_of):
    runs = runs_of(*tuned_records())
    evaluation = runs[runs["axes.role"] == "evaluation"]
    text = lr_protocol.comparison_text(evaluation, runs)
    assert text.startswith("Learning rate: tuned per arm: grid 0.001, 0.003, 0.01 on selection seeds 1000, 1001")
    assert "0.001 for norm=none" in text and "0.01 for norm=ln" in text and "fresh seeds 0, 1, 2" in text
    selection = runs[runs["axes.role"] == "selection"]
    assert "answer nothing themselves" in lr_protocol.comparison_text(selection, runs)


@pytest.mark.parametrize("declared, lrs, words", [
    ("fixed", [0.01], "fixed by the question: 0.01 (warm-up shows at a large lr)."),
    (None, [0.01], "one lr shared by every arm (0.01), not tuned per arm"),
    (None, [0.001, 0.01], "swept as an arm"),
])
def test_fixed_shared_and_swept_lrs_say_so(runs_of, declared, lrs, words):
    study = {**STUDY, **({"lr_protocol": declared, "lr_why": "warm-up shows at a large lr"} if declared else {})}
    runs = runs_of(*[{"seed": s, "best_val": 0.9, "axes": {"norm": n, "lr": lr}, "study": study}
                     for n in ("ln", "none") for lr in lrs for s in (0, 1)])
    assert words in lr_protocol.comparison_text(runs, runs)
    assert lr_protocol.compared_runs(runs) is runs  # only a tuned study drops runs


def test_an_older_tuned_study_is_recognised_by_its_roles(runs_of):
    runs = runs_of(*tuned_records(protocol=None))
    assert lr_protocol.kind_of(runs) == "tuned"
    assert set(lr_protocol.compared_runs(runs)["axes.role"]) == {"evaluation"}


def test_a_study_block_with_a_protocol_that_is_not_text_is_read_as_none(runs_of):
    runs = runs_of({"seed": 0, "best_val": 0.9, "study": {**STUDY, "lr_protocol": {"kind": "tuned"}}})
    assert runs["study.lr_protocol"].isna().all() and lr_protocol.kind_of(runs) == "shared"
    assert isinstance(runs, pd.DataFrame)


def test_a_claim_decided_on_the_curve_says_its_lrs_were_chosen_on_the_final_score():
    evidence = pd.DataFrame({"arm": ["ln γ 1.0", "ln γ 0.1"], "lr": ["0.003", "0.001 (the grid's lowest)"]})
    note = lr_protocol.arm_lr_note(evidence, on_curve=True)
    assert "by the final validation score" in note and "decides on the validation curve's area, not the score" in note


def test_a_study_that_does_not_tune_names_the_lr_each_arm_ran_at_never_a_choice(runs_of):
    """Referee 17: qknorm_lr (swept) printed "Each arm at its own learning rate (no qk-norm: nan; …), chosen on
    selection seeds": no lr was chosen there. A shared-lr study names the lr its arms ran at, in their rows."""
    shared = [{"seed": s, "best_val": _score(n, 1e-2, s), "axes": _axes(n, 1e-2, "evaluation") | {"role": None},
               "study": {**STUDY, "lr_protocol": "shared"}} for n in PREFERS for s in (0, 1, 2)]
    verdicts = {c.id: v for c, v in evaluate_claims(runs_of(*shared))}
    dyt = verdicts["dyt_matches_ln"]
    # (the own_lr check's remedy may name choosing on selection seeds as the change; no lr is said to be chosen)
    assert "Each arm at its own learning rate" not in dyt.explanation and "nan" not in dyt.explanation
    assert "not tuned per arm" in dyt.explanation  # and the shared lr gates the final-quality comparison by name
    assert set(dyt.evidence["lr"]) == {"0.01"}, dyt.evidence
