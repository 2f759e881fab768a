"""A report over more records than MAX_REPORT_RECORDS is one line and exit 2, before anything is read
(issue 50: 100,000 records gave no answer in 400 s)."""

from __future__ import annotations

from normbench.records import reading
from normbench.report import build
from normbench.report.__main__ import main


def plant(root, n):
    for i in range(n):
        (root / f"r{i}").mkdir(parents=True)
        (root / f"r{i}" / "summary.json").write_text("{}")  # never read: the count comes first


def test_the_count_stops_past_its_limit(tmp_path):
    plant(tmp_path, 30)
    assert reading.count_records([tmp_path], limit=10) == 11
    assert reading.count_records([tmp_path / "r0" / "summary.json", tmp_path / "r1"]) == 2


def test_more_records_than_the_cap_is_one_line(tmp_path, capsys, monkeypatch):
    plant(tmp_path / "sweep", 12)
    monkeypatch.setattr(build, "MAX_REPORT_RECORDS", 10)
    read = []
    monkeypatch.setattr(build, "find_records", lambda paths: read.append(paths))
    assert main([str(tmp_path / "sweep")]) == 2
    err = capsys.readouterr().err
    assert "more than 10 run records" in err and len(err.strip().splitlines()) == 1 and not read
    assert not (tmp_path / "sweep" / "report.html").exists()


def test_the_cap_is_documented():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "offline-and-safety.md").read_text()
    assert f"{reading.MAX_REPORT_RECORDS:,}" in text
