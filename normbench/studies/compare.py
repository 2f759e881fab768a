"""python -m normbench compare BASELINE NEW: has NEW got worse than BASELINE? For a CI job.

Runs are paired by identity (config_hash: the effective config, seed included), so a pair is the
same setting and seed trained twice, e.g. before and after a commit. For each setting (a group of
seeds) it reports the paired differences NEW - BASELINE of the primary metric, the divergence
count, gradient statistics and step time, each with a 95% paired t-interval over the seeds when
there are two pairs or more. The exit status is 1 when NEW is worse beyond the stated tolerance,
0 when it is not, 2 for input it cannot compare. Reads records only, never imports torch.

NEW is *worse* in a setting when
- its primary metric is worse (direction from task.higher_is_better) by more than the tolerance,
  and, with two pairs or more, the 95% interval of the paired difference lies on the worse side of
  zero (a change the seeds cannot tell from noise does not fail a build);
- more of its runs diverged than BASELINE's, beyond ``--max-new-divergences``;
- a record of either set is not a result: its status is not ok or diverged (invalid, skipped, failed,
  interrupted, running): there is no metric to compare on that side, so the setting fails, the status
  named (a baseline that failed would otherwise hide any regression of its pair). A pair refused in both
  sets for the same reason (both invalid, or both skipped: the smoke sweep's impossible cells) is the same
  outcome, no change, and is said so; a comparison in which no pair has a result in both sets fails;
- a pair's metric is missing or not a finite number on either side: the pair cannot be compared, so it
  fails, its seeds named (two diverged runs excepted: they are compared by status, in the diverged count);
- with ``--step-time-tolerance F``, its median step time is more than F (a fraction) slower.
Runs without a counterpart are listed, never fatal.

``--exact`` is the gate for deterministic CPU runs of the same setup on the same machine (e.g.
``.ci/run``: a baseline and NEW made in one job): any change of any recorded metric of a pair
fails, with the values in the summary (timings excepted). ``--ignore KEY`` pairs across a changed
setting: runs are paired by all their settings (``axes.*``) and seed except the named keys
(repeatable; ``--ignore grad_clip``, ``--ignore model`` for every ``model.*`` setting), so a branch
that changes a default is compared with the baseline it changes. Every setting states the smallest
change of the primary metric the gate detects there (80% power at the 5% level for its pairs'
spread, and never below the tolerance), and the summary says what that is at its seeds.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from normbench.analysis import aggregate, rules
from normbench.analysis.intervals import mean_estimate
from normbench.records.metrics import path, viewed
from normbench.records.reading import find_records, quiet_numerics
from normbench.records.record import RESULT_STATUSES, write_file
from normbench.studies.compare_command import HEADING, SCORE_COLUMNS, CompareError, refused
from normbench.studies.compare_command import main as command_main

# Shown with intervals; gated only where the module docstring says.
GRADIENTS = tuple(path(key) for key in viewed("compare"))
STEP_TIME = "throughput.step_ms_median"
ENVIRONMENT_KEYS = ("git_commit", "torch", "device", "device_name", "python", "normbench_version")
CLOCKS = ("metrics.seconds_to_target",)  # wall-clock readings: never equal twice, not gated by --exact
POWER, ALPHA = rules.POWER, rules.ALPHA
REFUSED_STATUSES = ("invalid", "skipped")  # refused before training, with the reason: the same in both sets is no change


@dataclass
class Delta:
    """NEW - BASELINE over the pairs of one setting: mean, 95% paired-t interval (None below 2 pairs)."""

    base: float
    new: float
    diff: float
    interval: tuple[float, float] | None
    n: int

    @classmethod
    def of(cls, base: pd.Series, new: pd.Series) -> Delta | None:
        both = pd.DataFrame({"base": base.to_numpy(dtype=float), "new": new.to_numpy(dtype=float)}).dropna()
        if both.empty:
            return None
        with np.errstate(over="ignore", invalid="ignore"):  # an overflow is said below, not warned about
            diffs = both["new"] - both["base"]
            means = float(both["base"].mean()), float(both["new"].mean())
        odd = diffs[~np.isfinite(diffs)]
        if len(odd):  # one pair's difference overflowing (-1.7e308 -> +1.7e308) was dropped from the mean (C012)
            return cls(*means, float(odd.iloc[0]), None, len(both))
        estimate = mean_estimate(diffs)
        return cls(*means, estimate.value, estimate.interval() if len(both) >= 2 else None, len(both))


@dataclass
class Setting:
    label: str
    higher_is_better: bool
    pairs: int
    metric: Delta | None
    diverged_base: int
    diverged_new: int
    not_results: list[str]  # e.g. "baseline record status failed (seed 0)": the setting cannot pass
    results: int            # pairs with a result (ok or diverged) in both sets
    gradients: dict[str, Delta | None]
    step_ms: Delta | None
    problems: list[str] = field(default_factory=list)
    detectable: float | None = None  # the smallest worsening of the metric this gate detects here (power_line)


@dataclass
class Verdict:
    """The gate's one decision, made once from the settings and the comparison-wide failures: the summary's
    first line, its last line, the --out file and the exit status all read it, so none can say PASS while
    another says FAIL (hostile cases C04, C10, C15-C21: a headline PASS over a gate that failed)."""

    settings: int
    worse: int                                           # settings in which NEW is worse (named in the table)
    gate: list[tuple[str, str]] = field(default_factory=list)  # (what fails the whole comparison, the records named)

    @classmethod
    def of(cls, settings: list[Setting], relabels: list[str], unsure: list[str]) -> Verdict:
        gate = []
        if not any(s.results for s in settings):  # every pair refused in both sets: a gate that compared nothing
            gate.append(("nothing was compared: no pair has a result (ok or diverged) in both sets", ""))
        if relabels:  # a record claims another identity than its config's: the gate cannot vouch for it
            gate.append((f"{len(relabels)} record(s) whose stored config_hash is not their config's",
                         f" (paired by their config): {cell_list(relabels)}"))
        if unsure:  # records read past: the pairs left could pass on their absence
            gate.append((f"{len(unsure)} record(s) the gate cannot vouch for", f": {cell_list(unsure)}"))
        return cls(len(settings), sum(bool(s.problems) for s in settings), gate)

    @property
    def passed(self) -> bool:
        return not self.worse and not self.gate

    @property
    def exit_status(self) -> int:
        return 0 if self.passed else 1

    @property
    def headline(self) -> str:
        if self.passed:
            return f"PASS: NEW is not worse in any of {self.settings} settings"
        worse = [f"NEW is worse in {self.worse} of {self.settings} settings"] if self.worse else []
        return "FAIL: " + "; ".join(worse + [what for what, _ in self.gate])

    def closing(self) -> list[str]:
        """The summary's last lines: each comparison-wide failure that names records, with them, then the verdict."""
        named = [f"- **{what}**{records}" for what, records in self.gate if records]
        return ["", *named, *([""] if named else []), f"**{self.headline}**"]


def load(path: Path, unsure: list[str] | None = None, aside: list[str] | None = None) -> pd.DataFrame:
    """The distinct runs under ``path``, each paired by the hash of its own config (``config_hash``, as
    resume does: a stored hash is only a label an edit can change), the label kept as ``stored_config_hash``.
    ``unsure`` gets a phrase per second finished record of a run (which of the two is compared would be
    silent: hostile case C07); ``aside`` one per record set aside (a metric that is not a number: C13)."""
    records = find_records([path])
    if aside is not None:
        aside += [f"{r.path.parent} (set aside: {r.why})" for r in records.set_aside]
    if records.missing_paths:  # for a caller of load(); the command line refused it first (compare_command.check)
        raise CompareError(f"{path} does not exist")
    frame = aggregate.runs_frame(records.runs)  # config_hash: computed again from each record's config
    if not frame.empty:  # one row per record, in order
        frame = frame.assign(stored_config_hash=[r.summary.get("config_hash") if isinstance(r.summary.get("config"), dict)
                                                 else None for r in records.runs])
    runs, copies = aggregate.distinct_runs(frame)
    if unsure is not None and not copies.empty:
        # a failed or interrupted attempt beside the finished one, or a rerun, is no doubt: two results are
        result = copies["status"].isin(RESULT_STATUSES)
        if "rerun_of" in copies:
            result &= copies["rerun_of"].isna()
        unsure += [f"{d} (a second finished record of the run in {k})"
                   for d, k in zip(copies.loc[result, "run_dir"], copies.loc[result, "copy_of"])]
    if runs.empty:
        raise CompareError(f"no readable run records under {path}")
    return runs


def environment_axis(base: pd.DataFrame, new: pd.DataFrame) -> list[str]:
    """What differs between the two sets' environments, e.g. ``git_commit abc1234 → def5678``."""
    def values(runs, key):
        column = f"environment.{key}"
        found = runs[column].dropna().astype(str).unique() if column in runs else []
        return ", ".join(sorted(found)) or "n/a"

    return [f"{key} {values(base, key)} → {values(new, key)}" for key in ENVIRONMENT_KEYS
            if values(base, key) != values(new, key)]


def _label(row: pd.Series, axes: list[str]) -> str:
    parts = [f"{a.removeprefix('axes.')}={aggregate.format_value(row[a])}" for a in axes
             if a in row and not (row[a] is None or (isinstance(row[a], float) and math.isnan(row[a])))]
    return ", ".join(parts) or aggregate.ALL_RUNS


def compare(base: pd.DataFrame, new: pd.DataFrame, *, metric: str | None = None, tolerance: float = 0.01,
            relative: bool = False, max_new_divergences: int = 0,
            step_time_tolerance: float | None = None, exact: bool = False,
            ignore: tuple[str, ...] = ()) -> tuple[list[Setting], pd.DataFrame, pd.DataFrame]:
    """(settings, only in BASELINE, only in NEW). A setting's ``problems`` say why NEW is worse there.
    ``metric`` None: the baseline's primary score (rules.primary: its optimized_metric, final_val by default)."""
    metric = metric or rules.primary(base)
    column = SCORE_COLUMNS[metric]
    base, new = base[base["config_hash"].notna()], new[new["config_hash"].notna()]
    # a set whose records lack the metric still has its column, so that its absence is seen (not passed)
    base, new = (runs if column in runs else runs.assign(**{column: math.nan}) for runs in (base, new))
    key = "config_hash"
    if ignore:  # pair by every setting and the seed except the ignored keys (module docstring)
        key = "pair_key"
        check_ignored(base, new, ignore)
        base, new = base.assign(pair_key=pair_keys(base, new, ignore)), new.assign(pair_key=pair_keys(new, base, ignore))
        for name, runs in (("BASELINE", base), ("NEW", new)):
            if runs[key].duplicated().any():
                raise CompareError(f"two runs in {name} differ only in {', '.join(ignore)}: "
                                   f"ignoring {'them' if len(ignore) > 1 else 'it'} leaves them no unique pair")
    pairs = base.merge(new, on=key, suffixes=("_base", "_new"), how="inner")
    only_base = base[~base[key].isin(new[key])]
    only_new = new[~new[key].isin(base[key])]
    # settings are labelled by what varies among the paired runs, as the report labels its groups
    axes = aggregate.varying_axes(base[base[key].isin(pairs[key])])
    settings = []
    for group, rows in pairs.groupby("group_hash_base", sort=False):
        first = base[base[key] == rows[key].iloc[0]].iloc[0]
        higher = bool(rows["task.higher_is_better_base"].iloc[0])
        finished = rows["status_base"].isin(RESULT_STATUSES) & rows["status_new"].isin(RESULT_STATUSES)

        def delta(name: str, where=finished) -> Delta | None:
            if f"{name}_base" not in rows or f"{name}_new" not in rows:
                return None
            return Delta.of(rows.loc[where, f"{name}_base"], rows.loc[where, f"{name}_new"])

        setting = Setting(
            label=_label(first, axes), higher_is_better=higher, pairs=len(rows),
            metric=delta(column), diverged_base=int((rows["status_base"] == "diverged").sum()),
            diverged_new=int((rows["status_new"] == "diverged").sum()),
            not_results=not_results(rows), results=int(finished.sum()),
            gradients={g: delta(g) for g in GRADIENTS},
            step_ms=delta(STEP_TIME, rows["status_base"].eq("ok") & rows["status_new"].eq("ok")))
        _judge(setting, metric, tolerance, relative, max_new_divergences, step_time_tolerance)
        # a NEW run that finished without the metric its baseline has cannot pass on that metric's absence
        lost = finished & rows[f"{column}_base"].notna() & rows[f"{column}_new"].isna()
        if lost.any():
            setting.problems.append(f"{metric} missing in NEW for {int(lost.sum())} of {int(finished.sum())} "
                                    f"finished pairs")
        # and the other way: a finished baseline without the metric leaves its pair out of the difference, so a
        # regression on that seed would pass unseen (N106/N107: a baseline's NaN or null against NEW's 100)
        unpaired = finished & rows[f"{column}_base"].isna() & rows[f"{column}_new"].notna()
        if unpaired.any():
            setting.problems.append(f"{metric} missing in BASELINE for {int(unpaired.sum())} of {int(finished.sum())} "
                                    f"finished pairs: those pairs cannot be compared")
        # and in neither: a pair with no value on either side (NaN, ±Infinity, null, no key) is left out of the
        # difference, so it would pass having compared nothing (hostile h26 x03, y02, y04). Two diverged runs
        # are the exception: they are compared by status, in the diverged count.
        both_diverged = rows["status_base"].eq("diverged") & rows["status_new"].eq("diverged")
        neither = finished & rows[f"{column}_base"].isna() & rows[f"{column}_new"].isna() & ~both_diverged
        if neither.any():
            setting.problems.append(f"{metric} missing or not a finite number in both sets for {int(neither.sum())} of "
                                    f"{int(finished.sum())} finished pairs ({_seeds(rows.loc[neither, 'seed_base'])}): "
                                    f"those pairs cannot be compared")
        if exact:
            setting.problems += exact_differences(rows)
        setting.detectable = 0.0 if exact else detectable_change(setting, tolerance, relative)
        settings.append(setting)
    settings.sort(key=lambda s: (not s.problems, s.label))
    return settings, only_base, only_new


def same_refusal(rows: pd.DataFrame) -> pd.Series:
    """The pairs whose two records are one refusal: both invalid or both skipped, for the same reason. The
    setting cannot run in either set (the smoke sweep's impossible cells, a precision this machine lacks):
    there is no metric on either side, so no regression to hide, and the same outcome is no change."""
    def reason(side):
        return rows.get(f"reason_{side}", pd.Series(None, index=rows.index)).astype(str)

    return (rows["status_base"].isin(REFUSED_STATUSES) & rows["status_base"].eq(rows["status_new"])
            & reason("base").eq(reason("new")))


def _seeds(seeds: pd.Series) -> str:
    """``seed 0`` or ``seeds 0, 2``: the pairs a phrase is about."""
    plural = "s" if len(seeds) > 1 else ""
    return f"seed{plural} " + ", ".join(aggregate.format_value(v) for v in seeds.sort_values())


def not_results(rows: pd.DataFrame) -> list[str]:
    """A phrase per side and status of the pairs whose record there is not a result (RESULT_STATUSES),
    e.g. ``baseline record status failed (seeds 0, 2)``; a pair that is one refusal in both is no change
    (same_refusal)."""
    found = []
    compared = rows[~same_refusal(rows)]
    for side, name in (("base", "baseline"), ("new", "new")):
        statuses = compared[f"status_{side}"]
        for status in dict.fromkeys(statuses[~statuses.isin(RESULT_STATUSES)]):
            seeds = ", ".join(aggregate.format_value(v) for v in compared.loc[statuses == status, f"seed_{side}"].sort_values())
            plural = "s" if (statuses == status).sum() > 1 else ""
            found.append(f"{name} record status {status} (seed{plural} {seeds})")
    return found


def relabelled(runs: pd.DataFrame) -> list[str]:
    """The run folders whose stored config_hash is not the hash of their config (edited, or copied
    under another run's label): they are paired by what they ran, and named."""
    if "stored_config_hash" not in runs:
        return []
    differs = runs["stored_config_hash"].notna() & (runs["stored_config_hash"] != runs["config_hash"])
    return [str(d) for d in runs.loc[differs, "run_dir"]]


def _finite(d: Delta | None) -> bool:
    return d is None or all(math.isfinite(v) for v in (d.base, d.new, d.diff, *(d.interval or ())))


def _judge(s: Setting, metric: str, tolerance: float, relative: bool, max_new_divergences: int,
           step_time_tolerance: float | None) -> None:
    m = s.metric
    # an infinite or undefined difference (an overflow: -1.7e308 -> +1.7e308) can hide any regression
    for name, d in ((metric, m), ("step time", s.step_ms)):
        if not _finite(d):
            s.problems.append(f"{name} difference is not a finite number ({d.base!r} → {d.new!r}, Δ {d.diff!r})")
    if m is not None and _finite(m):
        worse = -m.diff if s.higher_is_better else m.diff          # > 0: NEW is worse
        allowed = tolerance * abs(m.base) if relative else tolerance
        beyond_noise = m.interval is None or (m.interval[1] < 0 if s.higher_is_better else m.interval[0] > 0)
        if worse > allowed and beyond_noise:
            s.problems.append(f"{metric} worse by {worse:.4g} (> {allowed:.4g})")
    if s.diverged_new - s.diverged_base > max_new_divergences:
        s.problems.append(f"diverged {s.diverged_base} → {s.diverged_new} of {s.pairs}")
    s.problems += s.not_results
    t = s.step_ms
    if step_time_tolerance is not None and t is not None and _finite(t) and t.base > 0 and t.diff / t.base > step_time_tolerance:
        s.problems.append(f"step time +{t.diff / t.base:.1%} (> {step_time_tolerance:.0%})")


def _names(column: str, key: str) -> bool:
    """Whether ``--ignore key`` names the setting column (``axes.model.d_model``: ``model`` or ``model.d_model``)."""
    name = column.removeprefix("axes.")
    return name == key or name.startswith(f"{key}.")


def check_ignored(runs: pd.DataFrame, other: pd.DataFrame, ignore: tuple[str, ...]) -> None:
    """An ``--ignore`` key that names no setting of either set is a typo (``gradclip``): it would pair on every
    setting while the summary says it does not (hostile case C32), so it is refused in one line."""
    columns = [c for c in dict.fromkeys([*runs.columns, *other.columns]) if c.startswith("axes.")]
    for key in ignore:
        if not any(_names(c, key) for c in columns):
            known = sorted(c.removeprefix("axes.") for c in columns)
            raise CompareError(f"--ignore {key}: no setting of either set is named {key} (the settings: "
                               f"{', '.join(known[:12]) + (' …' if len(known) > 12 else '') or 'none'})")


def pair_keys(runs: pd.DataFrame, other: pd.DataFrame, ignore: tuple[str, ...]) -> pd.Series:
    """Each run's settings (``axes.*`` of both sets) and seed, without the ignored keys, as one string."""
    columns = sorted({c for c in [*runs.columns, *other.columns]
                      if c.startswith("axes.") and not any(_names(c, key) for key in ignore)})
    values = runs.reindex(columns=[*columns, "seed"])
    return values.apply(lambda row: "|".join(f"{c}={aggregate.format_value(v)}" for c, v in row.items()), axis=1)


def exact_differences(rows: pd.DataFrame) -> list[str]:
    """--exact: every recorded metric (timings excepted) and the status of each pair, compared bitwise."""
    names = sorted(c.removesuffix("_base") for c in rows.columns
                   if c.startswith("metrics.") and c.endswith("_base") and c.removesuffix("_base") not in CLOCKS)
    found = []
    for _, pair in rows.iterrows():
        for name in ["status", *names]:
            a, b = pair.get(f"{name}_base"), pair.get(f"{name}_new")
            if not _same(a, b):
                found.append(f"seed {aggregate.format_value(pair['seed_base'])}: {name} {a!r} → {b!r}")
    return [f"exact: {len(found)} value(s) changed: " + "; ".join(found[:5]) + (" …" if len(found) > 5 else "")] \
        if found else []


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _same(a, b) -> bool:
    if _missing(a) or _missing(b):
        return _missing(a) and _missing(b)
    if isinstance(a, list) or isinstance(b, list):
        return list(a) == list(b) if isinstance(a, list) and isinstance(b, list) else False
    return a == b


def detectable_change(s: Setting, tolerance: float, relative: bool) -> float | None:
    """The smallest worsening of the metric this setting's gate detects: with n ≥ 2 pairs of spread sd,
    (t₀.₉₇₅,ₙ₋₁ + t₀.₈₀,ₙ₋₁)·sd/√n (80% power for the paired t-interval to exclude 0), and never below the
    tolerance; with one pair, the tolerance (its noise is unknown). None without a metric."""
    m = s.metric
    if m is None:
        return None
    allowed = tolerance * abs(m.base) if relative else tolerance
    if m.interval is None or m.n < 2:
        return allowed
    sd = (m.interval[1] - m.interval[0]) / 2 / stats.t.ppf(1 - ALPHA / 2, m.n - 1) * math.sqrt(m.n)
    return max(allowed, (stats.t.ppf(1 - ALPHA / 2, m.n - 1) + stats.t.ppf(POWER, m.n - 1)) * sd / math.sqrt(m.n))


def power_line(settings: list[Setting], metric: str, exact: bool) -> str:
    """One sentence: what change of the metric this gate can see, at how many seeds."""
    if exact:
        return "This gate detects any change of any metric (exact mode: deterministic runs compared bitwise)."
    known = [s for s in settings if s.detectable is not None]
    if not known:
        return "This gate cannot state its power: no setting has the metric in both sets."
    worst = max(known, key=lambda s: s.detectable)
    seeds = sorted({s.metric.n for s in known})
    at = f"{seeds[0]}" if len(seeds) == 1 else f"{seeds[0]}–{seeds[-1]}"
    return (f"This gate detects a change of {worst.detectable:.3g} in `{metric}` at {at} seeds "
            f"(80% power, 5% level; the least sensitive setting, {worst.label}, at {worst.metric.n}; "
            f"smaller changes pass unseen: add seeds, or use `--exact` on deterministic runs).")


def differing_settings(base: pd.DataFrame, new: pd.DataFrame) -> list[str]:
    """The settings whose values in NEW are none of BASELINE's (a changed default, a new key)."""
    def values(runs, column):
        return set(runs[column].map(aggregate.format_value)) if column in runs else {"n/a"}

    columns = sorted({c for c in [*base.columns, *new.columns] if c.startswith("axes.")})
    return [c.removeprefix("axes.") for c in columns if not values(new, c) & values(base, c)]


def _fmt(value: float | None) -> str:
    return "n/a" if value is None or not math.isfinite(value) else f"{value:.4g}"


def _delta(d: Delta | None, percent_of_base: bool = False) -> str:
    if d is None:
        return "n/a"
    text = f"{d.diff:+.4g}"
    if percent_of_base and d.base:
        text += f" ({d.diff / d.base:+.1%})"
    if d.interval is not None:
        text += f" [{d.interval[0]:+.3g}, {d.interval[1]:+.3g}]"
    return text


def markdown(settings: list[Setting], only_base: pd.DataFrame, only_new: pd.DataFrame, *, baseline: Path,
             new: Path, environment: list[str], metric: str, tolerance: float, relative: bool,
             max_new_divergences: int, step_time_tolerance: float | None, verdict: Verdict, exact: bool = False,
             ignore: tuple[str, ...] = (), cell=None) -> str:
    """The summary in Markdown, opened and closed by ``verdict``; ``cell`` makes each string from a record
    safe where the text goes (markdown_text, the default, for a Markdown file, terminal_text for a terminal,
    which shows no HTML entities)."""
    cell = cell or _markdown_cell()
    bound = f"{tolerance:g} × |baseline mean|" if relative else f"{tolerance:g} (absolute)"
    lines = [
        f"{HEADING}{verdict.headline}",
        "",
        f"**{cell('; '.join(environment)) if environment else 'same environment (git commit, torch, device)'}**",
        "",
        f"BASELINE {cell(baseline)} vs NEW {cell(new)}: {sum(s.pairs for s in settings)} runs paired by "
        + (f"all settings and the seed except {', '.join(f'`{k}`' for k in ignore)}. " if ignore else
           "config hash (setting and seed). ")
        + "Differences are NEW − BASELINE, mean over seeds with a 95% paired t-interval "
        "[low, high] when there are ≥ 2 pairs.",
        "",
        f"Fails when NEW's `metrics.{metric}` is worse (direction from the task) by more than {bound} and, with "
        f"≥ 2 pairs, the interval excludes 0 on the worse side; when more than {max_new_divergences} more runs "
        f"diverge; when a record of either set is not a result (a status other than ok or diverged; a pair "
        f"refused in both sets for the same reason, invalid or skipped, is no change)"
        + (f"; when the median step time is more than {step_time_tolerance:.0%} slower." if step_time_tolerance
           is not None else ". Step time is shown, not gated (`--step-time-tolerance` gates it).")
        + (" Exact mode: any change of a recorded metric (timings excepted) or status of a pair fails." if exact else ""),
        "",
        power_line(settings, metric, exact),
        "",
        f"| setting | pairs | {metric} base → new | Δ {metric} | detects Δ ≥ | diverged base → new | Δ grad norm median | "
        f"Δ grad kurtosis max | Δ step ms | verdict |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in settings:
        m = s.metric
        arrow = "↑" if s.higher_is_better else "↓"
        level = f"{_fmt(m.base)} → {_fmt(m.new)} ({arrow} better)" if m else "n/a"
        lines.append(" | ".join([
            f"| {cell(s.label)}", str(s.pairs), level, _delta(m), "any" if exact else _fmt(s.detectable),
            f"{s.diverged_base} → {s.diverged_new}",
            _delta(s.gradients["metrics.grad_norm_median"]), _delta(s.gradients["metrics.grad_kurtosis_max"]),
            _delta(s.step_ms, percent_of_base=True),
            ("**worse**: " + cell("; ".join(s.problems))) if s.problems else
            "ok" if s.results else "not run in either (the same refusal)"]) + " |")
    for title, runs in (("Only in BASELINE (no counterpart in NEW)", only_base),
                        ("Only in NEW (no counterpart in BASELINE)", only_new)):
        if len(runs):
            lines += ["", f"### {title}: {len(runs)}", ""]
            lines += [f"- {cell(r.run_dir)} (seed {cell(aggregate.format_value(r.seed))}, "
                      f"{cell(r.status)})"
                      for r in runs.itertuples()][:50]
            if len(runs) > 50:
                lines.append(f"- … and {len(runs) - 50} more")
    return "\n".join(lines + verdict.closing()) + "\n"


def terminal_text(value: object) -> str:
    """A record's string as a terminal shows it: one line, characters a terminal would act on escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in " ".join(str(value).splitlines()))


def main(argv: list[str] | None = None) -> int:
    """``normbench compare`` called from Python (tests, scripts) or as this module: compare_command's main, which
    parses and checks the arguments, then calls ``run``."""
    return command_main(argv, run)


def run(args: argparse.Namespace) -> int:
    """The comparison of arguments compare_command has parsed and checked: its exit status, after the summary."""
    try:
        unsure: list[str] = []
        aside_base: list[str] = []
        aside_new: list[str] = []
        base, new = load(args.baseline, unsure, aside_base), load(args.new, unsure, aside_new)
        args.metric = args.metric or rules.primary(base)
        settings, only_base, only_new = compare(
            base, new, metric=args.metric, tolerance=args.tolerance, relative=args.relative,
            max_new_divergences=args.max_new_divergences, step_time_tolerance=args.step_time_tolerance,
            exact=args.exact, ignore=tuple(args.ignore))
        if not settings:
            differ = differing_settings(base, new)
            raise CompareError(f"no run in {args.new} has a counterpart in {args.baseline} (no config hash in "
                               f"common: other settings or seeds, or records from before a new config field)"
                               + (f"; the settings that differ: {', '.join(differ)} (pair across them with "
                                  f"--ignore {differ[0]})" if differ else ""))
        # a run of one set left without a counterpart while the other set has records it could not read:
        # the unread one may be that counterpart, and the gate would pass on its absence (C13)
        unsure += (aside_new if not only_base.empty else []) + (aside_base if not only_new.empty else [])
        verdict = Verdict.of(settings, relabelled(base) + relabelled(new), unsure)
        said = dict(baseline=args.baseline, new=args.new, environment=environment_axis(base, new), metric=args.metric,
                    tolerance=args.tolerance, relative=args.relative, max_new_divergences=args.max_new_divergences,
                    step_time_tolerance=args.step_time_tolerance, verdict=verdict, exact=args.exact,
                    ignore=tuple(args.ignore))
        text = markdown(settings, only_base, only_new, **said)
        if args.out is not None:
            write_file(args.out, text)  # the one writer: atomic, never through a link, never into a FIFO
        if sys.stdout is not None and sys.stdout.isatty():  # the same summary without the escapes Markdown needs (`>`, not `&gt;`)
            text = markdown(settings, only_base, only_new, **said, cell=terminal_text)
    except (CompareError, OSError) as error:
        return refused(error)
    print(text, end="")
    return verdict.exit_status


def _markdown_cell():
    """The report's Markdown escaping (report/render.py), imported when a summary is written: that module loads
    matplotlib, whose first import on a fresh HOME prints a line about its font cache, and a refused compare
    prints its one line only (hostile h25 wi006)."""
    from normbench.report.render import markdown_text

    return markdown_text


def cell_list(run_dirs: list[str]) -> str:
    escaped = _markdown_cell()
    return ", ".join(escaped(d) for d in run_dirs[:10]) + (" …" if len(run_dirs) > 10 else "")


if __name__ == "__main__":
    from normbench.checks import exit_on_full_stdout

    with quiet_numerics():  # NaN metrics are results: numpy's warnings about them stay off stderr
        code = exit_on_full_stdout("normbench.compare", main)
    sys.exit(code)
