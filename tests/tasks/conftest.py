"""The toy task: a task defined in tests alone, entered in ``TASK_CONFIGS`` by the ``toy_task`` fixture.

tests/tasks/test_task_registry.py runs it through every consumer of the task table, and
tests/tasks/test_scoring.py scores it by a toy metric.
"""

import dataclasses

import numpy as np
import pytest
from hydra.core.config_store import ConfigStore

from normbench.checks import require_at_least, require_name
from normbench.tasks import TASK_CONFIGS, TaskConfig, TaskData
from normbench.tasks.data import Split


@dataclasses.dataclass
class ToyConfig(TaskConfig):
    """Classify the sign of the sum of a sequence of +-1 steps."""

    name: str = "toy"
    length: int = 5
    n_train: int = 64
    n_val: int = 16
    n_test: int = 16
    target: float = 0.9

    def __post_init__(self):
        require_name(self.name, "toy")
        require_at_least("length", self.length, 1)

    def load(self, seed: int) -> TaskData:
        rng = np.random.default_rng(seed)
        splits = []
        for n in (self.n_train, self.n_val, self.n_test):
            x = rng.choice(np.array([-1.0, 1.0], dtype=np.float32), (n, self.length, 1))
            splits.append(Split(x=x, y=(x.sum(axis=(1, 2)) > 0).astype(np.int64)))
        return TaskData.classification("toy", *splits, input_kind="features", input_dim=1, n_outputs=2,
                                       chance=0.5, target=self.target, seq_len=self.length)

    def tensor_bytes(self) -> int:
        return (self.n_train + self.n_val + self.n_test) * self.length * 8


@pytest.fixture
def toy_task(monkeypatch):
    """The toy entered in the one table; Hydra's task group gets its node, as conf/task/toy.yaml would."""
    monkeypatch.setitem(TASK_CONFIGS, "toy", ToyConfig)
    store = ConfigStore.instance()
    store.store(group="task", name="toy", node=ToyConfig)
    yield ToyConfig
    store.repo["task"].pop("toy.yaml")
