"""A model family is its descriptor (normbench/configuration/families.py) and its builder: a toy recurrent family
registered here, ``leaky`` (h_t = a * h_{t-1} + (1 - a) * tanh(W x_t), a fixed leak), is accepted by the config
schema, built by build_model with the norm at the placements it offers, refused at the others with its
reason, given its inert settings by the identity contract, counted as recurrent by the claims, listed by
the report's synthesis and trained end to end, with no edit anywhere else."""

import pytest
import torch
from torch import nn

from normbench.analysis.claims.specs import RECURRENT
from normbench.configuration.config import ConfigError
from normbench.configuration.contract import config_hash, effective_config
from normbench.configuration.families import (
    BUILT_IN,
    FAMILIES,
    Family,
    described,
    family_names,
    family_of,
    register,
    unregister,
)
from normbench.configuration.placements import placement_of
from normbench.models import InvalidCombination, ModelShape, build_model
from normbench.models.validity import placements_of
from normbench.norms import NormSpec
from normbench.report.synthesis import recommendations
from normbench.training.run import execute


class LeakyLayer(nn.Module):
    """h_t = 0.5 h_{t-1} + 0.5 tanh(W x_t); ``pre`` normalizes x, ``post`` h."""

    def __init__(self, size_in: int, hidden: int, norm: NormSpec, slots: tuple[str, ...]):
        super().__init__()
        self.proj = nn.Linear(size_in, hidden)
        self.norm_in = norm.build(size_in) if "layer_input" in slots else nn.Identity()
        self.norm_out = norm.build(hidden) if "layer_output" in slots else nn.Identity()

    def forward(self, x, trace=None, lengths=None):
        drive, h, out = torch.tanh(self.proj(self.norm_in(x))), 0, []
        for t in range(x.shape[1]):
            h = 0.5 * h + 0.5 * drive[:, t]
            out.append(h)
            if trace is not None:
                trace.append(h)
        return self.norm_out(torch.stack(out, 1))


class LeakyStack(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.layers = nn.ModuleList(layers)

    def forward(self, x, trace=None, lengths=None):
        for i, layer in enumerate(self.layers):
            x = layer(x, trace if i == 0 else None, lengths)
        return x


def build(shape, norm, placement, max_len):
    """The toy family's builder, named by its descriptor."""
    slots = placement_of(placement.name).slots_in("leaky") if norm.active else ()
    return LeakyStack([LeakyLayer(shape.embed if i == 0 else shape.hidden, shape.hidden, norm, slots)
                       for i in range(shape.layers)])


TOY = Family("leaky", "Leaky RNN", recurrent=True, builder=f"{__name__}:build", parameters=("embed",),
             slots={"pre": ("layer_input",), "post": ("layer_output",)},
             why_not={"in_cell": "a toy with a fixed leak has no cell weights to normalize"})
IO = dict(input_kind="tokens", input_dim=7, n_outputs=3, readout="every_step")


@pytest.fixture
def leaky():
    register(TOY)
    yield "leaky"
    unregister("leaky")


def test_it_offers_the_placements_its_descriptor_names_and_refuses_the_others(leaky):
    assert placements_of(leaky) == ("pre", "post")
    torch.manual_seed(0)
    model = build_model(ModelShape(leaky, hidden=8, embed=6, layers=2), NormSpec("ln"), "post", **IO)
    assert [name for name, _ in model.named_parameters() if ".norm" in name] == [
        f"backbone.layers.{i}.norm_out.norm.{p}" for i in (0, 1) for p in ("weight", "bias")]
    assert model(torch.randint(0, 7, (2, 5))).shape == (2, 5, 3)
    with pytest.raises(InvalidCombination, match=r"^placement 'in_cell' is invalid for leaky \(a toy with a fixed "
                                                 r"leak has no cell weights to normalize\); valid: pre, post$"):
        build_model(ModelShape(leaky, hidden=8, embed=6), NormSpec("ln"), "in_cell", **IO)
    with pytest.raises(InvalidCombination, match=r"invalid for leaky \(not one of its placements\)"):
        build_model(ModelShape(leaky, hidden=8, embed=6), NormSpec("ln"), "gate", **IO)


def test_the_contract_reads_its_parameters_and_the_built_in_identities_stay(leaky, compose):
    def config(*overrides):
        node = dict(__import__("omegaconf").OmegaConf.to_container(compose(*overrides), resolve=True))
        node.pop("hydra", None)
        return node

    toy = config("model=rnn", "model.family=leaky", "placement=pre")
    assert set(effective_config(toy)["model"]) == {"family", "hidden", "layers", "embed"}  # heads, ff_mult: inert
    embed = {**toy, "model": {**toy["model"], "embed": 16}}
    assert config_hash(embed) != config_hash(toy)
    transformer, lstm = config("model=transformer"), config("model=lstm")
    before = config_hash(transformer), config_hash(lstm)
    unregister(leaky)
    try:
        assert (config_hash(transformer), config_hash(lstm)) == before  # the toy changed no existing identity
    finally:
        register(TOY)


def test_the_claims_count_it_recurrent_and_the_synthesis_lists_it(leaky):
    assert RECURRENT.selector["model"].test("leaky") and not RECURRENT.selector["model"].test("transformer")
    assert [line.family for line in recommendations([])] == ["RNN", "LSTM", "GRU", "Transformer", "minGRU", "minLSTM",
                                                             "Leaky RNN"]


def test_a_run_of_the_toy_family_trains_end_to_end(leaky, compose, tmp_path):
    node = compose("model=rnn", "model.family=leaky", "placement=post", "steps=2")
    summary = execute(node, tmp_path, ["model.family=leaky"])
    assert summary["status"] == "ok", summary["reason"]
    assert summary["config"]["model"]["family"] == "leaky"


def test_unregistered_it_is_gone_again(leaky):
    unregister(leaky)
    try:
        assert family_names() == FAMILIES == tuple(f.name for f in BUILT_IN)
        assert placements_of("leaky") == () and described("leaky").hand_written == ()
        with pytest.raises(ConfigError, match="model.family='leaky' is not valid"):
            ModelShape("leaky")
        with pytest.raises(ValueError, match="unknown model family 'leaky'"):
            family_of("leaky")
    finally:
        register(TOY)  # for the fixture to remove


def test_a_descriptor_that_breaks_the_rules_is_refused():
    with pytest.raises(ValueError, match="parameters none of"):
        Family("bad", "Bad", recurrent=True, builder="m:f", parameters=("hidden",))
    with pytest.raises(ValueError, match="needs slots among"):
        register(Family("bad", "Bad", recurrent=True, builder="m:f", slots={"pre": ("branch_in",)}))
    with pytest.raises(ValueError, match="needs slots among"):  # a refused slot leaves none of the others behind
        register(Family("bad", "Bad", recurrent=True, builder="m:f", slots={"pre": ("layer_input",), "post": ("main",)}))
    assert family_names() == FAMILIES and not placement_of("pre").slots_in("bad")


def test_the_built_in_families_match_what_their_builders_build():
    # the recurrent families are the ones recurrent.py has cores for; the hand-written recurrences are the layer's
    from normbench.models.minrnn import GATES
    from normbench.models.recurrent import TORCH_CORES
    recurrent = {f.name: f.builder for f in BUILT_IN if f.recurrent}
    assert {name for name, builder in recurrent.items() if builder.endswith("recurrent:build")} == set(TORCH_CORES)
    assert {name for name, builder in recurrent.items() if builder.endswith("minrnn:build")} == set(GATES)
