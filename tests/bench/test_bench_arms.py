"""Paired timing of a study's arms: rebuilt from the records, interleaved, warm-up excluded, read by the report."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from normbench.analysis import speed
from normbench.bench import arms
from normbench.bench.__main__ import main
from normbench.bench.timing import WallClock
from normbench.checks import cores
from normbench.report.build import build_report
from normbench.training import machine

ROOT = Path(__file__).resolve().parents[2]
WARMUP, ROUNDS, STEPS = 2, 6, 3
COST = {"norm=ln": 2e-3, "norm=rms": 1e-3}  # seconds per step on the fake clock
WARMUP_COST = 10.0  # a warm-up step this slow would show in any median it leaked into


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """A real multirun: 2 arms (norm=ln,rms) x 2 seeds, a few steps each."""
    sweep = tmp_path_factory.mktemp("study")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop("NORMBENCH_STUDY", None)
    subprocess.run([sys.executable, "-m", "normbench", "-m", "norm=ln,rms", "seed=0,1", "steps=4", "eval_every=2", "timing_warmup=1",
                    "threads=1", "report=false", "progress=false", f"hydra.sweep.dir={sweep}"],
                   check=True, env=env, capture_output=True, cwd=ROOT)
    return sweep


class FakeClock:
    """Moves only when an arm steps: by WARMUP_COST for each arm's first WARMUP steps, then by its COST."""

    def __init__(self):
        self.now, self.calls, self.done = 0.0, [], {}

    def clock(self):
        return self.now

    def wrap(self, arm):
        real = arm.step

        def step():
            real()  # the arm's real training step runs; only the clock is made up
            self.calls.append(arm.arm)
            self.done[arm.arm] = self.done.get(arm.arm, 0) + 1
            self.now += WARMUP_COST if self.done[arm.arm] <= WARMUP else COST[arm.arm]
        arm.step = step
        return arm


@pytest.fixture(scope="module")
def timed(study):
    fake = FakeClock()
    build = arms.build
    patch = pytest.MonkeyPatch()
    patch.setattr(arms, "build", lambda arm, **kw: fake.wrap(build(arm, **kw)))
    try:
        result = arms.run(study, rounds=ROUNDS, warmup=WARMUP, steps_per_round=STEPS, timer=WallClock(fake.clock),
                          command="test")
    finally:
        patch.undo()
    return result, fake


def test_one_arm_per_group_rebuilt_from_its_records(study):
    found = arms.arms_of(study)
    assert sorted(a.arm for a in found) == ["norm=ln", "norm=rms"]
    assert len({a.study for a in found}) == 1 and all(a.record.is_dir() for a in found)


def test_arms_are_interleaved_round_by_round_after_the_warm_up(timed):
    result, fake = timed
    calls = fake.calls
    warm, timed_calls = calls[:2 * WARMUP], calls[2 * WARMUP:]
    assert sorted(warm) == sorted(["norm=ln"] * WARMUP + ["norm=rms"] * WARMUP)
    assert len(timed_calls) == 2 * ROUNDS * STEPS
    rounds = [timed_calls[i:i + 2 * STEPS] for i in range(0, len(timed_calls), 2 * STEPS)]
    orders = set()
    for one in rounds:  # every arm once per round, as one loop of STEPS steps
        blocks = [one[:STEPS], one[STEPS:]]
        assert all(len(set(b)) == 1 for b in blocks) and {b[0] for b in blocks} == set(COST)
        orders.add(tuple(b[0] for b in blocks))
    assert len(orders) == 2  # shuffled, not always the same arm first


def test_warm_up_is_not_in_the_timing_and_the_ratio_is_paired(timed, study):
    result, _ = timed
    rows = {r["arm"]: r for r in result["arms"]}
    assert rows["norm=ln"]["step_ms_median"] == pytest.approx(2.0)
    assert rows["norm=rms"]["step_ms_median"] == pytest.approx(1.0)
    assert len(rows["norm=ln"]["rounds_ms"]) == ROUNDS
    assert rows["norm=ln"]["reference"] == "norm=rms"  # the fastest, when none is named
    assert rows["norm=ln"]["ratio"] == pytest.approx(2.0)
    assert rows["norm=ln"]["ratio_low"] == pytest.approx(2.0) and rows["norm=ln"]["ratio_high"] == pytest.approx(2.0)
    saved = json.loads((study / arms.FILE).read_text())
    assert saved["schema"] == arms.SCHEMA and saved["threads"] == 1
    env = saved["environment"]
    assert {"load_1m", "cpu_pressure", "cpu_count", "threads"} <= set(env)
    assert "norm=ln" in (study / "paired-timing.md").read_text()


def test_the_interval_comes_from_per_round_log_ratios():
    """The median per-round ratio and its sign-test interval (order statistics): 8 rounds give a 95%
    interval from the smallest to the largest round; 4 rounds are too few for one."""
    ratio, low, high = speed.log_ratio_interval((2.0, 4.0) * 4, (1.0,) * 8)
    assert ratio == pytest.approx(math.sqrt(8))
    assert (low, high) == pytest.approx((2.0, 4.0)) and low > 1.0
    assert all(math.isnan(v) for v in speed.log_ratio_interval((2.0, 4.0) * 2, (1.0,) * 4)[1:])


def test_the_report_prefers_the_paired_timing_and_says_so(timed, study, tmp_path):
    build_report([study], out=tmp_path / "paired")
    summary = pd.read_csv(tmp_path / "paired" / "summary.csv")
    assert set(summary["timing"]) == {"paired"}
    ln = summary.set_index("arm").loc["norm=ln"]
    assert ln["step_ms_median"] == pytest.approx(2.0)  # the paired figure, not the run's own
    assert ln["paired_ratio"] == pytest.approx(2.0) and ln["paired_reference"] == "norm=rms"
    report = (tmp_path / "paired" / "report.md").read_text()
    assert "paired timing of the arms" in report and "per-run timing" not in report

    frame = speed.paired_timing([study])
    assert list(frame.columns) == speed.COLUMNS and len(frame) == 2
    ln, rms = (frame.set_index("arm").loc[a] for a in ("norm=ln", "norm=rms"))
    assert speed.log_ratio_interval(rms["rounds_ms"], ln["rounds_ms"])[0] == pytest.approx(0.5)

    moved = study / arms.FILE
    moved.rename(tmp_path / arms.FILE)
    try:
        build_report([study], out=tmp_path / "per-run")
    finally:
        (tmp_path / arms.FILE).rename(moved)
    summary = pd.read_csv(tmp_path / "per-run" / "summary.csv")
    assert set(summary["timing"]) == {"per-run"}
    report = (tmp_path / "per-run" / "report.md").read_text()
    assert "per-run timing, noisy" in report and "paired timing of the arms" not in report


def test_a_fresh_record_carries_the_machines_condition(study):
    env = json.loads(next(study.rglob("summary.json")).read_text())["environment"]
    assert env["cpu_count"] == cores() and env["parallel_jobs"] == 1
    assert set(env["load_1m"]) == {"start", "end"} and env["load_1m"]["start"] is not None
    pressure = env["cpu_pressure"]
    assert set(pressure) == {"start", "end", "over_span"}
    if machine.PRESSURE.exists():
        assert pressure["start"] is not None and 0 <= pressure["over_span"] <= 100


def test_cpu_pressure_is_read_from_psi_and_none_without_it(tmp_path, monkeypatch):
    psi = tmp_path / "cpu"
    psi.write_text("some avg10=12.50 avg60=3.00 avg300=1.00 total=4000000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
    monkeypatch.setattr(machine, "PRESSURE", psi)
    assert machine.cpu_pressure() == 12.5
    condition = machine.Condition()
    psi.write_text("some avg10=20.00 avg60=3.00 avg300=1.00 total=4000000\n")
    assert condition.finish()["cpu_pressure"] == {"start": 12.5, "end": 20.0, "over_span": 0.0}
    monkeypatch.setattr(machine, "PRESSURE", tmp_path / "absent")
    assert machine.cpu_pressure() is None
    assert machine.Condition().finish()["cpu_pressure"] == {"start": None, "end": None, "over_span": None}


def test_bad_input_is_one_line_and_status_2(tmp_path, study, capsys):
    assert main(["arms", str(tmp_path)]) == 2
    assert "no finished run records" in capsys.readouterr().err
    assert main(["arms", str(tmp_path / "absent")]) == 2
    assert "no such folder" in capsys.readouterr().err
    assert main(["arms", str(study), "--reference", "norm=bn", "--rounds", "1", "--warmup", "0",
                 "--steps-per-round", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert "norm=bn" in err and "\n" not in err
    assert main(["arms", str(study), "--rounds", "0"]) == 2


def test_a_reference_that_fits_several_arms_pairs_each_with_its_counterpart():
    def arm(label):
        return arms.Arm("s", "t", label, label, label, Path("."), {})
    found = [arm(f"model={m}, norm={n}") for m in ("lstm", "transformer") for n in ("ln", "rms")]
    chosen = arms.references(found, "norm=ln")
    assert {a.arm: chosen[a.key].arm for a in found} == {
        "model=lstm, norm=ln": "model=lstm, norm=ln", "model=lstm, norm=rms": "model=lstm, norm=ln",
        "model=transformer, norm=ln": "model=transformer, norm=ln",
        "model=transformer, norm=rms": "model=transformer, norm=ln"}
    assert arms.references(found, "model=lstm, norm=rms")[found[3].key].arm == "model=lstm, norm=rms"
    with pytest.raises(arms.ArmsError, match="names no arm"):
        arms.references(found, "norm=bn")


def test_the_reports_environment_table_shows_the_machines_condition(study):
    from normbench.analysis import aggregate
    from normbench.analysis.result import of_runs
    from normbench.records.reading import find_records
    from normbench.report import tables
    runs = aggregate.runs_frame(find_records([study]).runs)
    # the report renders the machine's condition the result object measured (StudyResult.machine_rows)
    rows = {row[0]: row for row in tables.environment_table(runs, of_runs(runs).machine_rows).rows}
    assert rows["cores"][1] == str(cores()) and rows["parallel jobs of the sweep"][1] == "1"
    assert rows["1-min load as training began"][2] == "4"


def test_groups_whose_runs_did_not_train_are_not_arms(study, tmp_path):
    import shutil
    copy = tmp_path / "copy"
    shutil.copytree(study, copy)
    for path in copy.rglob("summary.json"):
        record = json.loads(path.read_text())
        if record["config"]["norm"]["kind"] == "rms":
            record["status"] = "invalid"
            path.write_text(json.dumps(record))
    assert [a.arm for a in arms.arms_of(copy)] == ["norm=ln"]


def test_the_paired_timing_refuses_planted_links_and_never_writes_through_them(study, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's own file\n")
    saved = {name: (study / name).read_bytes() for name in (arms.FILE, "paired-timing.md") if (study / name).exists()}
    try:
        for name in (arms.FILE, "paired-timing.md"):
            (study / name).unlink(missing_ok=True)
            (study / name).symlink_to(victim)
        with pytest.raises(arms.ArmsError, match="not a regular file"):  # refused, as every other command refuses
            arms.run(study, rounds=1, warmup=0, steps_per_round=1)
        assert victim.read_text() == "the user's own file\n" and (study / arms.FILE).is_symlink()
    finally:
        for name, data in saved.items():
            (study / name).unlink(missing_ok=True)
            (study / name).write_bytes(data)


def test_a_paired_timing_the_user_changed_after_a_run_is_not_replaced(timed, study):
    # issue 50 (as P254 for kernels.csv): once paired-timing.json said it was ours, any paired-timing.md beside
    # it was replaced; now each file is replaced only while it holds what `bench arms` wrote
    md = study / "paired-timing.md"
    saved = md.read_bytes()
    try:
        md.write_text("my notes on the timing\n")
        with pytest.raises(arms.ArmsError, match="paired-timing.md exists and was not written by a normbench benchmark"):
            arms.run(study, rounds=1, warmup=0, steps_per_round=1)
        assert md.read_text() == "my notes on the timing\n"
    finally:
        md.write_bytes(saved)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
def test_a_full_standard_output_is_one_line_and_exit_1(study, tmp_path):
    """Hostile F13: `bench arms SWEEP > /dev/full` said the write error twice (arms' own line, then the command's)."""
    import shutil

    copy = shutil.copytree(study, tmp_path / "study")
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "normbench", "bench", "arms", str(copy), "--rounds", "1",
                               "--warmup", "0", "--steps-per-round", "1"], stdout=full, stderr=subprocess.PIPE,
                              text=True, env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"},
                              cwd=tmp_path)
    assert done.returncode == 1 and done.stderr.strip().splitlines() == [
        "normbench bench: cannot write to standard output (No space left on device)"], done.stderr


def test_the_condition_line_says_each_end_and_n_a_for_what_was_not_measured():
    from normbench.bench.section import condition_line

    line = condition_line({"load_1m": {"start": 0.5, "end": 1.75},
                           "cpu_pressure": {"start": 2.0, "end": None, "over_span": math.nan},
                           "other_processes_cpu_share": 0.125})
    assert line == ("Machine: 1-minute load 0.50 at start, 1.75 at the end; CPU pressure (PSI some avg10) 2.0% at "
                    "start, n/a at the end, n/a over the span; other processes used 12% of the CPUs meanwhile.")
    assert "load n/a at start" in condition_line({})
