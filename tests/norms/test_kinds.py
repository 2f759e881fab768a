"""A norm kind is its descriptor (normbench/norms/kinds.py) and its class (layers.py): a toy kind
registered here is accepted by the config schema, built by build_norm and into a model, and given
its inert settings by the identity contract, with no edit anywhere else."""

import pytest
import torch
from omegaconf import OmegaConf

from normbench.configuration.config import ConfigError, to_config
from normbench.configuration.contract import config_hash, effective_config
from normbench.configuration.schema import ModelShape
from normbench.models import build_model
from normbench.norms import KINDS, Fp32Norm, Norm, NormKind, NormSpec, build_norm, kind_names, layers
from normbench.norms.kinds import inert_settings, kind_of, register, unregister


class MeanCentering(Norm):
    """y = x - mean(x) over the features: centering without scaling; no parameters, no eps."""

    def __init__(self, dim, eps=0.0, gamma_init=1.0, affine=True):
        super().__init__(dim, eps)

    def forward(self, x, step=None):
        return x - x.mean(-1, keepdim=True)


@pytest.fixture
def center(monkeypatch):
    """The toy kind "center", registered for one test and removed after it."""
    monkeypatch.setattr(layers, "MeanCentering", MeanCentering, raising=False)
    register(NormKind("center", {"native": "MeanCentering", "reference": "MeanCentering"}, eps=False,
                      gain="none", bias=False))
    yield "center"
    unregister("center")


def test_the_schema_accepts_the_new_kind_and_its_own_eps_rule(center, compose):
    config = to_config(compose("norm=ln", "norm.kind=center", "norm.eps=0"))  # eps unused: 0 is fine
    assert config.norm.kind == "center" and config.norm.active
    with pytest.raises(ConfigError, match="norm.eps must be > 0"):
        NormSpec("ln", eps=0.0)  # the other kinds keep theirs


def test_build_norm_builds_it_and_a_model_holds_it(center):
    norm = build_norm("center", 6, impl="auto")  # one formula: auto has nothing to choose between
    assert isinstance(norm, Fp32Norm) and type(norm.norm) is MeanCentering
    x = torch.randn(3, 5, 6, dtype=torch.float64) * 4 + 7
    torch.testing.assert_close(norm(x), x - x.mean(-1, keepdim=True))
    model = build_model(ModelShape(family="lstm", hidden=8, embed=4), NormSpec("center"), "pre",
                        input_kind="features", input_dim=4, n_outputs=3, readout="last")
    assert any(isinstance(m, MeanCentering) for m in model.modules())
    assert model(torch.randn(2, 5, 4)).shape == (2, 3)


def test_the_contract_drops_what_the_new_kind_does_not_use(center, compose):
    base = OmegaConf.to_container(compose("norm=ln", "norm.kind=center"), resolve=True)
    base.pop("hydra", None)
    inert = inert_settings("center", affine=True, gain_offset=False, bn_reestimate=False)
    assert {"norm.eps", "norm.impl", "norm.gamma_init", "norm.affine", "norm.alpha_init",
            "optim.norm_weight_decay", "norm.bn_mask"} <= set(inert)
    assert "norm.fp32" not in inert and "placement.cell_norm" not in inert  # it computes: placed, cast
    for key, value in (("eps", 1e-3), ("impl", "reference"), ("gamma_init", 0.1), ("affine", False)):
        changed = {**base, "norm": {**base["norm"], key: value}}
        assert config_hash(changed) == config_hash(base), key
    post = {**base, "placement": {**base["placement"], "name": "post"}}
    assert config_hash(post) != config_hash(base)
    assert effective_config(base)["norm"] == {"kind": "center"}  # fp32 too: the run is fp32


def test_unregistered_it_is_gone_again(center):
    unregister(center)
    try:
        assert kind_names() == KINDS
        with pytest.raises(ConfigError, match="norm.kind='center' is not valid"):
            NormSpec("center")
        with pytest.raises(ValueError, match="unknown norm kind 'center'"):
            kind_of("center")
    finally:
        register(NormKind("center", {"native": "MeanCentering", "reference": "MeanCentering"}, eps=False,
                          gain="none", bias=False))  # for the fixture to remove


def test_a_descriptor_needs_both_core_impls_and_a_known_gain():
    with pytest.raises(ValueError, match="needs classes for native, reference"):
        NormKind("half", {"native": "LayerNorm"})
    with pytest.raises(ValueError, match="a gain in"):
        NormKind("odd", {"native": "LayerNorm", "reference": "LayerNorm"}, gain="vector")
    with pytest.raises(ValueError, match="already registered"):
        register(NormKind("ln", {"native": "LayerNorm", "reference": "LayerNorm"}))


def test_auto_may_prefer_only_a_kinds_own_kernels_and_needs_its_class_for_them():
    both = {"native": "RMSNorm", "reference": "RMSNormReference"}
    with pytest.raises(ValueError, match="fastest may name only its own kernels"):
        NormKind("r", both, fastest={"cpu": ("reference",)}, auto_class="RMSNormAuto")  # another arithmetic
    with pytest.raises(ValueError, match="needs an auto_class"):
        NormKind("r", {**both, "compiled": "RMSNormCompiled"}, fastest={"cpu": ("compiled",)})
    assert kind_of("rms").fastest == {"cpu": ("compiled",)} and kind_of("rms").auto_class == "RMSNormAuto"
    own = ("rms", "dyt", "derf")  # the kinds with a compiled kernel (dyt, derf: tests/norms/test_elementwise_cpu.py)
    assert all(kind_of(k).fastest == {"cpu": ("compiled",)} for k in own)
    assert not any(kind_of(k).fastest for k in KINDS if k not in own)  # native is the fastest of the rest


def test_a_kinds_own_parameters_go_to_it_alone():
    assert build_norm("dyt", 4, alpha_init=2.0).norm.alpha.item() == 2.0
    assert build_norm("dyt", 4).norm.alpha.item() == 0.5  # the class's default
    build_norm("ln", 4, alpha_init=2.0)  # another kind's parameter: not this one's, ignored
    with pytest.raises(TypeError, match="unexpected keyword argument 'beta_init'"):
        build_norm("ln", 4, beta_init=1.0)
