"""Hydra's ``hydra.output_subdir`` on the command line (hostile cases H18, H18b, H18c, H18d): an
absolute path or a ``..`` made Hydra write config.yaml, hydra.yaml and overrides.yaml outside the run
folder, over someone's files. Refused in one line, exit 2, before anything is written."""

from __future__ import annotations

import pytest

from normbench.configuration.config import command_line_place


@pytest.mark.parametrize("value", ["/tmp/elsewhere", "../../../up", "a/../../up", "..", "~/x",
                                   "${oc.env:HOME}", "a,/tmp/x", "choice(a,/tmp/x)", "'/tmp/q'"])
@pytest.mark.parametrize("key", ["hydra.output_subdir", "+hydra.output_subdir", "++hydra.output_subdir"])
def test_an_output_subdir_outside_the_run_folder_is_named(key, value):
    assert command_line_place(["steps=4", f"{key}={value}"]) == f"{key}={value}"


@pytest.mark.parametrize("value", [".hydra", "mine", "a/b", "null", "..hidden"])
def test_an_output_subdir_inside_the_run_folder_is_allowed(value):
    assert command_line_place([f"hydra.output_subdir={value}", "model.name=../x"]) is None


@pytest.mark.parametrize("multirun", [False, True])
def test_the_command_line_refuses_it_and_writes_nothing(tmp_path, cli, multirun):
    victim = tmp_path / "others"
    victim.mkdir()
    (victim / "config.yaml").write_text("someone's precious config\n")
    flags = ["-m", f"hydra.sweep.dir={tmp_path / 'sweep'}"] if multirun else [f"hydra.run.dir={tmp_path / 'run'}"]
    code, _, err = cli(*flags, "threads=1", "steps=2", f"hydra.output_subdir={victim}")
    assert code == 2 and "hydra.output_subdir" in err and len(err.strip().splitlines()) == 1, err
    assert (victim / "config.yaml").read_text() == "someone's precious config\n"
    assert sorted(p.name for p in victim.iterdir()) == ["config.yaml"]
    assert not (tmp_path / "run").exists() and not (tmp_path / "sweep").exists()
