"""How many workers a local launcher starts: at most the sweep's jobs and this machine's cores.

A worker count is how to run, not what: ``hydra.launcher.n_jobs: 100000`` in a sweep file of one job
would have joblib start workers without end. Before the sweeper makes its launcher (Hydra calls
``on_multirun_start`` first), a local launcher's count is cut to ``min(n_jobs, jobs, cores)``, with one
line saying so. Cluster launchers (Slurm through submitit) keep their own limits (``array_parallelism``):
their jobs run on other machines.
"""

from __future__ import annotations

import logging

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from normbench.checks import cores
from normbench.configuration.hydra_files import Refused
from normbench.studies import job_folders, lost_workers

log = logging.getLogger("normbench")

# launcher (a word of its _target_) -> the setting that counts its workers on this machine
LOCAL_LAUNCHERS = {"JoblibLauncher": "n_jobs"}


def sweep_size(config: DictConfig) -> int | None:
    """The jobs of a sweep Hydra's basic sweeper runs (the command line's and the sweep file's
    parameters); None for another sweeper, which chooses its jobs as it goes (Optuna's trials)."""
    from normbench.configuration.config import sweep_jobs

    sweeper = config.hydra.sweeper
    if "BasicSweeper" not in str(sweeper.get("_target_", "")):
        return None
    params = sweeper.get("params")
    params = OmegaConf.to_container(params, resolve=False) if OmegaConf.is_config(params) else {}
    try:
        return sweep_jobs([*[str(o) for o in config.hydra.overrides.task], *[f"{k}={v}" for k, v in params.items()]])
    except Exception:  # noqa: BLE001 - what Hydra cannot parse it reports itself
        return None


def bounded(workers: int, jobs: int | None, here: int) -> int:
    """A positive worker count cut to the jobs and the cores; joblib's negative counts (-1: every
    core) already mean at most the cores."""
    if workers <= 0:
        return workers
    return max(1, min(workers, here, jobs if jobs else workers))


def timeout_problem(timeout) -> str | None:
    """Why ``timeout`` (hydra.launcher.timeout) cannot be joblib's limit on each job, or None: null is no limit."""
    if timeout is None or (isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout > 0):
        return None
    return f"hydra.launcher.timeout must be a number of seconds > 0 (or null: no limit), got {str(timeout)[:40]}"


class BoundWorkers(Callback):
    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        job_folders.install()  # a job folder outside the sweep: refused before Hydra makes it (hostile h19 J1)
        lost_workers.LOST.clear()  # a sweep before it in this process (a test, a notebook) lost its own jobs
        launcher = config.hydra.launcher
        key = next((k for word, k in LOCAL_LAUNCHERS.items() if word in str(launcher.get("_target_", ""))), None)
        if key is None:
            return
        lost_workers.install()  # a worker killed mid-sweep: one failed run, the sweep goes on (hostile h15 B3)
        refused = timeout_problem(launcher.get("timeout"))
        if refused:  # joblib times out every job at once: the sweep would run nothing (hostile h16 N5)
            raise Refused(refused)
        if not isinstance(launcher.get(key), int):
            return
        asked = launcher[key]  # 0 and other values joblib refuses: refused before this (launcher_settings)
        jobs = sweep_size(config)
        allowed = bounded(asked, jobs, cores())
        if allowed != asked:
            with read_write(launcher), open_dict(launcher):
                launcher[key] = allowed
            log.info("hydra.launcher.%s=%d: %d worker(s) (%s%d cores here)", key, asked, allowed,
                     f"{jobs} job(s), " if jobs else "", cores())
