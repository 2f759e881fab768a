"""Finding and reading records: partial, foreign and incomplete ones are set aside, never fatal."""

from __future__ import annotations

import json

from normbench.report.aggregate import runs_frame
from normbench.report.records import find_records, read_curves


def test_find_records_sets_aside_unreadable_and_foreign(tmp_path, write_record):
    write_record(tmp_path, "good")
    write_record(tmp_path, "nested/deeper/good2", seed=1)
    (tmp_path / "cut").mkdir()
    (tmp_path / "cut" / "summary.json").write_text('{"schema": "normbench.run/1", "status": "o')
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "summary.json").write_text(json.dumps({"schema": "someone.else/2", "status": "ok"}))
    (tmp_path / "bare").mkdir()
    (tmp_path / "bare" / "summary.json").write_text(json.dumps({"status": "ok"}))
    records = find_records([tmp_path, tmp_path / "good", tmp_path / "missing"])
    assert sorted(r.run_dir.name for r in records.runs) == ["good", "good2"]  # no duplicate
    assert sorted((r.path.parent.name, r.why) for r in records.set_aside) == [
        ("bare", "no schema"), ("cut", "unreadable summary.json"), ("other", "schema 'someone.else/2'")]
    assert records.missing_paths == [tmp_path / "missing"]


def test_running_record_is_marked_incomplete(tmp_path, write_record):
    write_record(tmp_path, "dead", status="running", reason=None)
    runs = runs_frame(find_records([tmp_path]).runs)
    assert runs["status"].tolist() == ["incomplete"]
    assert "process died" in runs["reason"].iloc[0]


def test_read_curves_tolerates_a_cut_last_line_and_skips_probes(tmp_path, write_record):
    run = write_record(tmp_path, "a")
    text = (run / "metrics.jsonl").read_text()
    full = [json.loads(line) for line in text.splitlines()]
    (run / "metrics.jsonl").write_text(text + '{"kind": "eval", "step": 999, "val_met')
    curves = read_curves([run, tmp_path / "no-such-run"])
    assert 999 not in curves["step"].tolist()
    assert len(curves) == sum(line["kind"] in ("train", "eval") for line in full)
    assert set(curves["kind"]) == {"train", "eval"}
    evals = curves[curves["kind"] == "eval"]
    assert evals["val_metric"].notna().all() and evals["time_s"].notna().all()


def test_non_finite_values_parse(tmp_path):
    run = tmp_path / "r"
    run.mkdir()
    (run / "metrics.jsonl").write_text('{"kind": "train", "step": 1, "loss": NaN, "grad_norm": Infinity}\n')
    curves = read_curves([run])
    assert curves["grad_norm"].iloc[0] == float("inf")
