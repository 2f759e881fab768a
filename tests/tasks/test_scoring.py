"""A task owns its measure: its loss and metric are table entries, its target predicate its own.

The toy metric below (the error rate, lower is better) is defined here and entered in
``METRIC_SUMS`` alone; the toy task (tests/tasks/conftest.py), naming it, then trains, is judged and
is recorded with no edit of the trainer's.
"""

import dataclasses
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from normbench.analysis.rules import in_chance_band
from normbench.records.metrics import TASK_METRICS
from normbench.tasks import AddingConfig, CopyConfig, MqarConfig, TaskData, TextConfig, tensors
from normbench.tasks.data import NOT_SCORED, Split
from normbench.tasks.scoring import LOSSES, METRIC_SUMS, Scoring, accuracy_sums, scoring
from normbench.tasks.tensors import load_task
from normbench.training.run import execute


def error_rate_sums(out, y) -> tuple[float, int]:
    """The toy task metric: wrong answers over scored steps."""
    scored = y.reshape(-1) != NOT_SCORED
    logits, labels = out.reshape(-1, out.shape[-1])[scored], y.reshape(-1)[scored]
    return float((logits.argmax(-1) != labels).sum()), int(labels.numel())


def test_a_metric_registered_in_the_table_alone_is_what_a_run_is_judged_by(toy_task, compose, tmp_path, monkeypatch):
    def run(name):
        summary = execute(compose("task=toy", "task.target=0.3", "steps=9"), tmp_path / name, ["task=toy"])
        assert summary["status"] == "ok", summary["reason"]
        return summary

    accuracy = run("accuracy")["metrics"]
    # the toy task scored by the toy metric, which is entered in METRIC_SUMS alone
    monkeypatch.setitem(METRIC_SUMS, "error_rate", error_rate_sums)
    # a process keeps each task it built (tasks/tensors.py), keyed by its config and seed: the loader patched
    # below is a different task under the same config, so this test starts from an empty store
    monkeypatch.setattr(tensors, "_built", {})
    load = toy_task.load
    monkeypatch.setattr(toy_task, "load", lambda self, seed: dataclasses.replace(
        load(self, seed), metric="error_rate", higher_is_better=False, target=1 - self.target))
    summary = run("error_rate")
    error = summary["metrics"]
    assert summary["task"]["metric"] == "error_rate" and not summary["task"]["higher_is_better"]
    # the same training (the metric is read, never trained on), judged the other way round
    assert error["final_train_loss"] == accuracy["final_train_loss"]
    for key in ("best_val", "final_val", "test"):  # best_val: the lowest error is the highest accuracy
        assert error[key] == pytest.approx(1 - accuracy[key])
    assert error["steps_to_target"] == accuracy["steps_to_target"] is not None  # each reached its own target
    assert "at_chance" not in error and "did_not_train" not in error  # a verdict: the analysis decides it from the record (analysis/rules.py)
    assert not in_chance_band(error["best_val"], "error_rate", summary["task"]["chance"])  # no chance band for it


def test_an_unregistered_metric_is_refused_by_name(toy_task):
    task = dataclasses.replace(load_task(toy_task(), seed=0), metric="nope")
    with pytest.raises(KeyError, match="toy: 'nope' is not registered in normbench/tasks/scoring.py"):
        scoring(task)


def test_every_metric_with_decisions_is_computed_and_every_tasks_measure_is_registered(tmp_path):
    assert set(METRIC_SUMS) == set(TASK_METRICS)
    book = tmp_path / "book.txt"
    book.write_text("the quick brown fox jumps over the lazy dog. " * 20, encoding="utf-8")
    small = dict(n_train=8, n_val=4, n_test=4)
    tasks = [load_task(config, seed=0) for config in (
        AddingConfig(length=4, **small), CopyConfig(length=2, delay=1, **small), MqarConfig(**small),
        TextConfig(path=str(book), length=8, **small))]
    assert {(task.loss, task.metric) for task in tasks} == {
        ("mse", "mse"), ("cross_entropy", "accuracy"), ("cross_entropy", "bpc")}
    for task in tasks:
        assert scoring(task) == Scoring(LOSSES[task.loss], METRIC_SUMS[task.metric])


def test_the_metrics_sum_scored_steps_only():
    logits = torch.tensor([[[2.0, 0.0], [0.0, 1.0], [5.0, 0.0]],
                           [[0.0, 3.0], [1.0, 0.0], [0.0, 9.0]]])
    y = torch.tensor([[0, 0, NOT_SCORED], [1, 1, NOT_SCORED]])  # a padded last step, never scored
    assert accuracy_sums(logits, y) == (2.0, 4)
    total, count = METRIC_SUMS["bpc"](logits, y)
    expected = F.cross_entropy(logits[:, :2].reshape(-1, 2), y[:, :2].reshape(-1), reduction="sum") / math.log(2)
    assert count == 4 and total == pytest.approx(float(expected))
    cross_entropy = LOSSES["cross_entropy"](logits, y)
    assert float(cross_entropy) == pytest.approx(float(expected) * math.log(2) / 4)


def test_mse_sums_add_up_to_the_loss_over_batches_of_any_size():
    out, y = torch.tensor([[1.0], [2.0], [4.0]]), torch.tensor([0.0, 2.0, 1.0])
    parts = [METRIC_SUMS["mse"](out[i:j], y[i:j]) for i, j in ((0, 1), (1, 3))]
    total, count = map(sum, zip(*parts))
    assert (total, count) == (10.0, 3) and total / count == pytest.approx(float(LOSSES["mse"](out, y)))


@pytest.mark.parametrize("higher, value, reached, better", [
    (True, 0.8, True, True), (True, 0.75, True, False), (True, 0.7, False, False),
    (False, 0.2, True, True), (False, 0.25, True, False), (False, 0.3, False, False),
])
def test_the_target_predicate_is_the_tasks_own(higher, value, reached, better):
    split = Split(x=np.zeros((1, 1, 1), np.float32), y=np.zeros(1, np.int64))
    task = TaskData("t", split, split, split, "features", 1, 2, "last", "cross_entropy", "accuracy",
                    higher_is_better=higher, chance=0.5, target=0.75 if higher else 0.25, seq_len=1)
    assert task.reached(value) is reached  # the target itself counts as reached
    assert task.better(value, 0.75 if higher else 0.25) is better
