"""A tuned study's lrs chosen on one score, a part reading another measure (referee 20, ln_beats_bn_varlen)."""

from normbench.analysis.claims import CLAIMS, NOT_TESTABLE, SUPPORTED, evaluate

STUDY = {"schema": "normbench.study/1", "id": "00112233aabb", "name": "bn_converges", "purpose": "BN-LSTM vs LSTM.",
         "swept": ["norm", "lr", "seed"], "arms": ["norm", "lr"], "command": "python -m normbench -m +sweep=x",
         "lr_protocol": "tuned"}
GRID = (3e-3, 1e-2, 3e-2)
CLAIM = next(c for c in CLAIMS if c.id == "bn_lstm_converges_faster")


def _axes(norm: str, lr: float, role: str) -> dict:
    return {"model": "lstm", "task": "copy", "norm": norm, "placement": "in_cell" if norm == "bn" else "none",
            "lr": lr, "role": role}


def _records(selection: dict, chosen: dict) -> list[dict]:
    """selection: norm -> {lr: (final score, val_auc)} on selection seeds 1000, 1001; chosen: norm -> (lr, final,
    val_auc) of the evaluation runs, seeds 0-2 (BN's curve ahead of the plain LSTM's in every evaluation seed)."""
    rows = [{"seed": seed, "best_val": final + 0.001 * (seed - 1000), "metrics": {"val_auc": auc + 0.001 * (seed - 1000)},
             "axes": _axes(norm, lr, "selection"), "study": STUDY}
            for norm, grid in selection.items() for lr, (final, auc) in grid.items() for seed in (1000, 1001)]
    rows += [{"seed": seed, "best_val": final + 0.002 * seed, "metrics": {"val_auc": auc + 0.002 * seed},
              "axes": _axes(norm, lr, "evaluation"), "study": STUDY}
             for norm, (lr, final, auc) in chosen.items() for seed in (0, 1, 2)]
    return rows


def _verdict(runs_of, selection, chosen):
    return next(v for c, v in evaluate([CLAIM], runs_of(*_records(selection, chosen))))


def test_an_order_that_turns_over_with_the_choice_is_not_testable(runs_of):
    # BN's final score is best at 3e-3, where its curve is slow (0.60); at 3e-2 its curve is the fastest (0.90).
    # The LSTM's curve is at 0.75 wherever: at the score's lrs BN is behind on val_auc, at val_auc's it is ahead
    selection = {"bn": {3e-3: (0.95, 0.60), 1e-2: (0.93, 0.70), 3e-2: (0.92, 0.90)},
                 "none": {3e-3: (0.80, 0.70), 1e-2: (0.85, 0.75), 3e-2: (0.82, 0.74)}}
    verdict = _verdict(runs_of, selection, {"bn": (3e-3, 0.95, 0.85), "none": (1e-2, 0.85, 0.75)})
    part = verdict.parts[0]
    assert part.status == NOT_TESTABLE, part.test
    assert "lr chosen on the final validation score, the part reads val_auc" in part.note
    assert "testable with each arm's lr selected on the part's measure" in part.note
    assert "bn-lstm 0.003 / 0.03" in part.test


def test_an_order_the_choice_does_not_change_is_judged_and_says_so(runs_of):
    selection = {"bn": {3e-3: (0.95, 0.80), 1e-2: (0.93, 0.82), 3e-2: (0.92, 0.90)},
                 "none": {3e-3: (0.80, 0.70), 1e-2: (0.85, 0.75), 3e-2: (0.82, 0.74)}}
    verdict = _verdict(runs_of, selection, {"bn": (3e-3, 0.95, 0.85), "none": (1e-2, 0.85, 0.75)})
    part = verdict.parts[0]
    assert part.status == SUPPORTED, part.test
    assert "The order of the arms is the same at either choice" in part.test


def test_an_order_that_turns_over_inside_delta_is_not_a_reversal(runs_of):
    # at val_auc's lrs BN leads by 0.005, under accuracy's δ = 0.01: no clear order to turn over (gamma_init's case)
    selection = {"bn": {3e-3: (0.95, 0.60), 1e-2: (0.93, 0.70), 3e-2: (0.92, 0.755)},
                 "none": {3e-3: (0.80, 0.70), 1e-2: (0.85, 0.75), 3e-2: (0.82, 0.74)}}
    part = _verdict(runs_of, selection, {"bn": (3e-3, 0.95, 0.85), "none": (1e-2, 0.85, 0.75)}).parts[0]
    assert part.status == SUPPORTED, part.test
    assert "or turns over by no more than δ" in part.test
