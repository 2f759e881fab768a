"""compare as a CI gate: --exact on deterministic runs, --ignore to pair across a changed setting, the power line."""

from __future__ import annotations

import math
import statistics

from scipy import stats

from normbench.studies.compare import main

SEEDS = (0, 1, 2)


def sweep(write_record, root, values, axes=None):
    for seed, value in zip(SEEDS, values):
        write_record(root, f"run-{seed}", seed=seed, best_val=value, axes=axes)


def test_exact_passes_identical_runs_and_fails_one_ulp_with_the_diff(write_record, tmp_path, capsys):
    values = [0.9, 0.91, 0.92]
    sweep(write_record, tmp_path / "base", values)
    sweep(write_record, tmp_path / "same", values)
    assert main([str(tmp_path / "base"), str(tmp_path / "same"), "--exact"]) == 0
    assert "detects any change of any metric" in capsys.readouterr().out
    sweep(write_record, tmp_path / "ulp", [values[0], math.nextafter(values[1], 1.0), values[2]])
    assert main([str(tmp_path / "base"), str(tmp_path / "ulp")]) == 0          # far inside any tolerance...
    capsys.readouterr()
    assert main([str(tmp_path / "base"), str(tmp_path / "ulp"), "--exact"]) == 1   # ...but not the same numbers
    text = capsys.readouterr().out
    assert f"exact: 3 value(s) changed: seed 1: metrics.best_val 0.91 → {math.nextafter(0.91, 1.0)!r}" in text


def test_ignore_pairs_across_a_changed_setting(write_record, tmp_path, capsys):
    sweep(write_record, tmp_path / "base", [0.90, 0.91, 0.92], axes={"grad_clip": 1.0})
    sweep(write_record, tmp_path / "new", [0.88, 0.889, 0.901], axes={"grad_clip": 0.05})   # -0.02 in each seed
    assert main([str(tmp_path / "base"), str(tmp_path / "new")]) == 2
    assert "the settings that differ: grad_clip (pair across them with --ignore grad_clip)" in capsys.readouterr().err
    assert main([str(tmp_path / "base"), str(tmp_path / "new"), "--ignore", "grad_clip"]) == 1
    text = capsys.readouterr().out
    assert "paired by all settings and the seed except `grad_clip`" in text and "final_val worse by 0.02" in text


def test_ignore_refuses_runs_it_would_make_ambiguous(write_record, tmp_path, capsys):
    sweep(write_record, tmp_path / "base", [0.9, 0.9, 0.9], axes={"lr": 0.1})
    for seed in SEEDS:
        write_record(tmp_path / "base", f"other-{seed}", seed=seed, best_val=0.9, axes={"lr": 0.01})
    sweep(write_record, tmp_path / "new", [0.9, 0.9, 0.9], axes={"lr": 0.1})
    assert main([str(tmp_path / "base"), str(tmp_path / "new"), "--ignore", "lr"]) == 2
    assert "two runs in BASELINE differ only in lr" in capsys.readouterr().err


def test_power_line_states_the_change_the_seeds_can_detect(write_record, tmp_path, capsys):
    base, new = [0.90, 0.80, 0.95], [0.85, 0.82, 0.86]
    sweep(write_record, tmp_path / "base", base)
    sweep(write_record, tmp_path / "new", new)
    assert main([str(tmp_path / "base"), str(tmp_path / "new")]) == 0
    sd = statistics.stdev(n - b for b, n in zip(base, new))
    expected = (stats.t.ppf(0.975, 2) + stats.t.ppf(0.8, 2)) * sd / math.sqrt(3)
    assert f"This gate detects a change of {expected:.3g} in `final_val` at 3 seeds" in capsys.readouterr().out
    # tight seeds: the tolerance is the floor
    sweep(write_record, tmp_path / "tight", [0.9005, 0.8005, 0.9505])
    assert main([str(tmp_path / "base"), str(tmp_path / "tight"), "--tolerance", "0.01"]) == 0
    assert "This gate detects a change of 0.01 in `final_val` at 3 seeds" in capsys.readouterr().out
