"""The sweeps folder: every sweeps/*.yaml is a sweep (+sweep=NAME) that sweeps without -m; a user's
folder joins through NORMBENCH_SWEEPS (normbench/configuration/config.py)."""

import json
from pathlib import Path

import pytest
from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from hydra.types import RunMode

from normbench.configuration.config import config_dir, sweep_dirs

ROOT = Path(__file__).resolve().parent.parent
SWEEPS = sorted(p.stem for p in (ROOT / "sweeps").glob("*.yaml"))


def test_the_checkout_sweeps_folder_is_the_one_found():
    assert sweep_dirs() == [ROOT / "sweeps"]
    assert {"smoke", "batch_size", "rnn_table"} <= set(SWEEPS)


@pytest.mark.parametrize("name", SWEEPS)
def test_every_sweep_file_composes_and_sets_multirun(name):
    with initialize_config_dir(str(config_dir()), version_base="1.3"):
        cfg = hydra_compose("config", overrides=[f"+sweep={name}"], return_hydra_config=True)
    assert cfg.hydra.mode == RunMode.MULTIRUN
    assert cfg.hydra.sweeper.params  # a sweep sweeps something


def test_a_sweeps_own_group_composes(compose):
    assert compose("+sweep=smoke", "+smoke=bn_bf16").precision.dtype == "bf16"
    assert compose("+sweep=rnn_table", "+rnn_arm=post_ln").placement.name == "post"


@pytest.mark.parametrize("case", sorted(p.stem for p in (ROOT / "sweeps" / "smoke").glob("*.yaml")))
def test_each_smoke_case_runs_its_own_tiny_task(case):
    """Every case names its task (sweeps/smoke_task/); the adding cases the very task the smoke sweep always
    ran, so their runs keep their identity."""
    from normbench.configuration.config import to_config
    from normbench.tasks import AddingConfig

    with initialize_config_dir(str(config_dir()), version_base="1.3"):
        task = to_config(hydra_compose("config", overrides=["+sweep=smoke", f"+smoke={case}"])).task
    if case.startswith("fortunes_"):
        assert task.name == case.rsplit("_", 1)[0] and task.path == "/usr/share/games/fortunes"
        assert task.n_train <= 64 and (task.name != "fortunes_lm" or task.examples == "documents")
    else:
        assert task == AddingConfig(length=8, min_length=3, n_train=64, n_val=32, n_test=32)


def test_a_users_sweep_runs_without_dash_m_with_its_own_group(cli, tmp_path, monkeypatch, tiny_args):
    mine = tmp_path / "my_sweeps"
    (mine / "arm").mkdir(parents=True)
    (mine / "arm" / "rms.yaml").write_text("# @package _global_\nnorm:\n  kind: rms\n")
    (mine / "arm" / "ln.yaml").write_text("# @package _global_\nnorm:\n  kind: ln\n")
    (mine / "mine.yaml").write_text("# @package _global_\nhydra:\n  mode: MULTIRUN\n  sweeper:\n"
                                    "    params:\n      +arm: glob(*)\n")
    monkeypatch.setenv("NORMBENCH_SWEEPS", str(mine))
    code, _, err = cli("+sweep=mine", *tiny_args, "hydra.sweep.dir=sw", "report=false")
    assert code == 0, err
    kinds = sorted(json.loads(p.read_text())["config"]["norm"]["kind"] for p in (tmp_path / "sw").rglob("summary.json"))
    assert kinds == ["ln", "rms"]


def test_a_missing_user_sweep_folder_is_one_line(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("NORMBENCH_SWEEPS", str(tmp_path / "nope"))
    code, _, err = cli("+sweep=smoke")
    assert code == 2
    assert err.strip() == f"normbench: error: NORMBENCH_SWEEPS: {tmp_path / 'nope'} is not a folder (it names " \
                          "folders of sweep files, separated by ':')"


def test_a_sweep_file_may_name_a_cell_kernel_by_its_earlier_name(cli, tmp_path, monkeypatch, tiny_args):
    """cpp is compiled's name before issue 47's rename: a sweep of cpp,compiled,python runs two settings, not
    three (cpp and compiled are one run, one hash), and its records say compiled."""
    mine = tmp_path / "my_sweeps"
    mine.mkdir()
    (mine / "kernels.yaml").write_text("# @package _global_\nplacement:\n  name: in_cell\nhydra:\n  mode: MULTIRUN\n"
                                       "  sweeper:\n    params:\n      model.cell_kernel: cpp,compiled,python\n")
    monkeypatch.setenv("NORMBENCH_SWEEPS", str(mine))
    code, _, err = cli("+sweep=kernels", *tiny_args, "norm=ln", "hydra.sweep.dir=sw", "report=false")
    assert code == 0, err
    records = [json.loads(p.read_text()) for p in (tmp_path / "sw").rglob("summary.json")]
    assert sorted(r["config"]["model"]["cell_kernel"] for r in records) == ["compiled", "python"]
    assert len({r["config_hash"] for r in records}) == 2
