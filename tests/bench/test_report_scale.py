"""bench.report_scale's synthetic sweep is one the report reads: every record a run record of this format."""

from normbench.bench.report_scale import write_sweep
from normbench.configuration.contract import config_hash
from normbench.records.record import RunRecord, read_summary


def test_every_synthetic_record_is_read_as_a_run_record(tmp_path):
    """The records were of format /1 with a flat config after the config became nested: all 500 set aside
    ("config.model is not an object"), the benchmark ended in "no usable run records"."""
    write_sweep(tmp_path, 120)  # 108 settings, then seed 1
    records = [read_summary(path) for path in sorted((tmp_path / "multirun").glob("*/summary.json"))]
    assert len(records) == 120 and all(isinstance(r, RunRecord) for r in records), \
        {getattr(r, "reason", None) for r in records}
    assert all(r.summary["config_hash"] == config_hash(r.config) for r in records)
    assert {r.config["model"]["family"] for r in records} == {"transformer", "lstm"}
