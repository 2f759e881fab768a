"""``${oc.env:...}`` in a setting that names a file, folder, experiment or project (issue 50): one table
(normbench/configuration/env_names.py) says, per key, refused or passed on; this test iterates it, so a
new key cannot be missed."""

from __future__ import annotations

import typing
from dataclasses import fields
from pathlib import Path

import pytest

from normbench.configuration.env_names import CONTROL, IN_RUN_FOLDER, NAME_KEYS, NOT_NAMES, PASSED_ON, REFUSED
from normbench.configuration.schema import LOGGER_KINDS
from tests.conftest import TINY, TINY_TASK

SECRET = "s3cr3t-value-from-env"
REFUSED_KEYS = sorted(k for k, (policy, _) in NAME_KEYS.items() if policy == REFUSED)


def overrides_for(key: str) -> list[str]:
    value = "${oc.env:NB_TEST_NAME_SECRET}"
    typed = [f"{key}=[{value}]" if key == "tags" else f"{key}={value}"]
    if key.startswith("logger."):
        typed.insert(0, f"logger={key.split('.')[1]}")
    if key.startswith("hydra.sweep."):
        return ["-m", "seed=0", "hydra.sweep.dir=sweep", "report=false", *typed]
    return [*typed, "hydra.run.dir=run"]


@pytest.mark.parametrize("key", REFUSED_KEYS)
def test_a_refused_name_key_reading_the_environment_is_one_line(key, cli, tmp_path, monkeypatch):
    monkeypatch.setenv("NB_TEST_NAME_SECRET", SECRET)
    typed = overrides_for(key)
    flags = [t for t in typed if t.startswith("-")]
    code, out, err = cli(*flags, *TINY, *TINY_TASK, *[t for t in typed if not t.startswith("-")])
    assert code == 2 and f"{key} reads the environment" in err and len(err.strip().splitlines()) == 1, err
    assert SECRET not in out + err
    assert not [p for p in tmp_path.rglob("*") if SECRET in p.name]  # no file or folder named with it
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(errors="replace"), path


def test_every_key_is_documented_with_its_policy():
    text = (Path(__file__).resolve().parents[1] / "docs" / "offline-and-safety.md").read_text()
    for key, (policy, _) in NAME_KEYS.items():
        assert f"`{key}`" in text, key
    assert all(policy in (REFUSED, PASSED_ON) for policy, _ in NAME_KEYS.values())


def test_every_string_setting_of_a_logger_is_in_the_table():
    """A logger's new string setting names something or is a fixed word: the table must say which."""
    for kind, settings in LOGGER_KINDS.items():
        hints = typing.get_type_hints(settings)
        for item in fields(settings):
            if hints[item.name] in (str, typing.Optional[str]):
                key = f"logger.{kind}.{item.name}"
                assert key in NAME_KEYS or key in NOT_NAMES, f"{key}: add it to env_names.NAME_KEYS or NOT_NAMES"
    for key in ("hydra.job.name", "hydra.run.dir", "hydra.sweep.dir", "hydra.sweep.subdir", "tags"):
        assert key in NAME_KEYS


def test_a_passed_on_folder_is_used(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("NB_TEST_SCRATCH", str(tmp_path / "scratch"))
    code, _, err = cli(*TINY, *TINY_TASK, "hydra.run.dir=${oc.env:NB_TEST_SCRATCH}/run")
    assert code == 0, err
    assert (tmp_path / "scratch" / "run" / "summary.json").is_file()


def test_a_short_environment_value_is_not_masked_into_every_line(monkeypatch):
    """A 1-character value (WORLD_SIZE=1) masked everywhere turned each "1" of a line into ***."""
    from normbench.training.tracking import MIN_SECRET, env_secrets, masked

    monkeypatch.setenv("NB_TEST_ONE", "1")
    monkeypatch.setenv("NB_TEST_LONG", SECRET)
    secrets = tuple(env_secrets(["x=${oc.env:NB_TEST_ONE}", "y=${oc.env:NB_TEST_LONG}"]))
    assert secrets == (SECRET,) and MIN_SECRET <= 4
    assert masked(f"step 10 of 100, token {SECRET}", secrets) == "step 10 of 100, token ***"


@pytest.mark.parametrize("typed", ["logger.mlflow.experiment=${hydra:run.dir}",
                                   "logger.csv.file=${hydra.run.dir}.csv"])
def test_a_refused_name_key_cannot_take_a_passed_on_value(typed, cli, tmp_path, monkeypatch):
    """``${hydra:run.dir}`` may carry an environment value (hydra.run.dir=${oc.env:SCRATCH}) into a name."""
    monkeypatch.setenv("NB_TEST_NAME_SECRET", SECRET)
    key = typed.partition("=")[0]
    code, out, err = cli(*TINY, *TINY_TASK, f"logger={key.split('.')[1]}", typed,
                         "hydra.run.dir=${oc.env:NB_TEST_NAME_SECRET}")
    assert code == 2 and f"{key} takes hydra.run.dir's value" in err and len(err.strip().splitlines()) == 1, err
    assert SECRET not in out + err  # the run folder is named by it, as hydra.run.dir's row allows; nothing else
    assert not [p for p in tmp_path.rglob("*") if "mlruns" in p.name or p.suffix in (".csv", ".db")]


@pytest.mark.parametrize("typed", ["hydra.job.name=a\tb", "hydra.job.name='x\x1by'", "logger.mlflow.experiment='a\nb'",
                                   "logger.csv.file=a\tb.csv", "tags=[ok,'bad\x07']"])
def test_a_control_character_in_a_name_is_one_line(typed, cli, tmp_path):
    key = typed.partition("=")[0]
    extra = [f"logger={key.split('.')[1]}"] if key.startswith("logger.") else []
    code, out, err = cli(*TINY, *TINY_TASK, *extra, typed, "hydra.run.dir=run")
    assert code == 2 and "control character" in err and len(err.strip().splitlines()) == 1, err
    assert "\x1b" not in err and not [p for p in tmp_path.rglob("*") if CONTROL.search(p.name)]


@pytest.mark.parametrize("key", sorted(IN_RUN_FOLDER))
def test_a_name_in_the_run_folder_too_long_for_the_filesystem_is_one_line(key, cli, tmp_path):
    """Hostile h16 N12 (B08, X17): a 252-byte hydra.job.name ran, rc 0, without its log file; N14 (B09): a 300-byte
    logger.csv.file failed the run, rc 1, with a traceback.txt. Each is refused before the run writes anything."""
    extra = [f"logger={key.split('.')[1]}"] if key.startswith("logger.") else []
    value = "n" * (252 if key == "hydra.job.name" else 256)  # the log's name is 252 + ".log": 256 bytes
    code, out, err = cli(*TINY, *TINY_TASK, *extra, f"{key}={value}", "hydra.run.dir=run")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"normbench: error: {key}='nnn") and "longer than the filesystem allows (255 bytes)" in err, err
    assert not [p for p in (tmp_path / "run").rglob("*")]


def test_every_name_in_the_run_folder_is_a_name_bearing_key():
    assert set(IN_RUN_FOLDER) <= set(NAME_KEYS)


@pytest.mark.parametrize("flags", [["--cfg", "job", "--resolve"], ["--cfg", "job"], ["--cfg", "all", "--resolve"]])
def test_hydras_config_print_masks_a_tracking_password(cli, monkeypatch, flags):
    """H51: ``--cfg job --resolve`` printed the password read through ${oc.env:...} as it is."""
    monkeypatch.setenv("NB_PASSWORD", "hunter2pw")
    code, out, _ = cli(*flags, "logger=mlflow", "logger.mlflow.tracking_uri=http://u:${oc.env:NB_PASSWORD}@10.0.0.1:5000")
    assert code == 0 and "tracking_uri:" in out and "hunter2pw" not in out, out
