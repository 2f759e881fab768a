import copy
import re

import pytest
from hydra._internal.core_plugins.structured_config_source import StructuredConfigSource
from hydra._internal.sources_registry import SourcesRegistry
from hydra.core.config_store import ConfigStore
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf
from omegaconf.errors import ValidationError

from normbench.configuration.config import Config, ConfigError, SharedStoreSource, to_config
from normbench.tasks import TASK_CONFIGS


def test_defaults_compose_to_a_typed_config(compose):
    cfg = to_config(compose(tiny=False))
    assert isinstance(cfg, Config)
    assert (cfg.model.family, cfg.task.name, cfg.norm.kind, cfg.placement.name) == ("lstm", "digits", "ln", "pre")
    assert cfg.optim.norm_weight_decay == 0.0


@pytest.mark.parametrize("task", sorted(TASK_CONFIGS))
def test_every_task_config_composes(compose, task):
    cfg = compose(f"task={task}", tiny=False)
    assert cfg.task.name == task
    assert type(to_config(cfg).task) is TASK_CONFIGS[task] or task in ("text", "imdb", "idx")


@pytest.mark.parametrize("override,message", [
    ("norm.eps=0", "norm.eps must be > 0, got 0.0"),
    ("norm.eps=-1e-5", "norm.eps must be > 0"),
    ("norm.eps=nan", "norm.eps must be > 0, got nan"),
    ("batch_size=0", "batch_size must be >= 1, got 0"),
    ("steps=0", "steps must be >= 1, got 0"),
    ("lr=0", "lr must be > 0"),
    ("lr=-0.1", "lr must be > 0"),
    ("warmup_steps=-1", "warmup_steps must be >= 0"),
    ("grad_clip=0", "grad_clip must be > 0"),
    ("device=tpu", "device='tpu' is not valid; valid: auto, cpu, cuda"),
    ("norm.kind=group", "norm.kind='group' is not valid"),
    ("norm.impl=cuda", "norm.impl='cuda' is not valid; valid: native, reference"),
    ("placement.name=inside", "placement.name='inside' is not valid"),
    ("precision.dtype=fp8", "precision.dtype='fp8' is not valid; valid: fp32, bf16, fp16"),
    ("optim.beta1=1.0", "optim.beta1 must be in [0, 1)"),
    ("model.layers=0", "model.layers must be >= 1"),
    ("task.length=1", "task.length must be >= 2, got 1"),
])
def test_out_of_range_values_fail_with_one_line_naming_the_key(compose, override, message):
    with pytest.raises(ValueError) as err:
        to_config(compose(override))
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("override,error", [
    ("steps=ten", ConfigCompositionException),
    ("norm.eps=small", ConfigCompositionException),
    ("unknown_key=1", ConfigCompositionException),
    ("norm=layer", Exception),
])
def test_wrong_types_unknown_keys_and_options_fail_while_composing(compose, override, error):
    with pytest.raises(error):
        compose(override)


def test_config_error_is_a_value_error():
    assert issubclass(ConfigError, ValueError)
    assert ValidationError  # OmegaConf's type errors surface through Hydra's composition error


@pytest.mark.parametrize("earlier,present", [("cpp", "compiled"), ("compile", "torch_compile")])
def test_a_cell_kernels_earlier_name_is_accepted_and_read_as_its_present_one(compose, earlier, present):
    """model.cell_kernel=cpp and =compile, typed before the rename (issue 47: compiled is normbench's own C++
    everywhere, torch_compile is torch.compile), still compose and validate, as compiled and torch_compile."""
    from omegaconf import OmegaConf

    from normbench.configuration.schema import ModelShape, with_present_names

    node = compose("placement=in_cell", "norm=ln", f"model.cell_kernel={earlier}")
    assert to_config(node).model.cell_kernel == present
    assert ModelShape(cell_kernel=earlier).cell_kernel == present
    plain = OmegaConf.to_container(node, resolve=True)
    assert with_present_names(plain)["model"]["cell_kernel"] == present
    assert plain["model"]["cell_kernel"] == earlier  # the composition itself is left as it was
    with pytest.raises(ConfigError, match="valid: auto, compiled, python, torch_compile"):
        to_config(compose(f"model.cell_kernel={earlier}x"))


def test_every_claim_a_sweep_header_names_is_a_shipped_claim():
    """The report names a sweep's header command for a claim its runs cannot judge; a header naming a claim by
    an old id (gamma_init named ln_gamma_insensitive) would name no sweep for the claim it became."""
    import re

    from normbench.analysis.claims import SHIPPED
    from normbench.configuration.config import commands_for, sweep_dirs

    ids = {c.id for c in SHIPPED}
    named = set()
    for file in sweep_dirs()[-1].glob("*.yaml"):
        header = " ".join(line[1:] for line in file.read_text().splitlines() if line.startswith("#"))
        for found in re.finditer(r"\(claims?:([^)]*)\)", header):
            named |= {w for w in re.findall(r"[a-z][a-z0-9_]+", found.group(1)) if "_" in w}
    assert named - ids == set()
    assert commands_for("ln_gamma_one_better") == ["python -m normbench -m +sweep=gamma_init"]


def test_a_sweep_header_records_the_pilot_that_judged_a_claim():
    """A report that cannot judge deepnorm_trains_deep points to the pilot docs/claim-sources.md records (referee 20)."""
    from normbench.configuration.config import pilots_for

    (pilot,) = pilots_for("deepnorm_trains_deep")
    assert pilot.startswith("deepnorm_depth: inconclusive at 2 seeds, DeepNorm − Pre-LN −0.001 [−0.018, 0.015]"), pilot
    assert pilots_for("dropout_after_norm") == []


@pytest.mark.parametrize("override, says", [
    ("norm=[ln,rms]", "norm=[ln,rms]: norm takes one option, and a list would merge the options' configs into one run; "
                      "to run each, sweep them: -m norm=ln,rms"),
    ("+model=[lstm,gru]", "model takes one option"),
    ("task=[adding],[copy]", "task takes one option"),  # a sweep whose options are lists
])
def test_a_list_given_to_a_group_of_one_option_is_refused(override, says):
    """Hostile h16 N11 (Z01, Z02): norm=[ln,rms] is Hydra's multi-select: one run of both configs merged, rc 0."""
    from normbench.configuration.config import require_one_option

    with pytest.raises(ConfigError, match=re.escape(says)):
        require_one_option(["steps=2", override])


@pytest.mark.parametrize("override", ["logger=[csv,tensorboard]", "tags=[a,b]", "norm=ln,rms", "norm.eps=1e-5",
                                      "hydra.sweeper.params.norm=[x"])
def test_a_list_where_a_list_belongs_passes(override):
    from normbench.configuration.config import require_one_option

    require_one_option([override])


def test_a_list_given_to_a_group_ends_the_command_in_one_line(cli, tiny_args, tmp_path):
    code, _, err = cli(*tiny_args, "norm=[ln,rms]", "hydra.run.dir=r")
    assert code == 2 and err.strip().splitlines() == [
        "normbench: error: norm=[ln,rms]: norm takes one option, and a list would merge the options' configs into "
        "one run; to run each, sweep them: -m norm=ln,rms"], err
    assert not (tmp_path / "r").exists()


def test_a_sweeps_folder_named_too_long_is_said_to_be_so(monkeypatch, tmp_path):
    """Hostile h16 N17 (B19): NORMBENCH_SWEEPS=/tmp:<300 bytes> read "cannot write output: [Errno 36] ..."."""
    from normbench.configuration.config import sweep_dirs

    monkeypatch.setenv("NORMBENCH_SWEEPS", f"{tmp_path}:{'x' * 300}")
    with pytest.raises(ConfigError, match=r"^NORMBENCH_SWEEPS entry 'x+…: a name longer than the filesystem allows"):
        sweep_dirs()


@pytest.mark.parametrize("choices, node, refused", [
    ({"model": "lstm"}, {"model": {"family": "transformer"}}, "model.family='transformer' does not match model=lstm"),
    ({"model": "transformer"}, {"model": {"family": "rnn"}}, "choose the model with model=rnn"),
    ({"optim": "adamw"}, {"optim": {"name": "sgd"}}, "optim.name='sgd' does not match optim=adamw"),
    ({"task": "adding"}, {"task": {"name": "copy"}}, "task.name='copy' does not match task=adding"),
    ({"model": "lstm"}, {"model": {"family": "gru"}}, None),  # the same settings: the run is model=gru's
    ({"model": "rnn"}, {"model": {"family": "leaky"}}, None),  # a plugin's family, no option of its own
    ({"task": "digits_rows"}, {"task": {"name": "digits"}}, None),  # an option built on another
    ({"norm": "ln"}, {"norm": {"kind": "bn"}}, None),  # the smoke sweep's BatchNorm case (sweeps/smoke/bn_bf16.yaml)
])
def test_an_identity_key_naming_another_option_with_other_settings_is_refused(choices, node, refused):
    """hostile h18 H4: model=lstm model.family=transformer ran a 1-layer Transformer recorded as model=transformer."""
    from omegaconf import OmegaConf

    from normbench.configuration.config import require_own_identity

    if refused is None:
        require_own_identity(choices, OmegaConf.create(node))
        return
    with pytest.raises(ConfigError, match=refused):
        require_own_identity(choices, OmegaConf.create(node))


def test_a_copy_of_the_schema_source_shares_the_store_and_a_composition_leaves_the_store_as_it_was(compose):
    """Hydra deep-copies its config repository, sources included, for every composition: the schema's source
    shares the process's one ConfigStore instead of copying every node in it (most of `normbench --help`'s
    time), so what a composition does to what it loaded must not reach the store."""
    source = SourcesRegistry.instance().resolve("structured")(provider="normbench", path="structured://")
    twin = copy.deepcopy(source)
    assert type(twin) is SharedStoreSource and twin is not source and twin.store is ConfigStore.instance()
    stored = {name: OmegaConf.to_container(ConfigStore.instance().repo[name].node)
              for name in ("base_config.yaml", "task_adding_schema.yaml")}
    cfg = compose("task=adding", "task.length=9", "seed=5", "norm=rms")
    assert (cfg.task.length, cfg.seed) == (9, 5)
    assert {name: OmegaConf.to_container(ConfigStore.instance().repo[name].node) for name in stored} == stored


def test_hydra_registering_its_own_schema_source_again_keeps_ours():
    """A joblib worker's Hydra registers its plugins again: under the same class name, ours stays."""
    SourcesRegistry.instance().register(StructuredConfigSource)
    assert SourcesRegistry.instance().resolve("structured") is SharedStoreSource
