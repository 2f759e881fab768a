"""What a report publishes beside runs.csv so its gates and verdicts can be recomputed without the records.

A committed report keeps runs.csv, summary.csv and claims.csv, but not the run folders (their
metrics.jsonl is the bulk of a sweep). The "still improving" gate, the steps to a target and the
paired step-time ratios read more than one number per run, so the report also writes:

- ``curves.csv`` (``curves.csv.gz`` past CURVES_PLAIN_MAX bytes): one row per run per evaluation,
  CURVE_TABLE_COLUMNS. ``run_dir`` is the run's id as runs.csv names it; ``examples`` is step ×
  the run's batch_size (what it had seen at that evaluation); ``val_smoothed`` the mean of the
  evaluation and the FINAL_EVALS - 1 before it (the curve final_val_smoothed and its gate read);
  ``loss`` the training loss logged at that step, empty where none was.
- ``paired-timing.csv``: one row per arm per timing round of each paired timing (analysis/speed.py
  builds it; ``timing`` numbers the paired-timing.json files, whose arms shared every round).

``load(folder)`` reads the three tables back as the analysis reads them: runs (runs.csv), curves
(read_curves' eval columns) and the paired timing (one row per arm, ``rounds_ms`` a list), so the
suite's own functions can be called on them (tests/report/test_published.py does).
"""

from __future__ import annotations

import gzip
import io
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from normbench.records import metrics
from normbench.records.convergence import FINAL_EVALS, trailing_means
from normbench.records.reading import read_curves

CURVES = "curves.csv"
PAIRED_TIMING = "paired-timing.csv"
# A plain table up to this size: readable in a diff and a browser; past it gzip (about 5× smaller),
# so the example's ~600 runs stay small enough to commit.
CURVES_PLAIN_MAX = 1 << 20
CURVE_TABLE_COLUMNS = ["run_dir", "step", "examples", "val_metric", "val_smoothed", "loss"]
PAIRED_TIMING_COLUMNS = ["timing", "study", "group", "arm", "group_hash", "reference", "device", "threads",
                         "round", "step_ms"]


def curves_table(runs: pd.DataFrame) -> pd.DataFrame:
    """CURVE_TABLE_COLUMNS for every run of ``runs`` (its run_dir, and axes.batch_size where recorded),
    read from the runs' metrics.jsonl; runs sorted as in ``runs``, evaluations by step."""
    if runs.empty or "run_dir" not in runs:
        return pd.DataFrame(columns=CURVE_TABLE_COLUMNS)
    dirs = list(dict.fromkeys(runs["run_dir"].dropna().astype(str)))
    curves = read_curves(dirs)
    evals = curves[curves["kind"] == "eval"].sort_values(["run_dir", "step"], kind="stable")
    # the training loss at an evaluation's step: a train line logged at the same step, else nothing
    train = (curves[curves["kind"] == "train"].drop_duplicates(["run_dir", "step"], keep="last")
             .set_index(["run_dir", "step"])["loss"])
    evals = evals.drop_duplicates(["run_dir", "step"], keep="last")
    first = runs.drop_duplicates("run_dir").assign(run_dir=lambda f: f["run_dir"].astype(str)).set_index("run_dir")
    batch = pd.to_numeric(first["axes.batch_size"], errors="coerce") if "axes.batch_size" in first else pd.Series(dtype=float)
    order = {d: i for i, d in enumerate(dirs)}
    rows = []
    for run_dir, mine in sorted(evals.groupby("run_dir"), key=lambda kv: order.get(kv[0], len(order))):
        values = mine["val_metric"].to_list()
        smoothed = trailing_means(values, FINAL_EVALS)
        size = batch.get(run_dir, math.nan)
        for (step, value), mean in zip(zip(mine["step"], values), smoothed):
            rows.append({"run_dir": run_dir, "step": int(step),
                         "examples": int(step * size) if math.isfinite(size) else None,
                         "val_metric": value, "val_smoothed": mean, "loss": train.get((run_dir, step), math.nan)})
    return pd.DataFrame(rows, columns=CURVE_TABLE_COLUMNS).astype({"examples": "Int64"})


def write_curves(table: pd.DataFrame, folder: Path) -> Path:
    """``table`` as CURVES in ``folder``, or as CURVES.gz when the text passes CURVES_PLAIN_MAX bytes
    (gzip without a timestamp: the same curves give the same bytes, so a rebuilt report diffs clean)."""
    text = table.to_csv(index=False).encode()
    if len(text) <= CURVES_PLAIN_MAX:
        path = Path(folder) / CURVES
        path.write_bytes(text)
        return path
    path = Path(folder) / f"{CURVES}.gz"
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0) as handle:
        handle.write(text)
    path.write_bytes(buffer.getvalue())
    return path


@dataclass(frozen=True)
class Published:
    """A report folder's published tables, as the analysis reads them."""

    runs: pd.DataFrame    # runs.csv
    curves: pd.DataFrame  # curves.csv, with kind "eval": read_curves' eval rows (run_dir, step, val_metric) and the rest
    paired: pd.DataFrame  # paired-timing.csv, one row per arm with rounds_ms (analysis/speed.paired_timing's)


def load(folder: Path) -> Published:
    """runs.csv, curves.csv (or .gz) and paired-timing.csv of a report folder; a table that is absent
    reads as empty. A text cell the report prefixed with "'" (output.spreadsheet_safe) keeps its prefix
    in every table alike, so run ids still match. A metric column an earlier report wrote under another name
    reads as its name now (metrics.RENAMED: an older runs.csv's metrics.did_not_train is metrics.at_chance)."""
    folder = Path(folder)
    runs = pd.read_csv(folder / "runs.csv", low_memory=False)
    runs = runs.rename(columns={f"metrics.{old}": f"metrics.{new}" for old, new in metrics.RENAMED.items()})
    plain, packed = folder / CURVES, folder / f"{CURVES}.gz"
    curves = (pd.read_csv(plain) if plain.is_file() else pd.read_csv(packed) if packed.is_file()
              else pd.DataFrame(columns=CURVE_TABLE_COLUMNS))
    # read_curves' eval rows (its kind and types), so the functions that read curves take these as they are
    curves = curves.astype({"run_dir": str, "step": float, "val_metric": float}).assign(kind="eval")
    timing_path = folder / PAIRED_TIMING
    rounds = pd.read_csv(timing_path) if timing_path.is_file() else pd.DataFrame(columns=PAIRED_TIMING_COLUMNS)
    keys = [c for c in PAIRED_TIMING_COLUMNS if c not in ("round", "step_ms")]
    paired = (rounds.sort_values(["timing", "group", "round"], kind="stable")
              .groupby(keys, sort=False, dropna=False)["step_ms"].agg(list).rename("rounds_ms").reset_index())
    return Published(runs, curves, paired)
