"""normbench.load_runs: the report's runs table as a DataFrame, without torch."""

import subprocess
import sys

import pytest

import normbench


def test_load_runs_is_runs_csv_deduplicated(write_record, tmp_path):
    from normbench.report.build import build_report
    import pandas as pd

    for seed in (0, 1):
        write_record(tmp_path / "sweep", f"ln-{seed}", seed=seed, best_val=0.9 + seed / 100)
        write_record(tmp_path / "sweep", f"rms-{seed}", seed=seed, best_val=0.8, axes={"norm": "rms"})
    write_record(tmp_path / "copy", "ln-0-again", seed=0, best_val=0.9)  # the same run, copied elsewhere
    runs = normbench.load_runs(tmp_path / "sweep", tmp_path / "copy")
    assert len(runs) == 4 and runs["config_hash"].is_unique
    assert set(runs["group"]) == {"norm=ln", "norm=rms"}
    assert runs.loc[runs["axes.norm"] == "rms", "metrics.best_val"].tolist() == [0.8, 0.8]
    build_report([tmp_path / "sweep", tmp_path / "copy"], tmp_path / "out")
    csv = pd.read_csv(tmp_path / "out" / "runs.csv")
    assert list(runs.columns) == list(csv.columns)
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
