"""SIGTERM during the end-of-sweep report: one line, and no staging folder left behind (issue 50)."""

from __future__ import annotations

import os
import signal
import time

import pytest
from omegaconf import OmegaConf

from normbench.report import output
from normbench.studies.sweep_end import SweepSummary
from tests.report.conftest import write_record


@pytest.mark.parametrize("signame", ["SIGTERM", *["SIGHUP"] * hasattr(signal, "SIGHUP")])
def test_sigterm_mid_report_removes_its_staging_folder(tmp_path, monkeypatch, capsys, signame):
    import normbench.report as report

    sweep = tmp_path / "sweep"
    write_record(sweep, "0", seed=0)

    def killed_mid_way(paths, out):
        with output.ReportOutput(out):
            os.kill(os.getpid(), getattr(signal, signame))
            time.sleep(5)
    monkeypatch.setattr(report, "build_report", killed_mid_way)
    config = OmegaConf.create({"hydra": {"sweep": {"dir": str(sweep)}, "overrides": {"task": []}}, "report": True,
                               "sweep_timing": "none"})
    previous = signal.getsignal(getattr(signal, signame))
    with pytest.raises(KeyboardInterrupt) as stop:
        SweepSummary().on_multirun_end(config)
    assert signal.getsignal(getattr(signal, signame)) == previous and stop.value.signum == getattr(signal, signame)
    assert not list(sweep.glob(f"{output.STAGING}*"))
    assert f"stopped by {signame} during the report" in capsys.readouterr().err


def test_a_stop_during_the_sweeps_report_is_said_once(cli, tiny_args, monkeypatch):
    """Hostile V14 (H9): "stopped by SIGTERM during the report; no report written", then main's own stop line."""
    import normbench.report as report

    def killed_mid_way(paths, out):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
    monkeypatch.setattr(report, "build_report", killed_mid_way)
    code, _, err = cli("-m", *tiny_args, "norm=ln", "hydra.sweep.dir=s")
    stops = [line for line in err.splitlines() if "stopped" in line or "interrupted" in line]
    assert code == 128 + signal.SIGTERM
    assert stops == ["normbench: stopped by SIGTERM during the report; no report written"], err
