"""The 2026 norm kinds and options against float64 re-implementations written from the papers' equations
(numpy and scipy, not torch): Derf (Chen et al. 2025, eq. 10), LN and RMSNorm per group of channels, and
DyT's alpha_0 per site (Zhu et al. 2025's LLaMA table)."""

import numpy as np
import pytest
import torch
from scipy.special import erf

from normbench.configuration.config import ConfigError, to_config
from normbench.configuration.contract import effective_config
from normbench.configuration.schema import ModelShape
from normbench.models import build_model
from normbench.norms import DynamicErf, NormSpec, build_norm
from normbench.norms.kinds import inert_settings
from normbench.norms.spec import alpha_by_width

RNG = np.random.default_rng(0)


def numpy_derf(x, alpha, shift, gamma, beta):
    """Chen et al. 2025, eq. 10: Derf(x) = gamma * erf(alpha * x + s) + beta, elementwise."""
    return gamma * erf(alpha * x + shift) + beta


def numpy_group_ln(x, groups, gamma, beta, eps):
    """Ba et al. eq. 4 taken over each group of dim/groups consecutive features, then the per-feature affine."""
    g = x.reshape(*x.shape[:-1], groups, -1)
    mu = g.mean(-1, keepdims=True)
    var = ((g - mu) ** 2).mean(-1, keepdims=True)
    return ((g - mu) / np.sqrt(var + eps)).reshape(x.shape) * gamma + beta


def numpy_group_rms(x, groups, gamma, eps):
    g = x.reshape(*x.shape[:-1], groups, -1)
    return (g / np.sqrt((g * g).mean(-1, keepdims=True) + eps)).reshape(x.shape) * gamma


def _randomized(norm):
    """The layer inside its precision wrapper, its parameters drawn at random (so gamma, beta, alpha, s all act)."""
    layer = norm.norm
    with torch.no_grad():
        for p in layer.parameters():
            p.copy_(torch.from_numpy(RNG.normal(0.3, 0.5, tuple(p.shape))))
    return layer


@pytest.mark.parametrize("impl", ["native", "reference", "auto"])
def test_derf_is_the_papers_equation_in_float64(impl):
    layer = _randomized(build_norm("derf", 12, impl=impl, alpha_init=0.5, shift_init=0.0)).double()
    x = RNG.normal(0, 2, (3, 5, 12))
    got = layer(torch.from_numpy(x)).detach().numpy()
    want = numpy_derf(x, layer.alpha.item(), layer.shift.item(), layer.weight.detach().numpy(), layer.bias.detach().numpy())
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)


def test_derf_starts_where_the_authors_code_starts():
    layer = build_norm("derf", 8).norm
    assert isinstance(layer, DynamicErf)
    assert layer.alpha.item() == 0.5 and layer.shift.item() == 0.0  # zlab-princeton/Derf's Dynamic_erf defaults
    assert torch.equal(layer.weight, torch.ones(8)) and torch.equal(layer.bias, torch.zeros(8))
    # x-transformers-style form y = weight * erf(alpha * x + shift) + bias, with the config's own values
    layer = build_norm("derf", 4, alpha_init=0.8, shift_init=-0.25).norm
    x = torch.linspace(-3, 3, 8, dtype=torch.float64).reshape(2, 4)
    assert torch.allclose(layer.double()(x), torch.erf(0.8 * x - 0.25), atol=1e-15)
    assert not build_norm("derf", 4, affine=False).norm.weight  # no gain, no bias without affine


def test_derf_reaches_the_config_and_its_shift_is_identity_only_for_derf(compose):
    config = to_config(compose("norm=derf", "norm.shift_init=0.1"))
    assert config.norm.kind == "derf" and config.norm.shift_init == 0.1 and config.norm.alpha_init == 0.5
    assert "norm.shift_init" in inert_settings("dyt", affine=True, gain_offset=False, bn_reestimate=False)
    assert "norm.shift_init" not in inert_settings("derf", affine=True, gain_offset=False, bn_reestimate=False)
    assert "norm.eps" in inert_settings("derf", affine=True, gain_offset=False, bn_reestimate=False)


@pytest.mark.parametrize("kind", ["ln", "rms"])
@pytest.mark.parametrize("impl", ["native", "reference", "auto"])
@pytest.mark.parametrize("groups", [1, 2, 4])
def test_grouped_ln_and_rms_are_the_equation_per_group_in_float64(kind, impl, groups):
    layer = _randomized(build_norm(kind, 8, impl=impl, groups=groups, eps=1e-5)).double()
    x = RNG.normal(1.0, 3.0, (4, 3, 8))
    got = layer(torch.from_numpy(x)).detach().numpy()
    gamma = layer.weight.detach().numpy()
    want = numpy_group_ln(x, groups, gamma, layer.bias.detach().numpy(), 1e-5) if kind == "ln" \
        else numpy_group_rms(x, groups, gamma, 1e-5)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_groups_normalize_each_group_apart():
    """A group whose features are scaled by 1000 leaves the other group's output unchanged (not so with groups=1)."""
    x = torch.randn(2, 8, dtype=torch.float64)
    y = x.clone()
    y[:, 4:] *= 1000
    grouped, whole = build_norm("ln", 8, groups=2).double(), build_norm("ln", 8).double()
    assert torch.allclose(grouped(x)[:, :4], grouped(y)[:, :4])
    assert not torch.allclose(whole(x)[:, :4], whole(y)[:, :4])


def test_groups_must_divide_the_width_and_are_refused_with_one_line(compose):
    with pytest.raises(ValueError, match="must divide the norm's width 6"):
        build_norm("ln", 6, groups=4)
    with pytest.raises(ConfigError, match="norm.groups must be an integer >= 1"):
        to_config(compose("norm=ln", "norm.groups=0"))


@pytest.mark.parametrize("kind", ["dyt", "derf"])
@pytest.mark.parametrize("alpha", ["0", "-1", "1e-50"])
def test_an_alpha_init_that_is_not_positive_is_refused_with_one_line(compose, kind, alpha):
    """K37, K38: alpha 0 makes tanh(alpha x) (erf) the same for every input, and the run went ahead."""
    with pytest.raises(ConfigError, match="norm.alpha_init must be > 0"):
        to_config(compose(f"norm={kind}", f"norm.alpha_init={alpha}"))


def test_a_run_with_a_zero_alpha_init_exits_2_in_one_line(cli, tiny_args):
    code, _, err = cli(*tiny_args, "norm=dyt", "norm.alpha_init=0", "hydra.run.dir=run")
    assert code == 2 and err.strip().splitlines() == ["normbench: invalid: norm.alpha_init must be > 0, got 0.0"], err


def test_groups_are_identity_only_where_they_act(compose):
    def effective(*overrides):
        return effective_config(__import__("omegaconf").OmegaConf.to_container(compose(*overrides), resolve=True))

    assert "groups" not in effective("norm=ln")["norm"]           # 1: how every earlier run ran
    assert effective("norm=ln", "norm.groups=2")["norm"]["groups"] == 2
    assert "groups" not in effective("norm=dyt", "norm.groups=2")["norm"]  # DyT has no statistics to group


def test_grouped_in_cell_layer_runs_the_loop_not_the_ln_kernels():
    from normbench.models.recurrent import InCellLayer

    layer = InCellLayer("lstm", 4, 8, NormSpec("ln", groups=2))
    assert layer.runs(torch.device("cpu")) is None  # the hand-written kernels compute whole-row LN
    assert InCellLayer("lstm", 4, 8, NormSpec("ln")).hand_written


@pytest.mark.parametrize("width, attention, other", [(64, 0.8, 0.2), (4096, 0.8, 0.2), (5000, 0.6, 0.15),
                                                     (5120, 0.6, 0.15), (8192, 0.2, 0.05), (16384, 0.2, 0.05)])
def test_alpha_by_width_is_zhu_et_al_s_llama_table(width, attention, other):
    assert alpha_by_width("attention", width) == attention and alpha_by_width("other", width) == other


@pytest.mark.parametrize("kind", ["dyt", "derf"])
def test_alpha_rule_width_sets_each_transformer_site(kind):
    shape = ModelShape(family="transformer", hidden=16, layers=2, heads=2, qk_norm=True)
    model = build_model(shape, NormSpec(kind, alpha_rule="width"), "peri", input_kind="tokens", input_dim=5,
                        n_outputs=2, readout="last")
    alphas = {name.removeprefix("backbone.").removesuffix(".norm.alpha"): p.item()
              for name, p in model.named_parameters() if name.endswith("alpha")}
    for block in ("layers.0", "layers.1"):
        for site in ("norm1", "norm1_out", "attn.q_norm", "attn.k_norm"):
            assert alphas[f"{block}.{site}"] == pytest.approx(0.8)  # the attention sublayer's norms
        for site in ("norm2", "norm2_out"):
            assert alphas[f"{block}.{site}"] == pytest.approx(0.2)
    assert alphas["final_norm"] == pytest.approx(0.2)
    single = build_model(shape, NormSpec(kind, alpha_init=0.3), "peri", input_kind="tokens", input_dim=5,
                         n_outputs=2, readout="last")
    assert [p.item() for n, p in single.named_parameters() if n.endswith("alpha")] == [pytest.approx(0.3)] * 13


def test_alpha_rule_is_identity_only_for_an_alpha_kind_away_from_single(compose):
    from omegaconf import OmegaConf

    def norm_of(*overrides):
        return effective_config(OmegaConf.to_container(compose(*overrides), resolve=True))["norm"]

    assert "alpha_rule" not in norm_of("norm=dyt")
    assert norm_of("norm=dyt", "norm.alpha_rule=width")["alpha_rule"] == "width"
    assert "alpha_rule" not in norm_of("norm=ln", "norm.alpha_rule=width")
    with pytest.raises(ConfigError, match="norm.alpha_rule"):
        to_config(compose("norm=dyt", "norm.alpha_rule=wide"))
