"""``${oc.env:...}`` in a setting that names a file, folder, experiment or project (issue 50): one table
(normbench/configuration/env_names.py) says, per key, refused or passed on; this test iterates it, so a
new key cannot be missed."""

from __future__ import annotations

import typing
from dataclasses import fields
from pathlib import Path

import pytest

from normbench.configuration.env_names import NAME_KEYS, NOT_NAMES, PASSED_ON, REFUSED
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
