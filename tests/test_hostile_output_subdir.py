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


@pytest.mark.parametrize("value", [".", "./", "a/..", "a,."])
def test_an_output_subdir_that_is_the_run_folder_itself_is_named(value):
    """H09: Hydra wrote its overrides.yaml into the run folder itself, then the run refused the folder as
    holding files it did not write."""
    assert command_line_place(["steps=4", f"hydra.output_subdir={value}"]) == f"hydra.output_subdir={value}"


def test_the_run_folder_itself_is_refused_for_what_it_is_and_nothing_is_written(tmp_path, cli):
    code, _, err = cli(f"hydra.run.dir={tmp_path / 'run'}", "threads=1", "steps=2", "hydra.output_subdir=.")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "must name a sub-folder of the run folder, not the run folder itself" in err
    assert "no normbench record" not in err and not (tmp_path / "run").exists()


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


def test_a_run_folder_holding_someones_files_is_refused_untouched(tmp_path, cli):
    """O01: hydra.run.dir=DIR where DIR holds a metrics.jsonl of someone's and no normbench record."""
    victim = tmp_path / "mine"
    victim.mkdir()
    (victim / "metrics.jsonl").write_text('{"mine": 1}\n')
    code, _, err = cli(f"hydra.run.dir={victim}", "threads=1", "steps=2", "report=false")
    assert code == 2 and "no normbench record" in err and len(err.strip().splitlines()) == 1, err
    assert sorted(p.name for p in victim.iterdir()) == ["metrics.jsonl"]
    assert (victim / "metrics.jsonl").read_text() == '{"mine": 1}\n'


def test_a_log_of_someones_in_the_run_folder_is_refused_untouched(tmp_path, cli):
    """Hostile pass 4, O04: a normbench.log of someone's was exempt, and the run appended its log to it."""
    victim = tmp_path / "mine"
    victim.mkdir()
    (victim / "normbench.log").write_text("my log\n")
    code, _, err = cli(f"hydra.run.dir={victim}", "threads=1", "steps=2", "report=false")
    assert code == 2 and "holds normbench.log but no normbench record" in err, err
    assert sorted(p.name for p in victim.iterdir()) == ["normbench.log"]
    assert (victim / "normbench.log").read_text() == "my log\n"


def test_hydras_own_config_folder_is_not_someones(tmp_path, cli):
    """Hostile pass 4, H17: with hydra.output_subdir=.hydra, Hydra writes run/.hydra before the job starts, and
    the run refused its own folder."""
    run = tmp_path / "run"
    code, _, err = cli(f"hydra.run.dir={run}", "hydra.output_subdir=.hydra", "threads=1", "steps=2", "report=false")
    assert code == 0 and (run / "summary.json").is_file() and (run / ".hydra" / "config.yaml").is_file(), err


def test_a_run_folder_of_normbench_is_still_resumed(tmp_path, cli):
    """The same rule keeps a normbench run folder usable: its record makes it ours."""
    run = tmp_path / "run"
    assert cli(f"hydra.run.dir={run}", "threads=1", "steps=2", "report=false")[0] == 0
    code, _, err = cli(f"hydra.run.dir={run}", "threads=1", "steps=2", "report=false", "resume=true")
    assert code == 0 and "already finished" in err, err


@pytest.mark.parametrize("multirun", [False, True])
def test_an_empty_output_folder_is_refused(tmp_path, cli, multirun):
    """O07: hydra.run.dir= (or hydra.sweep.dir=) would write the record into the current folder."""
    key = "hydra.sweep.dir" if multirun else "hydra.run.dir"
    code, _, err = cli(*(["-m"] if multirun else []), f"{key}=", "threads=1", "steps=2", "report=false")
    assert code == 2 and f"{key} is empty" in err and len(err.strip().splitlines()) == 1, err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("folder", ["r/./../r2/..", ".", "r/.."])
def test_a_run_folder_that_is_the_current_one_by_a_detour_is_refused_before_any_folder_is_made(tmp_path, cli, folder):
    """hostile h18 H8: hydra.run.dir=r/./../r2/.. made r and r2, then refused the folder for holding r2."""
    code, _, err = cli(f"hydra.run.dir={folder}", "threads=1", "steps=2", "report=false")
    assert code == 2 and f"hydra.run.dir='{folder}' is the current folder" in err, err
    assert len(err.strip().splitlines()) == 1 and list(tmp_path.iterdir()) == []


def test_a_sweep_folder_with_someone_elses_multirun_yaml_is_refused(tmp_path, cli):
    """O13: a multirun.yaml that is not Hydra's is someone's file, never replaced."""
    victim = tmp_path / "sweep"
    victim.mkdir()
    (victim / "multirun.yaml").write_text("mine\n")
    code, _, err = cli("-m", f"hydra.sweep.dir={victim}", "seed=1", "threads=1", "steps=2", "report=false")
    assert code == 2 and "multirun.yaml" in err and len(err.strip().splitlines()) == 1, err
    assert sorted(p.name for p in victim.iterdir()) == ["multirun.yaml"]
    assert (victim / "multirun.yaml").read_text() == "mine\n"


def test_a_sweep_run_again_into_its_own_folder_resumes(tmp_path, cli):
    sweep = tmp_path / "sweep"
    args = ("-m", f"hydra.sweep.dir={sweep}", "seed=1", "threads=1", "steps=2", "report=false")
    assert cli(*args)[0] == 0
    code, _, err = cli(*args)
    assert code == 0 and "Traceback" not in err, err


def test_the_sweep_files_named_are_the_ones_written():
    from normbench.bench import arms
    from normbench.configuration.hydra_files import SWEEP_FILES
    from normbench.records import sweep_time
    from normbench.training import environment

    assert {sweep_time.RECORD, sweep_time.FOLDER, environment.SWEEP_CACHE, arms.FILE} <= set(SWEEP_FILES)
