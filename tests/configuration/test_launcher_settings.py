"""Every setting of the joblib launcher is honoured as written or refused before any job, in one line."""

import dataclasses

import pytest
from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from hydra_plugins.hydra_joblib_launcher.config import JobLibLauncherConf

from normbench.configuration.config import config_dir
from normbench.configuration.launcher_settings import JOBLIB_SETTINGS, joblib_setting_problem

# key: (values the launcher honours, values it would drop or joblib refuse only once jobs run)
VALUES = {
    "n_jobs": ([1, 4, -1], [0]),
    "backend": ([None, "loky"], ["nonsense", "threading", "multiprocessing", "sequential"]),
    "prefer": (["processes"], ["threads", "nonsense"]),  # not optional in Hydra's schema
    "require": ([None], ["sharedmem", "nonsense"]),
    "verbose": ([0, 10], [-1]),
    "timeout": ([None, 0.5, 3600], [0, -1.0]),
    "pre_dispatch": (["2*n_jobs", "all", "3", 1, "n_jobs + 1"], ["0", "-1", "n_jobs - 1", "__import__('os')", "x"]),
    "batch_size": (["auto", "1", 4], ["0", "-2", "lots"]),
    "temp_folder": ([None], ["/tmp/elsewhere"]),
    "max_nbytes": ([None], ["1M"]),
    "mmap_mode": (["r"], ["w+", "nonsense"]),
}


def launcher(*overrides, group="local"):
    with initialize_config_dir(str(config_dir()), version_base="1.3"):
        return hydra_compose("config", overrides=[f"hydra/launcher={group}", *overrides],
                             return_hydra_config=True).hydra.launcher


def test_the_table_holds_every_setting_of_hydras_joblib_launcher():
    assert set(JOBLIB_SETTINGS) == {f.name for f in dataclasses.fields(JobLibLauncherConf)} - {"_target_"} == set(VALUES)


@pytest.mark.parametrize("group", ["local", "joblib"])
def test_the_shipped_launcher_settings_pass(group):
    assert joblib_setting_problem(launcher(group=group)) is None


@pytest.mark.parametrize("key", sorted(VALUES))
def test_each_setting_passes_what_it_honours_and_refuses_the_rest_naming_the_key(key):
    base = launcher()
    good, bad = VALUES[key]
    for value in good:
        base[key] = value
        assert joblib_setting_problem(base) is None, (key, value)
    for value in bad:
        base[key] = value
        refused = joblib_setting_problem(base)
        assert refused is not None and refused.startswith(f"hydra.launcher.{key} must be "), (key, value, refused)
        assert refused.endswith(f"got {base[key]}") and "\n" not in refused  # as the schema typed it (0.0)


def test_a_key_the_launcher_does_not_have_is_refused():
    refused = joblib_setting_problem(launcher("+hydra.launcher.foo=1"))
    assert refused.startswith("hydra.launcher.foo is not a setting of the joblib launcher"), refused


def test_another_launchers_settings_are_not_the_tables(tmp_path):
    assert joblib_setting_problem(launcher(group="basic")) is None


@pytest.mark.parametrize("setting, says", [
    ("hydra.launcher.backend=nonsense", "hydra.launcher.backend must be null or loky (Hydra's joblib launcher always "
                                        "runs the jobs in loky worker processes), got nonsense"),
    ("hydra.launcher.prefer=threads", "hydra.launcher.prefer must be processes (the jobs run in loky"),
])
def test_a_setting_the_launcher_would_drop_is_one_line_and_exit_2_before_any_job(cli, tiny_args, tmp_path, setting,
                                                                                 says):
    # hostile h25 xe004: backend=nonsense ran both jobs on loky workers and exited 0
    code, out, err = cli("-m", *tiny_args, "seed=0,1", "hydra/launcher=local", setting, "hydra.sweep.dir=sw",
                         "report=false")
    assert code == 2 and err.count("\n") == 1 and err.startswith(f"normbench: error: {says}"), err
    assert not (tmp_path / "sw").exists()
