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


def test_sigterm_mid_report_removes_its_staging_folder(tmp_path, monkeypatch, capsys):
    import normbench.report as report

    sweep = tmp_path / "sweep"
    write_record(sweep, "0", seed=0)

    def killed_mid_way(paths, out):
        with output.ReportOutput(out):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
    monkeypatch.setattr(report, "build_report", killed_mid_way)
    config = OmegaConf.create({"hydra": {"sweep": {"dir": str(sweep)}, "overrides": {"task": []}}, "report": True,
                               "sweep_timing": "none"})
    previous = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt):
        SweepSummary().on_multirun_end(config)
    assert signal.getsignal(signal.SIGTERM) == previous
    assert not list(sweep.glob(f"{output.STAGING}*"))
    assert "stopped by SIGTERM during the report" in capsys.readouterr().err
