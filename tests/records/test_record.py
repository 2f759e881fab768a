import json
import subprocess
import sys

import pytest

from normbench.analysis.claims import vocabulary
from normbench.configuration import contract
from normbench.records import record
from normbench.records.record import (
    FINAL_STATUSES,
    RESULT_STATUSES,
    RUNNING,
    STATUSES,
    TRAINED_STATUSES,
    RecordWriter,
    RunRecord,
    SetAside,
    config_hash,
    read_summary,
    write_json_atomic,
    write_record,
)
from normbench.studies import compare


def test_atomic_write_leaves_old_file_when_writing_fails(tmp_path, monkeypatch):
    path = tmp_path / "summary.json"
    write_json_atomic(path, {"schema": record.RECORD_FORMAT, "status": "running"})

    def broken_dumps(*a, **k):
        raise OSError("disk full")
    monkeypatch.setattr(record.json, "dumps", broken_dumps)
    with pytest.raises(OSError):
        write_json_atomic(path, {"status": "ok"})
    monkeypatch.undo()
    assert read_summary(path).status == "running"
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]  # no temp file left behind


@pytest.mark.parametrize("name", ["n" * 242, "n" * 255, "ü" * 127])
def test_a_name_the_filesystem_allows_is_written_whatever_its_length(tmp_path, name):
    """Hostile h16 N9 (B01, X09): the temporary file beside it was 14 bytes longer, so 242-255 bytes were refused."""
    record.write_file(tmp_path / name, "x")
    assert [p.name for p in tmp_path.iterdir()] == [name] and (tmp_path / name).read_text() == "x"


def test_an_error_of_the_temporary_file_names_the_file_asked_for(tmp_path):
    """Hostile h16 N9: "[Errno 36] File name too long: '.nnn….tmp'" named a hidden file the user never gave."""
    path = tmp_path / ("n" * 256)
    with pytest.raises(OSError) as error:
        record.write_file(path, "x")
    assert error.value.filename == str(path) and ".tmp" not in str(error.value)
    assert not list(tmp_path.iterdir())
    with pytest.raises(OSError) as error:
        record.write_file(tmp_path / "gone" / "f.json", "x")
    assert error.value.filename == str(tmp_path / "gone" / "f.json") and isinstance(error.value, FileNotFoundError)


def test_non_finite_numbers_are_written_as_null(tmp_path):
    write_json_atomic(tmp_path / "s.json", {"a": float("nan"), "b": [1.0, float("inf")], "c": {"d": -float("inf")}})
    assert json.loads((tmp_path / "s.json").read_text()) == {"a": None, "b": [1.0, None], "c": {"d": None}}


def test_record_lifecycle_and_metrics_lines_are_flushed(tmp_path):
    rec = RecordWriter(tmp_path)
    rec.start(config={"seed": 1})
    assert read_summary(tmp_path / "summary.json").status == RUNNING
    rec.log({"kind": "train", "step": 1, "loss": 0.5})
    assert json.loads((tmp_path / "metrics.jsonl").read_text())["loss"] == 0.5  # visible before close
    rec.summary["precision"] = {"dtype": "fp32"}  # the Trainer fills the dict; finish writes it
    rec.finish("ok", None, metrics={"best_val": 1.0})
    found = read_summary(tmp_path / "summary.json")
    assert isinstance(found, RunRecord) and found.run_dir == tmp_path and found.path == tmp_path / "summary.json"
    assert found.status == "ok" and found.final and found.summary["time"]["started"] and found.summary["time"]["ended"]
    assert found.summary["precision"] == {"dtype": "fp32"} and found == rec.record


def test_read_summary_sets_aside_partial_foreign_and_missing_records_with_a_reason(tmp_path):
    (tmp_path / "cut.json").write_text('{"schema": "normbench.run/1", "sta')
    (tmp_path / "foreign.json").write_text('{"schema": "other/2"}')
    reasons = {name: read_summary(tmp_path / name) for name in ("cut.json", "foreign.json", "missing.json")}
    assert all(isinstance(r, SetAside) for r in reasons.values())
    assert [r.why for r in reasons.values()] == ["unreadable summary.json", "schema 'other/2'", "no missing.json"]
    assert reasons["cut.json"].path == tmp_path / "cut.json"


def test_a_record_written_by_the_previous_version_reads_and_writes_back_byte_identical(tmp_path):
    # As 2b6f36d's RunRecord.finish wrote it: indent=1, keys in the runner's order, null for NaN.
    summary = {"schema": "normbench.run/2", "status": "diverged", "reason": "loss is non-finite at step 3",
               "config": {"seed": 2, "lr": 0.1}, "overrides": ["lr=0.1"], "config_hash": "ab" * 8,
               "group_hash": "cd" * 8, "seed": 2, "axes": {"lr": 0.1}, "task": {"name": "adding"},
               "metrics": {"best_val": None, "diverged_at_step": 3}, "later_key": [1, 2.5, "é"],
               "time": {"started": "2026-01-01T00:00:00+00:00", "ended": "2026-01-01T00:00:01+00:00"}}
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(summary, indent=1, sort_keys=False, allow_nan=False))
    before = path.read_bytes()
    found = read_summary(path)
    assert found.summary == summary and list(found.summary) == list(summary)
    write_record(found)
    assert path.read_bytes() == before


def test_a_record_is_of_its_run_by_recomputed_identity_not_its_recorded_hash(tmp_path):
    config = {"seed": 0, "lr": 0.1}
    old = RunRecord(tmp_path, {"schema": "normbench.run/1", "status": "ok", "config": config, "config_hash": "stale"})
    assert old.of_run(config_hash(config)) and not old.of_run("stale")
    assert not RunRecord(tmp_path, {"schema": "normbench.run/2", "status": "ok"}).of_run(config_hash(config))


def test_each_set_of_statuses_is_named_once_for_what_it_is():
    assert set(RESULT_STATUSES) < set(FINAL_STATUSES) < set(STATUSES) and RUNNING not in STATUSES
    assert set(RESULT_STATUSES) < set(TRAINED_STATUSES) and {"invalid", "skipped"}.isdisjoint(TRAINED_STATUSES)
    assert not hasattr(contract, "FINISHED") and not hasattr(compare, "FINISHED")
    assert not hasattr(vocabulary, "FINISHED")
    assert vocabulary.Claim.__dataclass_fields__["statuses"].default is RESULT_STATUSES


def test_the_record_module_imports_no_torch():
    code = "import sys, normbench.records.record, normbench.records.reading; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_config_hash_ignores_harness_keys_only():
    base = {"seed": 0, "lr": 0.1, "threads": 1, "progress": True}
    assert config_hash(base) == config_hash({**base, "threads": 8, "progress": False})
    assert config_hash(base) != config_hash({**base, "seed": 1})


def set_aside_why(tmp_path, fields: str) -> str:
    """Why a record whose top level holds ``fields`` (JSON text after its schema and status) is set aside."""
    path = tmp_path / "summary.json"
    path.write_text(f'{{"schema": "{record.RECORD_FORMAT}", "status": "ok", {fields}}}')
    found = read_summary(path)
    assert isinstance(found, SetAside), found
    return found.why


@pytest.mark.parametrize("text, why", [
    ("NaN", "config.lr is not a finite number"), ("Infinity", "config.lr is not a finite number"),
    ("-Infinity", "config.lr is not a finite number"), ("1e999", "config.lr is not a finite number"),
    ('"0.1"', "config.lr is not of type float"),
])
def test_a_float_setting_that_is_not_a_finite_number_is_named_as_such(tmp_path, text, why):
    """Hostile h14 B13 (R06): a record with lr NaN was set aside as "config.lr is not of type float"."""
    assert set_aside_why(tmp_path, f'"config": {{"lr": {text}, "seed": 1}}') == why
    assert set_aside_why(tmp_path, '"config": {"lr": 0.1, "seed": NaN}') == "config.seed is not a finite number"


@pytest.mark.parametrize("text, why", [
    (str(2**70), "config.steps is out of range (beyond int64)"), (str(-2**63 - 1), "config.steps is out of range (beyond int64)"),
    ('"2"', "config.steps is not of type int"), ("2.5", "config.steps is not of type int"),
])
def test_an_int_setting_beyond_int64_is_named_out_of_range(tmp_path, text, why):
    """Hostile h15 B14 (R06): steps 2**70 was set aside as "config.steps is not of type int"."""
    assert set_aside_why(tmp_path, f'"config": {{"steps": {text}, "seed": 1}}') == why


@pytest.mark.parametrize("kept, why", [
    ('"../../../etc/passwd"', "saved_model is not an object"), ("[1, 2]", "saved_model is not an object"),
    ('{"final": "model_final.pt"}', "saved_model.final is not an object"),
    ('{"best": [1]}', "saved_model.best is not an object"),
])
def test_a_saved_model_block_that_is_not_objects_is_set_aside(tmp_path, kept, why):
    """Hostile h15 B6 (P18, J01, A02): evaluate read saved_model.get(...) on a string or a list."""
    assert set_aside_why(tmp_path, f'"config": {{"seed": 1}}, "saved_model": {kept}') == why
