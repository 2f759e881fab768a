"""read_curves parses each version of a metrics.jsonl once within curves_kept (a report's build), and reads what it
always read.

The reference below is read_curves as it was before the parse was kept (rows of dicts, every entry's strings
defused first), frozen here: the new reader must give the same frame, values, types and order, on lines a
hostile or killed run can leave.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from pathlib import Path

import pandas as pd

from normbench.records import reading
from normbench.records.reading import CURVE_COLUMNS, METRICS, VALUE_COLUMNS, read_curves
from normbench.records.record import bounded


def old_read_curves(run_dirs) -> pd.DataFrame:
    rows: list[dict] = []
    for run_dir in run_dirs:
        opened = reading._open_regular(Path(run_dir) / METRICS)
        if opened is None:
            continue
        for entry in map(bounded, reading._jsonl_objects(opened[0])):
            if entry.get("kind") not in ("train", "eval"):
                continue
            step = entry.get("step")
            if type(step) is not int or not 0 <= step <= reading.MAX_STEP:
                continue
            time_s = reading._number(entry.get("time_s"))
            rows.append({"run_dir": str(run_dir), "kind": entry["kind"], "step": step,
                         "time_s": time_s if math.isfinite(time_s) and time_s >= 0 else math.nan,
                         **{column: reading._number(entry.get(column)) for column in VALUE_COLUMNS}})
    return pd.DataFrame(rows, columns=CURVE_COLUMNS).astype({c: float for c in CURVE_COLUMNS[2:]})


HOSTILE_LINES = [
    '{"kind": "train", "step": 1, "time_s": 0.5, "loss": 2.5, "grad_norm": 1.0}',
    '{"kind": "eval", "step": 1, "time_s": 0.6, "val_metric": 0.25, "val_loss": 2.4}',
    '{"kind": "probe", "step": 1, "layers": {"0": 1.0}}',
    '{"kind": "train", "step": 2, "time_s": -1, "loss": NaN, "grad_norm": Infinity}',
    '{"kind": "train", "step": 3, "time_s": "soon", "loss": true, "grad_norm": 1e39}',
    '{"kind": "train", "step": 4.0, "loss": 1.0}',
    '{"kind": "train", "step": -1, "loss": 1.0}',
    '{"kind": "train", "step": 9007199254740993, "loss": 1.0}',
    '{"kind": "eval\\ud800", "step": 5, "val_metric": 0.5}',
    '{"kind": "eval", "step": 6, "val_metric": 1e-50, "val_loss": 123456789012345678901234567890}',
    '{"kind": "train", "step": 7, "loss": 1' + "0" * 400 + '}',
    '{"kind": "train", "note": "\\ud800 lone", "step": 8, "loss": 0.0, "grad_norm": -0.0}',
    '[1, 2, 3]',
    '{"kind": "eval", "step": 9, "val_metric": 0.75',  # cut short by a kill
]


def write(run: Path, lines: list[str]) -> Path:
    run.mkdir(parents=True, exist_ok=True)
    (run / METRICS).write_text("\n".join(lines) + "\n")
    return run


def test_the_kept_parse_reads_what_the_old_reader_read(tmp_path):
    runs = [write(tmp_path / "hostile", HOSTILE_LINES),
            write(tmp_path / "empty", []),
            write(tmp_path / "probes-only", [HOSTILE_LINES[2]] * 3),
            tmp_path / "missing",
            write(tmp_path / "plain", [json.dumps({"kind": "eval", "step": s, "val_metric": s / 10, "time_s": s})
                                       for s in range(5)])]
    os.symlink(tmp_path / "plain" / METRICS, write(tmp_path / "linked", []) / "other")
    (tmp_path / "linked" / METRICS).unlink()
    os.symlink(tmp_path / "plain" / METRICS, tmp_path / "linked" / METRICS)  # a link is never followed
    runs.append(tmp_path / "linked")
    for order in (runs, runs[::-1], runs + runs):  # within curves_kept, a second read comes from what was kept
        for kept in (reading.curves_kept(), contextlib.nullcontext()):
            with kept:
                new, old = read_curves(order), old_read_curves(order)
            pd.testing.assert_frame_equal(new, old, check_exact=True)
            assert list(new.dtypes) == list(old.dtypes)
    assert read_curves([tmp_path / "hostile"])["step"].tolist() == [1, 1, 2, 3, 6, 7, 8]  # train or eval, valid step
    for nothing in ([], [tmp_path / "empty"], [tmp_path / "missing"], [tmp_path / "linked"]):
        pd.testing.assert_frame_equal(read_curves(nothing), old_read_curves(nothing), check_exact=True)


def test_a_file_that_changes_is_read_again(tmp_path):
    run = write(tmp_path / "run", ['{"kind": "eval", "step": 1, "val_metric": 0.5}'])
    assert read_curves([run])["val_metric"].tolist() == [0.5]
    with open(run / METRICS, "a") as handle:  # the run goes on
        handle.write('{"kind": "eval", "step": 2, "val_metric": 0.6}\n')
    assert read_curves([run])["val_metric"].tolist() == [0.5, 0.6]
    before = os.stat(run / METRICS)
    (run / METRICS).write_text('{"kind": "eval", "step": 1, "val_metric": 0.9}\n'
                               '{"kind": "eval", "step": 2, "val_metric": 0.8}\n')  # same size, rewritten
    os.utime(run / METRICS, ns=(before.st_atime_ns, before.st_mtime_ns + 1))
    assert os.stat(run / METRICS).st_size == before.st_size
    assert read_curves([run])["val_metric"].tolist() == [0.9, 0.8]


def test_a_file_is_parsed_once_within_curves_kept_and_at_each_read_outside(tmp_path, monkeypatch):
    run = write(tmp_path / "run", ['{"kind": "train", "step": 1, "loss": 2.0}'])
    parsed = []
    original = reading._jsonl_objects
    monkeypatch.setattr(reading, "_jsonl_objects", lambda fd: parsed.append(fd) or original(fd))
    with reading.curves_kept():
        for _ in range(3):
            assert read_curves([run])["loss"].tolist() == [2.0]
        with reading.curves_kept():  # within another: the same
            assert read_curves([run])["loss"].tolist() == [2.0]
    assert len(parsed) == 1
    assert reading._PARSED is None  # let go on leaving
    for _ in range(2):
        assert read_curves([run])["loss"].tolist() == [2.0]
    assert len(parsed) == 3


def test_within_curves_kept_a_file_that_changes_is_read_again(tmp_path):
    with reading.curves_kept():
        test_a_file_that_changes_is_read_again(tmp_path)
