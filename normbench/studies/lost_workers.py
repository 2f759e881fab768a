"""A joblib worker killed mid-sweep (an OOM killer, ``kill -9``): one failed run, not a stopped sweep; and a
worker's refused job told to the launcher (``told``).

loky answers a worker's death by breaking its executor: every job still queued or running raises
TerminatedWorkerError in the launcher, Hydra's joblib launcher (hydra_joblib_launcher/_core.py)
lets it end the sweep, and the killed job's record stays ``running`` (hostile h15 B3). Here the
launcher's ``launch`` is wrapped: on a broken executor every record of the sweep still saying
``running`` is marked ``failed`` ("its worker process was killed (SIGKILL)"), the jobs that had not
started are launched once more with the same launcher, and the sweep ends as usual: its report,
and main's one line naming the failed runs with exit status 1.
"""

from __future__ import annotations

import logging
import math
import re
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import TimeoutError as JobTimeout  # what joblib raises past its timeout
from pathlib import Path

from normbench.records.record import RUNNING, SetAside, read_summary, running_now, write_record
from normbench.studies import loky_tracker

log = logging.getLogger("normbench")
LOST: dict = {}  # in the launcher, once a worker was lost: "reason" and "unrun" (jobs never run), for main's line


def _broken_pool_errors() -> tuple[type[BaseException], ...]:
    errors: list[type[BaseException]] = [BrokenProcessPool]
    try:
        from joblib.externals.loky.process_executor import BrokenProcessPool as LokyBroken
        from joblib.externals.loky.process_executor import TerminatedWorkerError

        errors += [TerminatedWorkerError, LokyBroken]
    except ImportError:  # no joblib: no worker to lose
        pass
    return tuple(errors)


def killed_reason(error: BaseException) -> str:
    """The failure reason of a run whose worker died: loky's message names the exit codes ({SIGKILL(-9)})."""
    codes = re.search(r"exit codes of the workers are \{([^}]*)\}", str(error))
    signals = re.findall(r"(SIG[A-Z0-9]+)", codes.group(1)) if codes else []
    return f"its worker process was killed ({', '.join(dict.fromkeys(signals)) or 'signal unknown'})"


def mark_running_failed(folders: list[Path], reason: str, status: str = "failed") -> list[Path]:
    """Each record in ``folders`` still saying running, marked ``status`` (failed) with ``reason``; the folders marked."""
    marked = []
    for folder in folders:
        found = read_summary(folder / "summary.json")
        if isinstance(found, SetAside) or found.status != RUNNING:
            continue
        found.summary["status"], found.summary["reason"] = status, reason
        try:
            write_record(found)
        except OSError as err:  # the sweep's end names it as it finds it
            log.warning("record of %s not marked %s: %s", folder, status, err)
            continue
        marked.append(folder)
    return marked


def mark_stopped_round(sweep: Path, how: str) -> list[Path]:
    """After a runner stopped its round (``how``: "by SIGTERM", "at the budget's end") and waited for the round's
    processes: each record of the round still saying running that no live process holds (records.record.running_now)
    marked ``interrupted``. A worker ended before it wrote its end (one blocked in a kernel build, killed after the
    wait) left its record running, in a study that said the round was stopped (hostile h25 a020)."""
    left = [p.parent for p in sweep.glob("*/summary.json") if not running_now(p.parent)]
    return mark_running_failed(left, f"interrupted (the round was stopped {how} before this run wrote its end)",
                               status="interrupted")


def _job_dir(launcher, overrides, num: int) -> Path:
    """The folder Hydra gives job ``num`` (its sweep dir and subdir, as _core.execute_job composes them)."""
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import open_dict

    try:
        config = launcher.hydra_context.config_loader.load_sweep_config(launcher.config, list(overrides))
    except Exception:  # noqa: BLE001 - a job whose config no longer composes: Hydra's default folder
        return Path(str(launcher.config.hydra.sweep.dir)) / str(num)
    with open_dict(config):
        config.hydra.job.num = num
    before = HydraConfig.instance().cfg
    HydraConfig.instance().set_config(config)
    try:
        return Path(str(config.hydra.sweep.dir)) / str(config.hydra.sweep.subdir)
    finally:
        if before is not None:
            HydraConfig.instance().set_config(before)


def _returned(launcher, overrides, num: int, folder: Path):
    """A JobReturn for a job whose worker was lost: scores +inf (app.objective of a failed run)."""
    from hydra.core.utils import JobReturn, JobStatus

    ret = JobReturn(overrides=list(overrides), working_dir=str(folder), task_name=str(launcher.config.hydra.job.name))
    ret.status, ret.return_value = JobStatus.COMPLETED, math.inf
    return ret


def _relaunch(launcher, job_overrides, nums: list[int], initial_job_idx: int) -> dict:
    """Jobs ``nums`` (indices into ``job_overrides``) launched again once with the launcher's joblib
    settings: their JobReturns by index; none where the executor broke again."""
    from hydra.core.singleton import Singleton
    from hydra_plugins.hydra_joblib_launcher import _core
    from joblib import Parallel, delayed

    try:
        runs = Parallel(**launcher.joblib)(
            delayed(_core.execute_job)(initial_job_idx + i, job_overrides[i], launcher.hydra_context, launcher.config,
                                       launcher.task_function, Singleton.get_state())
            for i in nums)
    except (*_broken_pool_errors(), JobTimeout):
        return {}
    return dict(zip(nums, runs))


def timeout_reason(launcher) -> str:
    """The failure reason of a run joblib stopped waiting for (hydra.launcher.timeout), killing its worker."""
    return (f"hydra.launcher.timeout={str(launcher.config.hydra.launcher.get('timeout'))[:40]} (seconds) ran out "
            f"and joblib killed the sweep's workers; raise it or set it to null")


def told(launcher, runs: list) -> list:
    """``runs`` (the jobs' JobReturns), each finished job's return value first handed to the launcher's task function
    (app.Job.take): a worker's Job is a copy, and a refusal kept only there would be lost (hostile h19 J2)."""
    from hydra.core.utils import JobStatus

    take = getattr(launcher.task_function, "take", None)
    for run in runs if take is not None else ():
        if run is not None and run.status == JobStatus.COMPLETED:
            take(run.return_value)
    return runs


def launch_keeping_sweep(original):
    """``original`` (hydra_joblib_launcher._core.launch) with a lost worker made one failed run, and a job past
    hydra.launcher.timeout too: joblib raised TimeoutError out of the sweep after killing every worker (hostile
    h16 N5). The jobs a timeout left unstarted are not launched again: the same timeout would stop them."""

    def launch(launcher, job_overrides, initial_job_idx):
        try:
            return told(launcher, original(launcher=launcher, job_overrides=job_overrides, initial_job_idx=initial_job_idx))
        except _broken_pool_errors() as error:
            reason, timed_out = killed_reason(error), False
        except JobTimeout:
            reason, timed_out = timeout_reason(launcher), True
        folders = [_job_dir(launcher, o, initial_job_idx + i) for i, o in enumerate(job_overrides)]
        mark_running_failed(folders, reason)
        unstarted = [i for i, f in enumerate(folders) if not (f / "summary.json").exists()]
        log.warning("%s; %d job(s) had not started%s",
                    "a job ran past hydra.launcher.timeout" if timed_out else "a worker process was killed",
                    len(unstarted), ": launching them again" if unstarted and not timed_out else "")
        again = _relaunch(launcher, job_overrides, unstarted, initial_job_idx) if unstarted and not timed_out else {}
        if unstarted and not again:  # the executor broke again: whatever it left running failed too
            mark_running_failed(folders, reason)
        lost = [i for i in unstarted if i not in again and not (folders[i] / "summary.json").exists()]
        LOST.update(reason=reason, unrun=[initial_job_idx + i for i in lost])
        if lost:
            log.warning("job(s) %s not run: %s", ", ".join(f"#{initial_job_idx + i}" for i in lost),
                        "the sweep's workers were killed at the timeout" if timed_out else "their workers were killed")
        return told(launcher, [again.get(i) or _returned(launcher, o, initial_job_idx + i, folders[i])
                               for i, o in enumerate(job_overrides)])

    launch.keeps_sweep = True
    return launch


def install() -> None:
    """Wraps the joblib launcher's launch (once); nothing when the plugin is not installed."""
    try:
        from hydra_plugins.hydra_joblib_launcher import _core
    except ImportError:
        return
    if not getattr(_core.launch, "keeps_sweep", False):
        _core.launch = launch_keeping_sweep(_core.launch)
    loky_tracker.install()
