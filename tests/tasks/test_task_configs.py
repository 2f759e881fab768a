"""The task registry, config validation, the Hydra yaml files, and load_task's dispatch."""

import dataclasses
import typing
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

from normbench.checks import ConfigError
from normbench.tasks import (
    TASK_CONFIGS,
    AddingConfig,
    CopyConfig,
    DigitsConfig,
    IdxConfig,
    ImdbConfig,
    MqarConfig,
    TextConfig,
)
from normbench.tasks.tensors import load_task

CONF_DIR = Path(__file__).resolve().parents[2] / "conf"
SIMPLE_TYPES = {int, float, str, bool, typing.Optional[str], typing.Optional[int]}


def test_registry_names_every_task_by_its_own_name():
    assert set(TASK_CONFIGS) == {"adding", "copy", "digits", "mqar", "text", "imdb", "idx", "fortunes_lm", "fortunes_topic"}
    for name, config_class in TASK_CONFIGS.items():
        assert config_class().name == name


@pytest.mark.parametrize("name", sorted(TASK_CONFIGS))
def test_configs_use_only_types_omegaconf_can_check(name):
    hints = typing.get_type_hints(TASK_CONFIGS[name])
    from normbench.records.metrics import TASK_METRICS

    assert hints.pop("metric") == typing.ClassVar[str]  # the class's, not a setting: the metric its target is of
    assert TASK_CONFIGS[name].metric in TASK_METRICS
    assert {"name", "target"} <= set(hints)
    assert set(hints.values()) <= SIMPLE_TYPES


BAD_VALUES = [
    (AddingConfig, "length", 1),
    (AddingConfig, "n_train", 0),
    (AddingConfig, "n_val", 0),
    (AddingConfig, "name", "copy"),
    (CopyConfig, "n_symbols", 1),
    (CopyConfig, "length", 0),
    (CopyConfig, "delay", -1),
    (CopyConfig, "n_test", 0),
    (MqarConfig, "n_pairs", 0),
    (MqarConfig, "n_keys", 4),
    (MqarConfig, "n_values", 7),
    (MqarConfig, "n_queries", 0),
    (MqarConfig, "n_queries", 9),
    (DigitsConfig, "pixels_per_step", 3),
    (DigitsConfig, "pixels_per_step", 0),
    (DigitsConfig, "pixels_per_step", 128),
    (DigitsConfig, "permutation_seed", -1),
    (TextConfig, "length", 0),
    (TextConfig, "n_train", 0),
    (ImdbConfig, "max_vocab", 0),
    (ImdbConfig, "max_len", 0),
    (ImdbConfig, "max_files_per_class", 0),
    (IdxConfig, "limit_train", 1),
]


@pytest.mark.parametrize("config_class, key, value", BAD_VALUES)
def test_out_of_range_value_raises_one_line_naming_key_value_and_rule(config_class, key, value):
    with pytest.raises(ConfigError) as caught:  # as every other setting: the app's one line and status 2
        config_class(**{key: value})
    message = str(caught.value)
    assert f"task.{key} must" in message
    assert message.endswith(f"got {value!r}" if isinstance(value, str) else f"got {value}")
    assert "\n" not in message


@pytest.mark.parametrize("name", sorted(TASK_CONFIGS))
def test_yaml_lists_every_field_with_its_default_in_field_order(name):
    raw = OmegaConf.to_container(OmegaConf.load(CONF_DIR / "task" / f"{name}.yaml"))
    assert raw.pop("defaults") == [f"/task_{name}_schema@_here_", "_self_"]
    config_class = TASK_CONFIGS[name]
    assert list(raw) == [field.name for field in dataclasses.fields(config_class)]
    assert raw == dataclasses.asdict(config_class())


@pytest.fixture(scope="module")
def task_schemas():
    # The app registers the same schemas; registering them here keeps this test self-contained.
    store = ConfigStore.instance()
    for name, config_class in TASK_CONFIGS.items():
        store.store(name=f"task_{name}_schema", node=config_class)


@pytest.mark.parametrize("name", sorted(TASK_CONFIGS))
def test_hydra_composes_each_yaml_against_its_schema(name, task_schemas):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(overrides=[f"+task={name}", "task.target=0.5"])
        with pytest.raises(Exception, match="target"):
            compose(overrides=[f"+task={name}", "task.target=not_a_number"])
        with pytest.raises(Exception, match="no_such_key"):
            compose(overrides=[f"+task={name}", "task.no_such_key=1"])
    assert OmegaConf.to_object(cfg.task) == dataclasses.replace(TASK_CONFIGS[name](), target=0.5)


def test_load_task_rechecks_values_merged_past_post_init():
    # Hydra merges overrides into the schema without rerunning __post_init__.
    cfg = OmegaConf.merge(OmegaConf.structured(AddingConfig), {"length": 1})
    with pytest.raises(ConfigError, match="task.length must be >= 2, got 1"):
        load_task(cfg, seed=0)


def test_load_task_accepts_any_object_with_the_config_attributes():
    cfg = OmegaConf.structured(CopyConfig(n_train=3, n_val=2, n_test=1))
    from_dictconfig = load_task(cfg, seed=4)
    from_namespace = load_task(SimpleNamespace(**dataclasses.asdict(CopyConfig(n_train=3, n_val=2, n_test=1))), seed=4)
    assert torch.equal(from_dictconfig.train.x, from_namespace.train.x)
    assert from_dictconfig.name == "copy"


def test_load_task_rejects_unknown_name_and_negative_seed():
    with pytest.raises(ConfigError, match="task.name must be one of .*got 'nope'"):
        load_task(SimpleNamespace(name="nope"), seed=0)
    with pytest.raises(ConfigError, match="seed must be >= 0, got -1"):
        load_task(AddingConfig(), seed=-1)
