import json

import pytest

from normbench import record
from normbench.record import RunRecord, config_hash, read_summary, write_json_atomic


def test_atomic_write_leaves_old_file_when_writing_fails(tmp_path, monkeypatch):
    path = tmp_path / "summary.json"
    write_json_atomic(path, {"schema": record.SCHEMA, "status": "running"})

    def broken_dumps(*a, **k):
        raise OSError("disk full")
    monkeypatch.setattr(record.json, "dumps", broken_dumps)
    with pytest.raises(OSError):
        write_json_atomic(path, {"status": "ok"})
    monkeypatch.undo()
    assert read_summary(path)["status"] == "running"
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]  # no temp file left behind


def test_non_finite_numbers_are_written_as_null(tmp_path):
    write_json_atomic(tmp_path / "s.json", {"a": float("nan"), "b": [1.0, float("inf")], "c": {"d": -float("inf")}})
    assert json.loads((tmp_path / "s.json").read_text()) == {"a": None, "b": [1.0, None], "c": {"d": None}}


def test_record_lifecycle_and_metrics_lines_are_flushed(tmp_path):
    rec = RunRecord(tmp_path)
    rec.start(config={"seed": 1})
    assert read_summary(tmp_path / "summary.json")["status"] == "running"
    rec.log({"kind": "train", "step": 1, "loss": 0.5})
    assert json.loads((tmp_path / "metrics.jsonl").read_text())["loss"] == 0.5  # visible before close
    rec.finish("ok", None, metrics={"best_val": 1.0})
    s = read_summary(tmp_path / "summary.json")
    assert s["status"] == "ok" and s["time"]["started"] and s["time"]["ended"]


def test_read_summary_rejects_partial_and_foreign_records(tmp_path):
    (tmp_path / "cut.json").write_text('{"schema": "normbench.run/1", "sta')
    (tmp_path / "foreign.json").write_text('{"schema": "other/2"}')
    assert read_summary(tmp_path / "cut.json") is None
    assert read_summary(tmp_path / "foreign.json") is None
    assert read_summary(tmp_path / "missing.json") is None


def test_config_hash_ignores_harness_keys_only():
    base = {"seed": 0, "lr": 0.1, "threads": 1, "progress": True}
    assert config_hash(base) == config_hash({**base, "threads": 8, "progress": False})
    assert config_hash(base) != config_hash({**base, "seed": 1})
