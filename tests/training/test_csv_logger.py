"""logger=csv: one metrics.csv in the run folder with every scalar the other loggers get; and the
folders and files the loggers write into, made by the project, never through a planted link."""

import csv
import json
import os

import pytest

from normbench.training.hooks import Hook
from normbench.training.loggers import CsvLogger, Loggers
from normbench.training.run import execute


def rows(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return [(int(r["step"]), r["metric"], float(r["value"])) for r in csv.DictReader(handle)]


def test_csv_and_tensorboard_hold_the_same_scalars_under_the_same_names(compose, tmp_path):
    """A two-logger run: the CSV file and the event files, each read back, agree with each other and the record."""
    pytest.importorskip("tensorboard", reason='logger=tensorboard needs pip install -e ".[tensorboard]"')
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    summary = execute(compose("logger=[csv,tensorboard]", "logger.tensorboard.histograms=false"), tmp_path, [])
    assert summary["status"] == "ok"
    table = rows(tmp_path / "metrics.csv")
    lines = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [(s, v) for s, m, v in table if m == "train/loss"] == [(r["step"], r["loss"]) for r in lines if r["kind"] == "train"]
    assert [(s, v) for s, m, v in table if m == "val/mse"] == [(r["step"], r["val_metric"]) for r in lines if r["kind"] == "eval"]
    finals = {m: v for _, m, v in table if m.startswith("final/")}
    assert finals["final/best_val"] == summary["metrics"]["best_val"] and finals["final/diverged"] == 0

    events = EventAccumulator(str(tmp_path / "tb"), size_guidance={"scalars": 0})
    events.Reload()
    assert set(events.Tags()["scalars"]) == {m for _, m, _ in table}
    for name in ("train/loss", "grad/std", "act_rms/layers.0"):
        assert [e.step for e in events.Scalars(name)] == [s for s, m, _ in table if m == name]
        assert [e.value for e in events.Scalars(name)] == pytest.approx([v for _, m, v in table if m == name], rel=1e-6)


def _link(target):
    def plant(run, elsewhere):
        os.symlink(elsewhere / "x" if target.endswith(".csv") else elsewhere, run / target)
    return plant


def _fifo(run, elsewhere):
    os.mkfifo(run / "metrics.csv")


def _file(name):
    def plant(run, elsewhere):
        (run / name).write_text("not a folder")
    return plant


PLANTED = [  # (the loggers, what is planted in the run folder first, what the one line says)
    (["logger=csv"], _link("metrics.csv"), "metrics.csv"),  # O_NOFOLLOW: too many levels of links
    (["logger=csv"], _fifo, "metrics.csv"),                 # O_NONBLOCK: no reader, refused at once
    (["logger=csv", "logger.csv.file=logs/metrics.csv"], _link("logs"), "is a link"),
    (["logger=csv", "logger.csv.file=logs/metrics.csv"], _file("logs"), "is not a folder"),
    (["logger=[csv,tensorboard]"], _link("tb"), "is a link"),
]


@pytest.mark.parametrize(("overrides", "plant", "says"), PLANTED, ids=[f"{o[-1]} {p.__name__}" for o, p, _ in PLANTED])
def test_a_planted_logger_path_is_refused_and_nothing_is_written_through_it(compose, tmp_path, no_hang,
                                                                           overrides, plant, says):
    if "tensorboard" in overrides[0]:
        pytest.importorskip("tensorboard", reason='logger=tensorboard needs pip install -e ".[tensorboard]"')
    run, elsewhere = tmp_path / "run", tmp_path / "elsewhere"
    run.mkdir()
    elsewhere.mkdir()
    plant(run, elsewhere)
    summary = execute(compose(*overrides), run, [])
    assert summary["status"] == "failed" and says in summary["reason"], summary["reason"]
    assert list(elsewhere.iterdir()) == []


def test_a_logger_that_fails_mid_run_is_dropped_and_the_others_go_on(tmp_path, caplog):
    """A server gone at step 2 must not fail the run, nor stop the other loggers: one warning, then silence."""
    class GoneAtStep2(Hook):
        kind = "gone"
        calls = 0

        def on_log(self, trainer, step, **scalars):
            GoneAtStep2.calls += 1
            if step == 2:
                raise ConnectionError("server went away")

    loggers = Loggers([GoneAtStep2(), CsvLogger(tmp_path / "metrics.csv")])
    for step in (1, 2, 3):
        loggers.on_log(None, step, loss=1.0 / step)
    loggers.on_end({"status": "ok", "metrics": {"best_val": 0.5}})
    assert GoneAtStep2.calls == 2 and len(loggers.members) == 1
    assert [m for m in caplog.messages if "gone: stopped logging" in m and "server went away" in m]
    assert [(s, m) for s, m, _ in rows(tmp_path / "metrics.csv")] == [(1, "train/loss"), (2, "train/loss"), (3, "train/loss"),
                                                                     (3, "final/best_val"), (3, "final/diverged")]
