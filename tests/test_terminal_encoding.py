"""Every command prints its answer on a terminal that is not UTF-8 (hostile h21 B2).

With PYTHONIOENCODING=ascii (or latin-1) a table's minus sign or dash was a UnicodeEncodeError: `compare`
ended in a traceback (N382) and the end of a sweep lost its table and answer line (N186, N379). The entry
points (normbench.__main__, checks.exit_on_full_stdout) write such a character as an escape instead."""

from __future__ import annotations

import io
import sys

import pytest

from tests.conftest import normbench
from tests.report.conftest import write_record


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_compare_prints_its_verdict_on_a_terminal_that_is_not_utf8(encoding, tmp_path, monkeypatch):
    for seed in (0, 1):
        write_record(tmp_path / "sweep", f"run{seed}", seed=seed)
    out, err = (io.TextIOWrapper(io.BytesIO(), encoding=encoding) for _ in range(2))
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    assert normbench("compare", str(tmp_path / "sweep"), str(tmp_path / "sweep")) == 0
    out.flush()
    printed = out.buffer.getvalue().decode(encoding)
    assert "by more than 0.01 (absolute)" in printed and "\\u2212" in printed, printed
