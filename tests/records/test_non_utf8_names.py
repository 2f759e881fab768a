"""Folders whose names are not valid UTF-8 (hostile h21 B1).

Python keeps such a name's bytes as lone surrogates, which pandas, pyarrow and a UTF-8 file refuse:
the report, the end of a sweep, `study --out` and `bench arms` ended in a traceback or a bare
exception line. The record walk sets such a folder's record aside under its name escaped (\\xNN),
as it does a linked or unlistable folder, so every command that reads records says it in its one line.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from normbench.records.reading import NOT_UTF8, find_records, record_paths
from normbench.report import build_report
from normbench.report.build import NoUsableRecords

_spec = importlib.util.spec_from_file_location("record_factory", Path(__file__).parents[1] / "report" / "conftest.py")
factory = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(factory)

NOT_UTF8_NAME = os.fsdecode(b"x\xff")  # 'x\udcff'


def _sweep(root: Path) -> Path:
    for name, norm in (("0", "ln"), ("1", "rms")):
        factory.write_record(root, name, axes={"norm": norm})
    return root


def test_a_run_folder_not_named_in_utf8_is_set_aside_under_its_name_escaped(tmp_path):
    sweep = _sweep(tmp_path / "sweep")
    os.rename(sweep / "1", sweep / NOT_UTF8_NAME)
    records = find_records([sweep])
    assert [r.run_dir.name for r in records.runs] == ["0"]
    assert [(str(r.path), r.why) for r in records.set_aside] == [(f"{sweep}/x\\xff/summary.json", NOT_UTF8)]
    assert record_paths(sweep) == [sweep / "0" / "summary.json"]


def test_the_report_is_written_and_names_the_folder_escaped(tmp_path, capsys):
    sweep = _sweep(tmp_path / "sweep")
    os.rename(sweep / "1", sweep / NOT_UTF8_NAME)
    build_report([sweep], tmp_path / "out")  # was: UnicodeEncodeError from pyarrow (h21 N092)
    warning = [line for line in capsys.readouterr().err.splitlines() if "set aside" in line]
    assert len(warning) == 1 and "x\\xff/summary.json (the folder name is not valid UTF-8)" in warning[0]
    assert "the folder name is not valid UTF-8" in (tmp_path / "out" / "report.md").read_text(encoding="utf-8")


def test_a_sweep_folder_not_named_in_utf8_is_one_record_set_aside(tmp_path):
    sweep = _sweep(tmp_path / NOT_UTF8_NAME)
    records = find_records([sweep])
    assert records.runs == [] and [(str(r.path), r.why) for r in records.set_aside] == [
        (f"{tmp_path}/x\\xff/summary.json", NOT_UTF8)]
    with pytest.raises(NoUsableRecords, match=r"\(1 unreadable"):  # h21 N389: was a traceback
        build_report([sweep], tmp_path / "out")
