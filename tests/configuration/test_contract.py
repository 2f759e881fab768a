"""The record contract: which settings make a run, and which are the same run."""

import subprocess
import sys
from pathlib import Path

from omegaconf import OmegaConf

from normbench.configuration.contract import HARNESS, config_hash, effective_config, group_hash, settings

ROOT = Path(__file__).resolve().parents[2]


def recorded(node) -> dict:
    """The config a run records of a composed ``node``: resolved, without hydra."""
    plain = OmegaConf.to_container(node, resolve=True)
    plain.pop("hydra", None)
    return plain


def resolved(compose, *overrides) -> dict:
    """The config a run records: composed by Hydra from conf/, resolved, without hydra."""
    return recorded(compose(*overrides))


def test_norm_none_is_one_config_whatever_its_placement_eps_or_gain(compose):
    a = resolved(compose, "norm=none", "placement=pre")
    variants = [resolved(compose, "norm=none", *o) for o in (["placement=post"], ["placement=in_cell", "norm.eps=1e-8"],
                                                            ["norm.gamma_init=0.1", "norm.impl=reference"])]
    assert all(config_hash(v) == config_hash(a) for v in variants)
    assert settings(a)["placement"] == "none" and "eps" not in settings(a)
    assert config_hash(resolved(compose, "norm=ln", "placement=pre")) != config_hash(resolved(compose, "norm=ln", "placement=post"))


def test_settings_that_cannot_act_are_not_identity(compose):
    lstm = resolved(compose, "norm=ln")
    assert config_hash(lstm) == config_hash(resolved(compose, "norm=ln", "model.heads=8", "norm.alpha_init=2.0"))
    assert config_hash(lstm) == config_hash(resolved(compose, "norm=ln", "norm.fp32=false"))  # fp32 precision
    assert config_hash(resolved(compose, "norm=ln", "precision=bf16")) != config_hash(
        resolved(compose, "norm=ln", "precision=bf16", "norm.fp32=false"))
    assert config_hash(resolved(compose, "norm=dyt")) != config_hash(resolved(compose, "norm=dyt", "norm.alpha_init=2.0"))
    assert config_hash(resolved(compose, "norm=dyt")) == config_hash(resolved(compose, "norm=dyt", "norm.eps=1e-3"))
    transformer = resolved(compose, "model=transformer")
    assert config_hash(transformer) != config_hash(resolved(compose, "model=transformer", "model.heads=1"))
    assert config_hash(transformer) == config_hash(resolved(compose, "model=transformer", "model.embed=7"))


def test_every_other_setting_is_identity_even_ones_no_list_names(compose):
    """task.length, grad_clip, weight decay, schedule, summed, embed, affine ... each splits runs."""
    base = resolved(compose, "task=adding")
    for override in ("task.length=60", "grad_clip=null", "optim.weight_decay=0.1", "optim.schedule=cosine",
                     "placement=in_cell", "model.embed=16", "norm.affine=false", "eval_every=50", "steps=30"):
        assert config_hash(resolved(compose, "task=adding", override)) != config_hash(base), override
    in_cell = resolved(compose, "task=adding", "placement=in_cell")
    assert config_hash(in_cell) != config_hash(resolved(compose, "task=adding", "placement=in_cell", "placement.summed=true"))
    # a key the contract has never heard of is an axis too: identity comes from the config, not a list
    assert settings({**base, "task": {**base["task"], "new_knob": 3}})["task.new_knob"] == 3


def test_impl_auto_is_the_run_with_native_and_the_other_impls_are_their_own(compose):
    """auto (the default) runs native's arithmetic by the fastest kernel of it here: a record made with
    impl=native, the default before auto, is the same run; reference and compiled, asked by name, are not."""
    for kind in ("ln", "rms", "bn"):
        default = resolved(compose, f"norm={kind}")
        assert default["norm"]["impl"] == "auto" and effective_config(default)["norm"]["impl"] == "native"
        native = resolved(compose, f"norm={kind}", "norm.impl=native")
        assert (config_hash(default), group_hash(default)) == (config_hash(native), group_hash(native)), kind
        assert settings(default)["impl"] == settings(native)["impl"] == "native"
        assert config_hash(resolved(compose, f"norm={kind}", "norm.impl=reference")) != config_hash(default), kind
    assert config_hash(resolved(compose, "norm=rms", "norm.impl=compiled")) != config_hash(resolved(compose, "norm=rms"))
    in_cell = ("norm=ln", "placement=in_cell", "model.cell_kernel=python")  # the LN kernels reach auto as they do native
    assert config_hash(resolved(compose, *in_cell)) == config_hash(resolved(compose, *in_cell, "norm.impl=native"))


def test_the_cell_kernel_is_identity_only_where_a_compiled_kernel_can_run(compose):
    """The in-cell LN-LSTM, LN-GRU, RMSNorm-LSTM and RMSNorm-GRU have a compiled kernel (it rounds differently from
    the Python recurrence or the autograd loop)."""
    for family, kind in (("lstm", "ln"), ("gru", "ln"), ("lstm", "rms"), ("gru", "rms")):
        in_cell = (f"norm={kind}", f"model.family={family}", "placement=in_cell")
        assert config_hash(resolved(compose, *in_cell)) != config_hash(
            resolved(compose, *in_cell, "model.cell_kernel=python")), (family, kind)
    # the RMSNorm LSTM's and GRU's kernels came after records of their runs: at auto, the value they ran with,
    # cell_kernel stays out of the hash (their hashes unchanged) and in the settings (a study's arms are named by
    # it); compiled names a run of its own, as python does
    for family in ("lstm", "gru"):
        rms = ("norm=rms", f"model.family={family}", "placement=in_cell")
        assert "cell_kernel" not in effective_config(resolved(compose, *rms))["model"]
        assert settings(resolved(compose, *rms))["model.cell_kernel"] == "auto"
        assert "cell_kernel" in effective_config(resolved(compose, *rms, "model.cell_kernel=compiled"))["model"]
        # bf16: the loop, whatever it says
        assert "model.cell_kernel" not in settings(resolved(compose, *rms, "precision=bf16"))
    assert "cell_kernel" in effective_config(resolved(compose, "norm=ln", "model.family=lstm", "placement=in_cell"))["model"]
    for inert in (("norm=ln", "model.family=rnn", "placement=in_cell"), ("norm=ln", "model.family=gru", "placement=pre"),
                  ("norm=ln", "model.family=lstm", "placement=in_cell", "placement.summed=true"),
                  ("norm=none", "model.family=gru", "placement=in_cell")):
        assert config_hash(resolved(compose, *inert)) == config_hash(
            resolved(compose, *inert, "model.cell_kernel=python")), inert
    # the same autograd loop whatever auto/compiled/python say: another norm, or half precision
    for same in (("norm=dyt", "model.family=gru", "placement=in_cell"),
                 ("norm=rms", "model.family=gru", "placement=in_cell", "norm.impl=reference"),
                 ("norm=rms", "model.family=lstm", "placement=in_cell", "norm.impl=reference"),
                 ("norm=ln", "model.family=gru", "placement=in_cell", "precision=bf16")):
        assert config_hash(resolved(compose, *same)) == config_hash(
            resolved(compose, *same, "model.cell_kernel=python")), same


def test_the_compiled_step_is_identity_wherever_an_in_cell_layer_runs(compose):
    """model.cell_kernel=torch_compile (torch.compile of the step) acts on every in-cell family and norm."""
    for setting in (("norm=rms", "model.family=rnn"), ("norm=bn", "model.family=gru"), ("norm=ln", "model.family=lstm")):
        in_cell = (*setting, "placement=in_cell")
        assert config_hash(resolved(compose, *in_cell)) != config_hash(
            resolved(compose, *in_cell, "model.cell_kernel=torch_compile")), setting
    pre = ("norm=ln", "model.family=lstm", "placement=pre")
    assert config_hash(resolved(compose, *pre)) == config_hash(resolved(compose, *pre, "model.cell_kernel=torch_compile"))


def test_harness_keys_are_declared_in_the_schema_and_change_nothing(compose):
    assert set(HARNESS) == {"device", "threads", "resume", "report", "progress", "deterministic", "logger",
                            "checkpoint_every", "save_model", "optimized_metric", "sweep_timing", "paths", "tags",
                            "eval_positions"}
    base = resolved(compose)
    same = resolved(compose, "threads=2", "eval_positions=0", "device=cpu", "resume=true", "report=false",
                    "progress=false", "deterministic=true", "logger=tensorboard", "checkpoint_every=7", "save_model=true",
                    "optimized_metric=best_val", "sweep_timing=paired", "paths.outputs=o", "paths.multirun=m", "paths.data=d",
                    "tags=[a,b]")
    assert config_hash(base) == config_hash(same) and settings(base) == settings(same)
    assert not set(HARNESS) & set(settings(base))


def test_seed_is_the_run_not_the_group(compose):
    a, b = resolved(compose, "seed=0"), resolved(compose, "seed=1")
    assert config_hash(a) != config_hash(b) and group_hash(a) == group_hash(b)
    assert "seed" not in settings(a)


def test_effective_config_leaves_the_record_untouched(compose):
    plain = resolved(compose, "norm=none")
    before = repr(plain)
    effective_config(plain)
    assert repr(plain) == before


def test_the_contract_and_the_schema_import_no_torch():
    code = "import sys, normbench.configuration.contract; print([m for m in sys.modules if m == 'torch' or m.startswith('hydra')])"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0 and result.stdout.strip() == "[]", result.stderr



def test_the_cell_kernel_rule_follows_what_the_layer_runs(compose):
    """Two cell_kernel values share a hash exactly when the built layer runs the same recurrence
    (cell_kernel_in_use), so the contract's reading of the kernel choice cannot drift from the layer's."""
    import torch

    from normbench.configuration.schema import PlacementConfig
    from normbench.models.recurrent import RecurrentShape, cell_kernel_in_use, in_cell_layer
    from normbench.norms import NormSpec

    cpu = torch.device("cpu")
    for family in ("rnn", "lstm", "gru"):
        for kind, impl, groups in (("ln", "native", 1), ("ln", "auto", 1), ("ln", "reference", 1), ("rms", "auto", 1),
                                   ("rms", "compiled", 1), ("rms", "reference", 1), ("ln", "auto", 2), ("rms", "auto", 2)):
            for precision, summed in (("fp32", False), ("bf16", False), ("fp32", True)):
                setting = (f"model.family={family}", f"norm={kind}", f"norm.impl={impl}", f"precision={precision}",
                           "placement=in_cell", f"placement.summed={str(summed).lower()}", f"norm.groups={groups}")
                ran = {}
                for kernel in ("auto", "python", "torch_compile"):
                    layer = in_cell_layer(family, 3, RecurrentShape(3, 4, cell_kernel=kernel),
                                          NormSpec(kind, impl=impl, groups=groups), PlacementConfig("in_cell", summed=summed))
                    ran[kernel] = (type(layer).__name__, cell_kernel_in_use(layer, cpu, autocast=precision == "bf16"))
                composed = compose(*setting)  # once a setting: the kernel is one leaf, set as its override sets it
                hashes = {}
                for k in ran:
                    node = composed.copy()
                    OmegaConf.update(node, "model.cell_kernel", k)
                    hashes[k] = config_hash(recorded(node))
                for a, b in (("auto", "python"), ("auto", "torch_compile")):
                    assert (hashes[a] == hashes[b]) == (ran[a] == ran[b]), (setting, a, b, ran)


# The in-cell LN-LSTM record of the committed set made at b1fa2f9 (tests/data/records_b1fa2f9.json), its
# cell_kernel set to each earlier name: (config_hash, group_hash) as commit 62e4c4a, before the rename, hashed them.
BEFORE_THE_RENAME = {"cpp": ("e82255a9bbf6520e", "3735e7836bd5f6de"), "compile": ("ee94b4e6fa57f260", "86bcc50043cf98dc")}


def test_a_cell_kernels_earlier_and_present_names_are_one_run_with_the_hash_it_always_had(compose):
    """cpp/compiled and compile/torch_compile: the same config_hash and group_hash, the one records made before
    the rename carry (the hash reads the earlier spelling: contract.HASHED_CELL_KERNELS); the settings name the
    present one."""
    import json

    from normbench.configuration.contract import identity

    committed = json.loads((ROOT / "tests" / "data" / "records_b1fa2f9.json").read_text())["records"]
    config = next(r["config"] for r in committed if r["config"]["model"]["family"] == "lstm"
                  and r["config"]["placement"]["name"] == "in_cell" and r["config"]["norm"]["kind"] == "ln")
    for earlier, present in (("cpp", "compiled"), ("compile", "torch_compile")):
        runs = [identity({**config, "model": {**config["model"], "cell_kernel": name}}) for name in (earlier, present)]
        assert [(run.config_hash, run.group_hash) for run in runs] == [BEFORE_THE_RENAME[earlier]] * 2, earlier
        assert [run.settings["model.cell_kernel"] for run in runs] == [present, present]
        in_cell = ("norm=ln", "placement=in_cell")
        composed = [resolved(compose, *in_cell, f"model.cell_kernel={name}") for name in (earlier, present)]
        assert config_hash(composed[0]) == config_hash(composed[1]) and group_hash(composed[0]) == group_hash(composed[1])
        assert effective_config(composed[0]) == effective_config(composed[1])
    assert identity({**config, "model": {**config["model"], "cell_kernel": "python"}}).config_hash not in {
        pair[0] for pair in BEFORE_THE_RENAME.values()}


def test_a_records_environment_cell_kernel_reads_by_its_present_name():
    from normbench.configuration.contract import recorded_cell_kernel

    assert [recorded_cell_kernel(v) for v in ("cpp-avx512", "cpp-default", "compile", "compiled-avx2", "torch_compile",
                                              "python", "autograd", "autograd-padded", None)] == [
        "compiled-avx512", "compiled-default", "torch_compile", "compiled-avx2", "torch_compile", "python", "autograd",
        "autograd-padded", None]
