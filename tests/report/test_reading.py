"""Finding and reading records: partial, foreign and incomplete ones are set aside, never fatal."""

from __future__ import annotations

import json
import os
import warnings

import numpy as np
import pytest

from normbench.analysis.aggregate import runs_frame
from normbench.records.reading import MAX_LINE_BYTES, VALUE_COLUMNS, find_records, read_curves
from normbench.report import build_report


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


GARBAGE = [
    "[1, 2]", '"text"', "42", "null", "\x00\xff\xfe", "[" * 100_000, '{"kind": "train"}',
    '{"kind": "train", "step": "abc", "loss": 1}', '{"kind": "train", "step": true, "loss": 1, "grad_norm": 1}',
    '{"kind": "train", "step": 1e300, "loss": 1}', '{"kind": "train", "step": -5, "loss": 1}',
    '{"kind": "train", "step": Infinity, "grad_norm": 2}', '{"kind": "train", "step": NaN, "loss": 1}',
    '{"kind": "train", "step": 10, "loss": ' + "9" * 400 + ', "grad_norm": ' + "9" * 400 + "}",
    '{"kind": "train", "step": ' + "9" * 400 + ', "loss": 1}',
    '{"kind": "eval", "step": 25, "val_metric": {"a": 1}, "val_loss": [1], "time_s": "x"}',
    '{"kind": "train", "step": 20, "grad_norm": -1, "time_s": -3}', '{"kind": "train", "step": 20, "grad_norm": 0}',
    '{"kind": "eval", "step": 25, "val_metric": -Infinity, "time_s": Infinity}',
]
# Per seed, so that the bands across seeds span the widest range: finite values a float32 cannot
# hold (set aside) and the float32 extremes (kept).
EXTREMES = {
    0: ['{"kind": "train", "step": 10, "loss": 1e308, "grad_norm": 1e308, "time_s": 1e308}',
        '{"kind": "eval", "step": 25, "val_metric": 1e308, "val_loss": 1e-320, "time_s": 1e308}',
        '{"kind": "train", "step": 30, "loss": 3.4e38, "grad_norm": 3.4e38, "time_s": 3.4e38}',
        '{"kind": "eval", "step": 50, "val_metric": 3.4e38, "val_loss": 3.4e38, "time_s": 3.4e38}'],
    1: ['{"kind": "train", "step": 10, "loss": -1e308, "grad_norm": 1e-300, "time_s": 1e-300}',
        '{"kind": "eval", "step": 25, "val_metric": 1e-300, "val_loss": -1e308, "time_s": 1e-300}',
        '{"kind": "train", "step": 30, "loss": 1.4e-45, "grad_norm": 1.4e-45, "time_s": 1.4e-45}',
        '{"kind": "eval", "step": 50, "val_metric": 1.4e-45, "val_loss": -3.4e38, "time_s": 0}'],
}


def test_garbage_lines_are_skipped_and_raise_no_warnings(tmp_path, write_record):
    runs = []
    for seed in (0, 1):
        for norm in ("ln", "rms"):
            run = write_record(tmp_path / "sweep", f"{norm}{seed}", seed=seed, axes={"norm": norm})
            with open(run / "metrics.jsonl", "a", encoding="utf-8") as handle:
                handle.write("\n".join(GARBAGE + EXTREMES[seed]) + "\n")
            runs.append(run)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        curves = read_curves(runs)
        build_report([tmp_path / "sweep"], tmp_path / "out")
    assert curves["step"].between(0, 2**53).all()
    assert (curves["time_s"].dropna() >= 0).all() and np.isfinite(curves["time_s"].dropna()).all()
    finite = curves[VALUE_COLUMNS].to_numpy().ravel()
    finite = np.abs(finite[np.isfinite(finite) & (finite != 0)])
    assert ((finite >= np.finfo(np.float32).smallest_subnormal) & (finite <= np.finfo(np.float32).max)).all()
    assert (curves["grad_norm"] == 3.4e38).sum() == 2  # the float32 extremes stay
    assert (tmp_path / "out" / "figures" / "grad_norm_vs_step.png").is_file()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")
def test_metrics_jsonl_that_is_a_fifo_or_a_device_reads_as_empty(tmp_path, write_record):
    fifo_run = write_record(tmp_path, "fifo")
    (fifo_run / "metrics.jsonl").unlink()
    os.mkfifo(fifo_run / "metrics.jsonl")
    device_run = write_record(tmp_path, "device")
    (device_run / "metrics.jsonl").unlink()
    (device_run / "metrics.jsonl").symlink_to("/dev/zero")
    assert read_curves([fifo_run, device_run]).empty  # a blocking or endless read would never return


def test_an_overlong_line_is_skipped_without_losing_the_next(tmp_path, write_record):
    run = write_record(tmp_path, "a")
    before = len(read_curves([run]))
    with open(run / "metrics.jsonl", "a", encoding="utf-8") as handle:
        handle.write('{"kind": "train", "step": 7, "pad": "' + "x" * (3 * MAX_LINE_BYTES) + '"}\n')
        handle.write('{"kind": "train", "step": 8, "loss": 1.0}\n')
    steps = read_curves([run])["step"].tolist()
    assert len(steps) == before + 1 and 8 in steps and 7 not in steps
