"""A placement is its descriptor (normbench/configuration/placements.py): a toy Transformer placement registered here,
res_post (x + N(f(x)): the norm on each branch's output only, as Swin V2's res-post-norm), is accepted by
the config schema, built by the one Transformer block, refused for the families it names no slots for,
given its inert settings by the identity contract and trained end to end, with no edit anywhere else."""

import pytest
import torch
from omegaconf import OmegaConf

from normbench.configuration.config import ConfigError, to_config
from normbench.configuration.contract import config_hash, effective_config
from normbench.configuration.placements import (
    PLACEMENTS,
    Placement,
    placement_names,
    placement_of,
    register,
    unregister,
)
from normbench.models import InvalidCombination, ModelShape, PlacementConfig, build_model
from normbench.norms import NormSpec
from normbench.training.run import execute

TOY = Placement("res_post", {"transformer": ("branch_out",)}, why_not={"lstm": "a toy of branch outputs"},
                final_norm=True)
IO = dict(input_kind="tokens", input_dim=7, n_outputs=3, readout="every_step")


@pytest.fixture
def res_post():
    register(TOY)
    yield "res_post"
    unregister("res_post")


def test_the_block_fills_the_toy_slots_only(res_post):
    torch.manual_seed(0)
    model = build_model(ModelShape("transformer", hidden=8, layers=2, heads=2), NormSpec("ln"), res_post, **IO)
    block = model.backbone.layers[0]
    norms = {name.split(".norm.")[0] for name, _ in model.named_parameters() if ".norm." in name}
    assert norms == {f"backbone.layers.{i}.norm{j}_out" for i in (0, 1) for j in (1, 2)} | {"backbone.final_norm"}
    x = torch.randn(2, 5, 8) * 3
    h = x + block.norm1_out(block.attn(x))
    torch.testing.assert_close(block(x), h + block.norm2_out(block.mlp(h)))


def test_families_without_slots_are_refused_with_the_reason(res_post):
    with pytest.raises(InvalidCombination, match=r"^placement 'res_post' is invalid for lstm \(a toy of branch outputs\); "
                                                 r"valid: pre, post, in_cell, gate$"):
        build_model(ModelShape("lstm", hidden=8, embed=8), NormSpec("ln"), res_post, **IO)
    with pytest.raises(InvalidCombination, match=r"invalid for gru \(not one of its placements\)"):
        build_model(ModelShape("gru", hidden=8, embed=8), NormSpec("ln"), res_post, **IO)


def test_the_contract_reads_its_inert_settings(res_post, compose):
    base = OmegaConf.to_container(compose("model=transformer", "placement=pre", "placement.name=res_post",
                                          "model.dropout=0.1"), resolve=True)
    base.pop("hydra", None)
    effective = effective_config(base)
    assert effective["placement"] == {"name": "res_post"}  # summed and cell_norm: nothing reads them
    assert effective["model"]["dropout_at"] == "after_norm"  # dropout meets its branch_out norm, as in peri
    before = {**base, "model": {**base["model"], "dropout_at": "before_norm"}}
    assert config_hash(before) != config_hash(base)
    pre = {**base, "placement": {**base["placement"], "name": "pre"}}
    assert config_hash(pre) != config_hash(base) and "dropout_at" not in effective_config(pre)["model"]


def test_a_run_at_the_toy_placement_trains_end_to_end(res_post, compose, tmp_path):
    node = compose("model=transformer", "placement=pre", "placement.name=res_post", "steps=2")
    assert to_config(node).placement.name == "res_post"
    summary = execute(node, tmp_path, ["placement.name=res_post"])
    assert summary["status"] == "ok", summary["reason"]
    assert summary["config"]["placement"]["name"] == "res_post"


def test_unregistered_it_is_gone_again(res_post):
    unregister(res_post)
    try:
        assert placement_names() == PLACEMENTS
        with pytest.raises(ConfigError, match="placement.name='res_post' is not valid"):
            PlacementConfig("res_post")
        with pytest.raises(ValueError, match="unknown placement 'res_post'"):
            placement_of("res_post")
    finally:
        register(TOY)  # for the fixture to remove


@pytest.mark.parametrize("slots,match", [({"transformer": ("branch_in", "main")}, "one of them"),
                                         ({"lstm": ("branch_in",)}, "lstm needs slots among layer_input"),
                                         ({"gru": ()}, "gru needs slots")])
def test_a_malformed_descriptor_is_refused(slots, match):
    with pytest.raises(ValueError, match=match):
        Placement("bad", slots)
    with pytest.raises(ValueError, match="either given slots or refused"):
        Placement("bad", {"lstm": ("gates",)}, why_not={"lstm": "no"})
