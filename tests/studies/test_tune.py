"""The tuned study's runner side: a job's objective, the role field, and arm files that reproduce a run."""

import math

import pytest
from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from omegaconf import OmegaConf

from normbench.configuration.config import config_dir
from normbench.configuration.contract import group_hash
from normbench.configuration.schema import ConfigError
from normbench.studies.app import objective
from normbench.studies.tune import arm_file, passthrough


@pytest.mark.parametrize("summary, expected", [
    ({"status": "ok", "task": {"higher_is_better": True}, "metrics": {"final_val": 0.9}}, -0.9),
    ({"status": "ok", "task": {"higher_is_better": False}, "metrics": {"final_val": 0.02}}, 0.02),
    ({"status": "diverged", "task": {"higher_is_better": True}, "metrics": {"final_val": 0.9}}, math.inf),
    ({"status": "failed", "task": {}, "metrics": {}}, math.inf),
    ({"status": "ok", "task": {"higher_is_better": False}, "metrics": {"final_val": None}}, math.inf),
])
def test_a_job_returns_a_value_to_minimize_and_divergence_is_worst(summary, expected):
    assert objective(summary) == expected


def test_role_is_checked_and_splits_groups(compose):
    selection = OmegaConf.to_container(compose("role=selection"), resolve=True)
    evaluation = OmegaConf.to_container(compose("role=evaluation"), resolve=True)
    assert group_hash(selection) != group_hash(evaluation)
    with pytest.raises(Exception) as error:
        OmegaConf.to_object(compose("role=tuning"))
    assert isinstance(error.value, ConfigError) or "role" in str(error.value)


def test_an_arm_file_reproduces_the_recorded_config_at_the_chosen_lr(compose, tmp_path):
    recorded = OmegaConf.to_container(compose("+sweep=tuned", "norm=rms", "placement=in_cell", "model=gru",
                                              "task=adding", "task.length=7", "lr=0.01", "seed=1"), resolve=True)
    folder = tmp_path / "tuned_arm"
    folder.mkdir()
    (folder / "arm000.yaml").write_text(arm_file(recorded, 0.03))
    with initialize_config_dir(str(config_dir()), version_base="1.3"):
        again = hydra_compose("config", overrides=["+tuned_arm=arm000", f"hydra.searchpath=[file://{tmp_path}]",
                                                   "seed=100", "role=evaluation"])
    again = OmegaConf.to_container(again, resolve=True)
    assert again["lr"] == 0.03 and again["seed"] == 100 and again["role"] == "evaluation"
    assert group_hash({**again, "role": "selection", "lr": 0.01}) == group_hash(recorded)


def test_only_how_jobs_run_passes_to_the_evaluation_stage():
    kept = passthrough(["norm=ln,none", "hydra/launcher=local", "hydra.launcher.n_jobs=2", "threads=1",
                         "task.limit_train=500", "steps=100"])
    assert kept == ["hydra/launcher=local", "hydra.launcher.n_jobs=2", "threads=1"]


@pytest.mark.parametrize("text, words", [
    ("1,1", "distinct"), ("100,101,100", "distinct"), (",".join(map(str, range(1001))), "at most 1000"),
    (",".join(map(str, range(20000))), "distinct|at most"), ("x", "not a comma-separated"), ("-3", "2\\*\\*63"),
])
def test_evaluation_seeds_are_distinct_and_at_most_a_thousand(text, words):
    import argparse

    from normbench.studies.tune import _seeds

    with pytest.raises(argparse.ArgumentTypeError, match=words):
        _seeds(text)
    assert _seeds("100, 101,102") == [100, 101, 102]


@pytest.mark.parametrize("overrides, refused", [
    (["task=adding", "norm.eps=0"], "norm.eps must be > 0"),          # T18: every job refuses it
    (["norm=ln,rms", "norm.eps=0"], "in any of the 20 jobs"),
    (["norm=none,ln", "norm.eps=0"], None),                            # norm=none takes no eps: those jobs run
])
def test_a_setting_no_job_can_run_is_refused_before_the_selection(overrides, refused, tmp_path, monkeypatch, capsys):
    """T18: tune ran the whole selection stage on norm.eps=0, a dozen invalid lines, and ended with exit 1
    and "no arm has a chosen lr"; the main run refuses it with exit 2."""
    from normbench.studies import tune

    stages = []
    monkeypatch.setattr(tune, "_normbench", lambda args: stages.append(args) or 2)  # 2: the stage refused, tune ends
    if refused is None:
        assert tune.main(["--out", str(tmp_path / "t"), *overrides]) == 2 and len(stages) == 1
        return
    with pytest.raises(SystemExit) as stop:
        tune.main(["--out", str(tmp_path / "t"), *overrides])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and refused in err and len(err.splitlines()) == 1
    assert not stages and not (tmp_path / "t").exists()


@pytest.mark.parametrize("override", ["lr=[1,", "seed=(("])
def test_an_override_hydra_cannot_parse_is_one_line_before_any_stage(override, tmp_path, monkeypatch, capsys):
    """Hostile T06, T12: a grammar error in an override ended in a 29-line traceback (exit 1); study and a run
    say it in one line, exit 2."""
    from normbench.studies import tune

    stages = []
    monkeypatch.setattr(tune, "_normbench", lambda args: stages.append(args) or 0)
    with pytest.raises(SystemExit) as stop:
        tune.main(["--out", str(tmp_path / "t"), "steps=2", override])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "cannot be parsed" in err and len(err.splitlines()) == 1, err
    assert not stages and not (tmp_path / "t").exists()


@pytest.mark.parametrize("lrs, got", [("lr=0.1", "got lr=0.1"), ("lr=0.1,0.01", "got lr=0.01,0.1"),
                                      # hostile h15 B12 (T03, T06, N03): no grid given was "got none"
                                      ("lr=interval(0.1,0.3)", "got lr=interval(0.1,0.3)"),
                                      ("lr=glob(*)", "got lr=glob(*)"),
                                      ("lr=[0.1,0.2,0.3]", "got lr=[0.1,0.2,0.3]"),
                                      ("~lr", "got ~lr")])  # hostile h16 N19 (I19): the deletion read "got lr"
def test_a_grid_of_fewer_than_three_lrs_is_refused_before_the_selection(lrs, got, tmp_path, monkeypatch, capsys):
    """Hostile h14 B7 (E36, P50): tune ran its selection stage on one lr (or two), then ended with exit 1 and
    "no lr chosen"; a study's tuned protocol refuses such a grid up front, by the same rule (tune.small_grid)."""
    from normbench.studies import lr_protocol, tune

    monkeypatch.setattr(tune, "_normbench", lambda args: pytest.fail("a stage ran"))
    with pytest.raises(SystemExit) as stop:
        tune.main(["--out", str(tmp_path / "t"), "steps=2", "task=adding", lrs])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and len(err.splitlines()) == 1, err
    assert f"an explicit comma-separated lr grid of at least {lr_protocol.MIN_GRID} values (lr=a,b,c), {got}" in err
    assert not (tmp_path / "t").exists()
    assert tune.small_grid((0.001, 0.01, 0.1)) is None


def test_a_current_folder_holding_a_backslash_is_named_as_the_cause_not_out(tmp_path, monkeypatch, capsys):
    """Hostile h16 N19 (X04): from p\\${oc.env:NB_Z}, `tune --out t` was refused as "--out: '…/p\\${…}/t/selection'
    holds a backslash", blaming the plain --out the user typed."""
    from normbench.studies import tune

    here = tmp_path / "p\\${oc.env:NB_Z}"
    here.mkdir()
    monkeypatch.chdir(here)
    monkeypatch.setattr(tune, "_normbench", lambda args: pytest.fail("a stage ran"))
    with pytest.raises(SystemExit) as stop:
        tune.main(["--out", "t", "steps=2", "norm=ln,rms", "lr=0.001,0.01,0.1"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and len(err.splitlines()) == 1, err
    assert "--out t: its full path" in err and "from the current folder's path" in err, err
