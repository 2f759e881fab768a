"""The runners' children (normbench/studies/children.py): nothing of a stopped round outlives its runner."""

import os
import sys

import pytest

from normbench.studies import children


def test_a_stopped_round_waits_for_the_workers_its_child_left(tmp_path):
    """SIGTERM to the runner: its child (the sweep's launcher) stops at once, but a worker it started
    takes a moment to end its run; the runner returns only after the worker has ended (issue 50)."""
    import signal
    import sys
    import time

    from normbench.studies import children

    ended = tmp_path / "worker-ended"
    worker = ("import signal, sys, time\n"
              f"def stop(*a):\n    time.sleep(1.0); open({str(ended)!r}, 'w').close(); sys.exit(0)\n"
              "signal.signal(signal.SIGTERM, stop)\n"
              "print('ready', flush=True)\n"
              "time.sleep(60)\n")
    launcher = ("import signal, subprocess, sys, time\n"
                f"w = subprocess.Popen([sys.executable, '-c', {worker!r}], stdout=subprocess.PIPE, text=True)\n"
                "w.stdout.readline()\n"
                "signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))\n"
                "print('started', flush=True)\n"
                "time.sleep(60)\n")
    import subprocess

    child = subprocess.Popen([sys.executable, "-c", launcher], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "started"
    workers = children.descendants(child.pid)
    assert len(workers) == 1
    children.stop_child(child, signal.SIGTERM)
    assert child.poll() is not None and ended.exists()
    assert not children._alive(workers)


def test_a_runners_child_leaves_the_line_a_stop_ends_with_to_the_runner(tmp_path, monkeypatch, capsys):
    """S19, S19b: a study stopped by SIGTERM or Ctrl-C printed two lines, its round's "normbench: interrupted
    ...; summaries written" and its own; the round, started by children.start, now says none."""
    import os
    import sys

    import pytest

    from normbench.studies import app, children
    from tests.waiting import HANG_S

    seen = tmp_path / "env"
    child = children.start([sys.executable, "-c", f"import os; open({str(seen)!r}, 'w').write("
                                                  f"os.environ.get({children.RUNNER_SAYS_STOPS_ENV!r}, 'unset'))"],
                           env={**os.environ})
    assert child.wait(timeout=HANG_S) == 0 and seen.read_text() == "1"

    def interrupted(*args, **kwargs):
        def run():
            stop = KeyboardInterrupt("signal 15")
            stop.signum = 15
            raise stop
        return lambda job: run
    monkeypatch.setattr(app.hydra, "main", interrupted)
    monkeypatch.setattr(sys, "argv", ["normbench", "-m", "threads=1", "steps=2"])
    for runner, said in (("1", ""), (None, "normbench: stopped by SIGTERM\n")):
        if runner is None:
            monkeypatch.delenv(children.RUNNER_SAYS_STOPS_ENV, raising=False)
        else:
            monkeypatch.setenv(children.RUNNER_SAYS_STOPS_ENV, runner)
        with pytest.raises(SystemExit) as exit_:
            app.main()
        assert exit_.value.code == 143 and capsys.readouterr().err == said


def test_a_sweep_dir_the_runner_drops_is_said_once_by_key(capsys):
    """T07, S14: tune and study dropped a user's hydra.sweep.dir without a word; the value is never shown
    (it may be read from the environment)."""
    from normbench.studies import children

    overrides = ["norm=ln", "hydra.sweep.dir=${oc.env:SECRET_DIR}"]
    assert children.into_folder(overrides, "/s/selection") == ["norm=ln", "hydra.sweep.dir='/s/selection'"]
    children.say_sweep_dir_ignored("normbench.tune", overrides, "/s")
    assert capsys.readouterr().err == "normbench.tune: hydra.sweep.dir is ignored: the runs go under --out /s\n"
    children.say_sweep_dir_ignored("normbench.tune", ["norm=ln"], "/s")
    assert capsys.readouterr().err == ""


def test_a_sweep_larger_than_the_check_is_never_refused_for_its_first_jobs():
    """Hostile U06/U08: 64 jobs with norm.eps=0 first, then 64 that run: the check cannot see them all, so it
    refuses nothing (the invalid cells are recorded, as a multirun records them). A range of 10^8 values is read
    only as far as the check goes, in well under a second, not listed whole (83 s and 4-6 GB before)."""
    import time

    import pytest

    from normbench.checks import ConfigError
    from normbench.studies.composed import MAX_JOBS_CHECKED, check_jobs, job_overrides

    check_jobs(["task=adding", "norm.eps=0,1e-5", "log_every=range(1,65)"])  # returns: a later job may run
    with pytest.raises(ConfigError, match="in any of the 2 jobs"):
        check_jobs(["task=adding", "norm.eps=0", "log_every=1,2"])
    start = time.perf_counter()
    jobs = job_overrides(["norm.eps=0", "log_every=range(1,100000000)"])
    assert len(jobs) == MAX_JOBS_CHECKED + 1 and time.perf_counter() - start < 5


def test_a_runners_folder_reaches_its_child_as_a_path_whatever_its_letters(tmp_path):
    """Hostile S12, S15, L06: --out "/tmp/x/résumé" or "/tmp/x/st,a=b" reached the child unquoted and Hydra's lexer
    refused it; a newline in --out made the folder, then the child refused it."""
    import pytest
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from normbench.studies import children, study

    for name in ("résumé", "st,a=b", "it's here"):
        args = children.into_folder(["-m", "norm=ln,none"], str(tmp_path / name))
        parsed = OverridesParser.create().parse_override(args[-1])
        assert parsed.get_key_element() == "hydra.sweep.dir" and parsed.value() == str(tmp_path / name)
    with pytest.raises(study.StudyArgumentError, match="control character"):
        study._check_out(tmp_path / "a\nb")
    assert not (tmp_path / "a\nb").exists()


def test_sighup_stops_a_runner_as_sigterm_does():
    """Hostile G15, G19: SIGHUP (a closed terminal) killed tune or study by its default action: no line, and the
    stage's records left `running`; inside handling() it is a Stopped, passed on to the child, as SIGTERM is."""
    import os
    import signal

    import pytest

    from normbench.studies import children

    def before(*_):  # in place of the default, which would end this test's process
        pass

    saved = signal.signal(signal.SIGHUP, before)
    try:
        with pytest.raises(children.Stopped) as stop:
            with children.handling():
                os.kill(os.getpid(), signal.SIGHUP)
                for _ in range(1000):  # the handler runs between bytecodes
                    pass
        assert stop.value.signum == signal.SIGHUP
        assert signal.getsignal(signal.SIGHUP) is before
    finally:
        signal.signal(signal.SIGHUP, saved)


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_a_child_that_died_unwaited_is_ended_at_once():
    """Hostile h13 G17: a stop in a run's first seconds SIGTERMs the environment capture's subprocess, which dies
    and stays a zombie (its Popen is never waited on then); the stop waited 30 + 5 s for it to end."""
    import subprocess
    import time

    from tests.waiting import HANG_S

    # a child that ends by itself and is never waited on: a zombie, whatever signals an earlier test left blocked or
    # ignored in this process (a blocked SIGTERM is inherited, and the child then outlived the SIGTERM for 30 s)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1)"])
    try:
        found = children.workers(os.getpid())
        assert child.pid in found
        deadline = time.monotonic() + HANG_S
        while child.pid in children.workers(os.getpid()) and time.monotonic() < deadline:
            time.sleep(0.1)  # until it has ended: a zombie, which the table leaves out
        started = time.monotonic()
        children.end_descendants({child.pid: found[child.pid]})
        assert time.monotonic() - started < 3
        assert child.poll() is not None  # it had ended, unwaited, all along
    finally:
        child.kill()
        child.wait()


def test_a_stop_that_escaped_embedded_code_still_exits_with_its_own_status(tmp_path):
    """Hostile h15 B9 (G10): SIGHUP during the imports said "stopped by SIGHUP", then the process died by SIGINT
    (130): the interrupt had escaped code a C extension ran through PyRun_String, which CPython remembers and
    answers at exit by killing itself with SIGINT. ignore_stops, on every stop's way out, clears that record."""
    import subprocess

    (tmp_path / "stopped.py").write_text(
        "import ctypes, sys\n"
        "from normbench.studies.children import ignore_stops\n"
        "run = ctypes.pythonapi.PyRun_SimpleStringFlags\n"
        "run.argtypes = [ctypes.c_char_p, ctypes.c_void_p]\n"
        "run(b'raise KeyboardInterrupt', None)  # as an extension's embedded code interrupted by the stop\n"
        "ignore_stops()\n"
        "sys.exit(129)\n")
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from tests.waiting import HANG_S

    done = subprocess.run([sys.executable, "-m", "stopped"], cwd=tmp_path, capture_output=True, timeout=HANG_S,
                          env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{repo}"})
    assert done.returncode == 129, done.stderr
