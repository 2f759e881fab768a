"""A joblib worker killed mid-sweep is one failed run: the sweep goes on, its report is written, one line
and exit status 1, and no record is left saying running (hostile h15 B3)."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from normbench.studies.lost_workers import killed_reason
from tests.conftest import TINY, TINY_TASK
from tests.waiting import HANG_S

REPO = Path(__file__).resolve().parents[2]

# The process running job 1, once its record exists, kills itself with SIGKILL at its next write in that
# folder: an OOM killer in the middle of a run. (Other jobs only read there.)
KILLER = textwrap.dedent("""
    import os, signal, sys
    target = os.environ.get("NB_TEST_KILL_DIR")
    if target:
        def hook(event, args):
            if event != "open" or not isinstance(args[0], str) or not args[0].startswith(target + os.sep):
                return
            writes = (args[1] or "r") != "r" or (args[2] or 0) & (os.O_WRONLY | os.O_RDWR)
            if writes and os.environ.get("NORMBENCH_LAUNCHER_PID") not in (None, str(os.getpid())) \\
                    and os.path.exists(os.path.join(target, "summary.json")):
                os.kill(os.getpid(), signal.SIGKILL)
        sys.addaudithook(hook)
""")


def sweep_with_hook(tmp_path, hook: str, *overrides: str) -> tuple[subprocess.CompletedProcess, Path]:
    """A tiny sweep of three norms on the local (joblib) launcher whose processes load ``hook`` (a sitecustomize) aimed at
    job 1's folder; (the finished command, the sweep folder)."""
    (tmp_path / "hook").mkdir()
    (tmp_path / "hook" / "sitecustomize.py").write_text(hook)
    sweep = tmp_path / "s"
    env = {**os.environ, "PYTHONPATH": f"{tmp_path / 'hook'}{os.pathsep}{REPO}", "NB_TEST_KILL_DIR": str(sweep / "1"),
           "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "normbench", "-m", *TINY, *TINY_TASK, "norm=ln,rms,scale", *overrides,
         "hydra/launcher=local", "hydra.launcher.n_jobs=2", f"hydra.sweep.dir={sweep}"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=HANG_S)
    return done, sweep


def test_killed_reason_names_the_signal():
    error = RuntimeError("... The exit codes of the workers are {SIGKILL(-9)}")
    assert killed_reason(error) == "its worker process was killed (SIGKILL)"


def test_a_killed_worker_fails_its_run_and_the_sweep_goes_on(tmp_path):
    done, sweep = sweep_with_hook(tmp_path, KILLER)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    ours = [line for line in done.stderr.splitlines() if line.startswith("normbench:")]
    assert len(ours) == 1 and "run(s) failed" in ours[0] and "s/1" in ours[0], done.stderr
    assert "(its worker process was killed (SIGKILL); the same command with resume=true" in ours[0], ours[0]
    statuses = {p.parent.name: json.loads(p.read_text()) for p in sweep.glob("*/summary.json")}
    assert "running" not in {s["status"] for s in statuses.values()}
    assert statuses["1"]["status"] == "failed" and "worker process was killed (SIGKILL)" in statuses["1"]["reason"]
    assert statuses.get("2", {}).get("status") == "ok", done.stderr  # the job queued behind the killed one ran
    assert (sweep / "report.md").exists() or any(sweep.glob("report*"))


# The process running job 1, once its record exists, kills this sweep's resource trackers (once): those whose
# environment holds NB_TEST_KILL_DIR (the suite's two workers run other sweeps beside it), and says so in killed.
TRACKER_KILLER = textwrap.dedent("""
    import os, signal, sys
    target = os.environ.get("NB_TEST_KILL_DIR")
    if target:
        done = []
        def hook(event, args):
            if done or event != "open" or not isinstance(args[0], str) or not args[0].startswith(target + os.sep):
                return
            if os.environ.get("NORMBENCH_LAUNCHER_PID") in (None, str(os.getpid())):
                return
            if not os.path.exists(os.path.join(target, "summary.json")):
                return
            done.append(1)
            ours = f"NB_TEST_KILL_DIR={target}".encode()
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        command = f.read()
                    with open(f"/proc/{pid}/environ", "rb") as f:
                        environment = f.read().split(b"\\0")
                except OSError:
                    continue
                if b"tracker import main" in command and ours in environment:
                    os.kill(int(pid), signal.SIGKILL)
                    with open(os.path.join(os.path.dirname(os.path.dirname(target)), "killed"), "a") as f:
                        f.write(pid + "\\n")
        sys.addaudithook(hook)
""")


def test_a_killed_resource_tracker_leaves_no_traceback(tmp_path):
    """Hostile h15 W01: the sweep finished ok, but its output held loky's relaunch warning and KeyError tracebacks."""
    # report=false: the report is built in the launcher after its workers are done and uses no loky (nor joblib,
    # nor multiprocessing), and this test reads none of it: the tracker's kill and relaunch happen without it
    done, sweep = sweep_with_hook(tmp_path, TRACKER_KILLER, "seed=0,1", "report=false")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "killed").read_text().strip(), "no tracker of this sweep was killed"  # not vacuous
    assert "Traceback" not in done.stderr + done.stdout and "died unexpectedly" not in done.stderr, done.stderr[-3000:]
    assert {json.loads(p.read_text())["status"] for p in sweep.glob("*/summary.json")} == {"ok"}


def test_the_line_names_the_kill_and_the_jobs_never_run(monkeypatch):
    from normbench.studies import app, lost_workers

    monkeypatch.setattr(lost_workers, "LOST", {})
    assert app._lost_note() == ""
    monkeypatch.setattr(lost_workers, "LOST", {"reason": "its worker process was killed (SIGKILL)", "unrun": [2, 3]})
    assert app._lost_note() == (" (its worker process was killed (SIGKILL); job(s) #2, #3 not run; the same command "
                                "with resume=true runs them again)")


def joblib_sweep(tmp_path, *overrides: str) -> tuple[subprocess.CompletedProcess, Path]:
    sweep = tmp_path / "s"
    done = subprocess.run(
        [sys.executable, "-m", "normbench", "-m", *TINY, *TINY_TASK, "norm=ln,rms", "hydra/launcher=local",
         "hydra.launcher.n_jobs=2", *overrides, f"hydra.sweep.dir={sweep}"],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}, capture_output=True,
        text=True, timeout=HANG_S)
    return done, sweep


def test_a_timeout_no_job_can_meet_is_refused_before_any_job(tmp_path):
    """Hostile h16 W07: hydra.launcher.timeout=-1 ended the sweep in joblib's TimeoutError traceback."""
    done, sweep = joblib_sweep(tmp_path, "hydra.launcher.timeout=-1")
    assert (done.returncode, done.stderr) == (2, "normbench: error: hydra.launcher.timeout must be a number of "
                                                 "seconds > 0 (or null: no limit), got -1.0\n")
    assert not sweep.exists()


def test_a_timeout_that_runs_out_is_one_line_naming_it(tmp_path):
    """Hostile h16 Y20: hydra.launcher.timeout=0.001 ran out and joblib's TimeoutError ended the sweep in a
    59-line traceback. Its lost jobs are named, in one line, with the setting, and the sweep ends as a sweep."""
    done, sweep = joblib_sweep(tmp_path, "hydra.launcher.timeout=0.001")
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    ours = [line for line in done.stderr.splitlines() if line.startswith("normbench:")]
    assert len(ours) == 1 and "hydra.launcher.timeout=0.001 (seconds) ran out" in ours[0], done.stderr
    assert "not run" in ours[0] or "run(s) failed" in ours[0], ours[0]
    assert "running" not in {json.loads(p.read_text())["status"] for p in sweep.glob("*/summary.json")}


# The process running job 1 sends itself SIGTERM (or SIGHUP) at its first write in that folder after the record
# was started and its metrics file opened: a user's `kill PID` of one worker, in the middle of its run.
STOPPER = textwrap.dedent("""
    import os, signal, sys
    target = os.environ.get("NB_TEST_KILL_DIR")
    if target:
        seen = []
        def hook(event, args):
            if event != "open" or not isinstance(args[0], str) or not args[0].startswith(target + os.sep):
                return
            writes = (args[1] or "r") != "r" or (args[2] or 0) & (os.O_WRONLY | os.O_RDWR)
            if not writes or os.environ.get("NORMBENCH_LAUNCHER_PID") in (None, str(os.getpid())):
                return
            seen.append(os.path.basename(args[0]))
            if "metrics.jsonl" in seen[:-1] and len(seen) == seen.index("metrics.jsonl") + 2:
                os.kill(os.getpid(), getattr(signal, os.environ["NB_TEST_SIGNAL"]))
        sys.addaudithook(hook)
""")


# SIGHUP's case in the slow suite only: a run's SIGTERM and SIGHUP have one handler (training/run.py
# sigterm_as_interrupt, over STOP_SIGNALS) and one "alone" test (studies/app.py _worker_alone), which differ only in
# the signal's name; a run's own SIGHUP stays in the default suite (tests/test_hostile_stops.py).
@pytest.mark.parametrize("signame", ["SIGTERM", pytest.param("SIGHUP", marks=pytest.mark.slow)])
def test_a_stop_of_one_worker_fails_its_run_and_the_sweep_goes_on(tmp_path, monkeypatch, signame):
    """Hostile h16 H02, V90: SIGTERM or SIGHUP to one joblib worker (not the sweep) stopped the whole sweep, which
    said "interrupted by SIGTERM; summaries written" (143) and never ran job 2. Now as for a killed worker: its
    run fails, named, the others run, exit status 1."""
    monkeypatch.setenv("NB_TEST_SIGNAL", signame)
    done, sweep = sweep_with_hook(tmp_path, STOPPER, "report=false")  # the report: read by the killed worker's test
    assert done.returncode == 1, done.stderr[-3000:]
    assert "Traceback" not in done.stderr + done.stdout and "interrupted" not in done.stderr, done.stderr[-3000:]
    ours = [line for line in done.stderr.splitlines() if line.startswith("normbench:")]
    assert len(ours) == 1 and "1 run(s) failed" in ours[0] and ours[0].endswith(f"{sweep / '1'}"), done.stderr
    statuses = {p.parent.name: json.loads(p.read_text()) for p in sweep.glob("*/summary.json")}
    assert statuses["1"]["status"] == "failed", statuses["1"]
    assert statuses["1"]["reason"] == f"its worker process alone was stopped by {signame}; the sweep went on"
    assert statuses["0"]["status"] == statuses["2"]["status"] == "ok", done.stderr[-3000:]
