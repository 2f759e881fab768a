"""How many workers a local launcher starts: at most the sweep's jobs and this machine's cores.

A worker count is how to run, not what: ``hydra.launcher.n_jobs: 100000`` in a sweep file of one job
would have joblib start workers without end. Before the sweeper makes its launcher (Hydra calls
``on_multirun_start`` first), a local launcher's count is cut to ``min(n_jobs, jobs, cores)``, with one
line saying so (jobs: the most the sweeper hands the launcher at once, ``side_by_side``); a negative
count is first counted back from joblib's count of the cores, as joblib counts it. Cluster launchers
(Slurm through submitit) keep their own limits (``array_parallelism``): their jobs run on other machines.

A job composes its config again from the command line, so its ``hydra.launcher.n_jobs`` is the count as
typed; the count that runs reaches it in the environment (``SWEEP_WORKERS``), for its record's
``parallel_jobs`` and its share of the cores. loky keeps a sweep's workers for the next sweep in the
same process, and a worker keeps the environment it started with, so a later sweep there (a notebook,
a script, a test) would give its jobs the first sweep's study, workers and free cores: a sweep on a local
launcher ends the workers an earlier one left (``on_multirun_start``) and starts its own.
"""

from __future__ import annotations

import logging
import os

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from normbench.checks import cores
from normbench.configuration.hydra_files import Refused
from normbench.studies import job_folders, lost_workers

log = logging.getLogger("normbench")

# launcher (a word of its _target_) -> the setting that counts its workers on this machine
LOCAL_LAUNCHERS = {"JoblibLauncher": "n_jobs"}
SWEEP_WORKERS = "NORMBENCH_SWEEP_WORKERS"  # the local launcher's workers, as bounded, for the sweep's jobs


def side_by_side(config: DictConfig) -> int | None:
    """The most jobs the sweeper hands its launcher at once: a basic sweep's jobs, or its max_batch_size where
    smaller; an Optuna sweep's trials of one batch (its n_jobs); None where it cannot be told."""
    sweeper = config.hydra.sweeper
    if "BasicSweeper" in str(sweeper.get("_target_", "")):
        jobs, batch = sweep_size(config), sweeper.get("max_batch_size")
        return min(jobs, batch) if jobs and _count(batch) else jobs
    batch, trials = sweeper.get("n_jobs"), sweeper.get("n_trials")  # Optuna's: n_jobs trials at a time
    if not _count(batch):
        return None
    return min(batch, trials) if _count(trials) else batch


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


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


def joblib_count(n_jobs: int) -> int:
    """The workers joblib starts for ``n_jobs``: the count, or a negative one counted back from joblib's own
    count of the cores (-1 every core, -2 all but one: cpu_count + 1 + n_jobs, at least 1), which honours the
    affinity mask, a cgroup's CPU quota and LOKY_MAX_CPU_COUNT. joblib is imported only for a negative count."""
    if n_jobs > 0:
        return n_jobs
    import joblib

    return max(joblib.cpu_count() + 1 + n_jobs, 1)


def bounded(workers: int, jobs: int | None, here: int) -> int:
    """The workers a local launcher runs for ``n_jobs=workers``: joblib's count cut to the jobs and the cores."""
    workers = joblib_count(workers)
    return max(1, min(workers, here, jobs if jobs else workers))


def sweep_workers() -> int | None:
    """The workers of the local launcher running this job's sweep (``SWEEP_WORKERS``); None outside one."""
    text = os.environ.get(SWEEP_WORKERS, "")
    return int(text) if text.isdigit() and int(text) >= 1 else None


def timeout_problem(timeout) -> str | None:
    """Why ``timeout`` (hydra.launcher.timeout) cannot be joblib's limit on each job, or None: null is no limit."""
    if timeout is None or (isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout > 0):
        return None
    return f"hydra.launcher.timeout must be a number of seconds > 0 (or null: no limit), got {str(timeout)[:40]}"


class BoundWorkers(Callback):
    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        job_folders.install()  # a job folder outside the sweep: refused before Hydra makes it (hostile h19 J1)
        lost_workers.LOST.clear()  # a sweep before it in this process (a test, a notebook) lost its own jobs
        os.environ.pop(SWEEP_WORKERS, None)  # an earlier sweep's in this process, which a cluster launcher's would read
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
        jobs, here = side_by_side(config), cores()
        allowed = bounded(asked, jobs, here)
        if allowed != asked:
            with read_write(launcher), open_dict(launcher):
                launcher[key] = allowed
            log.info("hydra.launcher.%s=%d: %d worker(s) (%s%d cores here)", key, asked, allowed,
                     f"{jobs} job(s), " if jobs else "", here)
        os.environ[SWEEP_WORKERS] = str(allowed)
        try:  # last: Hydra turns a callback's exception into a warning, and the cut above must hold
            end_idle_workers()  # an earlier sweep's in this process, which kept its environment
        except Exception as error:  # noqa: BLE001 - a later loky's internals: its workers stay, as before
            log.warning("could not end the workers an earlier sweep in this process left: %s", error)

    def on_multirun_end(self, config: DictConfig, **kwargs) -> None:
        os.environ.pop(SWEEP_WORKERS, None)


def end_idle_workers() -> None:
    """Ends the loky workers an earlier joblib call in this process kept for the next one, so this sweep starts
    workers with its own environment (the module's docstring). They are idle (that sweep is over, its records
    written), so they are killed, not asked to exit: a worker's exit waits for its other threads and exit
    handlers (a logger's teardown), which could hold this sweep's start without limit. joblib's executor also
    deletes its temporary folder then (terminate). loky exposes its one reusable executor as a module global
    only; where a release has none, nothing ends."""
    from joblib.externals.loky import reusable_executor

    executor = getattr(reusable_executor, "_executor", None)
    if executor is not None:
        (getattr(executor, "terminate", None) or executor.shutdown)(kill_workers=True)
