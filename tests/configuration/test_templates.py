"""Configs copied by unpickling (configuration/templates.py) are the deep copy's trees, or deep copies where they
could not be: crafted trees that a plain pickle would copy wrongly, and every smoke case's composed config."""

from __future__ import annotations

import copy
import dataclasses
import gc
import math
import sys
import threading
import typing
import weakref

import pytest
from hydra import compose, initialize_config_dir
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf

from normbench.configuration.config import config_dir
from normbench.configuration.templates import Template, copied, same_tree
from normbench.studies import validation


@dataclasses.dataclass
class Typed:
    counts: typing.Dict[str, int] = dataclasses.field(default_factory=lambda: {"a": 1})
    widths: typing.List[float] = dataclasses.field(default_factory=lambda: [1.0, math.nan])
    maybe: typing.Optional[typing.List[int]] = None
    name: str = "${other}"
    either: typing.Union[int, str] = 3


def test_same_tree_tells_a_copy_from_a_tree_that_differs_in_type_metadata_order_or_parent():
    tree = OmegaConf.create({"a": 1, "b": {"c": [1, 2]}, "d": "${a}"})
    assert same_tree(tree, copy.deepcopy(tree))
    assert not same_tree(tree, OmegaConf.create({"a": True, "b": {"c": [1, 2]}, "d": "${a}"}))  # True == 1
    assert not same_tree(tree, OmegaConf.create({"b": {"c": [1, 2]}, "a": 1, "d": "${a}"}))  # order
    flagged = copy.deepcopy(tree)
    OmegaConf.set_readonly(flagged.b, True)
    assert not same_tree(tree, flagged)
    astray = copy.deepcopy(tree)
    astray.b.__dict__["_parent"] = None  # a child that does not point to its container
    assert not same_tree(tree, astray)
    assert not same_tree(OmegaConf.structured(Typed), OmegaConf.create(OmegaConf.to_container(
        OmegaConf.structured(Typed))))  # the same values without the schema's types
    changed = OmegaConf.structured(Typed)
    changed.either = "changed"  # a Union-typed value: the node it holds is compared too (hostile review of ae79e9a)
    assert not same_tree(OmegaConf.structured(Typed), changed)
    assert same_tree(changed, copy.deepcopy(changed)) and same_tree(changed, copied(changed))


def test_a_template_copies_a_structured_tree_as_its_deep_copy_does():
    node = OmegaConf.structured(Typed)
    template = Template(node)
    assert template._bytes is not None  # copied by unpickling
    first, second = template.copy(), template.copy()
    assert same_tree(first, copy.deepcopy(node)) and first is not second and first.counts is not node.counts
    first.counts.a = 5
    assert template.copy().counts.a == 1 and node.counts.a == 1


class Box:
    """An object a config may hold (``allow_objects``): it pickles, and a deep copy of the config shares it."""


def test_a_tree_holding_an_object_or_a_local_class_is_deep_copied():
    box = Box()
    boxed = OmegaConf.create({"a": {"box": box}}, flags={"allow_objects": True})
    assert Template(boxed)._bytes is None and Template(boxed).copy().a.box is box and copied(boxed).a.box is box
    lock = threading.Lock()
    holding = OmegaConf.create({"a": {"lock": lock}}, flags={"allow_objects": True})
    assert Template(holding)._bytes is None  # a pickle would copy the object a deep copy shares (and a lock refuses)
    assert copied(holding).a.lock is lock and Template(holding).copy().a.lock is lock

    @dataclasses.dataclass
    class Local:
        x: int = 1

    local = OmegaConf.structured(Local)
    assert Template(local)._bytes is None and same_tree(Template(local).copy(), local)


def test_a_template_whose_class_left_its_module_deep_copies(monkeypatch):
    template = Template(OmegaConf.structured(Typed))
    assert template._bytes is not None
    monkeypatch.delattr(sys.modules[__name__], "Typed")  # the class no longer found by its name: unpickling fails
    assert same_tree(template.copy(), OmegaConf.structured(template.config)) and template._bytes is None


def test_a_child_pointing_outside_its_tree_is_copied_as_the_deep_copy_reparents_it():
    """HydraConfig's copy of the hydra node: its child points to the job's config, not to the copy; a plain pickle
    would copy the job's whole config with it and leave the child pointing there."""
    outside = OmegaConf.create({"secret": "job config", "hydra": {"x": 1}})
    wrapper = OmegaConf.create({"hydra": {"x": 1, "y": [1]}})
    wrapper.hydra.__dict__["_parent"] = outside
    wrapper._set_parent(outside)
    got, want = copied(wrapper), copy.deepcopy(wrapper)
    assert same_tree(got, want)
    assert got.hydra._get_parent() is got and got._get_parent() is outside  # the root's parent kept, as deepcopy's
    assert wrapper.hydra._get_parent() is outside  # the original is left as it was


def test_a_stored_node_is_copied_from_its_template_and_a_node_stored_again_gets_its_own():
    validation.install()
    store = ConfigStore.instance()
    store.store(name="templates_probe", node=Typed)
    first = store.load("templates_probe.yaml")
    first.node.counts.a = 9
    again = store.load("templates_probe.yaml")
    assert again.node.counts.a == 1 and same_tree(again.node, copy.deepcopy(store._load("templates_probe.yaml").node))
    kept = weakref.ref(store._load("templates_probe.yaml"))
    store.store(name="templates_probe", node=OmegaConf.create({"other": 2}))
    assert OmegaConf.to_container(store.load("templates_probe.yaml").node) == {"other": 2}
    gc.collect()
    assert kept() is None  # the Template went with the node stored before: nothing kept beside the store
    assert "_normbench_template" not in store.load("templates_probe.yaml").__dict__  # not handed out


SMOKE_CASES = ["bn_bf16", "derf_fp32", "fortunes_lm_ln", "ln_groups_fp32", "rms_muon_fp32", "scale_fp16"]


@pytest.mark.parametrize("overrides", [
    ["+sweep=smoke", f"+smoke={case}", f"model={model}", f"placement={placement}"]
    for case, model, placement in zip(SMOKE_CASES, ["lstm", "transformer", "gru", "mingru", "rnn", "minlstm"],
                                       ["pre", "post", "in_cell", "gated_before", "peri", "mix"])
] + [["norm=dyt", "model=transformer", "task=mqar"]])
def test_a_composition_with_templates_is_the_composition_with_deep_copies(overrides, monkeypatch):
    """Every copy the composition takes (normbench's files, Hydra's packaged configs, the ConfigStore's nodes) made by
    deepcopy instead, and every config Hydra's way where one placed once is moved (studies/validation.py): the composed
    config is the same tree, hydra node included."""
    validation.install()

    def compose_now():
        with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
            return compose("config", overrides=overrides, return_hydra_config=True)

    fast = compose_now()
    with monkeypatch.context() as patch:
        patch.setattr(Template, "copy", lambda self: copy.deepcopy(self.config))
        patch.setattr(ConfigLoaderImpl, "_embed_result_config",  # Hydra's copy where a config is placed once
                      staticmethod(ConfigLoaderImpl._embed_result_config.hydras))
        deep = compose_now()
    for config in (fast, deep):  # ${now:...} as each composition resolved it: a second apart at times
        config._metadata.resolver_cache.pop("now", None)
    assert isinstance(fast, DictConfig) and same_tree(fast, deep)
    assert OmegaConf.to_yaml(fast) == OmegaConf.to_yaml(deep)
