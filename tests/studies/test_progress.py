"""Progress on long work: "job k of N" with elapsed and time left for sweeps (normbench/studies/progress.py)."""

import io
import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from omegaconf import open_dict

from normbench.configuration.config import config_dir
from normbench.studies.progress import PROGRESS_ENV_VAR, SweepProgress, duration, job_count, job_line
from tests.waiting import HANG_S  # waits end on a hang, never on a slow machine

ROOT = Path(__file__).resolve().parents[2]
BASIC = {"_target_": "hydra._internal.core_plugins.basic_sweeper.BasicSweeper", "max_batch_size": None}


def test_the_job_count_is_the_sweeps_product_or_its_trial_budget_or_unknown():
    assert job_count(["norm=ln,bn", "seed=range(3)", "steps=5"], {**BASIC, "params": {"lr": "0.1,0.2"}}) == 12
    assert job_count(["seed=7"], {**BASIC, "params": {"seed": "0,1,2", "norm": "ln,bn"}}) == 2  # the command line wins
    assert job_count([], {"_target_": "hydra_plugins.hydra_optuna_sweeper.optuna_sweeper.OptunaSweeper",
                          "n_trials": 20}) == 20
    assert job_count(["norm=glob(*)"], BASIC) is None  # needs the config loader: no count, no wrong count


def test_each_job_line_says_k_of_n_elapsed_and_time_left():
    assert duration(42.4) == "42s" and duration(185) == "3m05s" and duration(3720) == "1h02m"
    assert job_line(0, 8, 0.0) == "normbench sweep: job 1 of 8 (#0), 0s elapsed"  # nothing ended: no estimate
    assert job_line(4, 8, 40.0) == "normbench sweep: job 5 of 8 (#4), 40s elapsed, about 40s left"
    # two side by side: when job 5 starts, about 3 have ended
    assert job_line(4, 8, 40.0, parallel=2) == "normbench sweep: job 5 of 8 (#4), 40s elapsed, about 1m07s left"
    assert job_line(2, None, 5.0) == "normbench sweep: job 3 (#2), 5s elapsed"


class Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize("launcher,parallel", [([], 1), (["hydra/launcher=local", "hydra.launcher.n_jobs=3"], 3)])
def test_the_callback_counts_at_the_start_and_speaks_only_to_a_terminal(monkeypatch, launcher, parallel):
    monkeypatch.delenv(PROGRESS_ENV_VAR, raising=False)
    with initialize_config_dir(str(config_dir()), version_base="1.3"):
        config = hydra_compose("config", overrides=launcher, return_hydra_config=True)
    with open_dict(config):
        config.hydra.overrides.task = ["norm=ln,bn,rms", "seed=0,1"]
        config.hydra.job.num = 1
    terminal, log = Terminal(), io.StringIO()
    for stream in (terminal, log):
        callback = SweepProgress(stream=stream)
        callback.on_multirun_start(config)
        assert json.loads(os.environ[PROGRESS_ENV_VAR])["jobs"] == 6
        assert json.loads(os.environ[PROGRESS_ENV_VAR])["parallel"] == parallel
        callback.on_job_start(config)
        callback.on_multirun_end(config)
        assert PROGRESS_ENV_VAR not in os.environ
    assert terminal.getvalue().startswith("normbench sweep: job 2 of 6 (#1), 0s elapsed")
    assert log.getvalue() == ""  # a log file, a pipe: quiet
    with open_dict(config):
        config.progress = False
    callback = SweepProgress(stream=(quiet := Terminal()))
    callback.on_multirun_start(config)
    callback.on_job_start(config)
    callback.on_multirun_end(config)
    assert quiet.getvalue() == ""


@pytest.mark.parametrize("overrides,batch,said", [
    (["seed=range(0,5000)"], None, "normbench sweep: 5000 jobs; composing the configs of 5000 before the first starts "
                                   "(hydra.sweeper.max_batch_size=N starts the first jobs after N)\n"),
    (["seed=range(0,5000)"], 200, "normbench sweep: 5000 jobs; composing the configs of 200 before the first starts\n"),
    (["seed=range(0,5000)"], 20, ""),
    (["norm=ln,bn,rms", "seed=0,1"], None, ""),
])
def test_a_sweep_of_thousands_of_jobs_says_first_that_it_composes_them(monkeypatch, overrides, batch, said):
    """Hostile h16 N13: `-m seed=range(0,5000)` showed nothing for 90 s and started no job: Hydra's basic sweeper
    composes every job's config before the first starts. Said once, in a log too, before that silence."""
    monkeypatch.delenv(PROGRESS_ENV_VAR, raising=False)
    with initialize_config_dir(str(config_dir()), version_base="1.3"):
        config = hydra_compose("config", return_hydra_config=True)
    with open_dict(config):
        config.hydra.overrides.task = overrides
        config.hydra.sweeper.max_batch_size = batch
    callback = SweepProgress(stream=(log := io.StringIO()))
    callback.on_multirun_start(config)
    callback.on_multirun_end(config)
    assert log.getvalue() == said


@pytest.mark.slow
@pytest.mark.parametrize("launcher", [[], ["hydra/launcher=local", "hydra.launcher.n_jobs=2"]])
def test_a_real_sweep_on_a_terminal_says_job_k_of_n(tmp_path, tiny_args, launcher):
    """The line from the job itself, in this process (basic launcher) or a joblib worker."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "normbench", "-m", *tiny_args, "steps=2", "seed=0,1,2", *launcher,
                             "report=false", "hydra.sweep.dir=sweep"], cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=follower, env={**os.environ, "PYTHONPATH": str(ROOT)})
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the other end closed: the sweep has ended
            break
        if not chunk:
            break
        seen += chunk
    assert proc.wait(timeout=HANG_S) == 0, seen.decode(errors="replace")[-2000:]
    text = seen.decode(errors="replace")
    for k in (1, 2, 3):
        assert f"normbench sweep: job {k} of 3 (#{k - 1})" in text, text[-2000:]
    assert "left" in text  # an estimate once a job has ended


def test_a_sweep_value_that_cannot_be_evaluated_is_left_to_the_sweepers_one_line(monkeypatch):
    """Hostile h19 T06: an unset ${oc.env:...} in a sweep raised out of the callback, and Hydra said it in a
    two-line warning before normbench's own line; the sweeper fails on the same value next."""
    monkeypatch.delenv(PROGRESS_ENV_VAR, raising=False)
    monkeypatch.delenv("NB_UNSET_H20B", raising=False)
    with initialize_config_dir(str(config_dir()), version_base="1.3"):
        config = hydra_compose("config", return_hydra_config=True)
    with open_dict(config):
        config.hydra.overrides.task = ["norm=ln,rms", "lr=${oc.env:NB_UNSET_H20B}"]
    callback = SweepProgress(stream=(log := io.StringIO()))
    callback.on_multirun_start(config)
    callback.on_multirun_end(config)
    assert log.getvalue() == "" and PROGRESS_ENV_VAR not in os.environ
