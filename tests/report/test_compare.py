"""python -m normbench compare on crafted records: a degraded metric fails, noise passes, orphans are listed."""

from __future__ import annotations

import subprocess
import sys

from normbench.studies.compare import main

SEEDS = (0, 1, 2)
NOISE = (0.002, -0.003, 0.001)


def sweep(write_record, root, values, *, axes=None, statuses=None, name="run", commit=None):
    for seed, value in zip(SEEDS, values):
        run_dir = write_record(root, f"{name}-{seed}", seed=seed, best_val=value, axes=axes,
                               status=(statuses or {}).get(seed, "ok"))
        if commit is not None:  # another commit: the environment is the axis of the comparison
            import json
            summary = json.loads((run_dir / "summary.json").read_text())
            summary["environment"]["git_commit"] = commit
            (run_dir / "summary.json").write_text(json.dumps(summary))


def test_a_degraded_metric_fails_and_says_where(write_record, tmp_path, capsys):
    sweep(write_record, tmp_path / "base", [0.90 + n for n in NOISE])
    sweep(write_record, tmp_path / "base", [0.80 + n for n in NOISE], axes={"norm": "rms"}, name="rms")
    sweep(write_record, tmp_path / "new", [0.90 + n for n in NOISE[::-1]], commit="def5678")
    sweep(write_record, tmp_path / "new", [0.70 + n for n in NOISE[::-1]], axes={"norm": "rms"}, name="rms",
          commit="def5678")
    out = tmp_path / "summary.md"
    assert main([str(tmp_path / "base"), str(tmp_path / "new"), "--out", str(out)]) == 1
    text = out.read_text()
    assert text == capsys.readouterr().out
    assert "FAIL: NEW is worse in 1 of 2 settings" in text
    assert "git_commit abc1234 → def5678" in text                    # the axis of the comparison, in the header
    worse = next(line for line in text.splitlines() if line.startswith("| norm=rms"))
    assert "**worse**: final_val worse by 0.1" in worse and "3 |" in worse
    ok = next(line for line in text.splitlines() if line.startswith("| norm=ln"))
    assert ok.endswith("| ok |")


def test_noise_within_tolerance_passes_and_direction_follows_the_task(write_record, tmp_path):
    # adding: MSE, lower is better; NEW slightly higher MSE (worse) but within the tolerance
    sweep(write_record, tmp_path / "base", [0.050 + n / 10 for n in NOISE], axes={"task": "adding"})
    sweep(write_record, tmp_path / "new", [0.052 + n / 10 for n in NOISE[::-1]], axes={"task": "adding"})
    assert main([str(tmp_path / "base"), str(tmp_path / "new"), "--tolerance", "0.01"]) == 0
    # the same change fails with a tight relative tolerance (2% of 0.05 = 0.001 < 0.002)...
    assert main([str(tmp_path / "base"), str(tmp_path / "new"), "--tolerance", "0.02", "--relative"]) == 1
    # ...and an equally large *lower* MSE is an improvement, never a failure
    sweep(write_record, tmp_path / "better", [0.040 + n / 10 for n in NOISE], axes={"task": "adding"})
    assert main([str(tmp_path / "base"), str(tmp_path / "better"), "--tolerance", "0"]) == 0


def test_a_difference_the_seeds_cannot_tell_from_noise_does_not_fail(write_record, tmp_path):
    sweep(write_record, tmp_path / "base", [0.90, 0.80, 0.95])
    sweep(write_record, tmp_path / "new", [0.85, 0.82, 0.86])      # mean -0.04, but the interval spans 0
    assert main([str(tmp_path / "base"), str(tmp_path / "new")]) == 0


def test_a_run_without_counterpart_is_listed_not_fatal(write_record, tmp_path, capsys):
    sweep(write_record, tmp_path / "base", [0.90, 0.91, 0.92])
    sweep(write_record, tmp_path / "new", [0.90, 0.91])             # seed 2 missing in NEW
    write_record(tmp_path / "new", "extra", seed=7, best_val=0.5)   # a seed BASELINE never ran
    assert main([str(tmp_path / "base"), str(tmp_path / "new")]) == 0
    text = capsys.readouterr().out
    assert "Only in BASELINE (no counterpart in NEW): 1" in text and "run-2" in text
    assert "Only in NEW (no counterpart in BASELINE): 1" in text and "extra" in text


def test_new_divergences_and_unfinished_runs_fail(write_record, tmp_path, capsys):
    sweep(write_record, tmp_path / "base", [0.90, 0.91, 0.92])
    sweep(write_record, tmp_path / "new", [0.90, 0.91, 0.92], statuses={1: "diverged", 2: "failed"})
    assert main([str(tmp_path / "base"), str(tmp_path / "new")]) == 1
    text = capsys.readouterr().out
    assert "diverged 0 → 1 of 3" in text and "new record status failed (seed 2)" in text
    assert main([str(tmp_path / "base"), str(tmp_path / "base")]) == 0   # a set against itself


def test_bad_input_is_one_line_and_exit_2(write_record, tmp_path, capsys):
    assert main([str(tmp_path / "missing"), str(tmp_path / "missing")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    sweep(write_record, tmp_path / "base", [0.9, 0.9, 0.9])
    sweep(write_record, tmp_path / "other", [0.9, 0.9, 0.9], axes={"lr": 0.1})
    assert main([str(tmp_path / "base"), str(tmp_path / "other")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no run in" in err


def test_compare_runs_as_a_module_without_torch(write_record, tmp_path):
    sweep(write_record, tmp_path / "base", [0.9, 0.9, 0.9])
    code = ("import sys, runpy; sys.argv = ['x', sys.argv[1], sys.argv[1]]\n"
            "try: runpy.run_module('normbench.studies.compare', run_name='__main__')\n"
            "except SystemExit as e: assert e.code == 0, e.code\n"
            "assert 'torch' not in sys.modules, 'compare imported torch'\n")
    result = subprocess.run([sys.executable, "-c", code, str(tmp_path / "base")], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_a_terminal_sees_the_summary_without_markdowns_html_escapes(write_record, tmp_path, capsys, monkeypatch):
    sweep(write_record, tmp_path / "base", [0.90 + n for n in NOISE])
    sweep(write_record, tmp_path / "new", [0.70 + n for n in NOISE[::-1]], commit="def5678")
    out = tmp_path / "summary.md"
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert main([str(tmp_path / "base"), str(tmp_path / "new"), "--out", str(out)]) == 1
    shown, written = capsys.readouterr().out, out.read_text()
    assert "&gt;" in written and "&gt;" not in shown  # the file is Markdown, the terminal plain text
    assert "final_val worse by 0.2 (> 0.01)" in shown


def test_a_record_made_before_the_cell_kernels_rename_pairs_with_a_run_after_it(write_record, tmp_path, capsys):
    """model.cell_kernel=cpp and =compile are compiled's and torch_compile's earlier names (issue 47): a baseline
    recorded with them pairs, setting for setting and exactly, with a new set that says the present names."""
    in_cell = {"model": "lstm", "task": "adding", "placement": "in_cell", "layers": 1}
    for earlier, present in (("cpp", "compiled"), ("compile", "torch_compile")):
        sweep(write_record, tmp_path / "base", [0.05] * 3, axes={**in_cell, "model.cell_kernel": earlier}, name=earlier)
        sweep(write_record, tmp_path / "new", [0.05] * 3, axes={**in_cell, "model.cell_kernel": present}, name=present)
    assert main([str(tmp_path / "base"), str(tmp_path / "new"), "--exact"]) == 0
    text = capsys.readouterr().out
    assert "PASS: NEW is not worse in any of 2 settings" in text
    assert "model.cell_kernel=compiled" in text and "model.cell_kernel=torch_compile" in text
    assert "no counterpart in" not in text and "cell_kernel=cpp" not in text and "cell_kernel=compile " not in text
