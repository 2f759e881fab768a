"""The one way the command-line runners (normbench.studies.study, normbench.studies.tune) run a ``normbench -m`` child.

SIGTERM or Ctrl-C of the runner reaches the child (``run`` raises ``Stopped`` or KeyboardInterrupt
after the child has stopped, so the runner can end with one line), and a runner killed outright
(SIGKILL, where no handler runs) takes its child along: on Linux the child is started with the
parent-death signal SIGTERM (prctl PR_SET_PDEATHSIG), which the child turns into interrupted
records as it does any SIGTERM. Elsewhere the child starts as before, without it.
"""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable

CTRL_C_GRACE_S = 5.0  # a Ctrl-C in a terminal reaches the child too: it gets this long to stop by itself
STOP_WAIT_S = 60.0    # then the signal is passed on, and after this long the child is killed
WORKERS_WAIT_S = 30.0  # its workers left after it get this long to end their runs, then are killed
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
STOPS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))
# In a runner's child: the runner says the one line a stop ends with (stop_line), so the child says none (S19)
RUNNER_SAYS_STOPS_ENV = "NORMBENCH_RUNNER_SAYS_STOPS"


class Stopped(Exception):
    """SIGTERM, SIGHUP or SIGINT reached the runner; the child running was passed the signal."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def raise_stopped(signum, frame) -> None:
    """The runner's SIGTERM and SIGHUP handler: the wait for the child ends in Stopped."""
    raise Stopped(signum)


@functools.cache
def _libc():
    """The C library, loaded on the first child's start, in the runner: preexec_fn runs between fork and exec,
    where loading a library is unsafe. Not at import, and not by ctypes.util.find_library, which forks
    ldconfig: a subcommand's Ctrl-C in its first tenth of a second landed there (hostile h14 B4)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)  # the process's own symbols, the C library's prctl among them
    except OSError:
        return None
    libc.signal.argtypes, libc.signal.restype = (ctypes.c_int, ctypes.c_void_p), ctypes.c_void_p
    return libc


def _die_with_parent(libc) -> Callable[[], None]:
    """preexec_fn of every child: SIGTERM when the runner dies, however it dies (Linux only). SIGTERM's
    disposition is set to the default first (by the C library: Python's signal.signal would run a pending
    handler here, a Ctrl-C's, between fork and exec): an ignored one survives exec, and a child whose runner
    ignored SIGTERM (children.start called outside handling(), after ignore_stops: the tests, a library caller)
    and was killed before the child installed its own handler would run on with the death signal ignored."""
    def preexec() -> None:
        libc.signal(signal.SIGTERM, None)  # SIG_DFL
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    return preexec


def ignore_stops() -> None:
    """SIGINT, SIGTERM and SIGHUP ignored from here on, for a command whose outcome is decided (its records
    final, its lines said) or whose stop is being said: a stop has nothing left to stop. Raised as an
    interrupt it would escape after the line (a second Ctrl-C: death by SIGINT, not 130) or among the
    interpreter's exit callbacks ("Exception ignored in atexit callback", exit 0 after a stop), and a Python
    handler still in place is reset to the default at finalization, where a late SIGTERM kills the process
    with 143 and no line although its record says ok (Q26, M06, Q23). An ignored signal stays ignored to the end."""
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            try:
                signal.signal(getattr(signal, name), signal.SIG_IGN)
            except ValueError:  # not the main thread: leave signals alone
                pass
    forget_unhandled_interrupt()


def forget_unhandled_interrupt() -> None:
    """Clears CPython's record of an interrupt that escaped code run through PyRun_String (a C extension's
    import does so): a stop that lands there sets it, our handler then exits 128 + the signal, and at the very
    end the interpreter, seeing it set, killed itself with SIGINT instead: exit 130 after "stopped by SIGHUP"
    (hostile h15 B9). Running an empty string through the same path resets it (pythonrun.c, run_eval_code_obj)."""
    try:
        import ctypes

        run = ctypes.pythonapi.PyRun_SimpleStringFlags
        run.argtypes, run.restype = [ctypes.c_char_p, ctypes.c_void_p], ctypes.c_int
        run(b"", None)
    except (ImportError, AttributeError, OSError):  # not CPython: no such record
        pass


def quiet_half_imported_torch() -> None:
    """On a stop's way out: torch's loggers at WARNING where torch never got to set them. A stop during
    ``import torch`` (a run's first seconds) lands after torch registered its exit-time "FakeTensor cache stats"
    lines (INFO) but before it set its logger to WARNING, so they reached the run's console after the stop's one
    line (hostile h13 G16, G18)."""
    import logging

    torch_log = logging.getLogger("torch")
    if torch_log.level == logging.NOTSET:
        torch_log.setLevel(logging.WARNING)


def stop_line(tool: str, stop: BaseException, what: str) -> tuple[str, int]:
    """The one line a runner ends with after ``stop`` (Stopped or KeyboardInterrupt), and its exit status."""
    signum = getattr(stop, "signum", None) or signal.SIGINT  # a KeyboardInterrupt a handler made names its signal
    return (f"{tool}: stopped by {signal.Signals(signum).name}; {what} was stopped too (the same command resumes)",
            128 + signum)


def runner_says_stops() -> bool:
    """Whether this process is a runner's child (start), whose stop the runner's own line says."""
    return os.environ.get(RUNNER_SAYS_STOPS_ENV) == "1"


def _processes() -> dict[int, tuple[int, str]]:
    """Every live process's parent and start time (pid -> (ppid, start)), from /proc; {} where there is none.
    A zombie has ended: only its parent's wait is left (a subprocess.Popen not yet waited on, such as the
    environment capture's), and waiting for it to end took a stop 30 + 5 s (hostile h13 G17)."""
    found = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read().rpartition(b")")[2].split()  # after the command's name, which may hold spaces
        except OSError:
            continue
        if fields[0] in (b"Z", b"X"):  # a zombie, or dead
            continue
        found[int(name)] = (int(fields[1]), fields[19].decode())  # ppid, starttime
    return found


def descendants(pid: int) -> dict[int, str]:
    """The processes ``pid`` started, and theirs (pid -> start time, which tells a reused pid apart)."""
    table, found, frontier = _processes(), {}, [pid]
    while frontier:
        parent = frontier.pop()
        for child, (ppid, start) in table.items():
            if ppid == parent and child not in found:
                found[child] = start
                frontier.append(child)
    return found


def workers(pid: int) -> dict[int, str]:
    """The processes ``pid`` started that run jobs (a joblib launcher's loky workers): its descendants but
    the resource trackers multiprocessing and loky start, which ignore SIGTERM and end with their launcher."""
    found = {}
    for child, start in descendants(pid).items():
        try:
            with open(f"/proc/{child}/cmdline", "rb") as handle:
                command = handle.read(4096)
        except OSError:
            continue
        if b"resource_tracker" not in command:
            found[child] = start
    return found


def signal_all(processes: dict[int, str], signum: int) -> None:
    for pid in _alive(processes):
        try:
            os.kill(pid, signum)
        except OSError:
            pass


def _alive(processes: dict[int, str]) -> dict[int, str]:
    table = _processes()
    return {pid: start for pid, start in processes.items() if pid in table and table[pid][1] == start}


def end_descendants(processes: dict[int, str], wait: float = WORKERS_WAIT_S) -> None:
    """After the child ended: its workers (a joblib launcher's) that outlive it get SIGTERM, which
    ends their runs ``interrupted``, and up to ``wait`` seconds to stop; then SIGKILL. The runner
    ends after them, so nothing of its round writes once it has said it stopped."""
    left = _alive(processes)
    for send, limit in ((signal.SIGTERM, wait), (signal.SIGKILL, 5.0)):
        for pid in left:
            try:
                os.kill(pid, send)
            except OSError:
                pass
        deadline = time.monotonic() + limit
        while left and time.monotonic() < deadline:
            time.sleep(0.05)
            left = _alive(left)
        if not left:
            return


def stop_child(child: subprocess.Popen, signum: int | None, grace: float | None = None) -> None:
    """Passes the signal on (a Ctrl-C in a terminal, ``signum`` None, reached the child already: it
    gets ``grace`` seconds to stop first, then SIGINT), waits for the child to write its interrupted
    records, and kills it after a minute; then waits for the workers it started (end_descendants).
    Further signals are held off meanwhile, so nothing of the child is left running behind the runner."""
    grace = CTRL_C_GRACE_S if grace is None else grace
    held = {s: signal.signal(s, signal.SIG_IGN) for s in STOPS}
    workers = descendants(child.pid)  # before the child ends: its orphans are no longer its
    try:
        _stop(child, signum, grace)
        end_descendants({**workers, **_alive(workers)})
    finally:
        for s, handler in held.items():
            signal.signal(s, handler)


def _stop(child: subprocess.Popen, signum: int | None, grace: float) -> None:
    """The child itself: the signal (or, after a Ctrl-C it already had, SIGINT), then SIGKILL."""
    steps = [(signum, STOP_WAIT_S)] if signum is not None else [(None, grace), (signal.SIGINT, STOP_WAIT_S)]
    for send, wait in [*steps, (signal.SIGKILL, None)]:
        if child.poll() is not None:
            return
        if send is not None:
            child.send_signal(send)  # the normbench runner turns SIGTERM and SIGINT into interrupted records
        try:
            child.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def start(command: list[str], env: dict | None = None) -> subprocess.Popen:
    """``command`` as a child that dies with the runner (Linux), and leaves the line a stop ends with to it."""
    env = {**(os.environ if env is None else env), RUNNER_SAYS_STOPS_ENV: "1"}
    libc = _libc()
    return subprocess.Popen(command, env=env, preexec_fn=_die_with_parent(libc) if libc is not None else None)


def _elsewhere(arg: str) -> bool:
    return arg.lstrip("+~").split("=", 1)[0] in ("hydra.sweep", "hydra.sweep.dir")


def hydra_quoted(value: object) -> str:
    """``value`` as one quoted string in a Hydra override: a comma is not a sweep, ``${...}`` is not
    resolved, a quote does not end it. A backslash has no single meaning there, so it is refused."""
    text = str(value)
    if "\\" in text or any(not c.isprintable() for c in text):
        raise ValueError(f"{text[:80]!r} holds a backslash or a control character; choose a plain path")
    return "'" + text.replace("'", "\\'").replace("${", "\\${") + "'"


def out_problem(out) -> str | None:
    """Why ``out`` cannot be the --out folder a study or tune runs its rounds in, said before any job runs, or
    None: the filesystem's root or your home folder (checks.out_folder_problem), or a name holding ``${``,
    which the rounds' Hydra resolves where it records the sweep's folder (hydra.sweep.subdir), so that the
    runner found no record of its own after a round was paid for (hostile O03, U03)."""
    from normbench.checks import runs_folder_problem

    return runs_folder_problem(out)


def into_folder(args: list[str], sweep_dir: str) -> list[str]:
    """A child multirun's arguments with its records in ``sweep_dir`` (a Hydra override's value) and nowhere
    else: a ``hydra.sweep.dir`` (or ``hydra.sweep``) among the user's overrides is dropped, never written
    to, and the runner's comes last, so every write stays under the runner's folder (its --out). A path is
    quoted (hydra_quoted) where the caller has not: a comma, an "=" or a non-ASCII letter in --out is a path,
    not Hydra grammar (hostile S12, S15)."""
    quoted = sweep_dir if sweep_dir.startswith("'") else hydra_quoted(sweep_dir)
    return [a for a in args if not _elsewhere(a)] + [f"hydra.sweep.dir={quoted}"]


def say_sweep_dir_ignored(tool: str, overrides: list[str], out) -> None:
    """One line on stderr, before anything runs, when the user named a ``hydra.sweep.dir`` that into_folder
    will drop: where the runs go instead (T07, S14: the override was dropped without a word). Its key only:
    the value may be read from the environment."""
    given = [o.lstrip("+~").split("=", 1)[0] for o in overrides if _elsewhere(o)]
    if given:
        print(f"{tool}: {given[-1]} is ignored: the runs go under --out {str(out)[:200]}", file=sys.stderr)


class OutOfTime(Exception):
    """The child ran past the time it was given and was stopped (SIGTERM: its runs end interrupted)."""


def run(command: list[str], env: dict | None = None, timeout_s: float | None = None) -> int:
    """Runs ``command`` to its end and returns its exit status. Install ``raise_stopped`` for SIGTERM
    first (``handling``); a Stopped or KeyboardInterrupt while it runs stops the child, then goes on up.
    Past ``timeout_s`` seconds the child is stopped as by SIGTERM and OutOfTime is raised."""
    child = start(command, env)
    try:
        return child.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        stop_child(child, signal.SIGTERM)
        raise OutOfTime() from None
    except BaseException as stop:  # Stopped, KeyboardInterrupt: the child stops too, never left running
        stop_child(child, stop.signum if isinstance(stop, Stopped) else None)
        raise


class handling:
    """``with children.handling():`` SIGTERM and SIGHUP raise Stopped inside the block (and their old handlers are
    back after): a closed terminal's SIGHUP stops the child and says so as SIGTERM does (hostile h13 G15)."""

    def __enter__(self):
        self._previous = {s: signal.signal(s, raise_stopped) for s in STOPS if s != signal.SIGINT}
        return self

    def __exit__(self, *exc):
        for s, handler in self._previous.items():
            signal.signal(s, handler)
        return False
