"""A sweep's worker processes stop when the process that launched them dies.

joblib's loky workers are separate processes. When the sweep's own process is killed with
SIGKILL (an OOM killer, `kill -9`, a cluster's hard limit) nothing tells them: a worker in the
middle of a long job trains on and keeps writing records into a sweep nobody is running any more.

So each job, when it runs in a process other than the launcher's, starts a watchdog thread. It
polls the parent pid: once the worker has been re-parented (its parent died) or the launcher's pid
is gone, it sends the process SIGTERM, which the runner turns into an `interrupted` record
(run.sigterm_as_interrupt); if the process still lives `grace_s` later, it ends it outright.

Polling is used rather than Linux's PR_SET_PDEATHSIG: that signal fires when the *thread* that
forked the worker exits, which in loky is not the launcher's death, and it does not exist on macOS.

Two ways to use it, both need the launcher's pid in LAUNCHER_PID_ENV before workers start:
- the Hydra callback `StopWhenOrphaned` (on_multirun_start marks the launcher, on_job_start
  starts the watchdog), registered under hydra.callbacks;
- or `mark_launcher()` in the launching process and `stop_when_orphaned()` at the start of a job.
"""

from __future__ import annotations

import os
import signal
import threading
import time

from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import OmegaConf

LAUNCHER_PID_ENV = "NORMBENCH_LAUNCHER_PID"
POLL_S = 0.5
# An orphan gets this long to write its `interrupted` record after SIGTERM before it is ended outright. A run
# puts a stop off while it imports, for up to training/run.IMPORT_WAIT_MAX_S (10 s): a grace shorter than that
# killed a job still in its set-up with its record `running` (a submitit_local launcher killed, h27a); a test
# holds this above that wait with room to write the record.
GRACE_S = 15.0

_started: set[int] = set()  # launcher pids this process already watches (loky reuses a worker for many jobs)
_lock = threading.Lock()


def mark_launcher() -> None:
    """Records this process as the launcher; workers it starts from now on inherit the mark."""
    os.environ[LAUNCHER_PID_ENV] = str(os.getpid())


def stop_when_orphaned(launcher_pid: int | None = None, poll_s: float = POLL_S, grace_s: float = GRACE_S) -> bool:
    """Starts the watchdog in this process unless it is the launcher itself; True when one runs.

    `launcher_pid` defaults to the one mark_launcher recorded. Without either there is no way to
    tell a worker from a plain run, so nothing is started.
    """
    if launcher_pid is None:
        marked = os.environ.get(LAUNCHER_PID_ENV, "")
        if not marked.isdigit():
            return False
        launcher_pid = int(marked)
    if launcher_pid == os.getpid():  # the job runs in the launcher (sequential sweep, single run)
        return False
    with _lock:
        if launcher_pid in _started:
            return True
        _started.add(launcher_pid)
    # If the launcher died before this job started, the first check in _watch sees it gone.
    threading.Thread(target=_watch, args=(launcher_pid, os.getppid(), poll_s, grace_s), daemon=True,
                     name="normbench-orphan-watchdog").start()
    return True


class StopWhenOrphaned(Callback):
    """Hydra callback: hydra.callbacks.orphans._target_=normbench.studies.orphans.StopWhenOrphaned."""

    def on_multirun_start(self, config, **kwargs) -> None:
        mark_launcher()

    def on_job_start(self, config, **kwargs) -> None:
        # only a multirun's job: on_multirun_start has just set the mark. A plain run that inherited one (a leaked
        # or stale variable naming a dead pid) took itself for an orphan and stopped after a second (hostile h16 N15)
        if OmegaConf.select(config, "hydra.mode", default=None) == RunMode.MULTIRUN:
            stop_when_orphaned()


def _watch(launcher_pid: int, parent: int, poll_s: float, grace_s: float) -> None:
    while os.getppid() == parent and _alive(launcher_pid):
        time.sleep(poll_s)
    _stop(grace_s)


def _stop(grace_s: float) -> None:
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(grace_s)  # time for the runner to write its record; a worker idle in loky is gone already
    os._exit(128 + signal.SIGTERM)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True
