"""The fields the report reads are checked by the one reader (record.CHECKED_FIELDS): a record whose field is
of another type is set aside naming it, never used (hostile h26 r01, r04, r25, r28, q10)."""

from __future__ import annotations

import json

import pytest

from normbench import load_runs
from normbench.records.record import CHECKED_FIELDS, RunRecord, SetAside, read_summary
from tests.report.conftest import write_record

# each checked field: values that must set the record aside (the raw JSON text, so that 1e400 stays itself)
WRONG = {
    "seed": ['"zero"', "true", "-1", "1.5", "null"],
    "metrics": ["[]", '"x"'],
    "metrics.*": ["true", '"0.5"', '{"a": 1}', "1" + "0" * 400, "1e400"],
}


def test_every_checked_field_has_wrong_values_here():
    assert set(WRONG) == set(CHECKED_FIELDS)


def _put(summary_path, field, text):
    summary = json.loads(summary_path.read_text())
    block, _, key = field.partition(".")
    target, name = (summary["metrics"], "final_val") if key == "*" else (summary, block)
    target[name] = "@@VALUE@@"
    if text == "ABSENT":
        del target[name]
    summary_path.write_text(json.dumps(summary).replace('"@@VALUE@@"', text))
    return name


@pytest.mark.parametrize(("field", "text"), [(f, t) for f, texts in WRONG.items() for t in texts])
def test_a_record_whose_checked_field_is_wrong_is_set_aside_naming_it(tmp_path, capsys, field, text):
    run = write_record(tmp_path, "run-0", seed=0, axes={"task": "adding"}, best_val=0.5)
    name = _put(run / "summary.json", field, text)
    read = read_summary(run / "summary.json")
    assert isinstance(read, SetAside), read
    assert name in read.why
    assert load_runs(tmp_path).empty
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 1 and "set aside 1 record(s)" in said[0] and name in said[0]


@pytest.mark.parametrize(("field", "text"), [("seed", "3"), ("metrics.*", "null"), ("metrics.*", "NaN"),
                                             ("metrics.*", "Infinity"), ("metrics.*", "7"), ("metrics.*", "[1, 2]")])
def test_a_record_whose_checked_field_is_right_is_read(tmp_path, field, text):
    run = write_record(tmp_path, "run-0", seed=0, axes={"task": "adding"}, best_val=0.5)
    _put(run / "summary.json", field, text)
    assert isinstance(read_summary(run / "summary.json"), RunRecord)


def test_an_older_records_frozen_flag_and_a_missing_metrics_block_are_read(tmp_path):
    # records of b1fa2f9 carry metrics.did_not_train (read as metrics.at_chance) as a bool (tests/data/records_b1fa2f9); a finished record
    # without metrics is still a finished run (resume finds it: tests/test_identity.py)
    run = write_record(tmp_path, "run-0", seed=0, axes={"task": "adding"}, best_val=0.5)
    summary = json.loads((run / "summary.json").read_text())
    summary["metrics"]["did_not_train"] = True
    (run / "summary.json").write_text(json.dumps(summary))
    assert isinstance(read_summary(run / "summary.json"), RunRecord)
    del summary["metrics"]
    (run / "summary.json").write_text(json.dumps(summary))
    assert isinstance(read_summary(run / "summary.json"), RunRecord)
