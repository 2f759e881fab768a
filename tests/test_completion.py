"""Shell completion and --help of the `normbench` console script: what a user may type, fast (no torch)."""

import os
import subprocess
import sys
from pathlib import Path

from tests.waiting import HANG_S  # waits end on a hang, never on a slow machine

ROOT = Path(__file__).resolve().parent.parent
# The console script's entry point, as pip's `normbench` wrapper calls it (argv[0] is the script's name);
# at exit it says on stderr whether torch was imported.
AS_CONSOLE_SCRIPT = ("import atexit, sys; sys.argv[0] = 'normbench'; "
                     "atexit.register(lambda: print('torch imported:', 'torch' in sys.modules, file=sys.stderr)); "
                     "from normbench.__main__ import main; main()")


def normbench(*args, comp_line=None, env=None):
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    if comp_line is not None:
        env.update(COMP_LINE=comp_line, COMP_POINT=str(len(comp_line)))
    return subprocess.run([sys.executable, "-c", AS_CONSOLE_SCRIPT, *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=HANG_S)


def complete(line, **kwargs) -> set[str]:
    done = normbench("-sc", "query=bash", comp_line=line, **kwargs)
    assert done.returncode == 0, done.stderr
    assert "torch imported: False" in done.stderr  # a TAB must not wait for torch
    return set(done.stdout.split())


def test_completion_lists_config_group_options_and_keys_without_torch():
    assert complete("normbench norm=") == {f"norm={k}" for k in ("none", "bn", "ln", "rms", "scale", "dyt", "derf")}
    assert {"log_every=", "logger="} <= complete("normbench lo")  # a key and a group


def test_completion_offers_what_users_type_and_hides_the_internals():
    everything = complete("normbench ")
    assert "sweep=" in everything
    assert not {"smoke=", "rnn_arm=", "smoke/", "rnn_arm/"} & everything  # the sweeps' own groups
    tasks = complete("normbench task=")
    assert "task=adding" in tasks and not [t for t in tasks if t.endswith("_schema")]
    assert {"+sweep=smoke", "+sweep=batch_size", "+sweep=rnn_table"} <= complete("normbench +sweep=")


def test_completion_lists_optuna_lr_only_with_its_extra():
    import importlib.util

    offered = "hydra/sweeper=optuna_lr" in complete("normbench hydra/sweeper=")
    assert offered == (importlib.util.find_spec("hydra_plugins.hydra_optuna_sweeper") is not None)


def test_help_lists_groups_and_sweeps_but_no_schema_or_internal_group():
    done = normbench("--help")
    assert done.returncode == 0, done.stderr
    assert "torch imported: False" in done.stderr
    groups = done.stdout.split("== Config ==")[0]
    assert "task: adding, copy," in groups and "_schema" not in groups
    assert "\nsmoke:" not in groups and "rnn_arm" not in groups
    listed = groups.split("sweep: ")[1].split("\n")[0].split(", ")
    assert {"batch_size", "eps_fp16", "ln_vs_bn_varlen", "smoke"} <= set(listed) and listed == sorted(listed)


def test_a_users_sweep_folder_is_completed_and_a_missing_one_is_one_line(tmp_path):
    (tmp_path / "mine.yaml").write_text("# @package _global_\nsteps: 2\n")
    assert "+sweep=mine" in complete("normbench +sweep=", env={"NORMBENCH_SWEEPS": str(tmp_path)})
    missing = normbench("--help", env={"NORMBENCH_SWEEPS": str(tmp_path / "nope")})
    assert missing.returncode == 2
    assert missing.stderr.splitlines()[0] == f"normbench: error: NORMBENCH_SWEEPS: {tmp_path / 'nope'} is not a " \
                                             "folder (it names folders of sweep files, separated by ':')"


def test_install_script_completes_the_console_script():
    script = normbench("-sc", "install=bash")
    assert script.returncode == 0, script.stderr
    assert "hydra_bash_completion normbench" in script.stdout


def test_help_with_a_bad_override_is_one_line():
    done = normbench("task=nope", "--help")
    assert done.returncode == 2
    assert done.stderr.splitlines()[0].startswith("normbench: error: In 'config': Could not find 'task/nope'")
    assert "Traceback" not in done.stderr


def test_commands_are_dispatched_before_hydra_parses_and_listed_in_help_and_completion(tmp_path):
    from normbench.__main__ import SUBCOMMANDS

    (tmp_path / "empty").mkdir()  # a PATH that does not exist is refused before the records are read (hostile R07)
    missing = normbench("report", str(tmp_path / "empty"))
    assert missing.returncode == 2, missing.stderr
    assert missing.stderr.splitlines()[0].startswith("normbench.report: no usable run records")  # not Hydra's parse error
    assert "torch imported: False" in missing.stderr  # the report reads records only
    shown = normbench("--help").stdout
    commands = shown.split("== Commands ==")[1].split("\n\n")[0]
    assert [line.split()[0] for line in commands.strip().splitlines()] == list(SUBCOMMANDS)
    assert "norm.bn_reestimate is false here and acts only with norm=bn" in shown
    assert {"report", "rerun"} <= complete("normbench re") and "compare" not in complete("normbench re")
    assert complete("normbench report ") == set()  # a command's argument: the shell offers file names


def test_the_options_pages_key_table_names_every_top_level_key():
    from dataclasses import MISSING, fields

    from normbench.configuration.schema import Config

    text = (ROOT / "docs" / "options.md").read_text()
    table = text[text.index("## What you can set"):text.index("Every value is typed and range-checked")]
    keys = [f.name for f in fields(Config) if f.default_factory is MISSING and f.name != "task"]  # not the groups
    assert len(keys) > 15 and not [k for k in keys if f"`{k}`" not in table]
    assert "`norm.alpha_init`" in table


def test_a_completion_query_outside_the_shells_hook_is_one_line_and_exit_2():
    """A36: without COMP_LINE (set by the shell's completion hook) Hydra's query was a KeyError traceback."""
    env = {k: v for k, v in os.environ.items() if k not in ("COMP_LINE", "COMP_POINT")}
    with_no_line = subprocess.run([sys.executable, "-c", AS_CONSOLE_SCRIPT, "-sc", "query=bash"], capture_output=True,
                                  text=True, env={**env, "PYTHONPATH": str(ROOT)}, cwd=ROOT, timeout=HANG_S)
    assert with_no_line.returncode == 2 and with_no_line.stdout == "", with_no_line.stderr
    assert with_no_line.stderr.splitlines()[0] == ("normbench: error: shell completion query needs COMP_LINE "
                                                   "(it is run by the shell's completion hook)")


def test_an_unknown_flag_is_one_line_naming_it_and_exit_2():
    """N04, N23, N24: Hydra's argparse answered with its 8-line usage block under the name __main__.py."""
    for flag, says in (("--bogus-flag", "unrecognized arguments: --bogus-flag"), ("-x", "unrecognized arguments: -x"),
                       ("--fake-opt=1", "unrecognized arguments: --fake-opt=1"),
                       ("-c", "argument --cfg/-c: expected one argument")):
        done = normbench(flag)
        assert done.returncode == 2 and done.stdout == "", done.stderr
        assert done.stderr.splitlines()[0] == f"normbench: error: {says}" and "usage" not in done.stderr


def test_hydras_own_flags_still_parse():
    done = normbench("--cfg", "job", "--resolve", "-p", "model", "--help")
    assert done.returncode == 0 and "== Commands ==" in done.stdout, done.stderr
    done = normbench("--hydra-help")
    assert done.returncode == 0 and "Hydra" in done.stdout, done.stderr
