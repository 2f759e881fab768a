"""Which step time the report trusts: the paired timing of the arms where it exists, per-run otherwise.

``python -m normbench.bench arms SWEEP_DIR`` times every arm of a study side by side in one process
and writes SWEEP_DIR/paired-timing.json (normbench/bench/arms.py). Each run's own step time was
taken while other runs and processes shared the machine, so where a group has a paired timing the
report's throughput (table, trade-off figure, the answer's speed sentence) is that, and says so;
where it has none, it says "per-run timing, noisy". Torch-free: it reads JSON only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd
from scipy import stats

from normbench.analysis import rules
from normbench.records.published import PAIRED_TIMING_COLUMNS
from normbench.records.record import Unreadable, read_json_file

FILE = "paired-timing.json"
PAIRED_TIMING_FORMAT = "normbench.paired-timing/1"
COLUMNS = ["group", "arm", "study", "task", "group_hash", "step_ms_median", "iqr", "samples_per_s", "ratio",
           "ratio_low", "ratio_high", "reference", "rounds", "threads", "device", "source", "rounds_ms"]
LEVEL = rules.LEVEL  # of a ratio's interval
PAIRED, PER_RUN = "paired", "per-run"
PER_RUN_TEXT = ("per-run timing, noisy: each run timed its own steps while the sweep's other runs and other "
                "processes shared the machine (`python -m normbench.bench arms SWEEP_DIR` times the arms side by side)")


def log_ratio_interval(samples, reference, level: float = LEVEL) -> tuple[float, float, float]:
    """(ratio, low, high) of two arms timed in the same rounds: the median of the per-round ratios
    samples[i] / reference[i] and its distribution-free interval (sign_test). Any two arms'
    ``rounds_ms`` of one paired-timing file may be passed: they shared every round."""
    result = sign_test([math.log(a / b) for a, b in zip(samples, reference)], level)
    return math.exp(result.median), math.exp(result.low), math.exp(result.high)


@dataclass(frozen=True)
class SignTest:
    """The sign test on per-round log-ratios: a load spike in one round is one round on one side, never
    a widened interval. ``low``/``high``: the order-statistic interval of the median (NaN when too
    few rounds for the level); ``p_below``/``p_above``: one-sided p of "ratio < 1" / "ratio > 1"."""

    median: float
    low: float
    high: float
    below: int       # rounds with a ratio below 1
    above: int
    p_below: float
    p_above: float

    def rounds_to_decide(self, alpha: float, limit: int = 1000) -> int | None:
        """Timing rounds at which the share of rounds seen on the side the median leans to would give a
        one-sided p ≤ α (`bench arms --rounds N`); None when no round leans or more than ``limit``."""
        n = self.below + self.above
        if n == 0 or self.below == self.above:
            return None
        share = max(self.below, self.above) / n
        for rounds in range(2, limit + 1):
            if stats.binomtest(math.ceil(share * rounds), rounds, 0.5, alternative="greater").pvalue <= alpha:
                return rounds
        return None


def sign_test(logs, level: float = LEVEL) -> SignTest:
    """The sign test and the median's interval at ``level`` over per-round log-ratios (ties dropped)."""
    x = np.sort(np.asarray([v for v in logs if math.isfinite(v)], float))
    n = len(x)
    if n == 0:
        return SignTest(math.nan, math.nan, math.nan, 0, 0, math.nan, math.nan)
    below, above = int((x < 0).sum()), int((x > 0).sum())
    decided = below + above
    p_below = stats.binomtest(below, decided, 0.5, alternative="greater").pvalue if decided else 1.0
    p_above = stats.binomtest(above, decided, 0.5, alternative="greater").pvalue if decided else 1.0
    # the largest k with P(Binom(n, 1/2) < k) ≤ (1 − level)/2: the median lies in [x_(k), x_(n−k+1)]
    k = int(stats.binom.ppf((1 - level) / 2, n, 0.5))  # the smallest j with P(≤ j) ≥ (1 − level)/2, so P(≤ k − 1) < it
    low, high = (float(x[k - 1]), float(x[n - k])) if k >= 1 else (math.nan, math.nan)
    return SignTest(float(np.median(x)), low, high, below, above, float(p_below), float(p_above))


def _files_near(paths: Iterable[Path]) -> list[Path]:
    """paired-timing.json in each folder given, below it, and in the folders above it."""
    found: dict[Path, None] = {}
    for path in paths:
        path = Path(path)
        folder = path if path.is_dir() else path.parent
        for above in (folder, *folder.parents):
            if (above / FILE).is_file():
                found[(above / FILE).resolve()] = None
        if path.is_dir():
            for below in sorted(path.rglob(FILE)):
                found[below.resolve()] = None
    return list(found)


def _read(path: Path) -> dict | None:
    try:  # the hardened reader: a FIFO or a link to /dev/zero there never hangs the report
        data = read_json_file(path, 16 << 20)
    except Unreadable:
        return None
    return data if isinstance(data, dict) and data.get("schema") == PAIRED_TIMING_FORMAT and isinstance(data.get("arms"), list) else None


_ARM_TEXT = ("group", "arm", "study", "task", "group_hash", "reference")


def _an_arm(arm: object) -> bool:
    """Whether a paired-timing row has the types bench arms writes: text labels, a list of numbers."""
    if not isinstance(arm, dict) or any(not isinstance(arm.get(k), (str, type(None))) for k in _ARM_TEXT):
        return False
    rounds = arm.get("rounds_ms")
    return rounds is None or (isinstance(rounds, list) and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in rounds))


def paired_timing(runs_or_dirs: pd.DataFrame | Iterable[Path | str]) -> pd.DataFrame:
    """One row per arm that has a paired timing, newest file first where two time the same arm.

    ``runs_or_dirs``: the report's runs frame (the files are looked for beside and above each
    ``run_dir``, and ``group`` is the report's label of the arm's group: its study and group_hash
    matched) or folders (``group`` is then the label the timing recorded). Columns: group, arm,
    study, task, group_hash, step_ms_median (ms), iqr (ms, over rounds), samples_per_s, ratio (to
    ``reference``, the geometric mean of per-round ratios), ratio_low, ratio_high (95% t-interval
    over rounds), reference (the reference arm's label), rounds, threads, device, source (the file),
    rounds_ms (the arm's ms per step in each round: two arms of one source shared every round, so
    ``log_ratio_interval(a.rounds_ms, b.rounds_ms)`` compares any pair). Empty (with these columns)
    when no paired timing exists.
    """
    runs = runs_or_dirs if isinstance(runs_or_dirs, pd.DataFrame) else None
    if runs is not None:
        dirs = [Path(d) for d in runs["run_dir"].dropna().astype(str).unique()] if "run_dir" in runs else []
        folders = list(dict.fromkeys(d.parent for d in dirs))
    else:
        folders = [Path(p) for p in runs_or_dirs]
    rows = []
    for path in _files_near(folders):
        data = _read(path)
        if data is None:
            continue
        for arm in data["arms"]:
            if not _an_arm(arm):  # not a row bench arms wrote: passed over, as a file of another schema is
                continue
            rows.append({"group": arm.get("group"), "arm": arm.get("arm"), "study": arm.get("study"),
                         "task": arm.get("task"), "group_hash": arm.get("group_hash"),
                         "step_ms_median": arm.get("step_ms_median"), "iqr": arm.get("iqr_ms"),
                         "samples_per_s": arm.get("samples_per_s"), "ratio": arm.get("ratio"),
                         "ratio_low": arm.get("ratio_low"), "ratio_high": arm.get("ratio_high"),
                         "reference": arm.get("reference"), "rounds": data.get("rounds"),
                         "threads": data.get("threads"), "device": data.get("device"), "source": str(path),
                         "rounds_ms": arm.get("rounds_ms"),
                         "_created": str(data.get("created") or "")})
    frame = pd.DataFrame(rows, columns=[*COLUMNS, "_created"])
    if frame.empty:
        return frame.drop(columns="_created")
    frame = (frame.sort_values("_created", ascending=False, kind="stable")
             .drop_duplicates(["study", "group_hash"]).drop(columns="_created"))
    for column in ("step_ms_median", "iqr", "samples_per_s", "ratio", "ratio_low", "ratio_high"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce")
    if runs is not None and {"study", "group_hash", "group"} <= set(runs.columns):
        labels = (runs.assign(study=runs["study"].astype(str), group_hash=runs["group_hash"].astype(str))
                  .drop_duplicates(["study", "group_hash"]).set_index(["study", "group_hash"])["group"])
        keys = list(zip(frame["study"].astype(str), frame["group_hash"].astype(str)))
        frame["group"] = [labels.get(key) for key in keys]
        frame = frame[frame["group"].notna()]
    return frame.reset_index(drop=True)


def paired_rounds(paired: pd.DataFrame) -> pd.DataFrame:
    """``paired`` (paired_timing's rows) as published (records/published.PAIRED_TIMING_COLUMNS): one row
    per arm per round, ``timing`` numbering the source files (arms of one timing shared every round,
    so log_ratio_interval of two arms' rounds recomputes their ratio); the file paths stay out."""
    rows = []
    for timing, (_, arms) in enumerate(paired.groupby("source", sort=False), 1):
        for arm in arms.itertuples():
            for index, ms in enumerate(arm.rounds_ms if isinstance(arm.rounds_ms, list) else [], 1):
                rows.append({"timing": timing, "study": arm.study, "group": arm.group, "arm": arm.arm,
                             "group_hash": arm.group_hash, "reference": arm.reference, "device": arm.device,
                             "threads": arm.threads, "round": index, "step_ms": float(ms)})
    return pd.DataFrame(rows, columns=PAIRED_TIMING_COLUMNS)


def prefer_paired(summary: pd.DataFrame, paired: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """``summary`` with each group's throughput from its paired timing where there is one.

    samples_per_s_median and step_ms_median become the paired figures (the runs' own medians stay
    in *_per_run); the per-run noise flags (timing_noise_median, samples_per_s_spread) do not apply
    to a paired figure and are emptied for it (kept in *_per_run). Adds ``timing`` (paired |
    per-run), ``paired_ratio``, ``paired_ratio_low``, ``paired_ratio_high`` and ``paired_reference``.
    Returns the frame and one sentence saying which timing the throughput figures use.
    """
    if summary.empty:
        return summary, ""
    out = summary.copy()
    by_group = paired.set_index("group") if not paired.empty else paired
    has = out["group"].isin(by_group.index) if not paired.empty else pd.Series(False, index=out.index)
    out["timing"] = np.where(has, PAIRED, PER_RUN)
    for column in ("samples_per_s_median", "step_ms_median", "timing_noise_median", "samples_per_s_spread"):
        if column in out:
            out[f"{column}_per_run"] = out[column]
    for name in ("paired_ratio", "paired_ratio_low", "paired_ratio_high", "paired_reference"):
        out[name] = None if name == "paired_reference" else np.nan
    if has.any():
        picked = by_group.loc[out.loc[has, "group"]]
        out.loc[has, "samples_per_s_median"] = picked["samples_per_s"].to_numpy()
        out.loc[has, "step_ms_median"] = picked["step_ms_median"].to_numpy()
        for column in ("timing_noise_median", "samples_per_s_spread"):
            if column in out:
                out.loc[has, column] = np.nan
        for name, source in (("paired_ratio", "ratio"), ("paired_ratio_low", "ratio_low"),
                             ("paired_ratio_high", "ratio_high"), ("paired_reference", "reference")):
            out.loc[has, name] = picked[source].to_numpy()
    return out, timing_text(out, paired)


def timing_text(summary: pd.DataFrame, paired: pd.DataFrame) -> str:
    """The sentence that says which step time the throughput figures show."""
    n, total = int((summary["timing"] == PAIRED).sum()), len(summary)
    if n == 0:
        return "Throughput: " + PER_RUN_TEXT + "."
    used = paired[paired["group"].isin(summary.loc[summary["timing"] == PAIRED, "group"])]
    rounds = ", ".join(sorted({str(int(r)) for r in used["rounds"].dropna()}))
    threads = ", ".join(sorted({str(int(t)) for t in used["threads"].dropna()}))
    text = (f"Throughput: paired timing of the arms (`python -m normbench.bench arms`: each arm's training step "
            f"rebuilt from its record and timed interleaved with the others in one process, {rounds} rounds, "
            f"{threads} thread(s)) for {n} of {total} groups")
    return text + ("." if n == total else f"; the other {total - n}: {PER_RUN_TEXT}.")


def record_columns(environment: dict) -> dict:
    """A record's machine condition (normbench/training/machine.py writes it) as flat columns: environment.load_1m.start, ..."""
    out = {f"environment.{key}": environment.get(key) for key in ("cpu_count", "parallel_jobs")}
    for key, parts in (("load_1m", ("start", "end")), ("cpu_pressure", ("start", "end", "over_span"))):
        value = environment.get(key) if isinstance(environment.get(key), dict) else {}
        out.update({f"environment.{key}.{part}": value.get(part) for part in parts})
    return out


CONDITION = (("cpu_count", "cores"), ("parallel_jobs", "parallel jobs of the sweep"),
             ("load_1m.start", "1-min load as training began"), ("load_1m.end", "1-min load as training ended"),
             ("cpu_pressure.over_span", "CPU pressure over training, % (PSI some)"))


def condition_rows(runs: pd.DataFrame) -> list[list[str]]:
    """Environment-table rows (setting, value, runs) for the machine's condition while the runs trained:
    the median and range over the runs that recorded it (records before it: no row)."""
    rows = []
    for key, what in CONDITION:
        column = f"environment.{key}"
        values = pd.to_numeric(runs[column], errors="coerce").dropna() if column in runs else pd.Series(dtype=float)
        if values.empty:
            continue
        low, mid, high = values.min(), values.median(), values.max()
        text = (f"{mid:.3g}" if f"{low:.3g}" == f"{high:.3g}"
                else f"median {mid:.3g} (range {low:.3g}–{high:.3g})")
        rows.append([what, text, str(len(values))])
    return rows
