"""normbench.load_runs: the report's runs table as a DataFrame, without torch."""

import subprocess
import sys

import pytest

import normbench
from normbench.configuration.contract import ALIASES

ALIASED = {f"axes.{short}": f"axes.{dotted}" for dotted, short in ALIASES.items()}


def test_load_runs_is_runs_csv_deduplicated(write_record, tmp_path):
    import pandas as pd

    from normbench.report.build import build_report

    for seed in (0, 1):
        write_record(tmp_path / "sweep", f"ln-{seed}", seed=seed, best_val=0.9 + seed / 100)
        write_record(tmp_path / "sweep", f"rms-{seed}", seed=seed, best_val=0.8, axes={"norm": "rms"})
    write_record(tmp_path / "copy", "ln-0-again", seed=0, best_val=0.9)  # the same run, copied elsewhere
    runs = normbench.load_runs(tmp_path / "sweep", tmp_path / "copy")
    assert len(runs) == 4 and runs["config_hash"].is_unique
    assert set(runs["group"]) == {"norm=ln", "norm=rms"}
    assert runs.loc[runs["axes.norm.kind"] == "rms", "metrics.best_val"].tolist() == [0.8, 0.8]
    build_report([tmp_path / "sweep", tmp_path / "copy"], tmp_path / "out")
    csv = pd.read_csv(tmp_path / "out" / "runs.csv")
    # runs.csv under the command-line names, plus the code version
    csv_named = [ALIASED.get(c, c) for c in csv.columns]
    assert [c for c in runs.columns if c != "code_version"] == csv_named
    assert sorted(runs["config_hash"]) == sorted(csv["config_hash"])


def test_load_runs_names_a_missing_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere"):
        normbench.load_runs(tmp_path / "nowhere")


def test_import_normbench_and_load_runs_do_not_load_torch(write_record, tmp_path):
    write_record(tmp_path, "run", seed=0)
    code = ("import sys, normbench; runs = normbench.load_runs(sys.argv[1]); assert len(runs) == 1\n"
            "assert 'torch' not in sys.modules, 'torch was imported'\n")
    result = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_runs_table_round_trips_through_parquet(write_record, tmp_path):
    """What the report would write as runs.parquet beside runs.csv (pyarrow installed)."""
    pytest.importorskip("pyarrow", reason="runs.parquet needs pyarrow")
    import pandas as pd

    write_record(tmp_path, "ok", seed=0, best_val=0.9)
    write_record(tmp_path, "diverged", seed=1, best_val=None, status="diverged", axes={"norm": "bn"})
    write_record(tmp_path, "running", seed=2, status="running")
    runs = normbench.load_runs(tmp_path)
    runs.to_parquet(tmp_path / "runs.parquet", index=False)
    back = pd.read_parquet(tmp_path / "runs.parquet")
    assert list(back.columns) == list(runs.columns) and len(back) == 3
    assert sorted(back["status"]) == ["diverged", "incomplete", "ok"]


def test_columns_use_one_scheme_the_command_line_names(write_record, tmp_path):
    write_record(tmp_path, "run", seed=0, axes={"norm": "rms", "hidden": 64})
    axes = [c for c in normbench.load_runs(tmp_path).columns if c.startswith("axes.")]
    assert "axes.norm.kind" in axes and "axes.model.hidden" in axes
    assert not set(ALIASED) & set(axes)  # no short name left


def test_keep_copies_keeps_both_code_versions_of_a_run(write_record, tmp_path):
    import json

    for commit in ("abc1234", "def5678"):
        run_dir = write_record(tmp_path / commit, "ln-0", seed=0, best_val=0.9 if commit == "abc1234" else 0.8)
        summary = json.loads((run_dir / "summary.json").read_text())
        summary["environment"]["git_commit"] = commit
        (run_dir / "summary.json").write_text(json.dumps(summary))
    assert normbench.load_runs(tmp_path)["code_version"].tolist() == ["abc1234"]  # one row per run
    both = normbench.load_runs(tmp_path, keep_copies=True)
    assert both["code_version"].tolist() == ["abc1234", "def5678"] and both["config_hash"].nunique() == 1
    assert both.set_index("code_version")["metrics.best_val"].to_dict() == {"abc1234": 0.9, "def5678": 0.8}
    kept = both.loc[both["copy_of"].isna(), "run_dir"].item()
    assert both.loc[both["copy_of"].notna(), "copy_of"].item() == kept


def test_load_curves_is_the_metrics_lines_with_the_run_identity(write_record, tmp_path):
    run_dir = write_record(tmp_path, "run", seed=3, best_val=0.9)
    (run_dir / "metrics.jsonl").write_text(
        '{"kind": "train", "step": 1, "loss": 2.0, "lr": 0.1, "grad_norm": 1.0, "time_s": 0.1}\n'
        '{"kind": "eval", "step": 2, "val_metric": 0.5, "val_loss": 1.5, "time_s": 0.2}\n'
        '{"kind": "probe", "step": 2}\n{"kind": "train", "st')  # a probe line and a cut-short last line
    curves = normbench.load_curves(tmp_path)
    runs = normbench.load_runs(tmp_path)
    assert curves["kind"].tolist() == ["train", "eval"] and curves["step"].tolist() == [1, 2]
    assert curves["loss"].iloc[0] == 2.0 and curves["val_metric"].iloc[1] == 0.5
    assert set(curves["config_hash"]) == set(runs["config_hash"]) and set(curves["seed"]) == {3}
    assert set(curves.merge(runs, on="run_dir")["axes.norm.kind"]) == {"ln"}
