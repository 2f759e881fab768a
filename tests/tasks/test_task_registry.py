"""One table of tasks: a task is its config class, registered once, and every consumer asks it.

The toy task (tests/tasks/conftest.py) is entered in ``TASK_CONFIGS`` alone; the schema, the Hydra
composition, ``to_config``, the runner's memory check, ``load_task``, the run's identity and the
record then take it with no edit of their own.
"""

import dataclasses
import subprocess
import sys

import numpy as np
import pytest
import torch

import normbench.configuration.schema
import normbench.tasks
from normbench.checks import ConfigError
from normbench.configuration.config import to_config
from normbench.configuration.contract import effective_config
from normbench.tasks import TASK_CONFIGS, AddingConfig, CopyConfig, MqarConfig, TaskConfig, TaskData, TextConfig
from normbench.tasks.tensors import load_task
from normbench.training.run import execute


def test_a_task_registered_in_the_table_alone_runs_end_to_end(toy_task, compose, tmp_path):
    assert normbench.configuration.schema.TASK_CONFIGS["toy"] is toy_task  # the schema reads the same table
    assert type(to_config(compose("task=toy")).task) is toy_task
    summary = execute(compose("task=toy", "task.length=7"), tmp_path, ["task=toy"])
    assert summary["status"] == "ok", summary["reason"]
    assert summary["task"]["name"] == "toy" and summary["task"]["seq_len"] == 7
    assert summary["config"]["task"]["length"] == 7


def test_the_runner_asks_the_task_for_its_memory(toy_task, compose, tmp_path, monkeypatch):
    monkeypatch.setattr(toy_task, "tensor_bytes", lambda self: 1 << 62)
    summary = execute(compose("task=toy"), tmp_path, ["task=toy"])
    assert summary["status"] == "invalid" and "GiB for the task's tensors" in summary["reason"]


def test_a_bad_toy_value_is_a_config_error(toy_task, compose):
    with pytest.raises(ConfigError, match="task.length must be >= 1, got 0"):
        to_config(compose("task=toy", "task.length=0"))


# What run.py's getattr arithmetic gave before each task was asked (examples x positions x 16 bytes;
# file-backed tasks 0): the memory check refuses the same runs as before.
@pytest.mark.parametrize("config, expected", [
    (AddingConfig(), 19_392_000),
    (AddingConfig(length=7, n_train=3, n_val=2, n_test=1), 1440),
    (CopyConfig(), 7_872_000),
    (CopyConfig(length=2, delay=3, n_train=3), 256_384),
    (MqarConfig(), 4_800_000),
    (MqarConfig(n_pairs=5, n_keys=9, n_values=9, n_train=3), 512_768),
    (TextConfig(), 24_768_000),
    *[(TASK_CONFIGS[name](), 0) for name in ("digits", "idx", "imdb")],
])
def test_tensor_bytes_are_what_the_runner_reserved_before(config, expected):
    assert config.tensor_bytes() == expected


def test_a_loader_gives_arrays_and_load_task_the_same_values_as_tensors():
    config = AddingConfig(length=9, min_length=3, n_train=20, n_val=4, n_test=4)
    arrays, tensors = config.load(seed=2), load_task(config, seed=2)
    for raw, split in zip((arrays.train, arrays.val, arrays.test), (tensors.train, tensors.val, tensors.test)):
        for a, t in ((raw.x, split.x), (raw.y, split.y), (raw.lengths, split.lengths)):
            assert isinstance(a, np.ndarray) and isinstance(t, torch.Tensor)
            assert t.dtype == torch.from_numpy(a).dtype and np.array_equal(t.numpy(), a, equal_nan=True)
    rest = [f.name for f in dataclasses.fields(TaskData) if f.name not in ("train", "val", "test")]
    assert [getattr(tensors, key) for key in rest] == [getattr(arrays, key) for key in rest]


def test_every_table_entry_is_a_task_config_the_package_exports():
    for name, config_class in TASK_CONFIGS.items():
        assert issubclass(config_class, TaskConfig) and dataclasses.is_dataclass(config_class)
        assert getattr(normbench.tasks, config_class.__name__) is config_class
    assert normbench.configuration.schema.ConfigError is ConfigError


def test_the_task_configs_import_without_torch():
    code = "import sys, normbench.tasks, normbench.configuration.schema; print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_a_run_identity_asks_the_task_which_of_its_keys_are_inert(toy_task, compose, monkeypatch):
    recorded = dataclasses.asdict(to_config(compose("task=toy", "norm=bn")))
    assert "n_test" in effective_config(recorded)["task"] and "bn_mask" not in effective_config(recorded)["norm"]
    monkeypatch.setattr(toy_task, "inert", classmethod(lambda cls, setting: ["n_test"]))
    monkeypatch.setattr(toy_task, "padded", classmethod(lambda cls, setting: setting("length") > 3))
    assert "n_test" not in effective_config(recorded)["task"] and "bn_mask" in effective_config(recorded)["norm"]


@pytest.mark.parametrize("name, paths, expected", [
    ("copy", [], "synthetic copy-memory sequences drawn from the run's seed (no files)"),
    ("digits", [], "scikit-learn's bundled 8×8 handwritten digits (1797 images), read pixel by pixel"),
    ("idx", ["/data/mnist"], "MNIST-format IDX image files"),
    ("idx", ["/data/fashion-mnist/", "/data/mnist"], "MNIST-format IDX image files"),
    ("idx", ["/data/fashion-mnist/"], "Fashion-MNIST (28×28 clothing images, 10 classes) as IDX files"),
    ("idx", ["/usr/share/datasets/fashion-mnist"],
     "Fashion-MNIST (28×28 clothing images, 10 classes) as IDX files from Debian's dataset-fashion-mnist package"),
    ("text", ["/a.txt"], "a UTF-8 text file, character by character"),
    ("fortunes_lm", ["/usr/share/games/fortunes"],
     "Debian's fortunes package (%-separated English texts by topic file), character by character"),
    ("fortunes_topic", ["/data/my-fortunes"],
     "fortune files (%-separated English texts by topic file), each document's topic file, read character by character"),
])
def test_each_task_says_what_data_it_reads_for_the_report(name, paths, expected):
    assert TASK_CONFIGS[name].describe_data(paths) == expected
    assert TaskConfig.describe_data(paths) == "see the task's config"  # a task that says nothing
