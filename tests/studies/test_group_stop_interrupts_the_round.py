"""A study stopped by SIGTERM to its process group leaves every record of its round ``interrupted`` (hostile h25
a020: with the rms kernel being built, one record stayed ``running`` and another said "failed: its worker process
alone was stopped by SIGTERM; the sweep went on"). The worker's signal and the launcher's arrive together: the
worker waits (bounded) for the launcher's stopping marker before it judges the stop its own; and the runner, once
the round's processes have ended, marks what they left running as interrupted."""

from __future__ import annotations

import json
import signal
import threading

from normbench.studies import app, children, orphans, study
from tests.report.conftest import write_record


def test_a_group_stop_is_not_read_as_the_worker_stopped_alone(tmp_path, monkeypatch):
    launcher = app.os.getppid()
    monkeypatch.setenv(orphans.LAUNCHER_PID_ENV, str(launcher))
    stop = KeyboardInterrupt("signal 15")
    stop.signum = signal.SIGTERM
    marker = tmp_path / f"{app.STOPPING}-{launcher}"
    late = threading.Timer(0.3, marker.touch)  # the launcher, stopped by the same signal, marks a moment later
    late.start()
    try:
        assert app._worker_alone(str(tmp_path))(stop) is None
    finally:
        late.cancel()
    marker.unlink()
    monkeypatch.setattr(app, "LAUNCHER_MARKS_S", 0.2)  # no marker: the launcher goes on, the stop was the worker's
    assert "alone" in app._worker_alone(str(tmp_path))(stop)


def test_a_record_left_running_by_a_stopped_round_is_marked_interrupted(tmp_path, monkeypatch, capsys):
    def stopped_round(command, env=None, timeout_s=None):
        folder = tmp_path / "st" / "round-1"
        write_record(folder, "0", status="running")  # its worker ended before it wrote its end; no lock held
        write_record(folder, "1", status="interrupted")
        raise children.Stopped(signal.SIGTERM)
    monkeypatch.setattr(children, "run", stopped_round)
    monkeypatch.chdir(tmp_path)
    assert study.main(["norm=ln,rms", "--out", "st"]) == 128 + signal.SIGTERM
    statuses = {p.parent.name: json.loads(p.read_text())["status"] for p in (tmp_path / "st").rglob("summary.json")}
    assert statuses == {"0": "interrupted", "1": "interrupted"}
    assert "stopped by SIGTERM" in capsys.readouterr().err
