"""Workers stop when the process that launched them is killed with SIGKILL (normbench.studies.orphans)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from normbench.studies import orphans
from tests.waiting import HANG_S  # waits end on a hang, never on a slow machine

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc")


def running(pid: int) -> bool:
    """Alive and not a zombie (a container's pid 1 may never reap an orphan that exited)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def wait_until(condition, timeout_s: float, poll_s: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(poll_s)
    return condition()


def kill_all(pids) -> None:
    """Test cleanup: the test's own processes, by pid, if the code under test left them."""
    for pid in pids:
        if running(pid):
            os.kill(pid, signal.SIGKILL)


# A worker as the runner makes one: SIGTERM becomes KeyboardInterrupt, which writes the record.
WORKER = textwrap.dedent("""
    import os, signal, sys, time
    from normbench.studies import orphans
    def interrupt(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, signal.SIG_IGN if sys.argv[2] == "ignore" else interrupt)
    orphans.stop_when_orphaned(poll_s=0.1, grace_s=1.0)
    open(sys.argv[1] + ".started", "w").close()
    try:
        while True:
            time.sleep(0.05)
    except KeyboardInterrupt:
        open(sys.argv[1] + ".interrupted", "w").close()
""")
LAUNCHER = textwrap.dedent("""
    import subprocess, sys, time
    from normbench.studies import orphans
    orphans.mark_launcher()
    worker = subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2], sys.argv[3]])
    print(worker.pid, flush=True)
    time.sleep(600)
""")


@pytest.mark.parametrize("on_sigterm", ["interrupt", "ignore"])
def test_worker_stops_when_its_launcher_is_killed(tmp_path, on_sigterm):
    marker = tmp_path / "worker"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    launcher = subprocess.Popen([sys.executable, "-c", LAUNCHER, WORKER, str(marker), on_sigterm],
                                stdout=subprocess.PIPE, text=True, env=env)
    worker = int(launcher.stdout.readline())
    try:
        assert wait_until(lambda: Path(f"{marker}.started").exists(), HANG_S)
        time.sleep(0.3)
        assert running(worker)  # a live launcher keeps its worker running
        launcher.kill()
        launcher.wait()
        # SIGTERM at once; a worker that ignores it is ended after grace_s (1 s here).
        assert wait_until(lambda: not running(worker), HANG_S), "worker outlived its launcher"
        assert Path(f"{marker}.interrupted").exists() == (on_sigterm == "interrupt")
    finally:
        kill_all([worker, launcher.pid])


def test_no_watchdog_in_the_launcher_itself_or_without_a_mark(monkeypatch):
    monkeypatch.delenv(orphans.LAUNCHER_PID_ENV, raising=False)
    assert not orphans.stop_when_orphaned()
    assert not orphans.stop_when_orphaned(launcher_pid=os.getpid())
    monkeypatch.setenv(orphans.LAUNCHER_PID_ENV, str(os.getpid()))
    assert not orphans.stop_when_orphaned()


@pytest.mark.slow
def test_joblib_sweep_workers_stop_when_the_sweep_is_killed(tmp_path, tiny_args):
    """A real `-m hydra/launcher=local` sweep, long jobs, kill -9 of its process: no worker survives."""
    sweep = tmp_path / "sweep"
    command = [sys.executable, "-m", "normbench", "-m", "hydra/launcher=local", "hydra.launcher.n_jobs=2",
               *tiny_args, "steps=1000000", "eval_every=1000000", "probe_every=1000000", "seed=0,1",
               f"hydra.sweep.dir={sweep}"]  # conf/config.yaml registers normbench.studies.orphans.StopWhenOrphaned
    parent = subprocess.Popen(command, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers: list[int] = []
    try:
        def both_training() -> bool:  # past setup: a train line written by each job
            logs = list(sweep.rglob("metrics.jsonl"))
            return len(logs) == 2 and all(p.stat().st_size > 0 for p in logs)

        assert wait_until(both_training, HANG_S, poll_s=0.5), "the sweep never had two jobs running"
        workers = [pid for pid in children(parent.pid) if running(pid)]  # loky's workers and trackers
        assert len(workers) >= 2
        parent.kill()
        parent.wait()
        assert wait_until(lambda: not any(running(pid) for pid in workers), HANG_S), "workers outlived the sweep"
        statuses = {json.loads(p.read_text())["status"] for p in sweep.rglob("summary.json")}
        assert statuses == {"interrupted"}  # each record says what happened, none is left "running"
    finally:
        kill_all([*workers, parent.pid])


def test_a_stale_mark_in_a_plain_run_starts_no_watchdog(monkeypatch):
    """Hostile h16 N15: NORMBENCH_LAUNCHER_PID naming a dead pid (leaked into a shell) made a plain run take itself
    for an orphan and stop itself with SIGTERM a second in. Only a multirun's job, whose launcher has just set
    the mark, starts the watchdog."""
    from hydra.types import RunMode
    from omegaconf import OmegaConf

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    watched = []
    monkeypatch.setattr(orphans, "stop_when_orphaned", lambda *args, **kwargs: watched.append(args) or True)
    monkeypatch.setenv(orphans.LAUNCHER_PID_ENV, str(dead.pid))
    orphans.StopWhenOrphaned().on_job_start(OmegaConf.create({"hydra": {"mode": RunMode.RUN}}))
    assert watched == []
    orphans.StopWhenOrphaned().on_job_start(OmegaConf.create({"hydra": {"mode": RunMode.MULTIRUN}}))
    assert watched == [()]


def test_an_orphan_has_time_to_write_its_record_after_a_stop_put_off_by_an_import():
    # a run defers SIGTERM while it imports (run.IMPORT_WAIT_MAX_S); ended outright before that, a job still in
    # its set-up kept its record `running` (seen with a submitit_local launcher killed, h27a)
    from normbench.training import run

    assert orphans.GRACE_S >= run.IMPORT_WAIT_MAX_S + 3.0
