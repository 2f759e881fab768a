import itertools

import pytest
import torch

from normbench.configuration.placements import PLACEMENTS, placement_of
from normbench.models import (
    FAMILIES,
    VALID_PLACEMENTS,
    InvalidCombination,
    ModelShape,
    PlacementConfig,
    build_model,
    layer_of,
    parameter_groups,
)
from normbench.norms import KINDS, NormSpec


@pytest.mark.parametrize("family,placement", list(itertools.product(FAMILIES, PLACEMENTS)))
def test_every_cell_of_the_table_builds_or_raises_the_documented_error(family, placement):
    io = dict(input_kind="tokens", input_dim=7, n_outputs=3, readout="last")
    shape = ModelShape(family, hidden=8, layers=1, embed=8, heads=2)
    if placement in VALID_PLACEMENTS[family]:
        for kind in KINDS:
            model = build_model(shape, NormSpec(kind), placement, **io)
            assert model(torch.randint(0, 7, (4, 5))).shape == (4, 3)
    else:
        with pytest.raises(InvalidCombination, match=rf"^placement '{placement}' is invalid for {family} \(.+\); valid: "):
            build_model(shape, NormSpec("ln"), placement, **io)
        build_model(shape, NormSpec("none"), placement, **io)  # no norm: nothing to misplace


def test_summed_in_cell_gru_and_unknown_family_are_refused():
    io = dict(input_kind="features", input_dim=2, n_outputs=1, readout="last")
    with pytest.raises(InvalidCombination, match="summed=true needs lstm or rnn"):
        build_model(ModelShape("gru"), NormSpec("ln"), PlacementConfig("in_cell", summed=True), **io)
    with pytest.raises(ValueError, match="model.family='mamba' is not valid; valid: rnn, lstm, gru, transformer"):
        ModelShape("mamba")  # the shape is the config group's dataclass: it checks its own names


@pytest.mark.parametrize("family,placement", [("lstm", "in_cell"), ("transformer", "pre"), ("gru", "gate")])
def test_parameter_groups_cover_every_parameter_once_and_spare_norms(family, placement):
    model = build_model(ModelShape(family, hidden=8, embed=8, heads=2, layers=2), NormSpec("ln"), placement,
                        input_kind="features", input_dim=3, n_outputs=2, readout="last")
    groups = {g["name"]: g for g in parameter_groups(model, weight_decay=0.1)}
    ids = [id(p) for g in groups.values() for p in g["params"]]
    assert sorted(ids) == sorted(id(p) for p in model.parameters())
    assert groups["norm"]["weight_decay"] == 0.0 and groups["no_decay"]["weight_decay"] == 0.0
    assert groups["decay"]["weight_decay"] == 0.1
    assert all(p.dim() >= 2 for p in groups["decay"]["params"])
    assert parameter_groups(model, 0.1, norm_weight_decay=0.01)[-1]["weight_decay"] == 0.01


def test_layer_labels():
    model = build_model(ModelShape("transformer", hidden=8, heads=2, layers=2), NormSpec("ln"), "pre",
                        input_kind="tokens", input_dim=5, n_outputs=5, readout="every_step")
    labels = {layer_of(n) for n, _ in model.named_parameters()}
    assert labels == {"encoder", "layers.0", "layers.1", "final_norm", "head"}


def test_every_placement_has_its_config_and_every_recurrent_one_its_layer():
    """The descriptors (normbench/configuration/placements.py), conf/placement/ and recurrent.LAYERS name the same placements,
    and each descriptor gives every family slots or the reason it is refused."""
    from pathlib import Path

    from normbench.configuration.schema import RECURRENT
    from normbench.models.recurrent import LAYERS

    conf = Path(__file__).parents[2] / "conf" / "placement"
    assert {p.stem for p in conf.glob("*.yaml")} == set(PLACEMENTS)
    from normbench.configuration.families import family_of

    # the families built by recurrent.py (a family with its own builder, minGRU's, lays out its own layers)
    cells = [f for f in RECURRENT if family_of(f).builder == "normbench.models.recurrent:build"]
    assert set(LAYERS) == {p for p in PLACEMENTS if any(placement_of(p).slots_in(f) for f in cells)}
    named = [f for f in FAMILIES if not family_of(f).slots]  # the families the placements name themselves
    for p in PLACEMENTS:
        assert set(placement_of(p).slots) | set(placement_of(p).why_not) == set(named), p


def test_valid_placements_are_those_the_descriptors_give_slots():
    assert VALID_PLACEMENTS == {f: tuple(p for p in PLACEMENTS if placement_of(p).slots_in(f)) for f in FAMILIES}
    assert VALID_PLACEMENTS["rnn"] == ("pre", "post", "in_cell")  # the README's table, one row of it
