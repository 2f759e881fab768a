import math

import pytest

from normbench.records.convergence import convergence, train_loss_at, val_auc


def curve(steps, loss_of_step):
    return [(s, loss_of_step(s)) for s in range(1, steps + 1)]


def test_train_loss_at_averages_the_last_tenth_before_each_fraction():
    losses = curve(100, float)  # loss = step: the window (15, 25] averages 16..25
    m = convergence(losses, [], steps=100)
    assert m["train_loss_at_25"] == pytest.approx(20.5)
    assert m["train_loss_at_50"] == pytest.approx(45.5)
    assert m["train_loss_at_75"] == pytest.approx(70.5)
    assert m["train_loss_at_100"] == pytest.approx(95.5)
    assert m["train_loss_auc"] == pytest.approx(50.5)


def test_logged_every_tenth_step_uses_the_rows_in_the_window():
    logged = [(s, 1.0 if s <= 50 else 0.5) for s in range(10, 201, 10)]  # log_every=10, steps=200
    assert train_loss_at(logged, 200, 25) == pytest.approx(1.0)  # window (30, 50]: steps 40, 50
    assert train_loss_at(logged, 200, 50) == pytest.approx(0.5)  # (80, 100]: 90, 100
    assert train_loss_at(logged[:2], 200, 50) is None            # nothing logged in the window


def test_faster_convergence_reads_lower_at_every_fraction_and_in_the_area():
    fast = convergence(curve(200, lambda s: 2.3 * math.exp(-s / 20)), [], steps=200)
    slow = convergence(curve(200, lambda s: 2.3 * math.exp(-s / 80)), [], steps=200)
    for key in ("train_loss_at_25", "train_loss_at_50", "train_loss_at_100", "train_loss_auc"):
        assert fast[key] < slow[key]


def test_a_diverged_run_has_no_area_and_no_loss_past_its_end():
    losses = curve(40, lambda s: 1.0)  # stopped at step 41 of 100: its non-finite loss is not in the list
    m = convergence(losses, [(20, 0.5), (40, 0.6)], steps=100, diverged=True)
    assert m["train_loss_at_25"] == 1.0
    assert m["train_loss_at_50"] is m["train_loss_at_75"] is m["train_loss_at_100"] is None
    assert m["train_loss_auc"] is None
    assert convergence([(1, 1.0), (2, math.inf)], [], steps=2)["train_loss_at_100"] is None
    assert convergence([(1, 1.0), (2, math.nan)], [], steps=2)["train_loss_auc"] is None


def test_val_auc_is_the_trapezoid_mean_over_the_evaluated_span():
    assert val_auc([(0, 0.1), (100, 0.9), (200, 0.9)]) == pytest.approx((50 + 90) / 200)
    assert val_auc([(200, 0.9), (0, 0.1), (100, 0.9)]) == pytest.approx(0.7)  # order of the list does not matter
    assert val_auc([(100, 0.2), (200, 0.4)]) == pytest.approx(0.3)              # no step 0: the span evaluated
    early = val_auc([(0, 0.1), (50, 0.9), (100, 0.9), (200, 0.9)])
    late = val_auc([(0, 0.1), (150, 0.1), (200, 0.9)])
    assert early > late  # same final accuracy, learned earlier: larger area
    assert val_auc([(100, 0.5)]) is None and val_auc([]) is None
    assert val_auc([(0, 0.1), (100, math.nan)]) is None


def test_every_run_record_has_the_convergence_measures(compose, tmp_path):
    from normbench.training.run import execute

    metrics = execute(compose("steps=8", "eval_every=2"), tmp_path, [])["metrics"]
    for key in ("train_loss_at_25", "train_loss_at_50", "train_loss_at_75", "train_loss_at_100",
                "train_loss_auc", "val_auc"):
        assert isinstance(metrics[key], float), key


def test_final_val_smoothed_is_the_mean_of_the_last_three_evaluations():
    from normbench.records.convergence import FINAL_EVALS, final_val_smoothed, trailing_means
    from normbench.records.metrics import metric

    evals = [(40, 0.9), (10, 0.5), (20, 0.6), (30, 0.7)]  # in any order: the last by step
    assert final_val_smoothed(evals) == pytest.approx((0.6 + 0.7 + 0.9) / 3)
    assert final_val_smoothed([(10, 0.5), (20, 0.7)]) == pytest.approx(0.6)  # fewer than three: all of them
    assert final_val_smoothed([]) is None and final_val_smoothed([(10, 0.5), (20, math.nan)]) is None
    assert convergence([], evals, steps=40)["final_val_smoothed"] == pytest.approx(final_val_smoothed(evals))
    assert trailing_means([1.0, 2.0, 3.0, 7.0]) == pytest.approx([1.0, 1.5, 2.0, 4.0])
    assert f"last {FINAL_EVALS} validation" in metric("final_val_smoothed").label
