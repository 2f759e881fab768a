"""Run folders the record walk cannot look in, and metrics.jsonl files too large to read (hostile H1, H2).

A run folder that is a symbolic link, or that cannot be listed, must be set aside and named as an
unreadable summary.json is, so compare's gate cannot pass without it; a metrics.jsonl past
MAX_METRICS_BYTES (a sparse file claiming hundreds of GB) sets its run aside without being read.
"""

from __future__ import annotations

import errno
import importlib.util
import os
import time
from pathlib import Path

from normbench.records import reading
from normbench.records.reading import MAX_METRICS_BYTES, find_records, read_curves, record_paths
from normbench.report import build_report
from normbench.studies import compare

_spec = importlib.util.spec_from_file_location("record_factory", Path(__file__).parents[1] / "report" / "conftest.py")
factory = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(factory)


def _sweep(root: Path) -> Path:
    for name, norm in (("0", "ln"), ("1", "rms")):
        factory.write_record(root, name, axes={"norm": norm})
    return root


def _unlistable(monkeypatch, folder: Path) -> None:
    """``folder`` cannot be listed, as a mode-000 folder is to a user without CAP_DAC_OVERRIDE (tests run as root)."""
    scandir = os.scandir

    def refusing(path="."):
        if os.path.abspath(path) == str(folder):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", refusing)


def test_a_linked_run_folder_is_set_aside_and_named(tmp_path):
    other = _sweep(tmp_path / "elsewhere")
    sweep = _sweep(tmp_path / "sweep")
    os.rename(sweep / "1", tmp_path / "moved")
    (sweep / "1").symlink_to(other / "1", target_is_directory=True)
    records = find_records([sweep])
    assert [r.run_dir.name for r in records.runs] == ["0"]
    assert [(r.path.parent, r.why) for r in records.set_aside] == [(sweep / "1", "the folder is a symbolic link")]
    assert record_paths(sweep) == [sweep / "0" / "summary.json"]  # never followed


def test_a_folder_that_cannot_be_listed_is_set_aside_and_named(tmp_path, monkeypatch):
    sweep = _sweep(tmp_path / "sweep")
    _unlistable(monkeypatch, sweep / "1")
    records = find_records([sweep])
    assert [r.run_dir.name for r in records.runs] == ["0"]
    assert [(r.path.parent, r.why) for r in records.set_aside] == [
        (sweep / "1", "the folder cannot be listed (Permission denied)")]


def test_compare_cannot_vouch_for_a_run_lost_to_a_link_or_a_permission(tmp_path, monkeypatch, capsys):
    baseline = _sweep(tmp_path / "baseline")
    linked = _sweep(tmp_path / "linked")
    os.rename(linked / "1", tmp_path / "moved")
    (linked / "1").symlink_to(baseline / "1", target_is_directory=True)
    assert compare.main([str(baseline), str(linked)]) == 1  # C65: was PASS, rc 0
    assert "cannot vouch for" in capsys.readouterr().out
    unlisted = _sweep(tmp_path / "unlisted")
    _unlistable(monkeypatch, unlisted / "1")
    assert compare.main([str(baseline), str(unlisted)]) == 1  # C66
    assert "the folder cannot be listed" in capsys.readouterr().out


def test_the_report_warns_of_a_linked_run_folder(tmp_path, capsys):
    sweep = _sweep(tmp_path / "sweep")
    os.rename(sweep / "1", tmp_path / "moved")
    (sweep / "1").symlink_to(tmp_path / "moved", target_is_directory=True)
    build_report([sweep], tmp_path / "out")  # C33
    warning = [line for line in capsys.readouterr().err.splitlines() if "set aside" in line]
    assert len(warning) == 1 and "symbolic link" in warning[0]


def test_a_huge_sparse_metrics_jsonl_sets_its_run_aside_unread(tmp_path):
    sweep = _sweep(tmp_path / "sweep")
    os.truncate(sweep / "1" / "metrics.jsonl", 200 << 30)  # C59: 200 GB claimed, nothing on disk
    started = time.monotonic()
    records = find_records([sweep])
    assert [r.run_dir.name for r in records.runs] == ["0"]
    assert [(r.path.parent, r.why) for r in records.set_aside] == [
        (sweep / "1", f"metrics.jsonl is larger than {MAX_METRICS_BYTES >> 20} MiB")]
    assert read_curves([sweep / "1"]).empty  # a reader given the run anyway reads nothing of it
    assert time.monotonic() - started < 5


def test_the_curve_reader_stops_at_the_cap(tmp_path, monkeypatch):
    monkeypatch.setattr(reading, "MAX_METRICS_BYTES", 4096)
    run_dir = factory.write_record(tmp_path, "run")
    assert not read_curves([run_dir]).empty
    with open(run_dir / "metrics.jsonl", "ab") as handle:
        handle.write(b"\n" * 5000)
    assert read_curves([run_dir]).empty
    assert find_records([tmp_path]).set_aside[0].why.startswith("metrics.jsonl is larger than")
