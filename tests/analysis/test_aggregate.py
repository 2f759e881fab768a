"""runs.csv / summary.csv content: flat columns, varying axes, group statistics, direction."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from normbench.analysis.aggregate import (
    ALL_RUNS,
    label_groups,
    main_axes,
    plotted_groups,
    summarize_groups,
    varying_axes,
)
from normbench.report.tables import leaderboards, mean_with_interval


def grouped(runs):
    axes = varying_axes(runs)
    runs = label_groups(runs, axes)
    return runs, axes, summarize_groups(runs, axes)


def test_runs_frame_is_flat(runs_of):
    runs = runs_of({"seed": 3, "axes": {"norm": "rms"}})
    for column in ("run_dir", "status", "reason", "seed", "config_hash", "axes.norm", "axes.batch_size",
                   "metrics.best_val", "metrics.steps_to_target", "throughput.samples_per_s",
                   "throughput.memory_kind", "task.higher_is_better", "time.wall_s"):
        assert column in runs, column
    assert "metrics.loss_spike_steps" not in runs  # lists are not scalar columns
    assert runs.loc[0, "seed"] == 3


def test_varying_axes_ignore_seeds_and_constant_axes(runs_of):
    runs = runs_of(*[{"seed": s, "axes": {"norm": n}} for s in range(3) for n in ("ln", "rms")])
    assert varying_axes(runs) == ["axes.norm"]
    _, _, summary = grouped(runs_of({"seed": 0}, {"seed": 1}))
    assert summary["group"].tolist() == [ALL_RUNS]


def test_group_statistics(runs_of):
    rows = [{"seed": s, "best_val": v, "axes": {"norm": "ln"}} for s, v in enumerate((0.90, 0.92, 0.94))]
    rows += [{"seed": 0, "best_val": 0.97, "axes": {"norm": "rms"}}]
    rows += [{"seed": s, "axes": {"norm": "bn"}, "status": st, "best_val": 0.5} for s, st in
             enumerate(("ok", "diverged", "diverged", "invalid"))]
    runs, axes, summary = grouped(runs_of(*rows))
    by = summary.set_index("norm")
    assert by.loc["ln", "n"] == 3 and by.loc["ln", "best_val_mean"] == pytest.approx(0.92)
    half = 4.3027 * 0.02 / math.sqrt(3)
    assert by.loc["ln", "best_val_ci_high"] == pytest.approx(0.92 + half, abs=1e-4)
    # invalid runs never trained: not counted; diverged ones count in n, not in the mean
    assert (by.loc["bn", "n"], by.loc["bn", "n_ok"], by.loc["bn", "n_diverged"]) == (3, 1, 2)
    assert by.loc["bn", "divergence_rate"] == pytest.approx(2 / 3)
    assert by.loc["bn", "best_val_mean"] == pytest.approx(0.5)
    # single-seed group: no interval, shown as n=1
    assert math.isnan(by.loc["rms", "best_val_ci_low"])
    assert mean_with_interval(by.loc["rms"].rename(None)) == "0.97 (n=1)"
    # the best mean, but one run is never ranked (ranking.RULE): it is listed after the ranked groups
    assert summary["group"].tolist() == ["norm=ln", "norm=bn", "norm=rms"]
    assert pd.isna(by.loc["rms", "rank"]) and not bool(by.loc["rms", "best"])
    assert by.loc["ln", "rank"] == 1 and bool(by.loc["ln", "best"])


def test_lower_is_better_ranks_ascending(runs_of):
    rows = [{"seed": s, "best_val": v, "axes": {"task": "adding", "norm": n}}
            for s in range(2) for n, v in (("ln", 0.02), ("rms", 0.01), ("none", 0.2))]
    _, axes, summary = grouped(runs_of(*rows))
    assert summary["norm"].tolist() == ["rms", "ln", "none"]
    assert summary["best"].tolist() == [True, False, False]
    (board,) = leaderboards(summary, axes)
    star = board.table.columns.index("★")
    assert board.table.rows[0][star] == "★" and not board.higher_is_better
    assert board.table.columns[:2] == ["norm", "placement"]  # the arm settings lead


def test_not_reached_runs_count_in_steps_to_target(runs_of):
    # copy task: target 0.9; best_val below it never reaches it
    reached, missed = {"best_val": 0.95}, {"best_val": 0.5}
    rows = [{"seed": 0, **reached, "axes": {"norm": "ln"}}, {"seed": 1, **missed, "axes": {"norm": "ln"}},
            {"seed": 2, **missed, "axes": {"norm": "ln"}},
            {"seed": 0, **reached, "axes": {"norm": "rms"}}, {"seed": 1, **reached, "axes": {"norm": "rms"}},
            {"seed": 2, **missed, "axes": {"norm": "rms"}},
            {"seed": 0, **reached, "axes": {"norm": "bn"}}, {"seed": 1, **reached, "axes": {"norm": "bn"}},
            {"seed": 2, **missed, "axes": {"norm": "bn"}}, {"seed": 3, **missed, "axes": {"norm": "bn"}}]
    runs, axes, summary = grouped(runs_of(*rows))
    by = summary.set_index("norm")
    assert by.loc["ln", "reached"] == 1 and by.loc["ln", "n"] == 3
    assert math.isinf(by.loc["ln", "steps_to_target_median"])  # 2 of 3 never reached it
    assert math.isinf(by.loc["ln", "seconds_to_target_median"])
    assert math.isfinite(by.loc["rms", "steps_to_target_median"])  # 1 of 3 missed: the median reached it
    assert math.isfinite(by.loc["bn", "steps_to_target_median"])  # exactly half: not "more than half"
    (board,) = leaderboards(summary, axes)
    ln_row = next(r for r in board.table.rows if "ln" in r)
    assert "not reached (1/3)" in ln_row  # steps to target, with how many runs reached it


def test_main_axes_prefer_norm_and_placement(runs_of):
    rows = [{"seed": 0, "axes": {"norm": n, "placement": p, "lr": lr, "batch_size": b}}
            for n in ("ln", "rms") for p in ("pre", "post") for lr in (1e-4, 1e-3, 1e-2) for b in (8, 16, 32, 64)]
    runs = runs_of(*rows)
    axes = varying_axes(runs)
    assert main_axes(runs, axes) == ["axes.norm", "axes.placement"]
    assert main_axes(runs, [a for a in axes if a != "axes.placement"]) == ["axes.norm", "axes.batch_size"]
    assert main_axes(runs, ["axes.lr", "axes.batch_size"]) == ["axes.batch_size", "axes.lr"]


def test_plotted_groups_are_bounded(runs_of):
    rows = [{"seed": 0, "best_val": 0.5 + i / 100, "axes": {"lr": i / 1000, "norm": "ln" if i % 2 else "rms"}}
            for i in range(1, 31)]
    runs, axes, summary = grouped(runs_of(*rows))
    groups = plotted_groups(summary, 12)
    assert len(groups) == 12 and groups[0] == summary["group"].iloc[0]


def test_groups_rank_on_the_last_evaluation_not_the_best_of_many(runs_of):
    """best_val is chosen on the validation data it reports; the ranking uses final_val, which is not."""
    rows = [{"seed": s, "best_val": 0.99, "metrics": {"final_val": 0.80 + 0.01 * s}, "axes": {"norm": "ln"}}
            for s in range(3)]
    rows += [{"seed": s, "best_val": 0.90, "metrics": {"final_val": 0.89 + 0.01 * s}, "axes": {"norm": "rms"}}
             for s in range(3)]
    _, _, summary = grouped(runs_of(*rows))
    by = summary.set_index("norm")
    assert by.loc["rms", "rank"] == 1 and bool(by.loc["rms", "best"]) and not bool(by.loc["ln", "best"])


def test_a_metric_added_to_the_registry_gets_its_group_columns_without_other_edits(runs_of, monkeypatch):
    """The proof of normbench/records/metrics.py: one new entry (and the records that carry it) is all that
    summary.csv needs; the existing columns keep their order, the new ones come after them."""
    from normbench.records import metrics
    before = list(grouped(runs_of({"seed": 0}, {"seed": 1}))[2].columns)
    toy = metrics.Metric("grad_toy", "metrics", "toy gradient measure", group=(metrics.Stat("mean"), metrics.Stat("max")))
    monkeypatch.setattr(metrics, "METRICS", (*metrics.METRICS, toy))
    monkeypatch.setitem(metrics.BY_KEY, "grad_toy", toy)
    rows = [{"seed": s, "metrics": {"grad_toy": v}} for s, v in enumerate((1.0, 2.0, 6.0))]
    _, _, summary = grouped(runs_of(*rows))
    after = list(summary.columns)
    assert [c for c in after if c not in before] == ["grad_toy_mean", "grad_toy_max"]
    assert [c for c in after if c in before] == before
    assert after.index("grad_toy_mean") > after.index("bn_gap_running_mean")
    assert summary.loc[0, "grad_toy_mean"] == pytest.approx(3.0) and summary.loc[0, "grad_toy_max"] == 6.0


def test_summary_columns_are_the_ones_summary_csv_always_had(runs_of):
    """summary.csv's columns and their order, as written before the metric registry (a byte-level
    contract with the readers of summary.csv)."""
    _, _, summary = grouped(runs_of({"seed": 0}, {"seed": 1}))
    assert list(summary.columns) == [
        "study", "study_name", "task", "arm", "group", "rank", "best", "shown_worse", "metric", "higher_is_better",
        "best_val_mean", "best_val_ci_low", "best_val_ci_high", "best_val_std", "best_val_n", "final_val_mean",
        "final_val_ci_low", "final_val_ci_high", "test_mean", "test_ci_low", "test_ci_high", "seeds", "n", "n_ok",
        "n_diverged", "divergence_rate", "reached", "steps_to_target_median", "seconds_to_target_median",
        "final_val_n", "final_val_std", "test_n", "test_std", "timing_noise_median", "samples_per_s_median",
        "samples_per_s_min", "samples_per_s_max", "step_ms_median", "peak_memory_mb_median", "grad_std_mean",
        "grad_kurtosis_mean", "grad_kurtosis_max", "grad_norm_median_median", "grad_norm_max_max",
        "grad_time_ratio_init_mean", "grad_time_ratio_mean", "bn_gap_mean", "bn_gap_running_mean",
        # a score added since (the mean of the last 3 evaluations), after the columns readers had
        "final_val_smoothed_n", "final_val_smoothed_mean", "final_val_smoothed_std", "final_val_smoothed_ci_low",
        "final_val_smoothed_ci_high",
        "samples_per_s_spread", "study_purpose", "study_command", "study_role", "comparison", "memory_kind",
        # the decision rules' columns (analysis/rules.py), after the ones readers had
        "tie", "failed", "at_chance", "failed_to_learn", "level", "score", "condition"]



def test_a_record_without_a_direction_takes_its_task_metrics(write_record, tmp_path):
    """Older records lack task.higher_is_better: the task metric's entry in normbench/records/metrics.py decides."""
    import json

    from normbench.analysis.aggregate import runs_frame
    from normbench.records.reading import find_records

    for task in ("adding", "copy"):
        summary_path = write_record(tmp_path, task, axes={"task": task}) / "summary.json"
        summary = json.loads(summary_path.read_text())
        del summary["task"]["higher_is_better"]
        summary_path.write_text(json.dumps(summary))
    runs = runs_frame(find_records([tmp_path]).runs).set_index("task.name")
    assert not runs.loc["adding", "task.higher_is_better"] and runs.loc["copy", "task.higher_is_better"]


def test_a_record_of_cell_kernel_cpp_and_a_run_of_compiled_are_one_group(runs_of, write_record, tmp_path):
    """cpp is compiled's name before the rename (issue 47): an old record and a new run of the setting share the
    group, and the runs table names what ran by its present name (environment.cell_kernel cpp-avx2 too)."""
    import json

    from normbench.analysis.aggregate import runs_frame
    from normbench.records.record import read_summary

    in_cell = {"model": "lstm", "task": "adding", "placement": "in_cell", "layers": 1}
    runs = runs_of({"seed": 0, "axes": {**in_cell, "model.cell_kernel": "cpp"}},
                   {"seed": 1, "axes": {**in_cell, "model.cell_kernel": "compiled"}},
                   {"seed": 0, "axes": {**in_cell, "model.cell_kernel": "python"}})
    assert runs.loc[0, "group_hash"] == runs.loc[1, "group_hash"] != runs.loc[2, "group_hash"]
    assert runs["axes.model.cell_kernel"].tolist() == ["compiled", "compiled", "python"]
    _, axes, summary = grouped(runs)
    assert axes == ["axes.model.cell_kernel"]
    assert dict(zip(summary["group"], summary["n"])) == {"model.cell_kernel=compiled": 2, "model.cell_kernel=python": 1}
    folders = []
    for name, kernel, ran in (("old", "cpp", "cpp-avx2"), ("torch", "compile", "compile")):
        folder = write_record(tmp_path, name, axes={**in_cell, "model.cell_kernel": kernel})
        summary = json.loads((folder / "summary.json").read_text())
        summary["environment"]["cell_kernel"] = ran  # what a record made before the rename says ran
        (folder / "summary.json").write_text(json.dumps(summary))
        folders.append(folder)
    frame = runs_frame([read_summary(folder / "summary.json") for folder in folders])
    assert frame["environment.cell_kernel"].tolist() == ["compiled-avx2", "torch_compile"]


def test_a_setting_left_out_at_its_earlier_default_names_its_arm(runs_of):
    # qknorm_lr in the example: model.qk_norm=false is left out of identity (every earlier record ran so), and its
    # arms read "lr=0.0215 [eaaacf]" beside "lr=0.0215 [248c5c]": a reader could not tell which one had qk-norm
    study = {"schema": "normbench.study/1", "id": "0123456789ab", "name": "qknorm_lr", "purpose": "qk-norm",
             "swept": ["model.qk_norm", "lr", "seed"], "arms": ["model.qk_norm", "lr"], "command": "normbench study"}
    qk = [{"model": "transformer", "model.qk_norm": True}, {"model": "transformer"}]
    runs = runs_of(*[{"seed": s, "study": study, "best_val": 0.5 + 0.1 * i, "axes": {**axes, "lr": 0.01}}
                     for i, axes in enumerate(qk) for s in range(2)])
    runs, _, _ = grouped(runs)
    assert sorted(set(runs["arm"])) == ["model.qk_norm=false", "model.qk_norm=true"]
    # a family that does not read the setting is left as it was, and a study that never sets it gains no column value
    lstm = runs_of(*[{"seed": s, "study": study, "axes": {"model": m, **extra}} for s in range(2)
                     for m, extra in (("transformer", {"model.qk_norm": True}), ("lstm", {}))])
    assert lstm.loc[lstm["axes.model"] == "lstm", "axes.model.qk_norm"].isna().all()
    plain = runs_of({"seed": 0, "axes": {"model": "transformer"}}, {"seed": 1, "axes": {"model": "transformer"}})
    assert "axes.model.qk_norm" not in plain or plain["axes.model.qk_norm"].isna().all()
