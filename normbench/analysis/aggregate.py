"""Run records -> pandas: one row per run (runs.csv), one row per group of seeds (summary.csv).

A *run* is one effective config with one seed (normbench/configuration/contract.py): copies of a record, a
rerun and a job resumed after it finished are the same run, counted once (``distinct_runs``).
A *group* is the runs identical in every result-affecting setting but the seed (``group_hash``);
its n is the number of distinct seeds. Groups are labelled by the settings that vary. Group statistics count
the runs that tried to train (TRAINED); `invalid` and `skipped` records never trained and
`incomplete` ones (left `running`: the process died) have no result, so those three are reported
in "what was run" but never enter a mean, a rate or a median.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Iterable

import numpy as np
import pandas as pd

from normbench.analysis import rules
from normbench.analysis.axes import axis_columns, fixed_settings, format_value, varying_axes  # noqa: F401  (readers' names)
from normbench.analysis.conditions import condition_labels
from normbench.analysis.intervals import LEVEL, t_quantile
from normbench.analysis.ranking import rank_groups
from normbench.analysis.speed import record_columns
from normbench.configuration import contract
from normbench.records import metrics as metric_table
from normbench.records import record
from normbench.records.metrics import TIMING_NOISY  # noqa: F401  (the report's name for it: build.py, study_figures.py, provenance.py)
from normbench.records.record import RunRecord

# One primary score on every surface (analysis/rules.py): the last evaluation, a value not selected
# on the data it reports, unless the runs' optimized_metric says best_val; best_val (the best of the
# evaluations, which flatters the group evaluated most often) is shown beside it, labelled.
PRIMARY = metric_table.path(rules.PRIMARY)
SECONDARY = metric_table.path(rules.SECONDARY)
RANK_SCORE = PRIMARY
REPORT_STATUSES = (*record.STATUSES, "incomplete")  # incomplete: a record still "running" when the report read it
TRAINED = record.TRAINED_STATUSES
ALL_RUNS = "all runs"
NO_STUDY = "runs without a study"  # records of single runs or of versions before studies: one comparison
# When the task's record omits higher_is_better, the metric decides (run-record.md lists three).
_HIGHER_IS_BETTER = {name: m.higher_is_better for name, m in metric_table.TASK_METRICS.items()}
_ENVIRONMENT_KEYS = ("device", "device_name", "torch", "python", "normbench_version", "git_commit")


def _is_scalar(value) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _flow_after_first_step(profile) -> float | None:
    """log10(‖∂L/∂h_2‖ / ‖∂L/∂h_T‖) of a gradient-through-time profile: how many decades the gradient
    loses going back in time, leaving out t = 1, where a per-step norm of U·h_0 with h_0 = 0 divides a
    zero-variance row by sqrt(eps) (the spike Cooijmans et al. 2016 §5.1 describe and work around)."""
    if not isinstance(profile, list) or len(profile) < 3:
        return None
    first, last = profile[1], profile[-1]
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0 for v in (first, last)):
        return None
    return math.log10(first / last)


# Where a task's input stops being a near-constant prefix, so that a gradient-through-time profile read from
# there measures the recurrence, not the transient of identical early inputs: digits' first image row
# (pixels 0-7) is blank in most images (pixel 0 in every one, pixel 1 in 85%). Other tasks start at t = 2:
# t = 1 is the per-step norm's division of a zero-variance row (h_0 = 0) by sqrt(eps).
FLOW_WINDOW_START = {"digits": 8}
FLOW_DEFAULT_START = 2


def flow_start(task: object) -> int:
    return FLOW_WINDOW_START.get(str(task), FLOW_DEFAULT_START)


def _flow_over_window(profile, start: int) -> float | None:
    """The signed flow of a gradient-through-time profile over t = start..T (1-based): the OLS line of
    log10 ‖∂L/∂h_t‖ on t, read as log10(fitted ‖∂L/∂h_start‖ / fitted ‖∂L/∂h_T‖). Negative: the gradient
    vanishes going back in time (that many decades); positive: it grows going back; never an absolute value.

    A gradient that vanished below what the float32 backward pass holds reads 0 at the far end of a long
    window (784 steps lose 30+ decades): the line is fitted to the steps that hold a positive norm and read
    over the whole window, so an underflow is the steepest vanishing, never a dropped run. A non-finite or
    negative norm, or fewer than 3 positive ones, is no profile."""
    if not isinstance(profile, list) or len(profile) - start + 1 < 3:
        return None
    window = profile[start - 1:]
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0 for v in window):
        return None
    t = np.arange(start, len(profile) + 1, dtype=float)
    norms = np.asarray(window, dtype=float)
    held = norms > 0
    if held.sum() < 3:
        return None
    slope = float(np.polyfit(t[held], np.log10(norms[held]), 1)[0])
    return -slope * (t[-1] - t[0])


def _last_layer_grad_norm(layer_norms) -> float | None:
    """The entry of the deepest block, `layers.<i>` with the largest i.

    When a block is only reported by its parts (`layers.3.attn`, `layers.3.mlp`) their norms are
    combined in L2, which is what the block's own gradient norm would be.
    """
    if not isinstance(layer_norms, dict):
        return None
    deepest: dict[int, list[float]] = {}
    whole: dict[int, float] = {}
    for name, value in layer_norms.items():
        parts = str(name).split(".")
        if len(parts) < 2 or parts[0] != "layers" or not parts[1].isdigit():
            continue
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        index = int(parts[1])
        if len(parts) == 2:
            whole[index] = float(value)
        else:
            deepest.setdefault(index, []).append(float(value))
    indices = set(whole) | set(deepest)
    if not indices:
        return None
    last = max(indices)
    if last in whole:
        return whole[last]
    return math.sqrt(sum(v * v for v in deepest[last]))


@functools.lru_cache(maxsize=64)
def _purpose(name) -> str:
    """A shipped sweep's question, for records whose study did not name it."""
    from normbench.configuration import study_info

    return study_info.purpose_of(study_info.sweep_file(name)) if isinstance(name, str) else ""


MAX_TRIVIAL = 16  # trivial solutions read per record: a task declares one to three; a column each


def _flatten(record: RunRecord) -> dict:
    summary = record.summary
    status = summary.get("status")
    reason = summary.get("reason")
    if status == "running":
        status = "incomplete"
        reason = reason or "process died: the record still says running"
    config = summary.get("config")
    # identity from the config itself, so records of any version and however they were set agree
    known = contract.identity(config) if isinstance(config, dict) else None
    row = {
        "run_dir": str(record.run_dir),
        "status": status,
        "reason": reason,
        "seed": summary.get("seed"),
        "config_hash": known.config_hash if known else summary.get("config_hash"),
        "group_hash": known.group_hash if known else summary.get("group_hash"),
        "rerun_of": (summary.get("rerun_of") or {}).get("run_dir") if isinstance(summary.get("rerun_of"), dict) else None,
        "optimized_metric": config.get("optimized_metric") if isinstance(config, dict) else None,
        "parameters": summary.get("parameters") if _is_scalar(summary.get("parameters")) else None,  # regime.scale
    }
    study = summary.get("study") if isinstance(summary.get("study"), dict) else {}
    arms = study.get("arms") if isinstance(study.get("arms"), list) else []
    row.update({"study": str(study.get("id") or NO_STUDY), "study.name": str(study.get("name") or NO_STUDY),
                "study.purpose": str(study.get("purpose") or _purpose(study.get("name"))), "study.command": str(study.get("command") or ""),
                "study.arms": ",".join(str(a) for a in arms),
                # how the study set its arms' lrs (studies/lr_protocol.py); absent in older records
                "study.lr_protocol": study.get("lr_protocol") if isinstance(study.get("lr_protocol"), str) else None,
                "study.lr_why": study.get("lr_why") if isinstance(study.get("lr_why"), str) else None})
    if known:
        row.update({f"axes.{k}": v for k, v in known.settings.items() if _is_scalar(v)})
    for group in ("axes", "task", "metrics", "throughput"):
        if group == "axes" and known:
            continue
        values = summary.get(group)
        if isinstance(values, dict):  # a metric an earlier version wrote under another name reads as its name now
            name = metric_table.current_key if group == "metrics" else str
            row.update({f"{group}.{name(k)}": v for k, v in values.items() if _is_scalar(v)})
    trivial = summary.get("task", {}).get("trivial") if isinstance(summary.get("task"), dict) else None
    if isinstance(trivial, dict):  # the task's trivial solutions by name (normbench/tasks/trivial.py)
        numbers = [(str(k)[:80], v) for k, v in trivial.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
        row.update({f"task.trivial.{k}": v for k, v in numbers[:MAX_TRIVIAL]})
    times = summary.get("time") if isinstance(summary.get("time"), dict) else {}
    for key in ("wall_s", "train_s", "started", "ended"):
        row[f"time.{key}"] = times.get(key)
    environment = summary.get("environment") if isinstance(summary.get("environment"), dict) else {}
    for key in _ENVIRONMENT_KEYS:
        row[f"environment.{key}"] = environment.get(key)
    # the in-cell recurrence that ran, by its present name whatever the record's version says (compiled-avx512 for cpp-avx512)
    row["environment.cell_kernel"] = contract.recorded_cell_kernel(environment.get("cell_kernel"))
    row.update(record_columns(environment))  # load and CPU pressure while it trained
    profiles = summary.get("profiles") if isinstance(summary.get("profiles"), dict) else {}
    row["profiles.last_layer_grad_norm_init"] = _last_layer_grad_norm(profiles.get("layer_grad_norm_init"))
    row["profiles.grad_time_decay_init"] = _flow_after_first_step(profiles.get("grad_time_init"))
    start = flow_start((summary.get("task") or {}).get("name") if isinstance(summary.get("task"), dict) else None)
    flow = _flow_over_window(profiles.get("grad_time_init"), start)
    row["profiles.grad_time_flow_init"] = flow
    row["profiles.grad_time_flow_steps"] = len(profiles["grad_time_init"]) - start + 1 if flow is not None else None
    row["profiles.ffn_w2_grad_norm_init"] = profiles.get("ffn_w2_grad_norm_init") if _is_scalar(profiles.get("ffn_w2_grad_norm_init")) else None
    row["profiles.hidden_var_last_log"] = _last_log(profiles.get("hidden_var_final"))
    row["profiles.skip_loss_deep_over_shallow"] = _deep_over_shallow(profiles.get("layer_skip_loss_increase"))
    return row


def _deep_over_shallow(values) -> float | None:
    """How much a deep block matters against a shallow one: the mean loss increase when one block of the
    deeper half is skipped over the same for the shallower half without its first block (which carries
    the embedding in every placement, so it always matters most). < 1 = the deep blocks matter less (the
    "curse of depth" Sun et al. 2025 and Li et al. 2025 describe in Pre-LN). None below 4 blocks, or where
    an entry is missing or the shallow mean is not positive."""
    number = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)  # noqa: E731
    if not isinstance(values, list) or len(values) < 4 or not all(number(v) for v in values):
        return None
    numbers = [float(v) for v in values]
    if not all(math.isfinite(v) for v in numbers):
        return None
    half = len(numbers) // 2
    shallow, deep = numbers[1:half], numbers[half:]
    mean_shallow = sum(shallow) / len(shallow)
    return (sum(deep) / len(deep)) / mean_shallow if mean_shallow > 0 else None


def _last_log(values) -> float | None:
    """ln of the last entry of a per-block profile (the deepest block's hidden-state variance), None where
    the profile is missing or that entry is not a positive finite number."""
    if not isinstance(values, list) or not values or not _is_scalar(values[-1]):
        return None
    last = float(values[-1])
    return math.log(last) if math.isfinite(last) and last > 0 else None


def runs_frame(records: Iterable[RunRecord]) -> pd.DataFrame:
    """One row per record, flat dotted columns: the content of runs.csv."""
    runs = pd.DataFrame([_flatten(r) for r in records])
    if runs.empty:
        return pd.DataFrame(columns=["run_dir", "status", "reason", "seed", "config_hash"])
    numeric = [c for c in runs.columns if c.startswith(("metrics.", "throughput.", "profiles.", "task.trivial."))
               or c in ("time.wall_s", "time.train_s", "seed", "task.chance", "task.target", "parameters")]
    for column in numeric:
        if column != metric_table.path("memory_kind"):
            runs[column] = pd.to_numeric(runs[column], errors="coerce")
    if "task.name" not in runs:
        runs["task.name"] = runs["axes.task"] if "axes.task" in runs else None
    runs["task.name"] = runs["task.name"].fillna("n/a")
    inferred = runs.get("task.metric", pd.Series(None, index=runs.index)).map(_HIGHER_IS_BETTER)
    given = runs.get("task.higher_is_better", pd.Series(None, index=runs.index))
    runs["task.higher_is_better"] = given.where(given.notna(), inferred).fillna(True).astype(bool)
    # verdicts: decided here from what each run measured, never read back from a record
    runs[metric_table.path("at_chance")] = rules.at_chance_column(runs)
    runs[metric_table.path("failed_to_learn")] = rules.failed_to_learn_column(runs)
    runs[metric_table.path("held_at")] = rules.held_at_column(runs)
    return read_back_defaults(runs)


def read_back_defaults(runs: pd.DataFrame) -> pd.DataFrame:
    """A setting at the value every earlier record ran with is left out of a run's identity
    (contract.EARLIER_DEFAULTS). Where a study sets it on some of its runs, its other runs of a family that
    reads it read that value, so qknorm_lr's arms are "model.qk_norm=true" and "model.qk_norm=false", not
    "model.qk_norm=true" and two arms told apart only by their hash."""
    study = runs["study"] if "study" in runs else pd.Series(NO_STUDY, index=runs.index)
    family = runs["axes.model"].astype(str) if "axes.model" in runs else pd.Series("", index=runs.index)
    for key, default in contract.EARLIER_DEFAULTS.items():
        column = f"axes.{key}"
        if column not in runs:
            continue
        set_in_study = runs[column].notna().groupby(study).transform("any")
        reads = family.map(lambda name, key=key: contract.family_reads(name, key))
        missing = runs[column].isna() & set_in_study & reads
        if missing.any():
            runs[column] = runs[column].astype(object).where(~missing, default)
    return runs


_KEEP_FIRST = {"ok": 0, "diverged": 0, "invalid": 0, "skipped": 0, "failed": 1, "interrupted": 1, "incomplete": 2}


def distinct_runs(runs: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(runs, copies): one row per run identity (config_hash, which includes the seed).

    Of several records of one run the report keeps a finished one over a failed or unfinished
    attempt, an original over a rerun, then the earliest started; the others are returned as
    copies, with ``copy_of`` naming the record kept. A record without a config hash is its own run.
    """
    if runs.empty or "config_hash" not in runs:
        return runs, runs.iloc[0:0].assign(copy_of=None)
    order = runs.assign(
        _status=runs["status"].map(_KEEP_FIRST).fillna(3),
        _rerun=runs.get("rerun_of", pd.Series(None, index=runs.index)).notna(),
        _started=runs["time.started"].fillna("") if "time.started" in runs else "",
    ).sort_values(["_status", "_rerun", "_started", "run_dir"], kind="stable")
    # One run per identity within a study: the same run in two studies answers two questions.
    key = (order["study"].astype(str) + "/" if "study" in order else "") + order["config_hash"].astype(str)
    known = order["config_hash"].notna()
    copy = known & key.duplicated(keep="first")
    kept_dir = pd.Series(order.loc[known & ~copy, "run_dir"].to_numpy(), index=key[known & ~copy])
    copies = order[copy].assign(copy_of=key[copy].map(kept_dir))
    distinct = order[~copy].sort_index()
    helper = ["_status", "_rerun", "_started"]
    return distinct.drop(columns=helper), copies.drop(columns=helper)


def naming_axes(runs: pd.DataFrame, axes: list[str]) -> list[str]:
    """The fewest of ``axes`` (taken in reading order) whose values tell every group apart.

    When sweeps of different designs are reported together, many settings vary (steps, sizes,
    lengths ...), but a few suffice to name each group; the tables still show every setting.
    """
    if "group_hash" not in runs or not len(runs):
        return axes
    groups = runs.drop_duplicates("group_hash")
    chosen: list[str] = []
    distinct = 1
    for axis in axes:
        tried = groups[[*chosen, axis]].astype(str).drop_duplicates().shape[0]
        if tried > distinct:
            chosen.append(axis)
            distinct = tried
        if distinct == len(groups):
            break
    return chosen or axes[:1]


def _describe(rows: pd.DataFrame, axes: list[str]) -> pd.Series:
    """ "norm=ln, placement=pre" per row; settings that do not apply to a run are left out."""
    if not axes or rows.empty:
        return pd.Series(ALL_RUNS, index=rows.index, dtype=object)
    def one(row) -> str:
        return ", ".join(f"{c.removeprefix('axes.')}={format_value(row[c])}" for c in axes
                         if not (row[c] is None or (isinstance(row[c], float) and math.isnan(row[c])))) or ALL_RUNS
    return rows[axes].apply(one, axis=1)


def arm_axes(study_runs: pd.DataFrame) -> list[str]:
    """The settings that name a study's arms: those that vary within the study, the ones its sweep
    declared first (studies record the swept keys), then the fewest others that tell its groups apart."""
    varying = varying_axes(study_runs)
    declared = set()
    if "study.arms" in study_runs:
        for text in study_runs["study.arms"].dropna().astype(str).unique():
            declared |= {k.split(".")[-1] for k in text.split(",") if k}
            declared |= {k for k in text.split(",") if k}
    first = [a for a in varying if a.removeprefix("axes.") in declared]
    return naming_axes(study_runs, first + [a for a in varying if a not in first])


def study_titles(runs: pd.DataFrame) -> dict[str, str]:
    """study id -> its name, with the id's start where two studies share a name."""
    if "study" not in runs or runs.empty:
        return {}
    named = runs.drop_duplicates("study").set_index("study")["study.name"].astype(str)
    shared = named.duplicated(keep=False)
    return {sid: (f"{name} [{sid[:6]}]" if shared[sid] else name) for sid, name in named.items()}


def label_groups(runs: pd.DataFrame, axes: list[str]) -> pd.DataFrame:
    """Adds `arm` (the group named by its study's arm settings: "norm=ln, placement=pre") and
    `group` (unique over the report: the arm, prefixed by the study's title when there are several).

    A group is a group_hash within a study: the same settings in two studies are two groups, each
    compared only with its own study's arms."""
    runs = runs.copy()
    if "study" not in runs:
        runs["study"], runs["study.name"] = NO_STUDY, NO_STUDY
    arm = pd.Series(ALL_RUNS, index=runs.index, dtype=object)
    for _, mine in runs.groupby("study", sort=False):
        arm[mine.index] = _describe(mine, arm_axes(mine))
    titles = study_titles(runs)
    label = arm if len(titles) <= 1 else runs["study"].map(titles) + " · " + arm
    # Two groups that the arm settings cannot tell apart (records of an older version lacking a
    # setting) keep apart by their hash.
    if "group_hash" in runs and len(runs):
        identity = runs["study"].astype(str) + "/" + runs["group_hash"].fillna(runs["run_dir"]).astype(str)
        clashing = identity.groupby(label).transform("nunique") > 1
        suffix = " [" + runs["group_hash"].fillna(runs["run_dir"]).astype(str).str[:6] + "]"
        label = label.where(~clashing, label + suffix)
        arm = arm.where(~clashing, arm + suffix)
    runs["arm"], runs["group"] = arm, label
    runs["condition"] = condition_labels(runs)  # ranked within, never across (conditions.py)
    runs[rules.STUDY_SCORE] = rules.study_scores(runs)  # one score per study, read by every surface
    return runs


def sorted_values(values: Iterable) -> list:
    """Distinct axis values in natural order: numbers numerically, then text, then missing."""
    distinct = pd.Series(list(values), dtype=object).drop_duplicates().tolist()

    def key(v):
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return (2, 0.0, "")
        if isinstance(v, (int, float, np.number)) and not isinstance(v, bool):
            return (0, float(v), "")
        return (1, 0.0, str(v))

    return sorted(distinct, key=key)


def _t_half_width(std: pd.Series, n: pd.Series) -> pd.Series:
    quantiles = {k: t_quantile(0.5 + LEVEL / 2, k - 1) for k in n.dropna().unique() if k >= 2}
    factor = n.map(lambda k: quantiles.get(k, math.nan)).astype(float)
    return factor * std / np.sqrt(n.astype(float))


def summarize_groups(runs: pd.DataFrame, axes: list[str], levels: dict[str, float] | None = None) -> pd.DataFrame:
    """Per group of seeds: the content of summary.csv, ranked within each task (direction-aware);
    ``levels``: each study's level (rules: the one its sequential design spent), ALPHA otherwise."""
    trained = runs[runs["status"].isin(TRAINED)]
    if trained.empty:
        return pd.DataFrame(columns=["task", "group", *axes, "n", "rank", "best"])
    summary = _group_statistics(_per_run(trained))
    summary = _label_groups(summary, trained, axes).reset_index()
    summary = _ranked(summary, trained, axes, levels)
    # the condition its arms are ranked within (analysis/conditions.py): after the columns readers had
    by_group = trained.groupby("group", sort=False)["condition"].first() if "condition" in trained else {}
    summary["condition"] = summary["group"].map(by_group).fillna("") if len(by_group) else ""
    return summary


def _per_run(trained: pd.DataFrame) -> pd.DataFrame:
    """One row per trained run: the values the groups aggregate, failures and misses made explicit.

    The grouped metrics come from normbench/records/metrics.py (a finished_only one counts only runs that
    ended ok: best_val is the best of many evaluations, so it flatters; the last evaluation and the
    test split do not); steps and seconds to target and the timing noise are made here."""
    def column(name: str) -> pd.Series:
        return trained[name] if name in trained else pd.Series(np.nan, index=trained.index)

    ok = trained["status"] == "ok"
    steps = column(metric_table.path("steps_to_target"))
    return pd.DataFrame({
        "group": trained["group"],
        "ok": ok,
        "diverged": trained["status"] == "diverged",
        "failed_to_learn": rules.failed_to_learn(trained),  # the claims' "did not train", counted beside at_chance
        "seed": column("seed"),
        "timing_noise": column(metric_table.path("step_ms_p90")) / column(metric_table.path("step_ms_p10")),
        "reached": steps.notna(),
        # A run that never reached the target counts as taking forever, so it pulls the median
        # rather than vanishing from it.
        "steps": steps.fillna(math.inf),
        "seconds": column(metric_table.path("seconds_to_target")).where(steps.notna(), math.inf).fillna(math.inf),
        **{m.key: column(m.path).where(ok) if m.finished_only else column(m.path) for m in metric_table.grouped()},
    })


def _named_statistics(metrics: list[metric_table.Metric]) -> dict[str, tuple[str, str]]:
    """summary.csv's columns of these metrics, as pandas' named aggregation: {column: (per-run column, how)}."""
    return {stat.column(m.prefix): (m.key, stat.how) for m in metrics for stat in m.group}


def _group_statistics(work: pd.DataFrame) -> pd.DataFrame:
    """Counts, means, spreads, intervals and medians per group (indexed by group)."""
    grouped = work.groupby("group", sort=False)
    # The scores summary.csv always led with (best_val, final_val, test: the metric table's first, finished-only
    # entries) come first; every later entry, a later score too, follows the others (columns only ever added).
    metrics = list(metric_table.grouped())
    lead = next((i for i, m in enumerate(metrics) if not m.finished_only), len(metrics))
    scores, others = metrics[:lead], metrics[lead:]
    summary = grouped.agg(
        n=("ok", "size"),
        n_ok=("ok", "sum"),
        n_diverged=("diverged", "sum"),
        seeds=("seed", "nunique"),
        **_named_statistics(scores),
        timing_noise_median=("timing_noise", "median"),
        reached=("reached", "sum"),
        failed_to_learn=("failed_to_learn", "sum"),
        **_named_statistics(others),
    )
    # The lower median: "not reached" exactly when more than half of the runs did not reach it.
    summary["steps_to_target_median"] = grouped["steps"].quantile(0.5, interpolation="lower")
    summary["seconds_to_target_median"] = grouped["seconds"].quantile(0.5, interpolation="lower")
    summary["divergence_rate"] = summary["n_diverged"] / summary["n"]
    for name in (m.prefix for m in metrics if m.finished_only and {"mean", "std", "count"} <= {s.how for s in m.group}):
        half = _t_half_width(summary[f"{name}_std"], summary[f"{name}_n"])
        summary[f"{name}_ci_low"] = summary[f"{name}_mean"] - half
        summary[f"{name}_ci_high"] = summary[f"{name}_mean"] + half
    # Seeds of one group timed at very different speeds mean the machine's load changed, not the code.
    summary["samples_per_s_spread"] = summary["samples_per_s_max"] / summary["samples_per_s_min"]
    return summary


def _label_groups(summary: pd.DataFrame, trained: pd.DataFrame, axes: list[str]) -> pd.DataFrame:
    """Each group's task and axis values in front, its metric, direction and memory kind behind."""
    first = trained.groupby("group", sort=False).first()
    summary.insert(0, "task", first["task.name"])
    summary.insert(0, "study", first["study"])
    summary.insert(1, "study_name", first["study"].map(study_titles(trained)))
    summary.insert(2, "arm", first["arm"])
    for key in ("purpose", "command"):
        summary[f"study_{key}"] = first[f"study.{key}"] if f"study.{key}" in first else ""
    summary["study_role"] = first["axes.role"].fillna("single") if "axes.role" in first else "single"
    # one comparison = one study's groups of one role on one task at one condition (ranking.comparisons)
    condition = first["condition"].astype(str) if "condition" in first else ""
    summary["comparison"] = (first["study"].astype(str) + "|" + summary["study_role"].astype(str) + "|"
                             + first["task.name"].astype(str) + "|" + condition)
    for position, axis in enumerate([a for a in axes if a != "axes.task"], start=1):
        summary.insert(position, axis.removeprefix("axes."), first[axis])
    summary["metric"] = first["task.metric"] if "task.metric" in first else "best_val"
    summary["higher_is_better"] = first["task.higher_is_better"].astype(bool)
    summary["memory_kind"] = (trained.groupby("group", sort=False)[metric_table.path("memory_kind")]
                              .agg(lambda kinds: "/".join(sorted(set(kinds.dropna().astype(str)))))
                              if metric_table.path("memory_kind") in trained else "")
    return summary


def primary_score(runs: pd.DataFrame) -> str:
    """The runs frame's column the summaries rank on (rules.score_column)."""
    return rules.score_column(runs)


def _ranked(summary: pd.DataFrame, trained: pd.DataFrame, axes: list[str],
            levels: dict[str, float] | None = None) -> pd.DataFrame:
    """Rank and best flag within each task, rows best first, the columns a reader wants first in front."""
    # each study ranks on the score it is read on (rules.study_scores: under a constant lr the mean of the last
    # evaluations), the one its claims and answers read
    names = {str(study): primary_score(frame).removeprefix("metrics.")
             for study, frame in trained.groupby("study", sort=False)}
    score = summary["study"].astype(str).map(names).fillna(rules.PRIMARY)
    pick = lambda key: pd.Series([summary.at[i, f"{n}_mean"] if f"{n}_mean" in summary else np.nan  # noqa: E731
                                  for i, n in score.items()], index=summary.index, dtype=float)
    ranked = pick(score).fillna(pick(score.map(lambda n: "best_val" if n != "best_val" else "final_val")))
    oriented = ranked.where(summary["higher_is_better"], -ranked)
    ranks = rank_groups(trained, summary, levels=levels)  # ranking.RULE, within each study and task, on its score
    for column in ranks.columns:
        summary[column] = ranks[column]
    summary["score"] = score  # which score ranked this comparison (its study's; the other is shown, labelled)
    summary = summary.assign(_order=summary["rank"].fillna(math.inf), _unranked=-oriented.fillna(-math.inf))
    summary = summary.sort_values(["study_name", "study", "task", "_order", "_unranked"], kind="stable")
    leading = ["study", "study_name", "task", "arm", "group", *[a.removeprefix("axes.") for a in axes if a != "axes.task"],
               "rank", "best", "shown_worse",
               "metric", "higher_is_better", "best_val_mean", "best_val_ci_low", "best_val_ci_high",
               "best_val_std", "best_val_n", "final_val_mean", "final_val_ci_low", "final_val_ci_high",
               "test_mean", "test_ci_low", "test_ci_high", "seeds", "n", "n_ok", "n_diverged", "divergence_rate", "reached",
               "steps_to_target_median", "seconds_to_target_median"]
    rest = [c for c in summary.columns if c not in leading and c not in ("_order", "_unranked", "failed_to_learn")]
    at = rest.index("at_chance") + 1  # the two failure counts side by side: the chance band's, the claims' rule's
    ordered = leading + rest[:at] + ["failed_to_learn"] + rest[at:]
    return summary[ordered].reset_index(drop=True)


def main_axes(runs: pd.DataFrame, axes: list[str]) -> list[str]:
    """The two axes a heatmap is drawn over: norm x placement when both vary, else the widest."""
    candidates = [a for a in axes if a not in ("axes.task",)]
    if "axes.norm" in candidates and "axes.placement" in candidates:
        return ["axes.norm", "axes.placement"]
    width = {a: runs[a].astype(str).nunique() for a in candidates}
    preferred = [a for a in ("axes.norm", "axes.placement") if a in candidates]
    rest = sorted((a for a in candidates if a not in preferred), key=lambda a: -width[a])
    return (preferred + rest)[:2]


@dataclass(frozen=True)
class AxisGrid:
    """One task's row x col tables: primary-metric mean, its 95% half-width and n (ok runs), and
    the divergence rate (trained runs)."""

    metric: pd.DataFrame
    half_width: pd.DataFrame
    n: pd.DataFrame
    diverged: pd.DataFrame


def axis_grid(runs: pd.DataFrame, row: str, col: str) -> AxisGrid:
    """Primary metric and divergence rate over row x col, one task; a cell pools its runs over seeds
    and over every other setting."""
    trained = runs[runs["status"].isin(TRAINED)]
    rows = sorted_values(trained[row])
    cols = sorted_values(trained[col])
    keys = [trained[row].map(format_value), trained[col].map(format_value)]
    score = primary_score(trained)
    primary = trained[score].where(trained["status"] == "ok") if score in trained else np.nan
    frame = pd.DataFrame({"row": keys[0], "col": keys[1], "primary": primary,
                          "diverged": (trained["status"] == "diverged").astype(float)})
    index = [format_value(v) for v in rows]
    columns = [format_value(v) for v in cols]

    def pivot(values: str, how) -> pd.DataFrame:
        table = frame.pivot_table(index="row", columns="col", values=values, aggfunc=how, dropna=False)
        return table.reindex(index=index, columns=columns)

    n = pivot("primary", "count")
    half = pd.DataFrame(_t_half_width(pivot("primary", "std").stack(future_stack=True),
                                      n.stack(future_stack=True)).unstack(), dtype=float)
    return AxisGrid(pivot("primary", "mean"), half.reindex(index=index, columns=columns), n, pivot("diverged", "mean"))


def curve_bands(curves: pd.DataFrame, runs: pd.DataFrame, kind: str, value: str,
                log: bool = False) -> pd.DataFrame:
    """Mean and 95% t-band across seeds of one curve, per group and step.

    Columns: task, group, step, time_s (mean train seconds at that step), mean, low, high, n.
    With log=True the statistics are taken on log10(value) and returned exponentiated, which is
    the geometric mean: the right centre for gradient norms that span decades.
    """
    lines = curves[(curves["kind"] == kind) & curves[value].notna()]
    lines = lines.merge(runs[["run_dir", "group", "task.name"]], on="run_dir", how="inner")
    y = lines[value].astype(float)
    if log:
        y = np.log10(y.where(y > 0))
    lines = lines.assign(y=y).replace([np.inf, -np.inf], np.nan).dropna(subset=["y"])
    if lines.empty:
        return pd.DataFrame(columns=["task", "group", "step", "time_s", "mean", "low", "high", "n"])
    bands = (lines.groupby(["task.name", "group", "step"], sort=True)
             .agg(time_s=("time_s", "mean"), mean=("y", "mean"), std=("y", "std"), n=("y", "count"))
             .reset_index().rename(columns={"task.name": "task"}))
    half = _t_half_width(bands["std"], bands["n"])
    bands["low"] = bands["mean"] - half
    bands["high"] = bands["mean"] + half
    if log:
        for column in ("mean", "low", "high"):
            bands[column] = 10.0 ** bands[column]
    return bands.drop(columns="std")


def grad_time_profiles(records: Iterable[RunRecord], runs: pd.DataFrame) -> pd.DataFrame:
    """Geometric mean over seeds of ||dL/dh_t|| per group, t and moment (init / final)."""
    group_of = dict(zip(runs["run_dir"], runs["group"]))
    pieces = []
    for record in records:
        group = group_of.get(str(record.run_dir))
        profiles = record.summary.get("profiles")
        if group is None or not isinstance(profiles, dict):
            continue
        for moment in ("init", "final"):
            norms = profiles.get(f"grad_time_{moment}")
            if not isinstance(norms, list) or not norms:
                continue
            values = pd.to_numeric(pd.Series(norms), errors="coerce").to_numpy(dtype=float)
            pieces.append(pd.DataFrame({"group": group, "moment": moment,
                                        "t": np.arange(1, len(values) + 1), "norm": values}))
    if not pieces:
        return pd.DataFrame(columns=["group", "moment", "t", "norm"])
    long = pd.concat(pieces, ignore_index=True)
    long = long[long["norm"] > 0]
    long["log_norm"] = np.log10(long["norm"])
    profile = long.groupby(["group", "moment", "t"], sort=True)["log_norm"].mean().reset_index()
    profile["norm"] = 10.0 ** profile.pop("log_norm")
    return profile


def plotted_groups(summary: pd.DataFrame, limit: int = 12) -> list[str]:
    """The groups that get a curve: the best of each task in leaderboard order, `limit` in all."""
    if summary.empty:
        return []
    tasks = summary["task"].unique()
    per_task = max(1, math.ceil(limit / len(tasks)))
    chosen = summary.groupby("task", sort=False).head(per_task)
    return chosen["group"].head(limit).tolist()

