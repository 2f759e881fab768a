"""Signals named right and said in one line (hostile cases S01, S07): Ctrl-C while a plain run's
modules import is one line and 130, not a KeyboardInterrupt traceback; SIGTERM during a subcommand
whose run turns it into an interrupt (``normbench rerun``) is named SIGTERM and exits 143."""

from __future__ import annotations

import os
import signal
import sys
import time
import types

import pytest

import normbench.__main__ as entry
from normbench.training.run import sigterm_as_interrupt
from tests.waiting import HANG_S


@pytest.fixture(autouse=True)
def _signals_restored():
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    yield
    for s, handler in saved.items():
        signal.signal(s, handler)


class Interrupting(types.ModuleType):
    """A module whose names cannot be read: Ctrl-C arrives while it imports."""

    def __getattr__(self, name):
        raise KeyboardInterrupt


def test_ctrl_c_while_a_run_imports_is_one_line_and_130(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "normbench.studies.app", Interrupting("normbench.studies.app"))
    monkeypatch.setattr(sys, "argv", ["normbench", "threads=1", "steps=2"])
    with pytest.raises(SystemExit) as exit_:
        entry.main()
    err = capsys.readouterr().err
    assert exit_.value.code == 130 and "Traceback" not in err
    assert err.strip() == "normbench: stopped by SIGINT"


def _terminated_run(args):
    with sigterm_as_interrupt():  # as a run under `normbench rerun` holds it
        os.kill(os.getpid(), signal.SIGTERM)
        deadline = time.monotonic() + HANG_S
        while time.monotonic() < deadline:
            time.sleep(0.01)
    return 0


def test_sigterm_turned_into_an_interrupt_by_a_run_is_named_sigterm(monkeypatch, capsys):
    fake = types.ModuleType("fake_rerun")
    fake.main = _terminated_run
    monkeypatch.setitem(sys.modules, "fake_rerun", fake)
    monkeypatch.setitem(entry.SUBCOMMANDS, "rerun", ("fake_rerun", "a run stopped by SIGTERM"))
    assert entry.subcommand("rerun", []) == 128 + signal.SIGTERM
    assert capsys.readouterr().err.strip() == "normbench rerun: stopped by SIGTERM"


def test_ctrl_c_in_a_subcommand_is_still_sigint(monkeypatch, capsys):
    fake = types.ModuleType("fake_compare")

    def stopped(args):
        raise KeyboardInterrupt
    fake.main = stopped
    monkeypatch.setitem(sys.modules, "fake_compare", fake)
    monkeypatch.setitem(entry.SUBCOMMANDS, "compare", ("fake_compare", "stopped by Ctrl-C"))
    assert entry.subcommand("compare", []) == 128 + signal.SIGINT
    assert capsys.readouterr().err.strip() == "normbench compare: stopped by SIGINT"


class _SecondCtrlC:
    """Standard error on which writing the interrupt's line brings a second Ctrl-C (G10: two 0.15 s apart)."""

    def __init__(self, stream):
        self.stream, self.lines = stream, []

    def write(self, text):
        self.lines.append(text)
        os.kill(os.getpid(), signal.SIGINT)
        return len(text)

    def flush(self):
        pass


def test_a_second_ctrl_c_while_the_interrupt_is_said_still_exits_130(monkeypatch):
    from normbench.studies import app

    def interrupted_run(*args, **kwargs):
        def run():
            raise KeyboardInterrupt
        return lambda job: run
    monkeypatch.setattr(app.hydra, "main", interrupted_run)
    monkeypatch.setattr(sys, "argv", ["normbench", "threads=1", "steps=2"])
    signal.signal(signal.SIGINT, signal.default_int_handler)
    err = _SecondCtrlC(sys.stderr)
    monkeypatch.setattr(sys, "stderr", err)
    with pytest.raises(SystemExit) as exit_:
        app.main()
    assert exit_.value.code == 130 and "".join(err.lines).strip() == "normbench: stopped by SIGINT"  # no record yet


def test_sigterm_before_any_job_is_one_line_and_143(monkeypatch, capsys):
    """G04: a local-launcher sweep's process runs no job itself: SIGTERM there killed it with no line."""
    from normbench.studies import app

    def launcher_waiting(*args, **kwargs):
        def run():
            os.kill(os.getpid(), signal.SIGTERM)
            deadline = time.monotonic() + HANG_S
            while time.monotonic() < deadline:
                time.sleep(0.01)
        return lambda job: run
    monkeypatch.setattr(app.hydra, "main", launcher_waiting)
    monkeypatch.setattr(sys, "argv", ["normbench", "-m", "threads=1", "steps=2", "hydra/launcher=local"])
    with pytest.raises(SystemExit) as exit_:
        app.main()
    assert exit_.value.code == 143  # 128 + SIGTERM, as a subcommand's (G08: it was 130 for every signal)
    assert capsys.readouterr().err.strip() == "normbench: stopped by SIGTERM"  # no record written (h14 B10)
    assert signal.getsignal(signal.SIGTERM) is not app._stop  # put back
