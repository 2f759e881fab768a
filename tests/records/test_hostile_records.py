"""Every reader of run records driven through one table of hostile summary.json files.

Each hostile file sits in a sweep beside one good record. Whatever reads the sweep (the report,
load_runs, compare, rerun, tune, the runner's resume and folder claims, the end of a sweep) must
return within seconds, set the hostile record aside, and keep the good one: no hang (FIFO), no
endless read (/dev/zero), no traceback (200,000 nested brackets), no memory blow-up (a huge file).
"""

from __future__ import annotations

import importlib.util
import json
import os
import warnings
from pathlib import Path

import pytest
from omegaconf import OmegaConf

import normbench
from normbench.records import reading as report_records
from normbench.records import record
from normbench.records.reading import find_records
from normbench.records.record import MAX_RECORD_BYTES, MAX_STRING, SetAside, read_summary
from normbench.report import build_report
from normbench.studies import compare, tune
from normbench.studies.sweep_end import RunsFailed, SweepSummary
from normbench.training import rerun, run

_spec = importlib.util.spec_from_file_location("record_factory", Path(__file__).parents[1] / "report" / "conftest.py")
factory = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(factory)

GOOD = factory.make_record("good")[0]


def _json(obj) -> bytes:
    return json.dumps(obj).encode()


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _huge(path: Path) -> None:
    with open(path, "wb") as handle:  # sparse: st_size says it all, nothing is read
        handle.truncate(MAX_RECORD_BYTES + 1)


def _link_to_good(path: Path) -> None:
    target = path.parent / "elsewhere.json"
    target.write_bytes(_json(GOOD))
    path.symlink_to(target)


def _bytes(data: bytes):
    return lambda path: path.write_bytes(data)


# name -> how to make the hostile summary.json
HOSTILE = {
    "fifo": _fifo,
    "dev_zero_link": _dev_zero,
    "huge": _huge,
    "link": _link_to_good,
    "folder": lambda path: path.mkdir(),
    "nested_200k": _bytes(b"[" * 200_000 + b"]" * 200_000),
    "nested_object": _bytes(b'{"a":' * 200_000 + b"1" + b"}" * 200_000),
    "non_utf8": _bytes(b'{"schema": "normbench.run/2", "status": "ok", "reason": "\xff\xfe"}'),
    "empty": _bytes(b""),
    "cut": _bytes(_json(GOOD)[:100]),
    "list": _bytes(b"[1, 2]"),
    "huge_int": _bytes(b'{"schema": "normbench.run/2", "status": "ok", "seed": ' + b"9" * 5000 + b"}"),
    "status_int": _bytes(_json({**GOOD, "status": 3})),
    "status_list": _bytes(_json({**GOOD, "status": ["ok"]})),
    "status_unknown": _bytes(_json({**GOOD, "status": "exploded"})),
    "metrics_list": _bytes(_json({**GOOD, "metrics": [1, 2]})),
    "config_string": _bytes(_json({**GOOD, "config": "lr=1"})),
    "environment_number": _bytes(_json({**GOOD, "environment": 7})),
    "schema_dict": _bytes(_json({**GOOD, "schema": {"a": 1}})),
    "config_lr_string": _bytes(_json({**GOOD, "config": {**GOOD["config"], "lr": "${oc.env:HOME}"}})),
    "config_layers_bool": _bytes(_json({**GOOD, "config": {**GOOD["config"], "model": {"layers": True}}})),
    "config_model_string": _bytes(_json({**GOOD, "config": {**GOOD["config"], "model": "lstm"}})),
    "config_task_name_list": _bytes(_json({**GOOD, "config": {**GOOD["config"], "task": {"name": ["adding"]}}})),
    "study_string": _bytes(_json({**GOOD, "study": "mine"})),
    "study_name_dict": _bytes(_json({**GOOD, "study": {"id": "x", "name": {"a": 1}}})),
    "study_name_list": _bytes(_json({**GOOD, "study": {"id": "x", "name": ["a"]}})),
    "study_id_list": _bytes(_json({**GOOD, "study": {"id": ["x"], "name": "a"}})),
    "study_arms_dicts": _bytes(_json({**GOOD, "study": {"id": "x", "arms": [{"a": 1}]}})),
    "keys_60k": _bytes(_json({**GOOD, "profiles": {f"p{i}": 1.0 for i in range(60_000)}})),
    "config_steps_beyond_int64": _bytes(_json({**GOOD, "config": {**GOOD["config"], "steps": 10 ** 30}})),
    "metrics_string": _bytes(_json({**GOOD, "metrics": {**GOOD["metrics"], "best_val": "0.9"}})),
    "metrics_2k_keys": _bytes(_json({**GOOD, "metrics": {f"m{i}": 1.0 for i in range(2_000)}})),
}
# Records that are read, but with their hazards defused.
DEFUSED = {
    "nan_metrics": _bytes(json.dumps({**GOOD, "metrics": {**GOOD["metrics"], "best_val": float("nan"),
                                                           "test": float("inf")}}).encode()),
    "long_reason": _bytes(_json({**GOOD, "status": "failed", "reason": "x" * 500_000})),
    "huge_values": _bytes(_json({**GOOD, "metrics": {**GOOD["metrics"], "best_val": 1e308, "grad_norm_median": 1e308},
                                 "profiles": {"grad_time_init": [1e308, 1e-308] * 10, "grad_time_final": [1e308] * 20},
                                 "throughput": {**GOOD["throughput"], "samples_per_s": 1e308}})),
    # JSON's \ud800 escapes: strings no parquet, CSV or terminal can encode, in a value, an axis and a key
    "lone_surrogates": _bytes(_json({**GOOD, "status": "failed", "reason": "\ud800abc",
                                     "overrides": ["norm=\udfff"], "axes": {**GOOD["axes"], "norm": "ln\ud800"},
                                     "profiles": {**GOOD["profiles"], "p\udc80": 1.0}})),
}
if not hasattr(os, "mkfifo"):
    HOSTILE.pop("fifo")


pytestmark = pytest.mark.usefixtures("no_hang")  # tests/conftest.py: a reader that blocks fails its test


def sweep_with(tmp_path: Path, make) -> Path:
    sweep = tmp_path / "sweep"
    factory.write_record(sweep, "good")
    (sweep / "bad").mkdir(parents=True)
    make(sweep / "bad" / "summary.json")
    return sweep


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_the_reader_sets_aside_every_hostile_record(tmp_path, name):
    sweep = sweep_with(tmp_path, HOSTILE[name])
    result = read_summary(sweep / "bad" / "summary.json")
    assert isinstance(result, SetAside) and result.why and "\n" not in result.why
    assert record.read_summary is report_records.read_summary is read_summary  # the runner's view: the same reader
    records = find_records([sweep])
    assert [r.run_dir.name for r in records.runs] == ["good"]
    assert [r.path.parent.name for r in records.set_aside] == ["bad"]


@pytest.fixture
def hostile_sweep(tmp_path) -> Path:
    """One good record and one folder per hostile record: every consumer reads them all at once."""
    sweep = tmp_path / "sweep"
    factory.write_record(sweep, "good")
    for name, make in HOSTILE.items():
        (sweep / f"bad-{name}").mkdir(parents=True)
        make(sweep / f"bad-{name}" / "summary.json")
    return sweep


def test_load_runs_compare_and_the_report_keep_the_good_record_only(hostile_sweep, tmp_path, capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        assert normbench.load_runs(hostile_sweep)["run_dir"].map(lambda d: Path(d).name).tolist() == ["good"]
        assert compare.main([str(hostile_sweep), str(hostile_sweep)]) == 0  # a folder compared with itself passes
        build_report([hostile_sweep], tmp_path / "out")
    assert (tmp_path / "out" / "report.html").is_file()
    warning = [line for line in capsys.readouterr().err.splitlines() if "set aside" in line]
    # one line from load_runs (h26 q10: it left them out unsaid), one from the report
    assert [line.partition(":")[0] for line in warning] == ["normbench", "normbench.report"]
    assert all(f"bad-{name}" in line for name in HOSTILE for line in warning)


def test_rerun_tune_resume_and_claims_pass_over_every_hostile_record(hostile_sweep, capsys):
    for name in HOSTILE:
        assert rerun.main([str(hostile_sweep / f"bad-{name}")]) == 2
        folder, lock = record.claim_run_dir(hostile_sweep / f"bad-{name}", "some-digest")
        os.close(lock)
        assert folder != hostile_sweep / f"bad-{name}"  # a folder holding what cannot be read is left alone
    assert tune._selection_seeds(hostile_sweep) == {0}
    assert run.finished_record(hostile_sweep / "new", hostile_sweep, "no-such-digest") is None
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.splitlines()) == len(HOSTILE)  # one line per refused rerun


def test_end_of_sweep_survives_every_hostile_record_and_reports_the_failed_run(hostile_sweep, capsys):
    factory.write_record(hostile_sweep, "broken", status="failed", seed=1)
    for report in (False, True):
        config = OmegaConf.create({"hydra": {"sweep": {"dir": str(hostile_sweep)}}, "report": report})
        with pytest.raises(RunsFailed) as failed:
            SweepSummary().on_multirun_end(config)
        assert failed.value.run_dirs == [str(hostile_sweep / "broken")]
        out, err = capsys.readouterr()
        assert "normbench sweep: 2 runs" in out
        assert len([line for line in err.splitlines() if "set aside" in line]) == 1
    assert (hostile_sweep / "report.html").is_file()


@pytest.mark.parametrize("name", sorted(DEFUSED))
def test_hazards_inside_a_readable_record_are_defused(tmp_path, name):
    sweep = sweep_with(tmp_path, DEFUSED[name])
    result = read_summary(sweep / "bad" / "summary.json")
    assert not isinstance(result, SetAside)
    strings = [v for v in json.dumps(result.summary, ensure_ascii=False).split('"') if v]
    assert max(map(len, strings)) <= MAX_STRING
    assert "NaN" not in json.dumps(result.summary) and "Infinity" not in json.dumps(result.summary)
    json.dumps(result.summary, ensure_ascii=False).encode("utf-8")  # every string can be written
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        assert len(normbench.load_runs(sweep)) >= 1
        assert compare.main([str(sweep), str(sweep)]) in (0, 1)
        build_report([sweep], tmp_path / "out")
    assert (tmp_path / "out" / "report.md").stat().st_size < 1_000_000


def test_a_lone_surrogate_is_kept_as_its_escape(tmp_path):
    sweep = sweep_with(tmp_path, DEFUSED["lone_surrogates"])
    summary = read_summary(sweep / "bad" / "summary.json").summary
    assert summary["reason"] == "\\ud800abc" and summary["axes"]["norm"] == "ln\\ud800"
    assert "p\\udc80" in summary["profiles"]
    (sweep / "bad" / "metrics.jsonl").write_text('{"kind": "train", "step": 1, "loss": 1.0, "note": "\\ud800"}\n')
    from normbench.records.reading import read_curves

    read_curves([sweep / "bad"]).to_parquet(tmp_path / "curves.parquet")


def test_metrics_jsonl_readers_pass_over_the_same_hostile_files(tmp_path):
    from normbench.records.reading import read_curves

    runs = []
    for name, make in HOSTILE.items():
        if name == "folder":
            continue
        run_dir = tmp_path / name
        run_dir.mkdir()
        make(run_dir / "metrics.jsonl")
        runs.append(run_dir)
    assert read_curves(runs).empty


def test_a_resumed_sweep_passes_over_a_hostile_record(tmp_path):
    """Resume reads every record of the sweep: one bad file must not crash each job."""
    sweep = sweep_with(tmp_path, HOSTILE["nested_200k"])
    summary = read_summary(sweep / "good" / "summary.json").summary
    assert summary["status"] == "ok"
    assert run.finished_record(sweep / "x", sweep, "0" * 16) is None  # a hash that is not its config's
    from normbench.configuration.contract import config_hash

    assert run.finished_record(sweep / "x", sweep, config_hash(GOOD["config"])) == sweep / "good" / "summary.json"


@pytest.mark.parametrize("occupant", ["finished", "unreadable", "unfinished_other"])
def test_a_run_that_steps_beside_a_kept_folder_leaves_no_lock_there(tmp_path, occupant):
    # O06: an empty .normbench.lock was left in a folder the run only looked into
    kept = tmp_path / "0"
    if occupant == "unreadable":
        kept.mkdir()
        (kept / "summary.json").write_text("{not json")
    else:
        factory.write_record(tmp_path, "0", status="ok" if occupant == "finished" else "running")
    before = sorted(p.name for p in kept.iterdir())
    folder, lock = record.claim_run_dir(kept, "some-digest")
    os.close(lock)
    assert folder != kept and (folder / record.LOCK).exists()
    after = sorted(p.name for p in kept.iterdir())
    # beside an unfinished record the lock stays: another attempt at that run may be opening it
    assert after == (sorted([*before, record.LOCK]) if occupant == "unfinished_other" else before)
