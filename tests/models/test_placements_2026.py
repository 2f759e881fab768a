"""The 2026 placements, each block's forward against the block written out by hand from its papers'
equations (in float64, with the block's own weights): sandwich (= peri), LayerNorm Scaling, Mix-LN and
DeepNorm; their identity, their settings and their refusal outside a Transformer."""

import math

import pytest
import torch
import torch.nn.functional as F
from omegaconf import OmegaConf

from normbench.configuration.config import ConfigError, to_config
from normbench.configuration.contract import config_hash, effective_config
from normbench.configuration.placements import post_layers
from normbench.configuration.schema import ModelShape, PlacementConfig
from normbench.models import InvalidCombination, build_model
from normbench.models.transformer import TransformerShape, build_transformer
from normbench.norms import NormSpec

LAYERS = 4


def stack(placement, layers=LAYERS, **settings):
    torch.manual_seed(0)
    shape = TransformerShape(d_model=16, n_layers=layers, n_heads=2, ff_mult=2)
    model = build_transformer(shape, NormSpec("ln"), PlacementConfig(placement, **settings)).double()
    with torch.no_grad():  # gains and biases away from 1 and 0, so a norm in a wrong slot shows
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(torch.randn_like(p) * 0.3)
    return model


def ln(x, norm):
    layer = norm.norm
    return F.layer_norm(x, (x.shape[-1],), layer.weight, layer.bias, layer.eps)


def by_hand(model, x, block_of):
    """pos + each block by ``block_of(block, x, layer)`` (layer 1-based), then the final norm if any."""
    x = x + model.pos[: x.shape[1]]
    for layer, block in enumerate(model.layers, start=1):
        x = block_of(block, x, layer)
    return model.final_norm(x)


def pre(block, x, scale=1.0):
    x = x + block.attn(ln(x, block.norm1) * scale)
    return x + block.mlp(ln(x, block.norm2) * scale)


def post(block, x, alpha=1.0):
    x = ln(alpha * x + block.attn(x), block.norm1)
    return ln(alpha * x + block.mlp(x), block.norm2)


def sandwich(block, x):
    x = x + ln(block.attn(ln(x, block.norm1)), block.norm1_out)
    return x + ln(block.mlp(ln(x, block.norm2)), block.norm2_out)


X = torch.randn(2, 5, 16, dtype=torch.float64)


def test_sandwich_is_norm_before_and_after_each_branch_and_the_run_is_peris(compose):
    model = stack("sandwich")
    torch.testing.assert_close(model(X), by_hand(model, X, lambda b, x, layer: sandwich(b, x)), rtol=1e-12, atol=1e-12)
    assert model.final_norm.norm.__class__.__name__ == "LayerNorm"
    sandwiched = OmegaConf.to_container(compose("model=transformer", "placement=sandwich"), resolve=True)
    peri = OmegaConf.to_container(compose("model=transformer", "placement=peri"), resolve=True)
    assert config_hash(sandwiched) == config_hash(peri)  # one model under two names: one run


def test_layernorm_scaling_scales_each_pre_norm_by_one_over_root_depth():
    model = stack("lns")
    want = by_hand(model, X, lambda b, x, layer: pre(b, x, scale=1 / math.sqrt(layer)))
    torch.testing.assert_close(model(X), want, rtol=1e-12, atol=1e-12)
    plain = by_hand(model, X, lambda b, x, layer: pre(b, x))
    assert not torch.allclose(model(X), plain)  # the scale acts (layers 2..4)


@pytest.mark.parametrize("fraction, early", [(0.25, 1), (0.5, 2), (0.0, 0), (1.0, 4), (0.7, 2)])
def test_mix_ln_is_post_ln_in_the_first_fraction_of_layers_and_pre_ln_after(fraction, early):
    assert post_layers(fraction, LAYERS) == early
    model = stack("mix", post_fraction=fraction)
    want = by_hand(model, X, lambda b, x, layer: post(b, x) if layer <= early else pre(b, x))
    torch.testing.assert_close(model(X), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("layers", [2, 6])
def test_deepnorm_is_post_ln_of_alpha_x_plus_the_branch_with_alpha_by_depth(layers):
    model = stack("deepnorm", layers=layers)
    alpha = (2 * layers) ** 0.25  # Wang et al. 2022, Table 1, encoder-only / decoder-only with N layers
    want = by_hand(model, X, lambda b, x, layer: post(b, x, alpha=alpha))
    torch.testing.assert_close(model(X), want, rtol=1e-12, atol=1e-12)
    assert not list(model.final_norm.parameters())  # Post-LN: the stream leaves each block normalized


def test_deepnorm_initialises_the_branches_xavier_normal_at_gain_beta():
    torch.manual_seed(0)
    layers, d = 8, 128
    model = build_transformer(TransformerShape(d_model=d, n_layers=layers, n_heads=2), NormSpec("ln"), "deepnorm")
    beta = (8 * layers) ** -0.25

    def xavier_std(w, gain):
        return gain * math.sqrt(2 / (w.shape[0] + w.shape[1]))

    block = model.layers[0]
    q, k, v = block.attn.qkv.weight.detach().split(d)
    for w, gain in ((q, 1.0), (k, 1.0), (v, beta), (block.attn.proj.weight, beta),
                    (block.mlp[0].weight, beta), (block.mlp[2].weight, beta)):
        assert w.std().item() == pytest.approx(xavier_std(w, gain), rel=0.05)  # 16k+ draws: ~1% error
    plain = build_transformer(TransformerShape(d_model=d, n_layers=layers, n_heads=2), NormSpec("ln"), "post")
    assert plain.layers[0].attn.proj.weight.std().item() == pytest.approx(1 / math.sqrt(3 * d), rel=0.05)  # PyTorch's


@pytest.mark.parametrize("placement", ["sandwich", "lns", "mix", "deepnorm"])
def test_the_new_placements_are_transformer_only_with_the_reason(placement):
    with pytest.raises(InvalidCombination, match=f"{placement} is a Transformer placement"):
        build_model(ModelShape(family="lstm"), NormSpec("ln"), placement, input_kind="tokens", input_dim=4,
                    n_outputs=2, readout="last")


def test_post_fraction_is_identity_for_mix_alone_and_checked(compose):
    def effective(*overrides):
        return effective_config(OmegaConf.to_container(compose("model=transformer", *overrides), resolve=True))

    assert "post_fraction" not in effective("placement=pre")["placement"]
    assert effective("placement=mix", "placement.post_fraction=0.5")["placement"]["post_fraction"] == 0.5
    with pytest.raises(ConfigError, match=r"placement.post_fraction must be in \[0, 1\]"):
        to_config(compose("model=transformer", "placement=mix", "placement.post_fraction=1.5"))


def test_every_earlier_placement_computes_as_before():
    """pre and post at depth 1 scale 1 and residual 1: the block's arithmetic as it was (no extra multiply)."""
    for placement, block_of in (("pre", lambda b, x, layer: pre(b, x)), ("post", lambda b, x, layer: post(b, x))):
        model = stack(placement)
        assert torch.equal(model(X), by_hand(model, X, block_of))
