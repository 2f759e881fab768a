"""A sweep file is config, not code: one table of hostile sweep files, each refused in one line.

Each file is served the way Hydra asks for it (normbench/configuration/config.py's SweepSource, as a sweep
``NAME.yaml`` or a group file ``GROUP/NAME.yaml`` of a NORMBENCH_SWEEPS folder). It must be
refused with a ConfigError (one line, exit 2) before Hydra sees it, within seconds and without
expanding what it asks to expand; end to end, nothing outside is touched.
"""

from __future__ import annotations

import os
import resource
import time

import pytest

from normbench.configuration.config import MAX_SWEEP_BYTES, ConfigError, SweepSource

VICTIM = "/tmp/normbench-hostile-sweep-victim"
GLOBAL = "# @package _global_\n"


def bomb(levels: int = 9) -> str:
    """The billion laughs: each level ten aliases of the one before, 10**levels strings in about 1 KB."""
    lines = ['a0: &a0 "lol"']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, levels + 1)]
    return GLOBAL + "\n".join(lines) + "\n"


# name -> (file inside the sweeps folder, its text). Every one must be refused.
HOSTILE = {
    "callback_unlinks_a_file": ("evil.yaml", GLOBAL + f"hydra:\n  callbacks:\n    x:\n      _target_: pathlib.Path.unlink\n"
                                              f"      _args_: [{VICTIM}]\n"),
    "callback_truncates_a_file": ("evil.yaml", GLOBAL + f"hydra:\n  callbacks:\n    x:\n      _target_: builtins.open\n"
                                                f"      _args_: [{VICTIM}, w]\n"),
    "callback_loads_a_pickle": ("evil.yaml", GLOBAL + "hydra:\n  callbacks:\n    x:\n      _target_: torch.load\n"
                                              "      f: /tmp/x.pt\n      weights_only: false\n"),
    "callback_without_target": ("evil.yaml", GLOBAL + "hydra:\n  callbacks:\n    x: {}\n"),
    "target_in_a_setting": ("evil.yaml", GLOBAL + "norm:\n  _target_: os.system\n  _args_: [id]\n"),
    "logging_factory": ("evil.yaml", GLOBAL + "hydra:\n  job_logging:\n    handlers:\n      h:\n        (): os.system\n"),
    "logging_file_outside": ("evil.yaml", GLOBAL + f"hydra:\n  job_logging:\n    version: 1\n    handlers:\n      f:\n"
                                                   f"        class: logging.FileHandler\n        filename: {VICTIM}\n"),
    "hydra_logging": ("evil.yaml", GLOBAL + "hydra:\n  hydra_logging:\n    version: 1\n"),
    "search_path": ("evil.yaml", GLOBAL + "hydra:\n  searchpath: [file:///tmp/elsewhere]\n"),
    "env_set_ld_preload": ("evil.yaml", GLOBAL + "hydra:\n  job:\n    env_set:\n      LD_PRELOAD: /tmp/evil.so\n"),
    "env_set_as_one_string": ("evil.yaml", GLOBAL + "hydra:\n  job:\n    env_set: LD_PRELOAD\n"),
    "output_subdir_outside": ("evil.yaml", GLOBAL + "hydra:\n  output_subdir: ../../../outside/hy\n"),
    "launcher_setup_as_one_string": ("evil.yaml", GLOBAL + "hydra:\n  launcher:\n    setup: rm -rf ~\n"),
    "launcher_setup_lines": ("evil.yaml", GLOBAL + "hydra:\n  launcher:\n    setup: ['rm -rf ~']\n"),
    "package_header_into_callbacks": ("evil.yaml", "# @package hydra.callbacks\nx:\n  _target_: os.system\n"),
    "package_header_into_hydra": ("evil.yaml", "# @package hydra\njob_logging:\n  version: 1\n"),
    "group_file_of_a_hydra_group": ("hydra/job_logging/evil.yaml", "version: 1\nroot:\n  level: INFO\n"),
    "hydra_below_the_top": ("arm/evil.yaml", "hydra:\n  job:\n    env_set: {X: '1'}\n"),
    "defaults_into_hydra": ("evil.yaml", GLOBAL + "defaults:\n  - /arm@hydra.job_logging: evil\n"),
    "defaults_override_job_logging": ("evil.yaml", GLOBAL + "defaults:\n  - override /hydra/job_logging: evil\n"),
    "defaults_override_hydra_logging": ("evil.yaml", GLOBAL + "defaults:\n  - override /hydra/hydra_logging: disabled\n"),
    "defaults_chooses_hydra_env": ("evil.yaml", GLOBAL + "defaults:\n  - /hydra/env: default\n"),
    "defaults_optional_job_logging": ("evil.yaml", GLOBAL + "defaults:\n  - optional override /hydra/job_logging: x\n"),
    "interpolated_hydra_node": ("evil.yaml", GLOBAL + "stash:\n  job:\n    env_set: {X: '1'}\nhydra: ${stash}\n"),
    "interpolated_launcher": ("evil.yaml", GLOBAL + "stash:\n  setup: [id]\nhydra:\n  launcher: ${stash}\n"),
    "oc_create_smuggles_a_target": ("evil.yaml", GLOBAL + "hydra:\n  sweeper:\n    params:\n"
                                                          "      seed: '${oc.create:{_target_: os.system}}'\n"),
    "oc_decode_smuggles_a_node": ("evil.yaml", GLOBAL + "x: '${oc.decode:\"{a: 1}\"}'\n"),
    "sweeper_param_sets_env": ("evil.yaml", GLOBAL + "hydra:\n  sweeper:\n    params:\n"
                                                     "      hydra.job.env_set.LD_PRELOAD: /tmp/evil.so\n"),
    "sweeper_param_adds_a_callback": ("evil.yaml", GLOBAL + "hydra:\n  sweeper:\n    params:\n"
                                                            "      +hydra.callbacks.x._target_: os.system\n"),
    "sweeper_param_chooses_logging": ("evil.yaml", GLOBAL + "hydra:\n  sweeper:\n    params:\n"
                                                            "      hydra/job_logging: disabled,default\n"),
    # a held-out pass: a swept hydra.sweep.dir beat the command line's and put the jobs' records elsewhere
    "sweeper_param_moves_the_sweep": ("evil.yaml", GLOBAL + "hydra:\n  sweeper:\n    params:\n"
                                                            "      hydra.sweep.dir: /tmp/elsewhere\n"),
    "python_tag": ("evil.yaml", GLOBAL + "seed: !!python/object/apply:os.system [id]\n"),
    "deep_nesting": ("evil.yaml", GLOBAL + "a: " + "[" * 10_000 + "]" * 10_000 + "\n"),
    "anchor_bomb": ("evil.yaml", bomb()),
    "merge_key_bomb": ("evil.yaml", GLOBAL + 'a0: &a0 {k: v}\n' + "".join(
        f"a{i}: &a{i} {{{', '.join(f'k{j}: *a{i - 1}' for j in range(10))}}}\n" for i in range(1, 9))),
    "recursive_alias": ("evil.yaml", GLOBAL + "a: &a [*a]\n"),
    "syntax_error": ("evil.yaml", GLOBAL + "hydra:\n  mode: MULTIRUN\n  sweeper: [\n"),
    "tab_indentation": ("evil.yaml", GLOBAL + "hydra:\n\tmode: MULTIRUN\n"),
    "duplicate_key": ("evil.yaml", GLOBAL + "seed: 1\nseed: 2\n"),
    "top_level_list": ("evil.yaml", "- 1\n- 2\n"),
    "top_level_scalar": ("evil.yaml", "just words\n"),
    # hostile h25 g012: Hydra's "Key 'sweep' not in 'Config'" for each of these three
    "empty": ("evil.yaml", ""),
    "comments_only": ("evil.yaml", GLOBAL + "# to be written\n"),
    "no_package_line": ("evil.yaml", "hydra:\n  mode: MULTIRUN\n"),
    "not_utf8": ("evil.yaml", b"seed: \xff\xfe\n"),
    "a_yaml_set": ("evil.yaml", GLOBAL + "s: !!set {a, b}\n"),
    "a_null_key": ("evil.yaml", GLOBAL + "~: 1\n"),
    "an_int_of_5000_digits": ("evil.yaml", GLOBAL + "a: " + "9" * 5000 + "\n"),
    "over_one_mib": ("evil.yaml", "#" * (MAX_SWEEP_BYTES + 1)),
    # Hydra's basic sweeper lists every job before the first: these would never start (third hostile pass)
    "a_billion_seeds": ("evil.yaml", GLOBAL + "hydra:\n  mode: MULTIRUN\n  sweeper:\n    params:\n"
                                              "      seed: range(0,1000000000)\n"),
    "a_bool_given_2": ("evil.yaml", GLOBAL + "save_model: 2\n"),  # OmegaConf would take it as true
    "a_nested_bool_given_5": ("evil.yaml", GLOBAL + "norm:\n  affine: 5\n"),
    # hostile h16 N11 (M05, Z03): a list for a group of one option ran one run of the options' configs merged
    "a_list_for_a_group": ("evil.yaml", GLOBAL + "hydra:\n  sweeper:\n    params:\n      norm: [ln, rms]\n"),
    "a_list_for_the_model": ("evil.yaml", GLOBAL + "hydra:\n  sweeper:\n    params:\n      model: '[lstm,gru]'\n"),
    "a_list_for_a_group_in_defaults": ("evil.yaml", GLOBAL + "defaults:\n  - override /norm: [ln, rms]\n  - _self_\n"),
    "a_product_past_the_cap": ("evil.yaml", GLOBAL + "hydra:\n  sweeper:\n    params:\n      seed: range(0,1000)\n"
                                                     "      lr: range(0.0001,0.1,0.0001)\n      norm: none,ln\n"),
}


def serve(tmp_path, name: str, text):
    """SweepSource.load_config of ``name`` in a NORMBENCH_SWEEPS folder holding ``text``, as Hydra asks for it."""
    path = tmp_path / "sweeps" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    source = SweepSource("test", f"{SweepSource.scheme()}://")
    source.dirs = [str(tmp_path / "sweeps")]
    group, _, file = name.rpartition("/")
    return source.load_config(f"{group or 'sweep'}/{file}")


@pytest.mark.parametrize("case", HOSTILE)
def test_a_hostile_sweep_file_is_refused_in_one_line_fast(tmp_path, case):
    name, text = HOSTILE[case]
    memory = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    with pytest.raises(ConfigError) as refused:
        serve(tmp_path, name, text)
    assert time.perf_counter() - start < 5.0  # a bomb expands for minutes
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - memory < 200_000  # kB: nothing expanded
    message = str(refused.value)
    assert "\n" not in message and str(tmp_path / "sweeps") in message and len(message) < 600, message


@pytest.mark.parametrize("text", [
    GLOBAL + "hydra:\n  mode: MULTIRUN\n  sweeper:\n    params:\n      seed: 0,1\n      +arm: glob(*)\n",
    GLOBAL + "hydra:\n  sweep:\n    dir: multirun/${now:%Y-%m-%d}\n    subdir: ${hydra.job.num}\n"
             "  launcher:\n    n_jobs: 2\n  job:\n    name: mine\n",
    GLOBAL + "defaults:\n  - override /norm: rms\n  - _self_\nlr: 0.01\nanchor: &x 3\nsteps: *x\n",
    GLOBAL + "defaults:\n  - override /hydra/launcher: joblib\n  - override /hydra/sweeper: basic\n  - _self_\n",
])
def test_a_sweep_file_of_settings_passes(tmp_path, text):
    serve(tmp_path, "fine.yaml", text)


def test_an_empty_option_of_a_sweeps_group_passes(tmp_path):
    """An option that sets nothing is a group's plain Hydra option (``+arm=none``); only a sweep must set something."""
    serve(tmp_path, "arm/none.yaml", "")


@pytest.mark.parametrize("text, says", [
    ("", "is empty (it sets nothing): a sweep file holds the line '# @package _global_' and then settings"),
    ("# nothing yet\n", "is empty (it sets nothing)"),
    ("- norm\n- lr\n", ": it holds a YAML list, not a mapping of settings (key: value lines)"),
    ("norm\n", ": it holds a single value, not a mapping of settings (key: value lines)"),
    ("norm: ln\n", "lacks its first line '# @package _global_': without it its settings would land under 'sweep.'"),
])
def test_an_empty_or_shapeless_sweep_file_says_what_it_is_and_should_hold(tmp_path, text, says):
    with pytest.raises(ConfigError) as refused:
        serve(tmp_path, "mine.yaml", text)
    message = str(refused.value)
    assert message.startswith(f"sweep file {tmp_path / 'sweeps' / 'mine.yaml'}") and says in message, message
    assert "\n" not in message


def test_end_to_end_an_empty_sweep_file_is_one_line_saying_so_and_exit_2(cli, tmp_path, monkeypatch):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "x.yaml").touch()
    monkeypatch.setenv("NORMBENCH_SWEEPS", str(tmp_path / "mine"))
    code, out, err = cli("+sweep=x", "hydra.sweep.dir=sw", "report=false")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "is empty (it sets nothing)" in err, err
    assert "ConfigKeyError" not in err and not (tmp_path / "sw").exists()


@pytest.mark.parametrize("case", ["callback_unlinks_a_file", "anchor_bomb", "syntax_error", "defaults_override_job_logging"])
def test_end_to_end_a_hostile_sweep_file_exits_2_in_one_line_and_touches_nothing(cli, tmp_path, monkeypatch, case):
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    name, text = HOSTILE[case]
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / name).write_text(text.replace(VICTIM, str(victim)))
    monkeypatch.setenv("NORMBENCH_SWEEPS", str(tmp_path / "mine"))
    code, out, err = cli("+sweep=evil", "hydra.sweep.dir=sw", "report=false")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert victim.read_text() == "keep me" and not (tmp_path / "sw").exists()


def test_a_sweep_file_that_includes_itself_is_one_line_and_exit_2(cli, tmp_path, monkeypatch):
    """A defaults list that names its own file composes without end: one line, not a RecursionError's traceback."""
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "loop.yaml").write_text(GLOBAL + "defaults:\n  - /sweep/loop\n")
    monkeypatch.setenv("NORMBENCH_SWEEPS", str(tmp_path / "mine"))
    code, out, err = cli("+sweep=loop", "hydra.sweep.dir=sw", "report=false")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert "refers to itself" in err and not (tmp_path / "sw").exists()


def test_a_sweep_that_launches_no_job_says_so_and_exits_2(cli, tiny_args, tmp_path):
    """S20: ``seed: glob(*)`` expands to no job; Hydra launched 0 and the sweep exited 0."""
    code, _, err = cli("-m", *tiny_args, "seed=glob(*)", "report=false", f"hydra.sweep.dir={tmp_path / 'sweep'}")
    assert code == 2 and err.strip().splitlines()[-1] == (
        f"normbench: error: the sweep launched no job (a sweep over an empty list, or a glob that matches "
        f"nothing): nothing was run in {tmp_path / 'sweep'}"), err


@pytest.mark.parametrize("name, text, key", [("decodelr.yaml", GLOBAL + "lr: '${oc.decode:\"0.01\"}'\n", "lr"),
                                             ("norm/decoded.yaml", "eps: '${oc.decode:\"1e-5\"}'\n", "norm.eps")])
def test_a_smuggling_value_is_named_as_the_reason(tmp_path, name, text, key):
    """Hostile h13 X08b, W03: the line said "sets lr: ... under hydra it may set only ...", naming neither oc.decode
    nor anything lr did wrong (a plain lr: 0.01 passes)."""
    with pytest.raises(ConfigError, match=rf"sets {key} to a value holding oc\.decode"):
        serve(tmp_path, name, text)


@pytest.mark.parametrize("text, says", [
    (GLOBAL + "hydra:\n  sweeper:\n    params:\n      norm: ${oc.env:NB_N}\n",
     r"sets hydra\.sweeper\.params\.norm to an interpolation: under hydra only sweep\.dir, .* may interpolate"),
    (GLOBAL + "hydra:\n  sweeper:\n    params:\n      tags: '[${hydra:runtime.cwd}]'\n", "to an interpolation"),
    (GLOBAL + "hydra:\n  sweeper:\n    params:\n      hydra.job.env_set.X: '1'\n",
     r"params\.hydra\.job\.env_set\.X: a sweep parameter may not set Hydra's own settings"),
    (GLOBAL + "hydra:\n  launcher:\n    setup: id\n", r"may set only mode, .* \(not launcher\.setup"),
])
def test_a_refused_sweep_file_says_the_rule_it_breaks(tmp_path, text, says):
    """Hostile h16 N18 (M01, M14, M21): an interpolation in the sweep's params was refused as a forbidden Hydra key,
    "under hydra it may set only mode, sweeper, ...", though the key it named is the sweeper's."""
    with pytest.raises(ConfigError, match=says) as refused:
        serve(tmp_path, "evil.yaml", text)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_sweep_file_that_is_not_a_regular_file_says_so_and_is_not_listed(cli, tmp_path, monkeypatch, no_hang, kind):
    """Hostile h21 B5 (N044): "Could not find 'sweep/bad' Available options in 'sweep': bad ..." for a FIFO."""
    from normbench.configuration.config import SWEEP_GROUP, SweepSource

    (tmp_path / "mine").mkdir()
    os.mkfifo(tmp_path / "mine" / "bad.yaml") if kind == "fifo" else (tmp_path / "mine" / "bad.yaml").mkdir()
    monkeypatch.setenv("NORMBENCH_SWEEPS", str(tmp_path / "mine"))
    code, out, err = cli("+sweep=bad", "hydra.sweep.dir=sw", "report=false")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert f"sweep file {tmp_path / 'mine' / 'bad.yaml'} is not a regular file" in err, err
    assert "bad" not in SweepSource("normbench-sweeps", "nbsweeps://").list(SWEEP_GROUP, None)
