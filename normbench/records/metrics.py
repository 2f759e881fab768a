"""Every value a run record's ``metrics`` and ``throughput`` sections hold, described once.

One ``Metric`` per record key, in the record's order: which way is better, whether the task's chance
level applies, its unit, the name a reader sees, the module that fills it, and how a group of seeds
summarizes it in summary.csv. The Trainer orders its record by this table, the report builds its
per-group columns from it, and the claims, the loggers, ``rerun`` and ``compare`` name metrics
through it. Adding a metric: one entry here and the line that computes it (``computed_in``); its
summary.csv columns follow the existing ones, and VIEWS names it where a logger, rerun or compare
should show it.

Torch-free and importing nothing of normbench: every floor may read it.
"""

from __future__ import annotations

from dataclasses import dataclass

# A run whose slowest tenth of steps took this many times its fastest tenth was timed on a busy
# machine (or one that changed speed): its throughput says more about the load than about the code.
TIMING_NOISY = 1.5


@dataclass(frozen=True)
class TaskMetric:
    """A task's own metric (what best_val, final_val, test and val_auc are in): the record's
    ``task.metric`` names it; the report falls back on this where a record lacks the direction.
    A run computes it with its entry in normbench/tasks/scoring.py (``METRIC_SUMS``).

    The decision fields (docs/studies.md, "The rules", says why each value): ``ratio`` compares
    arms as ratios (log scale; a metric that spans decades), ``smallest_effect`` is the smallest
    difference anyone would act on (a ratio when ``ratio``) and the margin of every equivalence,
    non-inferiority and "alike" statement, ``chance_band`` is how far from the task's chance level
    a run's best evaluation must get to count as trained (a ratio when ``ratio``)."""

    higher_is_better: bool
    unit: str                                  # the figures' axis words
    bounds: tuple[float | None, float | None]  # what the metric can be: a t-band is clipped to it
    ratio: bool = False
    smallest_effect: float = 0.01
    chance_band: float = 0.02


TASK_METRICS: dict[str, TaskMetric] = {
    "accuracy": TaskMetric(True, "fraction correct", (0.0, 1.0), smallest_effect=0.01, chance_band=0.02),
    "mse": TaskMetric(False, "mean squared error", (0.0, None), ratio=True, smallest_effect=1.1, chance_band=1.05),
    "bpc": TaskMetric(False, "bits per character", (0.0, None), smallest_effect=0.02, chance_band=0.05),
}


def target_range(metric: str) -> str | None:
    """What a steps-to-target target of ``metric`` can be, in words ("in (0, 1]", ">= 0"), and None for a metric
    this table does not describe. Outside the metric's bounds no run reaches it; at the bound on the worse side
    (accuracy 0) every run reaches it at its first evaluation, so that end is open."""
    spec = TASK_METRICS.get(metric)
    if spec is None:
        return None
    low, high = spec.bounds
    open_low, open_high = spec.higher_is_better, not spec.higher_is_better
    if high is None:
        return f"{'>' if open_low else '>='} {low:g}"
    return f"in {'(' if open_low else '['}{low:g}, {high:g}{')' if open_high else ']'}"


def target_in_range(metric: str, target: float) -> bool:
    """Whether ``target`` is a target of ``metric`` some run reaches and not every run does (target_range)."""
    spec = TASK_METRICS.get(metric)
    if spec is None:
        return True
    low, high = spec.bounds
    above_low = low is None or (target > low if spec.higher_is_better else target >= low)
    below_high = high is None or (target <= high if spec.higher_is_better else target < high)
    return above_low and below_high


# The score every surface ranks on unless a run's ``optimized_metric`` names another: the last
# validation evaluation (best_val is the best of many evaluations, selected on the data it reports;
# final_val_smoothed the mean of the last evaluations, normbench/records/convergence.py). A score's
# secondary is the first other one here: best_val for final_val, final_val for the other two.
PRIMARY_SCORE, SECONDARY_SCORE, SMOOTHED_SCORE = "final_val", "best_val", "final_val_smoothed"
SCORES = (PRIMARY_SCORE, SECONDARY_SCORE, SMOOTHED_SCORE)
CONFIG_KEY = "optimized_metric"  # the config key a run's score is named by


def record_score(summary: dict) -> str:
    """The score of one record (summary.json as a dict): its config's ``optimized_metric``, final_val by
    default. Here, not in analysis/rules.py beside the runs frame's rule (rules.primary), which reads it from
    here: a run's own process (its end line, the sweep's table) reads it without importing pandas."""
    config = summary.get("config") if isinstance(summary, dict) and isinstance(summary.get("config"), dict) else {}
    named = config.get(CONFIG_KEY)
    return named if named in SCORES else PRIMARY_SCORE


def other_score(key: str) -> str:
    """The validation score that is not ``key``: shown beside the primary one, labelled."""
    return next(k for k in SCORES if k != key)


@dataclass(frozen=True)
class Stat:
    """One summary.csv column of a group of seeds: ``<prefix>_<how>`` (pandas' named aggregation)."""

    how: str                # "mean", "median", "min", "max", "std", "count"
    title: str = ""         # the gradient table's column title (report/tables.py), when shown there

    def column(self, prefix: str) -> str:
        return f"{prefix}_{'n' if self.how == 'count' else self.how}"


@dataclass(frozen=True)
class Metric:
    key: str                   # the record key, in its section
    section: str               # "metrics" or "throughput"
    label: str                 # what a reader calls it
    unit: str = ""             # "" for a pure number; "task" for the task's own metric (accuracy, bpc, mse)
    direction: str | None = None  # "higher", "lower", "task" (the task's higher_is_better), None: neither
    chance: str | None = None  # "task": the task's chance level is this metric's uninformed value
    computed_in: str = "normbench.training.train"
    group: tuple[Stat, ...] = ()  # its summary.csv columns per group of seeds
    group_as: str | None = None   # the prefix of those columns when it is not the key
    finished_only: bool = False   # a group counts it only for runs that ended ok

    @property
    def path(self) -> str:
        """The column of the report's runs frame: ``metrics.best_val``, ``throughput.step_ms_median``."""
        return f"{self.section}.{self.key}"

    @property
    def prefix(self) -> str:
        return self.group_as or self.key


_SCORE = (Stat("count"), Stat("mean"), Stat("std"))
_PROBES, _CONVERGENCE = "normbench.training.probes", "normbench.records.convergence"

METRICS: tuple[Metric, ...] = (
    Metric("best_val", "metrics", "best validation metric", "task", "task", "task", group=_SCORE,
           finished_only=True),
    Metric("final_val", "metrics", "last validation metric", "task", "task", "task", group=_SCORE,
           finished_only=True),
    Metric("test", "metrics", "test metric", "task", "task", "task", group=_SCORE, finished_only=True),
    Metric("final_train_loss", "metrics", "last training loss", "loss", "lower"),
    Metric("steps_to_target", "metrics", "steps to target", "steps", "lower"),
    Metric("seconds_to_target", "metrics", "seconds to target", "s", "lower"),
    Metric("diverged_at_step", "metrics", "diverged at step", "step"),
    # verdicts, not measurements: decided by the analysis from best_val and the task's chance level and trivial
    # solutions whenever records are read (analysis/rules.py), never written by a run. at_chance: a finished run
    # whose best evaluation never left the chance band (the leaderboard's "at chance"); failed_to_learn: the claims'
    # "did not train" (diverged, at chance, or held at a trivial solution); held_at: the trivial solution a
    # finished run's best evaluation did not get beyond (empty when it got beyond them all, or its task has none)
    Metric("at_chance", "metrics", "stayed at chance (best evaluation within the chance band)",
           computed_in="normbench.analysis.rules"),
    Metric("failed_to_learn", "metrics", "did not train (diverged, stayed at chance, or held at a trivial solution)",
           computed_in="normbench.analysis.rules"),
    Metric("held_at", "metrics", "the trivial solution its best evaluation did not get beyond",
           computed_in="normbench.analysis.rules"),
    Metric("last_finite_loss", "metrics", "last finite loss", "loss"),
    Metric("loss_spikes", "metrics", "loss spikes", "count", "lower", computed_in=_PROBES),
    Metric("loss_spike_steps", "metrics", "steps of the loss spikes (first 100)", "step", computed_in=_PROBES),
    Metric("grad_norm_median", "metrics", "grad norm", group=(Stat("median", "grad norm (median)"),)),
    Metric("grad_norm_max", "metrics", "grad norm", "", "lower", group=(Stat("max", "grad norm (max)"),)),
    Metric("grad_std", "metrics", "grad std", computed_in=_PROBES, group=(Stat("mean", "grad std (mean)"),)),
    Metric("grad_kurtosis", "metrics", "grad kurtosis", computed_in=_PROBES,
           group=(Stat("mean", "grad kurtosis (mean; normal = 3)"),)),
    Metric("grad_kurtosis_max", "metrics", "grad kurtosis (max over probes)", computed_in=_PROBES,
           group=(Stat("max", "grad kurtosis (max over probes)"),), group_as="grad_kurtosis"),
    Metric("act_max_abs", "metrics", "largest activation", computed_in=_PROBES),
    Metric("act_rms", "metrics", "activation rms", computed_in=_PROBES),
    Metric("grad_time_ratio_init", "metrics", "grad_time_ratio at init", computed_in=_PROBES,
           group=(Stat("mean", "grad_time_ratio at init (mean)"),)),
    Metric("grad_time_ratio", "metrics", "grad_time_ratio at end", computed_in=_PROBES,
           group=(Stat("mean", "grad_time_ratio at end (mean)"),)),
    Metric("bn_train_eval_gap", "metrics", "BatchNorm train/eval gap", "loss", computed_in=_PROBES,
           group=(Stat("mean"),), group_as="bn_gap"),
    Metric("bn_train_eval_gap_running", "metrics", "BatchNorm train/eval gap (running averages)", "loss",
           computed_in=_PROBES, group=(Stat("mean"),), group_as="bn_gap_running"),
    # depth, attention and saturation probes (normbench/training/probes.py), once at the end of training
    Metric("hidden_var_log_slope_init", "metrics", "growth of the hidden variance with depth at init (ln per block)",
           computed_in=_PROBES),
    Metric("hidden_var_log_slope", "metrics", "growth of the hidden variance with depth (ln per block)",
           computed_in=_PROBES),
    Metric("layer_grad_log_ratio", "metrics", "log10 gradient norm, last block / first block", computed_in=_PROBES),
    Metric("attn_logit_max", "metrics", "largest attention logit", computed_in=_PROBES),
    Metric("saturated_share", "metrics", "share of saturated tanh/erf units (|argument| > 2)", computed_in=_PROBES),
    Metric("skip_loss_increase_deep", "metrics", "loss increase when one deep block is skipped (mean, deeper half)",
           "loss", computed_in=_PROBES),
    *(Metric(f"train_loss_at_{f}", "metrics", f"training loss at {f}% of the steps", "loss", "lower",
             computed_in=_CONVERGENCE) for f in (25, 50, 75, 100)),
    Metric("train_loss_auc", "metrics", "mean training loss over the run", "loss", "lower", computed_in=_CONVERGENCE),
    Metric("val_auc", "metrics", "mean validation metric over the run", "task", "task", "task",
           computed_in=_CONVERGENCE),
    Metric("final_val_smoothed", "metrics", "mean of the last 3 validation evaluations", "task", "task", "task",
           computed_in=_CONVERGENCE, group=_SCORE, finished_only=True),
    Metric("steps_done", "metrics", "steps done", "steps"),
    Metric("skipped_steps", "metrics", "steps skipped by the loss scaler", "steps"),
    Metric("step_ms_median", "throughput", "step time (median)", "ms", "lower", group=(Stat("median"),),
           group_as="step_ms"),
    Metric("step_ms_p10", "throughput", "step time (fastest tenth)", "ms"),
    Metric("step_ms_p90", "throughput", "step time (slowest tenth)", "ms"),
    Metric("timed_steps", "throughput", "timed steps", "steps"),
    Metric("warmup_steps_excluded", "throughput", "warm-up steps not timed", "steps"),
    Metric("samples_per_s", "throughput", "samples/s", "samples/s", "higher",
           group=(Stat("median"), Stat("min"), Stat("max"))),
    Metric("tokens_per_s", "throughput", "tokens/s", "tokens/s", "higher"),
    # MiB (bytes / 2**20); the report has always labelled it "MB" (tables, figures, glossary)
    Metric("peak_memory_mb", "throughput", "peak MB", "MiB", "lower", group=(Stat("median"),)),
    Metric("memory_kind", "throughput", "memory measured"),
)

# Record keys written under an earlier name, and the name each is read as (analysis/aggregate.py reads records
# through it): records before at_chance was named so carry a frozen metrics.did_not_train.
RENAMED = {"did_not_train": "at_chance"}


def current_key(key: str) -> str:
    """The name a record key written by an earlier version is read as (RENAMED), else the key itself."""
    return RENAMED.get(key, key)


# summary.csv's group columns keep the order they had before this table: these first, then any
# other grouped metric in the record's order.
_SUMMARY_ORDER = ("best_val", "final_val", "test", "samples_per_s", "step_ms_median", "peak_memory_mb",
                  "grad_std", "grad_kurtosis", "grad_kurtosis_max", "grad_norm_median", "grad_norm_max",
                  "grad_time_ratio_init", "grad_time_ratio", "bn_train_eval_gap", "bn_train_eval_gap_running")

BY_KEY: dict[str, Metric] = {m.key: m for m in METRICS}

# The metrics other readers show, in the order they show them.
VIEWS: dict[str, tuple[str, ...]] = {
    # loggers.py and mlflow_logger.py: the run's final metrics (hparams, final/<key>)
    "final": ("best_val", "final_val", "test", "final_train_loss", "steps_to_target", "seconds_to_target",
              "grad_norm_median", "grad_norm_max", "grad_kurtosis_max", "step_ms_median", "samples_per_s"),
    # rerun.py: what a rerun must reproduce exactly
    "rerun": ("best_val", "final_val", "test", "final_train_loss", "steps_to_target", "diverged_at_step",
              "grad_norm_max", "loss_spikes"),
    # compare.py: gradient statistics shown with intervals
    "compare": ("grad_norm_median", "grad_norm_max", "grad_kurtosis_max"),
}


def metric(key: str) -> Metric:
    """The entry of a record key; a KeyError names a metric nobody registered."""
    try:
        return BY_KEY[key]
    except KeyError:
        raise KeyError(f"{key!r} is not a metric of normbench/records/metrics.py") from None


def path(key: str) -> str:
    """``metrics.<key>`` or ``throughput.<key>``: the runs frame's column of a registered metric."""
    return metric(key).path


def keys(section: str) -> tuple[str, ...]:
    return tuple(m.key for m in METRICS if m.section == section)


def viewed(view: str) -> tuple[str, ...]:
    """The keys a reader ("final", "rerun", "compare") shows, in its order."""
    return VIEWS[view]


def grouped() -> tuple[Metric, ...]:
    """The metrics a group of seeds summarizes, in summary.csv's order."""
    with_group = [m for m in METRICS if m.group]
    order = {key: i for i, key in enumerate(_SUMMARY_ORDER)}
    return tuple(sorted(with_group, key=lambda m: order.get(m.key, len(order))))


def in_record_order(section: str, values: dict) -> dict:
    """``values`` in the record's order; a key this table lacks is a mistake, not a new field."""
    unknown = [k for k in values if BY_KEY.get(k) is None or BY_KEY[k].section != section]
    if unknown:
        raise KeyError(f"{section} keys not in normbench/records/metrics.py: {', '.join(unknown)}")
    return {k: values[k] for k in keys(section) if k in values}
