"""Claims from the normalization literature, checked against the runs at hand.

Each claim is a function from the runs table to a Verdict, registered with @claim. A claim is split
into the parts it asserts ("Post-LN needs warm-up" *and* "Pre-LN does not"), every part is tested
on its own and reported (Verdict.parts), and the claim is

* `supported` only when every part is supported,
* `contradicted` when some part is contradicted,
* `inconclusive` otherwise, and whenever an arm has fewer than 2 seeds,
* `not applicable` when the runs lack the axes or values the claim is about.

Tests. "A differs from B in the claimed direction" is a Welch t interval at 95% that excludes 0 in
that direction (a slope: the OLS slope's t interval). "A does not depend on B", "insensitive",
"equal accuracy" are equivalence statements, tested by two one-sided tests (TOST): supported when
the 90% interval of the difference lies inside (−δ, +δ), contradicted when the 95% interval lies
wholly beyond ±δ; an interval that merely contains 0 is inconclusive. "Not worse" (no accuracy
cost) is TOST's lower one-sided test. The margins δ are fixed here, before any data are seen:
ACCURACY_DELTA for accuracy, RANGE_SHARE of the chance-to-ideal range for other metrics (MSE:
10% of the chance level, since its ideal is 0), SLOPE_DELTA in log-log units for slopes.

Divergence. A diverged run is a result and ranks below every finished run; it is never given the
task's chance level (an MSE run that trained can end far worse than chance). Score comparisons
therefore test two things separately and show both: the divergence rate (Newcombe interval) and
the metric of the runs that finished (Welch). "A is better than B" is supported when one of them
shows A better and the other does not show it worse; when they disagree the part is inconclusive.
An equivalence cannot be shown while a run of either arm diverged.

Pooling. Axes outside the comparison are pooled only when balanced (both arms have the same share
of runs at each level); otherwise the effect is taken within each level both arms share and
combined with inverse-variance weights; with no shared level the part is not applicable.

Inconclusive parts report the design's minimum detectable effect, (t₀.₉₇₅ + t₀.₈) · SE on the
data's degrees of freedom (SE = s·√(2/n) for two arms of n seeds), and the seeds per arm that would
detect the effect seen (or fit the 90% interval inside ±δ).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd
from scipy import stats

from normbench.report.aggregate import PRIMARY, TRAINED, format_value
from normbench.report.intervals import (Estimate, agresti_caffo, combine, equivalence, inverse_variance,
                                        mean_estimate, minimum_detectable_effect, non_inferiority,
                                        proportion_difference, seeds_for_equivalence, seeds_to_detect,
                                        slope_estimate)

SUPPORTED, CONTRADICTED, INCONCLUSIVE, NOT_APPLICABLE = (
    "supported", "contradicted", "inconclusive", "not applicable")
FINISHED = ("ok", "diverged")  # runs whose record says how training went
ACCURACY_DELTA = 0.01  # accuracy points: a difference below this is not one anybody would act on
RANGE_SHARE = 0.10     # other metrics: 10% of the distance from chance to the ideal value
SLOPE_DELTA = 0.1      # log-log slope: depth ×10 changes the gradient by at most 10^0.1 ≈ 1.26×
INTERFERENCE = 1.5     # a run's step-time p90/p10 above this: its timing was disturbed
_FP16 = ("fp16", "fp16_pure")  # precisions whose half dtype is fp16 (autocast, pure)
_RECURRENT_NAMES = ("lstm", "gru", "rnn")
# Settings that cannot change a quantity measured at initialization, before the first update.
_INIT_INVARIANT = ("warmup_steps", "lr", "steps", "optim", "schedule")


@dataclass(frozen=True)
class Effect:
    label: str  # what the number is and which sign means what
    estimate: float
    interval: tuple[float, float] | None  # 95%; None when some arm has a single run
    null: float = 0.0  # the "no effect" value: 0 for differences, 1 for ratios


@dataclass(frozen=True)
class Part:
    """One assertion of a claim, tested on its own."""

    claim: str                    # what this part asserts
    status: str
    effects: tuple[Effect, ...]   # the first is the one the status rests on
    test: str                     # arms, test and margin
    note: str = ""                # why undecided (MDE, seeds needed) or not applicable


@dataclass
class Verdict:
    status: str
    effect: Effect | None
    n_per_arm: dict[str, int]
    evidence: pd.DataFrame
    explanation: str
    more_effects: list[Effect] = field(default_factory=list)
    parts: list[Part] = field(default_factory=list)


@dataclass(frozen=True)
class Claim:
    id: str
    statement: str
    citation: str
    check: Callable[[pd.DataFrame], Verdict]
    compare: tuple[str, ...] = ()  # the axes whose arms the claim contrasts
    pool: tuple[str, ...] = ()     # other axes the claim may average over (e.g. depth, for warm-up)


CLAIMS: list[Claim] = []


def claim(id: str, statement: str, citation: str, compare: tuple[str, ...] = (), pool: tuple[str, ...] = ()):
    def register(check: Callable[[pd.DataFrame], Verdict]) -> Callable[[pd.DataFrame], Verdict]:
        CLAIMS.append(Claim(id, statement, citation, check, compare, pool))
        return check
    return register


def _named(column: str, names: tuple[str, ...]) -> bool:
    """Axis column `axes.optim.lr` is named by "optim.lr" and by "optim"."""
    axis = column.removeprefix("axes.")
    return any(axis == n or axis.startswith(n + ".") for n in names)


def _varying(runs: pd.DataFrame, exclude: tuple[str, ...] = ()) -> list[str]:
    """Axis columns with more than one distinct non-missing value (missing = does not apply)."""
    return [c for c in runs.columns if c.startswith("axes.") and c != "axes.seed" and not _named(c, exclude)
            and runs[c].dropna().astype(str).nunique() > 1]


def _keys(runs: pd.DataFrame, columns: list[str]) -> list[tuple]:
    return [tuple(None if pd.isna(v) else str(v) for v in row)
            for row in runs[columns].astype(object).itertuples(index=False, name=None)]


def settings(runs: pd.DataFrame, free: tuple[str, ...]) -> list[tuple[str, pd.DataFrame]]:
    """Runs split into settings that agree on every varying axis outside ``free`` (and the seed),
    most seeds (then most runs) first: a claim compares like with like, never a 4-step smoke run with a real one.

    A run whose value is missing (the setting does not apply to it, e.g. eps for norm=none) joins
    every setting that agrees with it on the axes it has. So does the un-normalised model, whose
    placement is recorded as ``none``: it is the same model at every placement."""
    view = runs
    if "axes.placement" in runs:
        view = runs.assign(**{"axes.placement": runs["axes.placement"].where(runs["axes.placement"] != "none")})
    fixed = _varying(view, free)
    if not fixed:
        return [("", runs)]
    keys = _keys(view, fixed)

    def covers(general: tuple, specific: tuple) -> bool:
        return all(g is None or g == s for g, s in zip(general, specific))

    distinct = sorted(set(keys), key=lambda k: tuple("" if v is None else v for v in k))
    chosen = [k for k in distinct if not any(other != k and covers(k, other) for other in distinct)]
    groups = []
    for key in chosen:
        members = [i for i, row in zip(runs.index, keys) if covers(row, key)]
        name = ", ".join(f"{c.removeprefix('axes.')}={'n/a' if v is None else format_value(_typed(runs[c], v))}"
                         for c, v in zip(fixed, key))
        groups.append((name, runs.loc[members]))
    return sorted(groups, key=lambda g: (-g[1]["seed"].nunique(), -len(g[1])))  # most evidence first


def _typed(column: pd.Series, text: str):
    """The column's own value whose str() is ``text`` (so 1e-05 prints as 1e-05, not '1e-05')."""
    for value in column.dropna().unique():
        if str(value) == text:
            return value
    return text


def _checked(registered: Claim, runs: pd.DataFrame) -> Verdict:
    try:
        return registered.check(runs)
    except Exception as error:  # noqa: BLE001 - reported in the verdict, not swallowed
        return Verdict(INCONCLUSIVE, None, {}, pd.DataFrame(),
                       f"The check itself failed ({type(error).__name__}: {error}).")


def evaluate_claims(runs: pd.DataFrame) -> list[tuple[Claim, Verdict]]:
    """Every registered claim, judged within each setting where it applies. The headline verdict
    is the largest such setting's; the others are listed with it, never averaged into it."""
    verdicts = []
    for registered in CLAIMS:
        applicable = [(name, verdict) for name, part in settings(runs, registered.compare + registered.pool)
                      if (verdict := _checked(registered, part)).status != NOT_APPLICABLE]
        if not applicable:
            verdict = _checked(registered, runs)
            if verdict.status != NOT_APPLICABLE:  # only a mix of settings has every arm: do not mix
                verdict = _not_applicable(
                    f"No single setting has every arm: the runs that differ only in "
                    f"{', '.join(registered.compare)} (and seed) do not cover the comparison.")
            verdicts.append((registered, verdict))
            continue
        (name, verdict), others = applicable[0], applicable[1:]
        where = f" Judged within {name}." if name else ""
        if others:
            shown = "; ".join(f"{n}: {v.status}" for n, v in others[:6])
            where += f" Other settings ({len(others)}): {shown}{' …' if len(others) > 6 else ''}."
        verdict.explanation += where
        verdicts.append((registered, verdict))
    return verdicts


# --- shared pieces ------------------------------------------------------------------------------

def _not_applicable(why: str) -> Verdict:
    return Verdict(NOT_APPLICABLE, None, {}, pd.DataFrame(), why)


def _axis(runs: pd.DataFrame, name: str) -> pd.Series:
    column = f"axes.{name}"
    return runs[column] if column in runs else pd.Series(None, index=runs.index, dtype=object)


def _metric(runs: pd.DataFrame, name: str) -> pd.Series:
    return runs[name].astype(float) if name in runs else pd.Series(np.nan, index=runs.index)


def _values_text(series: pd.Series) -> str:
    values = sorted({format_value(v) for v in series.dropna().tolist()})
    return "{" + ", ".join(values) + "}" if values else "none"


def _both(runs: pd.DataFrame, axis: str, a: str, b: str, whose: str = "the runs") -> tuple[pd.DataFrame, Verdict | None]:
    """The runs whose ``axis`` is ``a`` or ``b``, and a not-applicable verdict unless both occur."""
    values = _axis(runs, axis)
    kept = runs[values.isin([a, b])]
    if set(_axis(kept, axis)) != {a, b}:
        return kept, _not_applicable(f"Needs {axis} {a} and {b}; {whose} have {axis} ∈ {_values_text(values)}.")
    return kept, None


def _finished(runs: pd.DataFrame) -> pd.DataFrame:
    return runs[runs["status"].isin(FINISHED)]


def _one_task(runs: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """Metrics of different tasks are not comparable: use the task with the most runs."""
    tasks = runs["task.name"].value_counts()
    if len(tasks) <= 1:
        return runs, ""
    chosen = tasks.index[0]
    return runs[runs["task.name"] == chosen], f" Evaluated on task {chosen} (most runs); other tasks ignored."


def _score(runs: pd.DataFrame) -> pd.Series:
    """best_val of the runs that finished ("ok"); NaN for diverged runs, which are counted apart."""
    return _metric(runs, PRIMARY).where(runs["status"] == "ok")


def _direction(runs: pd.DataFrame) -> tuple[int, str]:
    higher = bool(runs["task.higher_is_better"].iloc[0]) if len(runs) else True
    metric = str(runs["task.metric"].iloc[0]) if "task.metric" in runs and len(runs) else "best_val"
    return (1 if higher else -1), metric


def _margin(runs: pd.DataFrame) -> tuple[float, str]:
    """The equivalence margin δ of a score, from the task alone (never from the results)."""
    sign, metric = _direction(runs)
    if metric == "accuracy":
        return ACCURACY_DELTA, f"δ = {ACCURACY_DELTA:g} accuracy"
    chance = _metric(runs, "task.chance").dropna()
    if chance.empty:
        return math.nan, f"no margin: the task records no chance level for {metric}"
    ideal = 1.0 if sign > 0 else 0.0
    delta = RANGE_SHARE * abs(float(chance.iloc[0]) - ideal)
    return delta, (f"δ = {delta:.4g} {metric} ({RANGE_SHARE:.0%} of the range from chance "
                   f"{format_value(float(chance.iloc[0]))} to the ideal {format_value(ideal)})")


def _better_word(sign: int) -> str:
    return "higher is better" if sign > 0 else "lower is better"


def _recurrent(runs: pd.DataFrame) -> pd.Series:
    """Recurrent runs: the runner reports gradient flow through time only for them."""
    model = _axis(runs, "model").astype(str).str.lower()
    named = model.map(lambda m: any(name in m for name in _RECURRENT_NAMES))
    return named | _metric(runs, "metrics.grad_time_ratio_init").notna()


def _arm_row(arm: str, runs: pd.DataFrame, measures: dict[str, pd.Series] | None = None) -> dict:
    """One evidence row: the arm's size, and mean / std of each measure over its runs."""
    row = {"arm": arm, "runs": int(len(runs)), "seeds": int(runs["seed"].nunique()),
           "diverged": int((runs["status"] == "diverged").sum())}
    for name, values in (measures or {}).items():
        finite = values.astype(float)
        finite = finite[np.isfinite(finite)]
        row[f"{name} mean"] = float(finite.mean()) if len(finite) else math.nan
        row[f"{name} std"] = float(finite.std()) if len(finite) > 1 else math.nan
    return row


def _as_effect(label: str, estimate: Estimate, null: float = 0.0) -> Effect:
    return Effect(label, estimate.value, estimate.interval(), null)


def _direction_of(effect: Effect | None, claimed: int) -> str:
    """supported / contradicted / inconclusive from an effect interval and the claimed sign."""
    if effect is None or effect.interval is None:
        return INCONCLUSIVE
    low, high = (v - effect.null for v in effect.interval)
    if claimed * low > 0 and claimed * high > 0:
        return SUPPORTED
    if claimed * low < 0 and claimed * high < 0:
        return CONTRADICTED
    return INCONCLUSIVE


def _fmt(x: float) -> str:
    return format_value(float(x)) if isinstance(x, (int, float)) and math.isfinite(x) else "n/a"


def _seeds(*frames: pd.DataFrame) -> int:
    return min((int(f["seed"].nunique()) for f in frames), default=0)


def _detectable(estimate: Estimate, seeds: int, units: str) -> str:
    """The MDE of an undecided difference, and the seeds per arm that would detect the effect seen."""
    mde = minimum_detectable_effect(estimate)
    if not math.isfinite(mde):
        return " The design's minimum detectable effect is undefined (no variance estimate)."
    needed = seeds_to_detect(estimate, seeds) if seeds >= 1 else None
    enough = (f"about {needed} seeds per arm would detect the effect seen ({_fmt(estimate.value)})" if needed
              else "the effect seen is 0, which no number of seeds detects" if estimate.value == 0
              else f"no practical number of seeds (≤ 1000 per arm) would detect the effect seen ({_fmt(estimate.value)})")
    return (f" Minimum detectable effect of this design (α = 0.05, power 0.8, {seeds} seeds per arm): "
            f"{_fmt(mde)} {units}; {enough}.")


def _equivalence_reach(estimate: Estimate, seeds: int, delta: float, one_sided: bool = False) -> str:
    needed = seeds_for_equivalence(estimate, seeds, delta, one_sided=one_sided)
    where = "above −δ" if one_sided else "inside ±δ"
    if needed:
        return f" About {needed} seeds per arm would put the 90% interval {where} if the estimate stays at {_fmt(estimate.value)}."
    return f" The estimate seen ({_fmt(estimate.value)}) leaves no practical number of seeds (≤ 1000 per arm) that would put it {where}."


# --- comparing arms -----------------------------------------------------------------------------

def _level_label(columns: list[str], key: tuple) -> str:
    return ", ".join(f"{c.removeprefix('axes.')}={'n/a' if v is None else v}" for c, v in zip(columns, key))


def _paired_levels(a: pd.DataFrame, b: pd.DataFrame, compared: tuple[str, ...]) -> tuple[list[tuple[pd.DataFrame, pd.DataFrame]], str]:
    """The (a, b) pairs to compare: one, pooled, when every other varying axis is balanced between
    the arms (same share of runs at each level); else one pair per level both arms share."""
    both = pd.concat([a, b])
    columns = _varying(both, compared)
    if not columns:
        return [(a, b)], ""
    names = ", ".join(c.removeprefix("axes.") for c in columns)
    keys_a = pd.Series(_keys(a, columns), index=a.index, dtype=object)
    keys_b = pd.Series(_keys(b, columns), index=b.index, dtype=object)
    share_a, share_b = keys_a.value_counts(normalize=True), keys_b.value_counts(normalize=True)
    if set(share_a.index) == set(share_b.index) and all(
            math.isclose(share_a[k], share_b[k]) for k in share_a.index):
        return [(a, b)], f" Pooled over {names} (balanced: both arms have the same share of runs at each level)."
    shared = [k for k in share_a.index if k in share_b.index]
    shared.sort(key=lambda k: tuple("" if v is None else v for v in k))
    pairs = [(a[keys_a.map(lambda k, key=key: k == key)], b[keys_b.map(lambda k, key=key: k == key)]) for key in shared]
    if not pairs:
        return [], (f" The arms share no level of {names} (unbalanced: "
                    f"{'; '.join(_level_label(columns, k) for k in share_a.index)} vs "
                    f"{'; '.join(_level_label(columns, k) for k in share_b.index)}), so they cannot be compared.")
    return pairs, (f" Stratified by {names}: the arms cover its levels unequally, so the effect is taken within "
                   f"each shared level ({'; '.join(_level_label(columns, k) for k in shared)}) and combined with "
                   f"inverse-variance weights.")


def _difference(pairs: list[tuple[pd.DataFrame, pd.DataFrame]], measure: Callable[[pd.DataFrame], pd.Series]) -> Estimate:
    return inverse_variance([combine([(1, mean_estimate(measure(a))), (-1, mean_estimate(measure(b)))])
                             for a, b in pairs])


def _divergence(pairs: list[tuple[pd.DataFrame, pd.DataFrame]], a_name: str, b_name: str) -> tuple[Effect, int]:
    """Divergence rate a − b: Newcombe's interval for one pair, Agresti–Caffo combined when stratified."""
    counts = [(int((a["status"] == "diverged").sum()), len(a), int((b["status"] == "diverged").sum()), len(b))
              for a, b in pairs]
    label = f"divergence rate: {a_name} − {b_name} (+ = {a_name} diverges more)"
    total = sum(k1 + k2 for k1, _, k2, _ in counts)
    if len(counts) == 1:
        difference, interval = proportion_difference(*counts[0])
        return Effect(label, difference, interval), total
    return _as_effect(label, inverse_variance([agresti_caffo(*c) for c in counts])), total


def _better(assertion: str, a_name: str, a: pd.DataFrame, b_name: str, b: pd.DataFrame,
            sign: int, metric: str, compared: tuple[str, ...]) -> Part:
    """"a scores better than b": divergence rate and the metric of finished runs, tested apart."""
    pairs, design = _paired_levels(a, b, compared)
    test = (f"{a_name} vs {b_name}: Welch t (95%) on {metric} of finished runs and Newcombe interval on the "
            f"divergence rate; a diverged run counts as worse than any finished one, so either may decide "
            f"unless they disagree.{design}")
    if not pairs:
        return Part(assertion, NOT_APPLICABLE, (), test, design.strip())
    raw = _difference(pairs, _score)
    score = _as_effect(f"{metric} of finished runs: {a_name} − {b_name} ({_better_word(sign)})", raw)
    rate, diverged = _divergence(pairs, a_name, b_name)
    by_score, by_rate = _direction_of(score, sign), _direction_of(rate, -1) if diverged else INCONCLUSIVE
    found = {by_score, by_rate}
    status = (INCONCLUSIVE if {SUPPORTED, CONTRADICTED} <= found else
              CONTRADICTED if CONTRADICTED in found else SUPPORTED if SUPPORTED in found else INCONCLUSIVE)
    note = ""
    if {SUPPORTED, CONTRADICTED} <= found:
        note = " Divergence rate and finished-run scores point opposite ways."
    elif status == INCONCLUSIVE:
        note = _detectable(raw, _seeds(a[a["status"] == "ok"], b[b["status"] == "ok"]), metric)
    return Part(assertion, status, (score, rate) if diverged else (score,), test, note)


def _alike(assertion: str, a_name: str, a: pd.DataFrame, b_name: str, b: pd.DataFrame, runs: pd.DataFrame,
           compared: tuple[str, ...], one_sided: bool = False) -> Part:
    """"a scores the same as b" (TOST at ±δ), or with one_sided "a is not worse than b by δ"."""
    sign, metric = _direction(runs)
    delta, margin = _margin(runs)
    pairs, design = _paired_levels(a, b, compared)
    kind = ("non-inferiority (TOST's lower one-sided test: the 90% interval's worse end inside δ)" if one_sided else
            "equivalence by TOST (the 90% interval inside ±δ)")
    test = (f"{a_name} vs {b_name}: {kind} on {metric} of finished runs, {margin}, fixed before the data; "
            f"Welch df. {'Any divergence in ' + a_name if one_sided else 'Any divergence in either arm'} "
            f"leaves it undecided; a divergence rate shown different contradicts.{design}")
    if not pairs:
        return Part(assertion, NOT_APPLICABLE, (), test, design.strip())
    raw = _difference(pairs, _score)
    score = _as_effect(f"{metric} of finished runs: {a_name} − {b_name} ({_better_word(sign)}; margin ±{_fmt(delta)})", raw)
    rate, diverged = _divergence(pairs, a_name, b_name)
    oriented = Estimate(sign * raw.value, raw.var, raw.df)
    if not math.isfinite(delta):
        by_score = INCONCLUSIVE
    elif one_sided:
        by_score = {"not worse": SUPPORTED, "worse": CONTRADICTED}.get(non_inferiority(oriented, delta), INCONCLUSIVE)
    else:
        by_score = {"equivalent": SUPPORTED, "different": CONTRADICTED}.get(equivalence(oriented, delta), INCONCLUSIVE)
    inner = oriented.interval(0.90)
    note = (f" 90% interval of the difference, oriented + = {a_name} better: "
            f"[{_fmt(inner[0])}, {_fmt(inner[1])}] against {'−' if one_sided else '±'}{_fmt(delta)}." if inner else "")
    relevant = int((a["status"] == "diverged").sum()) if one_sided else diverged
    by_rate = INCONCLUSIVE
    if relevant:
        differs = (_direction_of(rate, +1) == SUPPORTED if one_sided  # a shown to diverge more
                   else _direction_of(rate, +1) != INCONCLUSIVE)      # the rates shown apart, either way
        by_rate = CONTRADICTED if differs else INCONCLUSIVE
        note += (" Divergence rates differ." if differs else
                 f" {relevant} run(s) diverged, so {'non-inferiority' if one_sided else 'equivalence'} cannot be shown.")
    if CONTRADICTED in (by_score, by_rate):
        status = CONTRADICTED
    elif by_score == SUPPORTED and not relevant:
        status = SUPPORTED
    else:
        status = INCONCLUSIVE
        if by_score == INCONCLUSIVE and math.isfinite(delta) and math.isfinite(raw.var):
            note += _equivalence_reach(oriented, _seeds(a[a["status"] == "ok"], b[b["status"] == "ok"]), delta, one_sided)
    return Part(assertion, status, (score, rate) if diverged else (score,), test, note)


def _slope_part(assertion: str, slope: Estimate, claimed: int | None, seeds: int, label: str) -> Part:
    """A log-log slope shown below / above 0 (claimed = −1 / +1, t interval at 95%), or, with claimed
    None, shown flat: TOST against ±SLOPE_DELTA."""
    effect = _as_effect(label, slope)
    if claimed is not None:
        status = _direction_of(effect, claimed)
        test = f"OLS slope of log(grad norm) on log(depth), t interval (95%) on n − 2 df, must be {'< 0' if claimed < 0 else '> 0'}."
        note = _detectable(slope, seeds, "log-log slope") if status == INCONCLUSIVE else ""
        return Part(assertion, status, (effect,), test, note)
    verdict = equivalence(slope, SLOPE_DELTA)
    status = {"equivalent": SUPPORTED, "different": CONTRADICTED}.get(verdict, INCONCLUSIVE)
    test = (f"OLS slope of log(grad norm) on log(depth), TOST: 90% interval inside ±δ, δ = {SLOPE_DELTA:g} "
            f"in log-log units (depth ×10 moves the gradient by at most 10^{SLOPE_DELTA:g} ≈ "
            f"{10 ** SLOPE_DELTA:.2f}×), fixed before the data.")
    inner = slope.interval(0.90)
    note = f" 90% interval [{_fmt(inner[0])}, {_fmt(inner[1])}]." if inner else " Interval undefined."
    if status == INCONCLUSIVE and math.isfinite(slope.var):
        note += _equivalence_reach(slope, seeds, SLOPE_DELTA)
    return Part(assertion, status, (effect,), test, note)


def _seed_shortfall(arms: dict[str, pd.DataFrame]) -> str:
    short = [name for name, frame in arms.items() if frame["seed"].nunique() < 2]
    return f" Fewer than 2 seeds in {', '.join(short)}: cannot support or contradict." if short else ""


def _judged(parts: list[Part], arms: dict[str, pd.DataFrame], evidence: list[dict], explanation: str,
            extra: list[Effect] | None = None) -> Verdict:
    """The claim's verdict from its parts: supported only when every part is."""
    statuses = [p.status for p in parts]
    status = (CONTRADICTED if CONTRADICTED in statuses else
              SUPPORTED if statuses and all(s == SUPPORTED for s in statuses) else INCONCLUSIVE)
    shortfall = _seed_shortfall(arms)
    if shortfall:
        status = INCONCLUSIVE
    lines = [f" Part {i} — {p.claim}: {p.status}. Test: {p.test}{p.note}" for i, p in enumerate(parts, 1)]
    effects = [e for p in parts for e in p.effects]
    headline = effects[0] if effects else None
    if headline is not None and headline.interval is None:
        explanation += " The main effect's interval is undefined (an arm has a single run)."
    return Verdict(status, headline, {name: int(len(frame)) for name, frame in arms.items()},
                   pd.DataFrame(evidence), explanation + "".join(lines) + shortfall,
                   effects[1:] + (extra or []), parts)


# --- the claims ---------------------------------------------------------------------------------

def _equal_data(runs: pd.DataFrame) -> tuple[pd.DataFrame | None, str]:
    """The ln and bn runs at one amount of data (steps × batch_size) covering at least 2 batch sizes
    in both norms (the one with most runs), and a sentence saying so; None when no such level exists."""
    batch = pd.to_numeric(_axis(runs, "batch_size"), errors="coerce")
    steps = pd.to_numeric(_axis(runs, "steps"), errors="coerce")
    norm = _axis(runs, "norm")
    if steps.isna().all():
        return runs, " The runs record no steps, so whether the arms saw equal data is unknown."
    seen = batch * steps
    levels = []
    for level in seen.dropna().unique():
        at = seen == level
        if len(set(batch[at & (norm == "ln")]) & set(batch[at & (norm == "bn")])) >= 2:
            levels.append((int(at.sum()), float(level), at))
    if not levels:
        return None, ""
    _, level, at = max(levels, key=lambda lv: lv[:2])
    interval = (pd.to_numeric(_axis(runs, "eval_every"), errors="coerce") * batch)[at].dropna()
    evals = ("" if interval.empty else f", each evaluated every {format_value(interval.iloc[0])} examples"
             if interval.nunique() == 1 else ", evaluated at different intervals of examples (best-of-more-"
             "evaluations favours the arm evaluated more often)")
    others = f" {len(levels) - 1} other equal-data level(s) left aside." if len(levels) > 1 else ""
    return runs[at], (f" The arms saw equal data: {format_value(level)} examples each (steps × batch_size)"
                      f"{evals}.{others}")


def _data_seen(runs: pd.DataFrame) -> str:
    batch = pd.to_numeric(_axis(runs, "batch_size"), errors="coerce")
    seen = batch * pd.to_numeric(_axis(runs, "steps"), errors="coerce")
    arms = sorted({(str(n), b, s) for n, b, s in zip(_axis(runs, "norm"), batch, seen) if pd.notna(b) and pd.notna(s)})
    return "; ".join(f"{n} @ batch {format_value(b)}: {format_value(s)}" for n, b, s in arms)


@claim("ln_batch_robust",
       "LayerNorm is robust to batch size; BatchNorm degrades at small batch.",
       "Ba, Kiros & Hinton 2016, Layer Normalization, §6.6",
       compare=("norm", "batch_size", "steps", "eval_every"))  # equal data ties steps (and evals) to the batch
def ln_batch_robust(runs: pd.DataFrame) -> Verdict:
    runs = _finished(runs)
    runs, missing = _both(runs, "norm", "ln", "bn")
    if missing:
        return missing
    runs, task_note = _one_task(runs)
    batch = _axis(runs, "batch_size")
    shared = set(batch[_axis(runs, "norm") == "ln"].dropna()) & set(batch[_axis(runs, "norm") == "bn"].dropna())
    if len(shared) < 2:
        return _not_applicable(f"Needs at least 2 batch sizes run with both ln and bn; found "
                               f"{_values_text(pd.Series(sorted(shared)))}.")
    # At a fixed number of steps a smaller batch also sees fewer examples: that compares data, not batch size.
    equal, data_note = _equal_data(runs)
    if equal is None:
        return _not_applicable(f"Not comparable: no two batch sizes saw equal data in both ln and bn (examples "
                               f"seen, steps × batch_size: {_data_seen(runs)}). A smaller batch at the same "
                               f"steps sees fewer examples; the claim needs equal examples seen "
                               f"(sweeps/batch_size.yaml).")
    runs = equal
    batch = _axis(runs, "batch_size")
    shared = set(batch[_axis(runs, "norm") == "ln"].dropna()) & set(batch[_axis(runs, "norm") == "bn"].dropna())
    small, large = min(shared), max(shared)
    sign, metric = _direction(runs)
    arms, evidence = {}, []
    for kind in ("bn", "ln"):
        for size in (large, small):
            name = f"{kind} @ batch {format_value(size)}"
            frame = runs[(_axis(runs, "norm") == kind) & (batch == size)]
            arms[name] = frame
            evidence.append(_arm_row(name, frame, {metric: _score(frame)}))
    big, little = format_value(large), format_value(small)
    compared = ("batch_size", "steps", "eval_every")
    parts = [
        _better(f"BN is worse at batch {little} than at {big}", f"bn @ batch {big}", arms[f"bn @ batch {big}"],
                f"bn @ batch {little}", arms[f"bn @ batch {little}"], sign, metric, compared),
        _alike(f"LN's {metric} is the same at batch {little} and {big}", f"ln @ batch {little}",
               arms[f"ln @ batch {little}"], f"ln @ batch {big}", arms[f"ln @ batch {big}"], runs, compared),
    ]
    explanation = (f"Arms: BN and LN, each at batch {big} and {little}; every other varying setting is held "
                   f"fixed (one setting at a time).{data_note} Supported only when BN degrades and LN is shown "
                   f"equivalent." + task_note)
    return _judged(parts, arms, evidence, explanation)


@claim("postln_needs_warmup",
       "Post-LN Transformers need learning-rate warm-up; Pre-LN ones do not.",
       "Xiong et al. 2020, On Layer Normalization in the Transformer Architecture, §3.2",
       compare=("placement", "warmup_steps"), pool=("layers",))
def postln_needs_warmup(runs: pd.DataFrame) -> Verdict:
    runs = _finished(runs)
    runs, missing = _both(runs, "placement", "pre", "post")
    if missing:
        return missing
    warmup = pd.to_numeric(_axis(runs, "warmup_steps"), errors="coerce")
    for where in ("pre", "post"):
        mine = warmup[_axis(runs, "placement") == where]
        if not ((mine == 0).any() and (mine > 0).any()):
            return _not_applicable(f"Needs warmup_steps = 0 and > 0 for placement {where}; found "
                                   f"{_values_text(mine.dropna())}.")
    runs, task_note = _one_task(runs)
    warmup = pd.to_numeric(_axis(runs, "warmup_steps"), errors="coerce")
    sign, metric = _direction(runs)
    arms, evidence = {}, []
    for where in ("post", "pre"):
        for warm in (True, False):
            name = f"{where}, {'warm-up' if warm else 'no warm-up'}"
            frame = runs[(_axis(runs, "placement") == where) & ((warmup > 0) if warm else (warmup == 0))]
            arms[name] = frame
            evidence.append(_arm_row(name, frame, {metric: _score(frame)}))
    # warm-up lengths > 0 are one arm: compared is the warm-up axis itself, every other axis is pooled
    # only when balanced between the two arms of a part, else stratified.
    compared = ("warmup_steps", "placement")
    parts = [
        _better("Post-LN does better with warm-up than without", "post, warm-up", arms["post, warm-up"],
                "post, no warm-up", arms["post, no warm-up"], sign, metric, compared),
        _alike("Pre-LN without warm-up is not worse than with it", "pre, no warm-up", arms["pre, no warm-up"],
               "pre, warm-up", arms["pre, warm-up"], runs, compared, one_sided=True),
    ]
    applicable = [p for p in parts if p.status != NOT_APPLICABLE]
    if not applicable:
        return _not_applicable("Warm-up and no warm-up cannot be compared for either placement. Post-LN: "
                               + parts[0].note + " Pre-LN: " + parts[1].note)
    explanation = ("Arms: Post-LN and Pre-LN, each with warm-up (all lengths > 0 together) and without; "
                   "every other setting is fixed or, when pooled, balanced or stratified (see each part). "
                   "Supported only when Post-LN gains from warm-up and Pre-LN is shown not to need it." + task_note)
    return _judged(parts, arms, evidence, explanation)


def _one_per_observation(runs: pd.DataFrame, invariant: tuple[str, ...]) -> tuple[pd.DataFrame, int]:
    """Runs that differ only in settings that cannot change the measure are one observation: keep
    one row per (other settings, seed)."""
    others = [c for c in runs.columns if c.startswith("axes.") and not _named(c, invariant)]
    keys = pd.Series(_keys(runs, others + ["seed"]), index=runs.index, dtype=object)
    kept = runs[~keys.duplicated()]
    return kept, len(runs) - len(kept)


@claim("postln_grad_depth",
       "At initialization, Post-LN's last-layer gradient norm does not depend on depth; "
       "Pre-LN's shrinks with depth.",
       "Xiong et al. 2020, On Layer Normalization in the Transformer Architecture, Theorem 1",
       compare=("placement", "layers"), pool=_INIT_INVARIANT)  # none of them can change the gradient at init
def postln_grad_depth(runs: pd.DataFrame) -> Verdict:
    runs = runs[runs["status"].isin(TRAINED)]  # the gradient at init is measured before any of them stop
    model = _axis(runs, "model").astype(str).str.lower()
    transformer = runs[model.str.contains("transformer")]
    if transformer.empty:
        return _not_applicable(f"Needs model transformer; the runs have model ∈ {_values_text(_axis(runs, 'model'))}.")
    runs, missing = _both(transformer, "placement", "pre", "post", whose="the transformer runs")
    if missing:
        return missing
    norm = _metric(runs, "profiles.last_layer_grad_norm_init")
    runs = runs[norm > 0]
    pooled = [c.removeprefix("axes.") for c in _varying(runs) if _named(c, _INIT_INVARIANT)]
    runs, collapsed = _one_per_observation(runs, _INIT_INVARIANT)
    layers = pd.to_numeric(_axis(runs, "layers"), errors="coerce")
    for where in ("pre", "post"):
        depths = layers[_axis(runs, "placement") == where].dropna()
        if depths.nunique() < 2:
            return _not_applicable(f"Needs at least 2 depths (layers) with a last-layer gradient norm at init "
                                   f"for placement {where}; found {_values_text(depths)}.")
    arms, evidence, slopes, seeds = {}, [], {}, {}
    for where in ("pre", "post"):
        mine = runs[_axis(runs, "placement") == where]
        depth = pd.to_numeric(_axis(mine, "layers"), errors="coerce")
        grad = _metric(mine, "profiles.last_layer_grad_norm_init")
        slopes[where] = slope_estimate(np.log(depth), np.log(grad))
        seeds[where] = int(mine["seed"].nunique())
        for d in sorted(depth.dropna().unique()):
            name = f"{where}, {format_value(d)} layers"
            frame = mine[depth == d]
            arms[name] = frame
            row = _arm_row(name, frame, {"log10 grad norm": np.log10(grad[depth == d])})
            evidence.append({**row, "geometric mean grad norm": float(10.0 ** row["log10 grad norm mean"])})
    label = "slope of log(last-layer grad norm at init) on log(depth), {}"
    parts = [
        _slope_part("Pre-LN's last-layer gradient shrinks with depth", slopes["pre"], -1, seeds["pre"],
                    label.format("Pre-LN (− = shrinks)")),
        _slope_part("Post-LN's last-layer gradient does not depend on depth", slopes["post"], None, seeds["post"],
                    label.format(f"Post-LN (flat = inside ±{SLOPE_DELTA:g})")),
    ]
    difference = _as_effect("slope difference Pre-LN − Post-LN (− = Pre-LN shrinks more)",
                            combine([(1, slopes["pre"]), (-1, slopes["post"])]))
    collapsed_note = (f" {collapsed} run(s) differing only in {', '.join(pooled)} (which cannot change "
                      f"a gradient measured before the first update) were counted once per seed." if collapsed else "")
    explanation = (f"Arms: Pre-LN and Post-LN transformers at each depth, the last block's gradient norm at "
                   f"initialization; everything else fixed{' (pooled over ' + ', '.join(pooled) + ', which cannot change it)' if pooled else ''}. "
                   f"Log-log slopes: Pre-LN {_fmt(slopes['pre'].value)}, Post-LN {_fmt(slopes['post'].value)} "
                   f"(theory: about −0.5 and 0). Supported only when Pre-LN's slope is shown negative and "
                   f"Post-LN's shown flat." + collapsed_note)
    return _judged(parts, arms, evidence, explanation, [difference])


@claim("gamma_small_flow",
       "A gain initialized at 0.1 keeps gradients flowing through time better than 1.0 in normalized "
       "recurrent cells; LayerNorm's accuracy is insensitive to the choice.",
       "Cooijmans et al. 2016, Recurrent Batch Normalization, §4; Ba, Kiros & Hinton 2016, §6.2",
       compare=("gamma_init",), pool=("norm",))
def gamma_small_flow(runs: pd.DataFrame) -> Verdict:
    runs = _finished(runs)
    recurrent = runs[_recurrent(runs) & _axis(runs, "norm").notna() & (_axis(runs, "norm").astype(str) != "none")]
    if recurrent.empty:
        return _not_applicable(f"Needs a normalized recurrent model; the runs have model ∈ "
                               f"{_values_text(_axis(runs, 'model'))}, norm ∈ {_values_text(_axis(runs, 'norm'))}.")
    gamma = pd.to_numeric(_axis(recurrent, "gamma_init"), errors="coerce")
    if not (np.isclose(gamma, 0.1).any() and np.isclose(gamma, 1.0).any()):
        return _not_applicable(f"Needs gamma_init 0.1 and 1.0 in normalized recurrent runs; found "
                               f"{_values_text(gamma.dropna())}.")
    runs, task_note = _one_task(recurrent)
    gamma = pd.to_numeric(_axis(runs, "gamma_init"), errors="coerce")
    small, unit = np.isclose(gamma, 0.1), np.isclose(gamma, 1.0)
    # grad_time_ratio = log10(|dL/dh_1| / |dL/dh_T|): 0 is perfect flow; below is vanishing,
    # above exploding. Flow is scored as -|ratio| so both failures count against. It is measured at
    # initialization, so diverged runs have it too.
    flow = -_metric(runs, "metrics.grad_time_ratio_init").abs()
    arms = {"gamma 0.1": runs[small], "gamma 1.0": runs[unit]}
    evidence = [_arm_row(name, frame, {"flow score": flow[frame.index]}) for name, frame in arms.items()]
    pairs, design = _paired_levels(arms["gamma 0.1"], arms["gamma 1.0"], ("gamma_init",))
    flow_diff = _difference(pairs, lambda frame: flow[frame.index])
    flow_effect = _as_effect("flow score −|grad_time_ratio_init|: gamma 0.1 − gamma 1.0 (+ = 0.1 flows better)", flow_diff)
    flow_status = _direction_of(flow_effect, +1) if pairs else NOT_APPLICABLE
    flow_part = Part("gain 0.1 keeps gradients flowing through time better than 1.0", flow_status, (flow_effect,),
                     f"gamma 0.1 vs 1.0 in normalized recurrent runs: Welch t (95%) on −|grad_time_ratio_init| "
                     f"(at init, so diverged runs count).{design}",
                     _detectable(flow_diff, _seeds(*arms.values()), "flow score") if flow_status == INCONCLUSIVE else "")
    _, metric = _direction(runs)
    ln = (_axis(runs, "norm") == "ln").to_numpy()
    if (ln & small).any() and (ln & unit).any():
        arms["LN gamma 0.1"], arms["LN gamma 1.0"] = runs[ln & small], runs[ln & unit]
        for name in ("LN gamma 0.1", "LN gamma 1.0"):
            evidence.append(_arm_row(name, arms[name], {metric: _score(arms[name])}))
        accuracy_part = _alike(f"LN's {metric} is insensitive to the gain", "LN gamma 0.1", arms["LN gamma 0.1"],
                               "LN gamma 1.0", arms["LN gamma 1.0"], runs, ("gamma_init", "norm"))
    else:
        accuracy_part = Part(f"LN's {metric} is insensitive to the gain", NOT_APPLICABLE, (), "",
                             "No LN runs at both gains, so this half cannot be tested and the claim cannot be supported.")
    explanation = (f"Arms: gain 0.1 and 1.0 in normalized recurrent cells (norms pooled for the flow part), "
                   f"LN alone for the accuracy part; everything else fixed. Mean −|grad_time_ratio_init|: "
                   f"{_fmt(evidence[0]['flow score mean'])} at gamma 0.1, {_fmt(evidence[1]['flow score mean'])} "
                   f"at 1.0 (0 = no vanishing or exploding). Supported only when both parts hold." + task_note)
    return _judged([flow_part, accuracy_part], arms, evidence, explanation)


@claim("fp16_small_eps_nonfinite",
       "In fp16, too small an epsilon makes the normalization produce non-finite values.",
       "Practice: fp16's smallest normal is 6.1e-5, so eps below it vanishes next to a tiny variance",
       compare=("eps",))
def fp16_small_eps_nonfinite(runs: pd.DataFrame) -> Verdict:
    runs = _finished(runs)
    precision = _axis(runs, "precision").astype(str).str.lower()
    half = runs[precision.isin(_FP16)]
    if half.empty:
        return _not_applicable(f"Needs precision fp16 or fp16_pure; the runs have precision ∈ "
                               f"{_values_text(_axis(runs, 'precision'))}.")
    in_fp32 = _axis(half, "norm_fp32").astype(object).map(lambda v: v is True or str(v).lower() == "true")
    if in_fp32.all():
        return _not_applicable("The fp16 runs compute their norms in fp32 (norm.fp32=true), where no eps vanishes; "
                               "the claim needs norm.fp32=false.")
    half = half[~in_fp32]
    eps = pd.to_numeric(_axis(half, "eps"), errors="coerce")
    if eps.nunique() < 2:
        return _not_applicable(f"Needs at least 2 eps values in fp16 runs; found {_values_text(eps.dropna())}.")
    smallest, largest = eps.min(), eps.max()
    low_name, high_name = f"eps {format_value(smallest)}", f"eps {format_value(largest)}"
    arms = {low_name: half[eps == smallest], high_name: half[eps == largest]}
    evidence = [{**_arm_row(name, frame), "divergence rate": float((frame["status"] == "diverged").mean())}
                for name, frame in arms.items()]
    pairs, design = _paired_levels(arms[low_name], arms[high_name], ("eps",))
    if not pairs:
        return _not_applicable(design.strip())
    rate, _ = _divergence(pairs, low_name, high_name)
    status = _direction_of(rate, +1)
    modes = sorted(set(_axis(half, "precision").astype(str)))
    part = Part("the smaller eps diverges (produces non-finite values) more often", status, (rate,),
                f"{low_name} vs {high_name}, precision {', '.join(modes)}, norm.fp32=false: divergence rate "
                f"difference, Newcombe interval (95%).{design}")
    (low, high) = arms.values()
    where = ("Under fp16 autocast a norm receives fp16 only where its input is a half matmul's output (inside "
             "recurrent cells); a Transformer's residual-stream norms receive float32 (the record's "
             "precision.norm_input_dtypes says which). " if "fp16" in modes else "")
    explanation = (f"Arms: runs whose norms compute in the input's dtype (norm.fp32=false) at precision "
                   f"{', '.join(modes)}, at the smallest and largest eps; everything else fixed. {where}They diverged "
                   f"{int((low['status'] == 'diverged').sum())}/{len(low)} times at {low_name} and "
                   f"{int((high['status'] == 'diverged').sum())}/{len(high)} at {high_name}.")
    return _judged([part], arms, evidence, explanation)


def _timing(runs: pd.DataFrame) -> tuple[pd.Series, str]:
    """Which runs' step times can be compared: those whose p90/p10 shows no interference."""
    p10, p90 = _metric(runs, "throughput.step_ms_p10"), _metric(runs, "throughput.step_ms_p90")
    if p10.isna().all() or p90.isna().all():
        return pd.Series(False, index=runs.index), (
            "the records carry no step-time spread (throughput.step_ms_p10/p90), so interference cannot be ruled out")
    spread = p90 / p10.where(p10 > 0)
    quiet = spread <= INTERFERENCE
    set_aside = int((~quiet).sum())
    return quiet, (f"runs were timed separately, not interleaved; {set_aside} run(s) whose step-time p90/p10 "
                   f"exceeds {INTERFERENCE:g} (or is unknown) were set aside as disturbed" if set_aside else
                   f"runs were timed separately, not interleaved; every run's step-time p90/p10 is ≤ {INTERFERENCE:g}")


@claim("rms_faster_than_ln",
       "RMSNorm is faster than LayerNorm at equal accuracy.",
       "Zhang & Sennrich 2019, Root Mean Square Layer Normalization",
       compare=("norm",))
def rms_faster_than_ln(runs: pd.DataFrame) -> Verdict:
    runs = _finished(runs)
    runs, missing = _both(runs, "norm", "rms", "ln")
    if missing:
        return missing
    runs, task_note = _one_task(runs)
    rms, ln = (_axis(runs, "norm") == "rms"), (_axis(runs, "norm") == "ln")
    arms = {"rms": runs[rms], "ln": runs[ln]}
    quiet, timing_note = _timing(runs)
    log_ms = np.log(_metric(runs, "throughput.step_ms_median").where(lambda v: v > 0)).where(quiet)
    devices = runs["environment.device_name"].dropna().unique() if "environment.device_name" in runs else []
    speed = combine([(1, mean_estimate(log_ms[rms])), (-1, mean_estimate(log_ms[ln]))])
    interval = speed.interval()
    ratio = Effect("step-time ratio rms / ln (geometric mean of median step ms, undisturbed runs; < 1 = rms faster)",
                   math.exp(speed.value) if math.isfinite(speed.value) else math.nan,
                   (math.exp(interval[0]), math.exp(interval[1])) if interval else None, null=1.0)
    speed_test = (f"rms vs ln: Welch t (95%) on log median step time; {timing_note}"
                  f"{'; timed on ' + str(len(devices)) + ' different devices' if len(devices) > 1 else ''}.")
    kept = {name: int(log_ms[frame.index].notna().sum()) for name, frame in arms.items()}
    if len(devices) > 1:
        speed_status, speed_note = INCONCLUSIVE, " Cannot be judged: the arms mix devices."
    elif min(kept.values()) < 2:
        speed_status, speed_note = INCONCLUSIVE, (
            f" Cannot be judged: fewer than 2 undisturbed timings in an arm ({', '.join(f'{k}: {v}' for k, v in kept.items())}).")
    else:
        speed_status = _direction_of(ratio, -1)
        speed_note = _detectable(speed, min(kept.values()), "log step time") if speed_status == INCONCLUSIVE else ""
    speed_part = Part("RMSNorm's training step is faster than LayerNorm's", speed_status, (ratio,), speed_test, speed_note)
    _, metric = _direction(runs)
    accuracy_part = _alike(f"RMSNorm's {metric} is not worse than LayerNorm's", "rms", arms["rms"], "ln", arms["ln"],
                           runs, ("norm",), one_sided=True)
    evidence = []
    for name, frame in arms.items():
        row = _arm_row(name, frame, {metric: _score(frame)})
        evidence.append({**row, "median step ms": float(_metric(frame, "throughput.step_ms_median").median()),
                         "undisturbed timings": kept[name]})
    explanation = (f"Arms: RMSNorm and LayerNorm; everything else fixed. RMSNorm's step takes "
                   f"{_fmt(ratio.estimate)}× LayerNorm's. 'Equal accuracy' is read as no accuracy cost "
                   f"(non-inferiority at δ); a more accurate RMSNorm does not count against the claim. "
                   f"Supported only when rms is shown faster and shown not worse." + task_note)
    return _judged([speed_part, accuracy_part], arms, evidence, explanation)


def _stability(assertion: str, calm_name: str, calm: pd.DataFrame, rough_name: str, rough: pd.DataFrame) -> Part:
    """"calm is more stable than rough": gradient kurtosis decides; the largest gradient norm and the
    divergence rate may contradict it (a measure shown the other way), and contradict each other."""
    pairs, design = _paired_levels(calm, rough, ("norm", "placement"))
    test = (f"{calm_name} vs {rough_name}: Welch t (95%) on gradient kurtosis of finished runs (decides), on "
            f"log10 grad_norm_max, and Newcombe interval on divergence rate; supported when kurtosis is lower "
            f"and neither other measure is shown worse, contradicted when a measure is shown worse and none "
            f"better, inconclusive when they disagree.{design}")
    if not pairs:
        return Part(assertion, NOT_APPLICABLE, (), test, design.strip())

    def finished(measure: Callable[[pd.DataFrame], pd.Series]) -> Callable[[pd.DataFrame], pd.Series]:
        return lambda frame: measure(frame).where(frame["status"] == "ok")

    kurtosis = _difference(pairs, finished(lambda f: _metric(f, "metrics.grad_kurtosis")))
    log_max = _difference(pairs, finished(lambda f: np.log10(_metric(f, "metrics.grad_norm_max").where(lambda v: v > 0))))
    effects = (_as_effect(f"grad kurtosis: {rough_name} − {calm_name} (+ = {calm_name} more stable)",
                          Estimate(-kurtosis.value, kurtosis.var, kurtosis.df)),
               _as_effect(f"log10 grad_norm_max: {rough_name} − {calm_name} (+ = {calm_name} calmer)",
                          Estimate(-log_max.value, log_max.var, log_max.df)))
    rate, diverged = _divergence(pairs, calm_name, rough_name)
    found = [_direction_of(effects[0], +1), _direction_of(effects[1], +1),
             _direction_of(rate, -1) if diverged else INCONCLUSIVE]
    if CONTRADICTED in found and SUPPORTED in found:
        status, note = INCONCLUSIVE, " The stability measures disagree."
    elif CONTRADICTED in found:
        status, note = CONTRADICTED, ""
    elif found[0] == SUPPORTED:
        status, note = SUPPORTED, ""
    else:
        status, note = INCONCLUSIVE, _detectable(kurtosis, _seeds(calm, rough), "kurtosis")
    return Part(assertion, status, effects + ((rate,) if diverged else ()), test, note)


@claim("in_cell_most_stable",
       "In a recurrent net, LayerNorm inside the cell stabilizes training more than LayerNorm on the "
       "output only, which beats no normalization.",
       "Practice: gradient std ~1 vs >100 and kurtosis 3.2 vs 8.7 between in-cell and unnormalized cells",
       compare=("norm", "placement"))
def in_cell_most_stable(runs: pd.DataFrame) -> Verdict:
    runs = _finished(runs)
    recurrent = runs[_recurrent(runs)]
    if recurrent.empty:
        return _not_applicable(f"Needs a recurrent model; the runs have model ∈ {_values_text(_axis(runs, 'model'))}.")

    def masks_of(frame: pd.DataFrame) -> dict[str, pd.Series]:
        placement, norm = _axis(frame, "placement").astype(str), _axis(frame, "norm").astype(str)
        return {"in_cell": (placement == "in_cell") & (norm == "ln"),
                "post": (placement == "post") & (norm == "ln"),
                "none": norm == "none"}

    masks = masks_of(recurrent)
    missing = [name for name, mask in masks.items() if not mask.any()]
    if missing:
        return _not_applicable(f"Needs recurrent runs with LayerNorm in the cell, LayerNorm on the output (post) "
                               f"and norm none; missing {', '.join(missing)} (placements ∈ "
                               f"{_values_text(_axis(recurrent, 'placement'))}, norms ∈ "
                               f"{_values_text(_axis(recurrent, 'norm'))}).")
    runs, task_note = _one_task(recurrent)
    masks = masks_of(runs)
    arms = {name: runs[mask] for name, mask in masks.items()}
    evidence = []
    for name, frame in arms.items():
        ok = frame["status"] == "ok"
        row = _arm_row(name, frame, {"grad kurtosis": _metric(frame, "metrics.grad_kurtosis").where(ok)})
        evidence.append({**row, "median grad_norm_max": float(_metric(frame[ok], "metrics.grad_norm_max").median())})
    parts = [_stability("LayerNorm in the cell is more stable than on the output", "in_cell", arms["in_cell"],
                        "post", arms["post"]),
             _stability("LayerNorm on the output is more stable than no normalization", "post", arms["post"],
                        "none", arms["none"])]
    explanation = (f"Arms: LayerNorm in the cell, LayerNorm on the output, no normalization (other norms are "
                   f"not this claim's); everything else fixed. Mean gradient kurtosis of finished runs (normal = 3): "
                   f"in_cell {_fmt(evidence[0]['grad kurtosis mean'])}, post {_fmt(evidence[1]['grad kurtosis mean'])}, "
                   f"none {_fmt(evidence[2]['grad kurtosis mean'])}. Supported when both steps of the ordering hold."
                   + task_note)
    return _judged(parts, arms, evidence, explanation)


# --- learning rate ------------------------------------------------------------------------------

def _stable_lr_arm(name: str, frame: pd.DataFrame) -> tuple[pd.Series, dict, dict]:
    """Per-seed largest stable lr of one arm (tuning.largest_stable_per_seed) and its evidence row."""
    from normbench.report.tuning import SCORE, largest_stable_per_seed

    per_seed, facts = largest_stable_per_seed(frame)
    row = {**_arm_row(name, frame, {"final val": frame[SCORE].where(frame["status"] == "ok")}),
           "best lr": facts["best_lr"] if facts["best_lr"] is not None else math.nan,
           "largest stable lr per seed": ", ".join(f"{s}: {format_value(v)}" for s, v in per_seed.items()) or "—",
           "geometric mean": float(np.exp(np.log(per_seed).mean())) if len(per_seed) else math.nan}
    return per_seed, facts, row


@claim("ln_larger_stable_lr",
       "LayerNorm allows a larger stable learning rate than no normalization in an RNN/LSTM.",
       "Ba, Kiros & Hinton 2016, Layer Normalization, §6 (LN-LSTMs train at larger step sizes); practice",
       compare=("norm", "lr"), pool=("placement",))
def ln_larger_stable_lr(runs: pd.DataFrame) -> Verdict:
    from normbench.report.tuning import STABLE_ACCURACY, STABLE_SHARE

    grid_runs, not_applicable = _lr_grid_runs(runs)
    if not_applicable is not None:
        return not_applicable
    runs, shared, task_note = grid_runs
    norm, placement = _axis(runs, "norm"), _axis(runs, "placement").astype(str)
    ln_placements = placement[norm == "ln"].value_counts()
    # Ba et al.'s LN-LSTM normalizes inside the cell; other placements are shown beside it.
    headline = "in_cell" if "in_cell" in ln_placements.index else str(ln_placements.index[0])
    none_seeds, none_facts, none_row = _stable_lr_arm("none", runs[norm == "none"])
    arms = {f"ln {headline}": runs[(norm == "ln") & (placement == headline)], "none": runs[norm == "none"]}
    evidence, effects, estimates, statuses = [], {}, {}, {}
    for where in [headline] + [p for p in ln_placements.index if p != headline]:
        seeds, facts, row = _stable_lr_arm(f"ln {where}", runs[(norm == "ln") & (placement == where)])
        evidence.append(row)
        effects[where], estimates[where] = _lr_ratio(f"ln {where}", seeds, none_seeds)
        statuses[where] = (_direction_of(effects[where], +1), facts)
    evidence.append(none_row)
    grid = sorted(shared)
    status, note = _lr_status(statuses[headline], none_facts, estimates[headline], _seeds(*arms.values()))
    censored = _lr_caveats(statuses[headline][1], none_facts, estimates[headline], grid)
    test = (f"ln ({headline}) vs none: per seed, the largest lr of the shared grid ({_values_text(pd.Series(grid))}) "
            f"whose run finished within the tolerance of its arm's best lr (mean final val; {STABLE_ACCURACY:g} "
            f"accuracy, other metrics {STABLE_SHARE:.0%} of chance-to-best; a diverged run is never stable); "
            f"Welch t (95%) on log lr, exponentiated to a ratio, must exceed 1.")
    part = Part("LN's largest stable lr is larger than no normalization's", status, (effects[headline],), test,
                note + (" " + "; ".join(censored) + "." if censored else ""))
    others = [f"ln {w}: ratio {_fmt(effects[w].estimate)} ({statuses[w][0]})" for w in effects if w != headline]
    explanation = (f"Arms: LayerNorm at placement {headline} (Ba et al.'s LN-LSTM normalizes in the cell when "
                   f"runs have it) and no normalization, on recurrent runs at the same lrs; everything else fixed. "
                   f"Stability is judged per seed against the arm's own best lr, so an arm that is merely less "
                   f"accurate everywhere is not called unstable."
                   + (f" Other LN placements vs none (shown, not judged): {'; '.join(others)}." if others else "")
                   + task_note)
    return _judged([part], arms, evidence, explanation, [effects[w] for w in effects if w != headline])


def _lr_grid_runs(runs: pd.DataFrame):
    """((runs at the lrs both ln and none ran, those lrs, task note), None), or (None, not-applicable verdict)."""
    runs = _finished(runs)
    model = _axis(runs, "model").astype(str).str.lower()
    recurrent = runs[model.isin(("rnn", "lstm"))]
    if recurrent.empty:
        return None, _not_applicable(f"Needs model rnn or lstm; the runs have model ∈ {_values_text(_axis(runs, 'model'))}.")
    runs, missing = _both(recurrent, "norm", "ln", "none", whose="the rnn/lstm runs")
    if missing:
        return None, missing
    runs, task_note = _one_task(runs)
    lr = pd.to_numeric(_axis(runs, "lr"), errors="coerce")
    norm = _axis(runs, "norm")
    shared = set(lr[norm == "ln"].dropna()) & set(lr[norm == "none"].dropna())
    if len(shared) < 2:
        return None, _not_applicable(f"Needs an lr grid (≥ 2 learning rates run with both ln and none); shared lrs: "
                                     f"{_values_text(pd.Series(sorted(shared)))}.")
    return (runs[lr.isin(shared)], shared, task_note), None


def _lr_ratio(name: str, seeds, none_seeds) -> tuple[Effect, Estimate]:
    """The geometric-mean ratio of largest stable lrs, LN arm ÷ none, with its Welch interval."""
    estimate = combine([(1, mean_estimate(np.log(seeds))), (-1, mean_estimate(np.log(none_seeds)))])
    interval = estimate.interval()
    effect = Effect(f"largest stable lr ratio: {name} ÷ none (geometric mean over seeds; > 1 = LN larger)",
                    math.exp(estimate.value) if math.isfinite(estimate.value) else math.nan,
                    (math.exp(interval[0]), math.exp(interval[1])) if interval else None, null=1.0)
    return effect, estimate


def _lr_status(headline: tuple[str, dict], none_facts: dict, estimate: Estimate, seeds: int) -> tuple[str, str]:
    """The part's status and note: no reference lr, a zero-width interval, or an MDE when undecided."""
    status, ln_facts = headline
    if ln_facts["best_lr"] is None or none_facts["best_lr"] is None:
        return INCONCLUSIVE, " An arm has no best lr (each needs an lr with 2 runs, one finished), so no reference to be stable against."
    if estimate.var == 0 and status == SUPPORTED:
        # A zero-width t interval is no evidence: with no spread, fall back to the exact sign test on
        # paired seeds, which needs 5 seeds all pointing the same way for p < 0.05 (0.5 ** 5 = 0.031).
        sign_p = stats.binomtest(seeds, seeds, 0.5, alternative="greater").pvalue
        if sign_p >= 0.05:
            return INCONCLUSIVE, (f" Every seed agrees, but with no spread the t interval says nothing; by an exact "
                                  f"sign test {seeds} agreeing seed(s) give p = {sign_p:.3g}, and 5 would be "
                                  f"needed for p < 0.05.")
        return status, ""
    if status == INCONCLUSIVE:
        return status, _detectable(estimate, seeds, "log lr")
    return status, ""


def _lr_caveats(ln_facts: dict, none_facts: dict, estimate: Estimate, grid: list) -> list[str]:
    """What the grid hides: seeds stable at its top (a lower bound) or at none of it, and no spread."""
    caveats = []
    if ln_facts["censored_high"]:
        caveats.append(f"{ln_facts['censored_high']} LN seed(s) were stable at the largest lr tried "
                       f"({format_value(grid[-1])}), so the ratio is a lower bound")
    if none_facts["censored_high"]:
        caveats.append(f"{none_facts['censored_high']} none seed(s) were stable at the largest lr tried")
    if ln_facts["below_grid"] or none_facts["below_grid"]:
        caveats.append("a seed stable at no lr counts one grid step below the smallest")
    if estimate.var == 0:
        caveats.append("every seed of each arm has the same largest stable lr, so the interval has no width: "
                       "the ratio is known only to the grid's resolution, and more seeds or a finer grid would "
                       "show its spread")
    return caveats
