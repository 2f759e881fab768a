"""A committed report can be re-derived without its run folders (issue 45): from runs.csv, curves.csv and
paired-timing.csv alone, the suite's own functions give the "still improving" gate the page printed and
the paired speed verdict claims.csv holds."""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pandas as pd
import pytest

from normbench.analysis import aggregate, regime, speed
from normbench.analysis.claims import CONTRADICTED, INCONCLUSIVE, SUPPORTED
from normbench.analysis.claims.convergence_parts import curve_summaries
from normbench.analysis.intervals import decision_level
from normbench.analysis.rules import ALPHA
from normbench.records import published
from normbench.records.reading import find_records
from normbench.report import build_report
from tests.report.conftest import write_record

STUDY = {"schema": "normbench.study/1", "id": "s1", "name": "dyt_speed", "arms": ["norm"], "command": ""}
# RMSNorm's runs climb to the end (the last evaluation beats the best of the final 25% by 0.2) and reach
# half-way from chance to the best (0.5) at step 75, DyT's (conftest's curve) at step 25
RISING = [0.2, 0.4, 0.7, 0.9]


def _sweep(folder, write_record) -> pd.DataFrame:
    """DyT and RMSNorm, 3 seeds each, on a GPU at bf16 (the paper's hardware, which the speed claim needs);
    RMSNorm's curves still rising; a bench arms file in which DyT's step is 1.25× RMSNorm's over 20 shared
    rounds."""
    for seed in (0, 1, 2):
        for norm in ("dyt", "rms"):
            run = write_record(folder, f"{norm}-{seed}", seed=seed, best_val=0.9, study=STUDY,
                               axes={"norm": norm, "impl": "native", "precision": "bf16"},
                               environment={"device": "cuda"}, throughput={"step_ms_median": 10.0, "step_ms_p10": 10.0, "step_ms_p90": 11.0})
            if norm == "rms":
                lines = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
                evals = iter(RISING)
                lines = [{**line, "val_metric": next(evals)} if line["kind"] == "eval" else line for line in lines]
                (run / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    runs = aggregate.runs_frame(find_records([folder]).runs)
    rng = np.random.default_rng(0)
    rms = 10 + rng.normal(0, 0.3, 20)
    arms = [{"group_hash": str(runs.loc[runs["axes.norm"] == norm, "group_hash"].iloc[0]), "study": "s1",
             "group": f"norm={norm}", "arm": f"norm={norm}", "reference": "norm=rms",
             "rounds_ms": list(rms * factor * (1 + rng.normal(0, 0.01, 20)))}
            for norm, factor in (("dyt", 1.25), ("rms", 1.0))]
    (folder / speed.FILE).write_text(json.dumps({"schema": speed.PAIRED_TIMING_FORMAT, "arms": arms, "rounds": 20,
                                                 "threads": 1, "device": "cuda", "created": "2026-12-02T00:00:00"}))
    return runs


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("published")
    runs = _sweep(root / "sweep", write_record)
    build_report([root / "sweep"], root / "out")
    # the claims' steps to target as the records give them, before the records go
    RECORDED["steps_to_target"] = curve_summaries(runs).set_index(runs["run_dir"].astype(str))["steps_to_target"]
    shutil.rmtree(root / "sweep")  # what is committed: the report folder, never the records
    return root / "out"


RECORDED: dict[str, pd.Series] = {}


def test_the_report_writes_the_curves_and_the_paired_rounds(report):
    found = published.load(report)
    assert list(pd.read_csv(report / published.CURVES).columns) == published.CURVE_TABLE_COLUMNS
    assert len(found.curves) == 6 * 4  # six runs, an evaluation every 25 of 100 steps
    assert set(found.curves["run_dir"]) == set(found.runs["run_dir"])  # runs.csv's ids
    rms = found.curves[found.curves["run_dir"].str.endswith("rms-0")].sort_values("step")
    assert list(rms["val_metric"]) == RISING
    assert list(rms["examples"]) == [25 * 32, 50 * 32, 75 * 32, 100 * 32]  # step × batch_size
    assert list(rms["val_smoothed"]) == pytest.approx([0.2, 0.3, (0.2 + 0.4 + 0.7) / 3, (0.4 + 0.7 + 0.9) / 3])
    assert rms["loss"].tolist() == pytest.approx([2.0 / s ** 0.5 if s % 10 == 0 else math.nan for s in rms["step"]],
                                                 nan_ok=True)
    timing = pd.read_csv(report / published.PAIRED_TIMING)
    assert list(timing.columns) == published.PAIRED_TIMING_COLUMNS
    assert len(timing) == 2 * 20 and set(timing["round"]) == set(range(1, 21))
    assert "source" not in timing  # no machine's paths in a committed file


def test_the_still_improving_gate_is_re_derived_from_the_published_files(report):
    """The page's gate, recomputed by regime.still_improving from runs.csv and curves.csv; the records
    are gone, so nothing else can have fed it."""
    found = published.load(report)
    runs = found.runs
    arms = {str(arm): frame for arm, frame in runs.groupby("arm", sort=False)}
    gate = regime.still_improving(arms, runs, found.curves)
    assert gate is not None and gate.kind == regime.STILL_IMPROVING
    assert "norm=rms: 3 of 3 runs" in gate.reason and "dyt" not in gate.reason
    page = (report / "report.md").read_text()
    assert gate.reason in page, gate.reason


def test_a_curve_that_stops_rising_would_lift_the_gate(report, tmp_path):
    """The gate really reads curves.csv: flatten RMSNorm's last evaluation and it no longer holds."""
    found = published.load(report)
    curves = found.curves.copy()
    last = curves.groupby("run_dir")["step"].transform("max") == curves["step"]
    curves.loc[last, "val_metric"] = 0.7
    arms = {str(arm): frame for arm, frame in found.runs.groupby("arm", sort=False)}
    assert regime.still_improving(arms, found.runs, curves) is None


def test_the_paired_speed_verdict_is_re_derived_from_paired_timing_csv(report):
    """dyt_faster_than_rms as claims.csv holds it: the sign test on the per-round log ratios of the two
    arms' rounds in paired-timing.csv (one timing: they shared every round)."""
    found = published.load(report)
    rounds = found.paired.set_index("arm")["rounds_ms"]
    logs = np.log(np.asarray(rounds["norm=dyt"]) / np.asarray(rounds["norm=rms"]))
    signs = speed.sign_test(logs, decision_level(ALPHA))
    status = SUPPORTED if signs.p_below <= ALPHA else CONTRADICTED if signs.p_above <= ALPHA else INCONCLUSIVE
    claims = pd.read_csv(report / "claims.csv")
    (row,) = claims[claims["claim"] == "dyt_faster_than_rms"].itertuples()
    assert row.verdict_code == status == CONTRADICTED and row.verdict == "not reproduced in this setup"
    assert float(row.effect) == pytest.approx(math.exp(signs.median), rel=1e-12)
    assert (float(row.effect_low), float(row.effect_high)) == pytest.approx((math.exp(signs.low), math.exp(signs.high)),
                                                                            rel=1e-12)


def test_the_claims_steps_to_target_are_re_derived_from_curves_csv(report):
    """curve_summaries (the convergence claims' steps to target) on runs.csv and curves.csv gives, run by
    run, what it gave on the records; a changed curve would change it."""
    found = published.load(report)
    again = curve_summaries(found.runs, found.curves).set_index(found.runs["run_dir"].astype(str))["steps_to_target"]
    recorded = RECORDED["steps_to_target"]
    assert recorded.notna().all() and recorded.nunique() > 1  # rms reaches the target sooner: a real comparison
    pd.testing.assert_series_equal(again.sort_index(), recorded.sort_index(), check_names=False)


def test_curves_past_the_plain_size_are_gzipped_the_same_every_time(report, tmp_path, monkeypatch):
    """Past CURVES_PLAIN_MAX the table is curves.csv.gz, byte for byte the same on a rebuild (no gzip
    timestamp: a committed report diffs clean), and load reads it as it reads the plain one."""
    found = published.load(report)
    table = pd.read_csv(report / published.CURVES)
    monkeypatch.setattr(published, "CURVES_PLAIN_MAX", 100)
    first = published.write_curves(table, tmp_path)
    assert first.name == "curves.csv.gz" and not (tmp_path / published.CURVES).exists()
    bytes_once = first.read_bytes()
    assert published.write_curves(table, tmp_path).read_bytes() == bytes_once
    shutil.copy(report / "runs.csv", tmp_path / "runs.csv")
    pd.testing.assert_frame_equal(published.load(tmp_path).curves, found.curves)


def test_the_reproduce_block_links_the_published_files(report):
    # a reader of the committed page finds the curves and the paired rounds from "How to reproduce"
    for page in ("report.md", "report.html"):
        text = (report / page).read_text()
        block = text[text.index("How to reproduce"):]
        assert published.CURVES in block and published.PAIRED_TIMING in block, page


def test_both_failure_rules_are_published_under_their_own_names(report, tmp_path):
    """Referee 26 (3): runs.csv and summary.csv name the chance band at_chance and carry the claims' "did not
    train" (failed_to_learn, with the trivial solution a run was held at), so the page's gates can be re-derived
    from the published files; an older runs.csv's metrics.did_not_train reads as metrics.at_chance."""
    runs, summary = pd.read_csv(report / "runs.csv"), pd.read_csv(report / "summary.csv")
    assert {"metrics.at_chance", "metrics.failed_to_learn", "metrics.held_at"} <= set(runs.columns)
    assert {"at_chance", "failed_to_learn"} <= set(summary.columns)
    assert not any("did_not_train" in column for column in [*runs.columns, *summary.columns])
    older = pd.read_csv(report / "runs.csv").rename(columns={"metrics.at_chance": "metrics.did_not_train"})
    older.to_csv(tmp_path / "runs.csv", index=False)
    found = published.load(tmp_path).runs
    assert "metrics.did_not_train" not in found
    assert found["metrics.at_chance"].tolist() == runs["metrics.at_chance"].tolist()
