"""A task owns its measure: its loss and metric are table entries, its target predicate its own.

The toy metric below (the error rate, lower is better) is defined here and entered in
``METRIC_SUMS`` alone; a toy task that names it then trains, is judged and is recorded with no edit
of the trainer's.
"""

import dataclasses
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hydra.core.config_store import ConfigStore

from normbench.checks import require_name
from normbench.metrics import TASK_METRICS
from normbench.run import execute
from normbench.tasks import TASK_CONFIGS, TaskConfig, TaskData
from normbench.tasks.data import NOT_SCORED, Split
from normbench.tasks.scoring import LOSSES, METRIC_SUMS, accuracy_sums, scoring
from normbench.tasks.tensors import load_task


def error_rate_sums(out, y) -> tuple[float, int]:
    """The toy task metric: wrong answers over scored steps."""
    scored = y.reshape(-1) != NOT_SCORED
    logits, labels = out.reshape(-1, out.shape[-1])[scored], y.reshape(-1)[scored]
    return float((logits.argmax(-1) != labels).sum()), int(labels.numel())


@dataclasses.dataclass
class SignConfig(TaskConfig):
    """Classify the sign of the sum of a sequence of +-1 steps, scored by ``metric``."""

    name: str = "sign"
    metric: str = "accuracy"
    length: int = 5
    n_train: int = 64
    n_val: int = 16
    n_test: int = 16
    target: float = 0.75  # of the accuracy; the error rate's is 1 - target

    def __post_init__(self):
        require_name(self.name, "sign")

    def load(self, seed: int) -> TaskData:
        rng = np.random.default_rng(seed)
        splits = []
        for n in (self.n_train, self.n_val, self.n_test):
            x = rng.choice(np.array([-1.0, 1.0], dtype=np.float32), (n, self.length, 1))
            splits.append(Split(x=x, y=(x.sum(axis=(1, 2)) > 0).astype(np.int64)))
        data = TaskData.classification("sign", *splits, input_kind="features", input_dim=1, n_outputs=2,
                                       chance=0.5, target=self.target, seq_len=self.length)
        if self.metric == "error_rate":
            return dataclasses.replace(data, metric="error_rate", higher_is_better=False, target=1 - self.target)
        return data


@pytest.fixture
def sign_task(monkeypatch):
    """The toy task in the task table and Hydra's task group; the toy metric in METRIC_SUMS alone."""
    monkeypatch.setitem(TASK_CONFIGS, "sign", SignConfig)
    monkeypatch.setitem(METRIC_SUMS, "error_rate", error_rate_sums)
    store = ConfigStore.instance()
    store.store(group="task", name="sign", node=SignConfig)
    yield SignConfig
    store.repo["task"].pop("sign.yaml")


def test_a_metric_registered_in_the_table_alone_is_what_a_run_is_judged_by(sign_task, compose, tmp_path):
    runs = {metric: execute(compose("task=sign", f"task.metric={metric}", "task.target=0.3", "steps=9"), tmp_path / metric,
                            ["task=sign"]) for metric in ("accuracy", "error_rate")}
    for summary in runs.values():
        assert summary["status"] == "ok", summary["reason"]
    accuracy, error = (runs[m]["metrics"] for m in ("accuracy", "error_rate"))
    assert runs["error_rate"]["task"]["metric"] == "error_rate" and not runs["error_rate"]["task"]["higher_is_better"]
    # the same training (the metric is read, never trained on), judged the other way round
    assert error["final_train_loss"] == accuracy["final_train_loss"]
    for key in ("best_val", "final_val", "test"):  # best_val: the lowest error is the highest accuracy
        assert error[key] == pytest.approx(1 - accuracy[key])
    assert error["steps_to_target"] == accuracy["steps_to_target"] is not None  # each reached its own target
    assert error["did_not_train"] is False  # a metric without decisions (metrics.TASK_METRICS) has no chance band


def test_an_unregistered_metric_is_refused_by_name(sign_task):
    task = dataclasses.replace(load_task(SignConfig(), seed=0), metric="nope")
    with pytest.raises(KeyError, match="sign: 'nope' is not registered in normbench/tasks/scoring.py"):
        scoring(task)


def test_every_metric_with_decisions_is_computed_and_every_task_loss_is_registered():
    assert set(METRIC_SUMS) == set(TASK_METRICS)
    assert set(LOSSES) == {"mse", "cross_entropy"}


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
