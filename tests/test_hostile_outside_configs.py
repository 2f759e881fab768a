"""One gate for every config from outside conf/ (issue 50): Hydra's own flags and command-line keys
must not run code a sweep file may not, unless the user says ``--allow-code`` (and is told)."""

from __future__ import annotations

import os
import pickle

import pytest

from normbench.configuration.config import ALLOW_CODE_ENV, command_line_code


@pytest.fixture(autouse=True)
def _no_opt_in_left():
    os.environ.pop(ALLOW_CODE_ENV, None)
    yield
    os.environ.pop(ALLOW_CODE_ENV, None)


class Payload:
    """What a planted config.pickle holds: unpickling it writes the marker."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def callback_file(marker) -> str:
    return (f"hydra:\n  callbacks:\n    x:\n      _target_: builtins.open\n      _args_: ['{marker}', w]\n"
            "steps: 6\n")


@pytest.mark.parametrize("flag", ["--experimental-rerun", "--experimental-rerun={f}", "--experimental", "--exp",
                                  "--exp={f}", "--experimental-r", "--e"])
def test_the_pickle_flag_is_refused_and_names_rerun(tmp_path, cli, flag):
    """Spelled out or shortened: argparse takes any unambiguous prefix of a flag (a held-out pass ran the
    payload through ``--exp FILE``)."""
    marker = tmp_path / "ran"
    planted = tmp_path / "config.pickle"
    planted.write_bytes(pickle.dumps(Payload(marker)))
    args = [flag.format(f=planted)] if "{f}" in flag else [flag, str(planted)]
    code, _, err = cli(*args)
    assert code == 2 and not marker.exists()
    assert "normbench rerun" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("flags", [["--config-dir", "{d}", "--config-name", "evil"],
                                   ["--config-path", "{d}", "--config-name", "evil"],
                                   ["-cd", "{d}", "-cn", "evil"]])
def test_an_outside_primary_config_is_read_as_a_sweep_file(tmp_path, cli, flags):
    marker = tmp_path / "ran"
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "evil.yaml").write_text(callback_file(marker))
    code, _, err = cli(*[f.format(d=tmp_path / "outside") for f in flags], "--cfg", "job")
    assert code == 2 and not marker.exists(), err
    assert "hydra.callbacks" in err and len(err.strip().splitlines()) == 1
    # named as what it is (hostile h26 h05, h06, h33: "sweep file .../evil.yaml")
    assert f"primary config {tmp_path / 'outside' / 'evil.yaml'}" in err and "sweep file" not in err, err


def test_an_outside_config_without_code_still_composes(tmp_path, cli):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "short.yaml").write_text("defaults:\n  - config\n  - _self_\nsteps: 7\n")
    code, out, err = cli("--config-dir", str(tmp_path / "mine"), "--config-name", "short", "--cfg", "job")
    assert code == 0, err
    assert "steps: 7" in out


def test_a_search_path_group_that_plants_callbacks_is_refused(tmp_path, cli):
    marker = tmp_path / "ran"
    (tmp_path / "extra" / "evil").mkdir(parents=True)
    (tmp_path / "extra" / "evil" / "x.yaml").write_text("# @package _global_\n" + callback_file(marker))
    code, _, err = cli(f"hydra.searchpath=[file://{tmp_path / 'extra'}]", "+evil=x", "--cfg", "job")
    assert code == 2 and not marker.exists(), err
    assert f"evil config {tmp_path / 'extra' / 'evil' / 'x.yaml'}" in err and "sweep file" not in err, err  # h26 h23


@pytest.mark.parametrize("resolver", ["oc.decode", "oc.create"])
def test_a_node_built_from_text_on_the_command_line_is_refused_naming_its_resolver(cli, resolver):
    """h26 h15: lr=${oc.decode:"[1,2]"} was refused as "would run code (a _target_, Hydra callbacks, logging or
    environment settings)", none of which it is; the line names the resolver and why it is refused."""
    code, _, err = cli(f'lr=${{{resolver}:"[1,2]"}}', "--cfg", "job")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"lr on the command line uses {resolver}, which builds settings from text" in err
    assert "Hydra callbacks" not in err and "--allow-code" in err


# keys that run code on the command line: each refused as a sweep file's hydra.sweeper.params refuses it
CODE_ON_THE_COMMAND_LINE = {
    "callback": "+hydra.callbacks.x._target_=builtins.print",
    "callback_node": "+hydra.callbacks={x:{y:1}}",
    "target_in_a_group": "+norm._target_=os.system",
    "logging_factory": "+hydra.job_logging.handlers.h.()=os.system",
    "logging_handler_class": "+hydra.job_logging.handlers.h.class=os.system",
    "hydra_logging": "+hydra.hydra_logging.root.level=DEBUG",
    "environment_of_subprocesses": "+hydra.job.env_set.CXX=/tmp/evil-compiler",
    "launcher_setup": "+hydra.launcher.setup=[touch /tmp/x]",
    "node_built_from_a_string": "+x=${oc.create:{_target_:os.system}}",
    "whole_hydra_node": "hydra={callbacks:{}}",
}


@pytest.mark.parametrize("name", sorted(CODE_ON_THE_COMMAND_LINE))
def test_command_line_keys_that_run_code_are_refused(name, cli):
    override = CODE_ON_THE_COMMAND_LINE[name]
    assert command_line_code([override]) is not None
    code, _, err = cli(override, "--cfg", "job")
    assert code == 2 and "--allow-code" in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("override", ["hydra.run.dir=x", "hydra.sweep.dir=y", "hydra/launcher=joblib",
                                      "hydra.launcher.n_jobs=2", "hydra.job.name=n", "hydra.searchpath=[file:///x]",
                                      "norm=rms", "+tags=[a,b]", "hydra/job_logging=disabled"])
def test_settings_that_run_nothing_pass(override):
    assert command_line_code([override]) is None


def test_the_opt_in_is_explicit_and_visible(tmp_path, cli):
    code, out, err = cli("--allow-code", "+hydra.job.env_set.NB_SEEN=1", "--cfg", "job")
    assert code == 0, err
    assert "--allow-code" in err and "used as given" in err
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "cb.yaml").write_text("defaults:\n  - config\n  - _self_\nhydra:\n  callbacks:\n    x:\n"
                                               "      _target_: builtins.dict\n")
    code, _, err = cli("--allow-code", "--config-dir", str(tmp_path / "mine"), "--config-name", "cb", "--cfg", "job")
    assert code == 0, err


def test_a_group_chosen_per_job_is_checked_in_the_workers_too(tmp_path, cli):
    """A joblib worker composes each job's config itself: a sweep over a planted group is refused there."""
    from tests.conftest import TINY, TINY_TASK

    marker = tmp_path / "ran"
    (tmp_path / "extra" / "evil").mkdir(parents=True)
    for name in ("a", "b"):
        (tmp_path / "extra" / "evil" / f"{name}.yaml").write_text("# @package _global_\n" + callback_file(marker))
    code, _, err = cli("-m", *TINY, *TINY_TASK, f"hydra.searchpath=[file://{tmp_path / 'extra'}]", "+evil=a,b",
                       "hydra/launcher=local", "hydra.launcher.n_jobs=2", "report=false", "hydra.sweep.dir=sweep")
    assert code != 0 and not marker.exists(), err
    assert "hydra.callbacks" in err


def test_a_nested_sweep_parameter_on_the_command_line_is_one_line(tmp_path, cli):
    """``+hydra.sweeper.params.hydra.sweep.dir=/abs`` nests a node where the sweeper wants an override:
    OmegaConf failed with an AssertionError traceback."""
    code, _, err = cli("-m", f"+hydra.sweeper.params.hydra.sweep.dir={tmp_path / 'abs'}", "steps=1")
    assert code == 2 and "dotted name" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "abs").exists()
