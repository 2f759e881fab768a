"""How two arms' runs are compared, whatever the part: the task's direction and chance, a
measure's values, strata matched on the other settings (pooled only when balanced), stratified
differences and their effects in words, the divergence test, and what an undecided part leans to
and would need. The part modules (score_parts, speed_parts, convergence_parts) stand on this."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd
from scipy import stats

from normbench.analysis import rules
from normbench.analysis.aggregate import format_value
from normbench.analysis.claims.vocabulary import (
    CONTRADICTED,
    INCONCLUSIVE,
    SUPPORTED,
    TOWARD_CONTRADICTED,
    TOWARD_SUPPORTED,
    Effect,
    Measure,
    is_missing,
    metric,
)
from normbench.analysis.intervals import (
    Estimate,
    agresti_caffo,
    combine,
    decision_level,
    inverse_variance,
    mean_estimate,
    minimum_detectable_effect,
    proportion_difference,
    seed_difference,
    seeds_to_decide,
)


def pct(level: float) -> str:
    """90%, 99.8%: a level as people write it."""
    return f"{level * 100:.4g}%"


def number_text(x) -> str:
    return format_value(float(x)) if isinstance(x, (int, float, np.floating)) and math.isfinite(x) else "n/a"


def task_direction(runs: pd.DataFrame) -> tuple[int, str, float | None]:
    """(+1 higher is better / −1 lower, the metric's name, its chance level or None)."""
    higher = bool(runs["task.higher_is_better"].iloc[0]) if "task.higher_is_better" in runs and len(runs) else True
    name = str(runs["task.metric"].dropna().iloc[0]) if "task.metric" in runs and runs["task.metric"].notna().any() else "score"
    chance = metric(runs, "task.chance").dropna()
    return (1 if higher else -1), name, (float(chance.iloc[0]) if len(chance) else None)


def measure_sign(measure: Measure, runs: pd.DataFrame) -> int:
    return task_direction(runs)[0] if measure.higher is None else (1 if measure.higher else -1)


def measure_name(measure: Measure, runs: pd.DataFrame) -> str:
    return f"{task_direction(runs)[1]} ({measure.name})" if measure.task_metric else measure.name


def better_word(sign: int) -> str:
    return "higher is better" if sign > 0 else "lower is better"


def measure_values(measure: Measure, frame: pd.DataFrame) -> pd.Series:
    values = measure.values(frame).astype(float)
    if measure.finished_only:
        values = values.where(frame["status"] == "ok")
    if measure.log:
        values = np.log(values.where(values > 0))
    return values


def seed_count(*frames: pd.DataFrame) -> int:
    return min((int(f["seed"].nunique()) for f in frames), default=0)


def score_margin(runs: pd.DataFrame) -> tuple[float, str]:
    """The equivalence margin δ of a task score: the metric's smallest effect of interest (rules.margin;
    on the log scale for a ratio metric), from the task alone, never from the results."""
    return rules.margin(task_direction(runs)[1])


def learned(frame: pd.DataFrame, runs: pd.DataFrame) -> tuple[bool | None, str]:
    """Whether an arm's finished runs' mean lies outside the metric's chance band (rules.chance_limit;
    None when the task records no chance level), and the numbers that say so."""
    sign, name, chance = task_direction(runs)
    threshold = rules.chance_limit(name, chance)
    if threshold is None:
        return None, "no chance level recorded"
    scores = metric(frame, rules.primary_column(runs)).where(frame["status"] == "ok").dropna()
    if scores.empty:
        return False, "no run finished"
    mean = float(scores.mean())
    return sign * (mean - threshold) > 0, f"mean {number_text(mean)} vs chance {number_text(chance)}, needs {'>' if sign > 0 else '<'} {number_text(threshold)}"


def varying(runs: pd.DataFrame, exclude: tuple[str, ...] = ()) -> list[str]:
    """Axis columns with more than one distinct non-missing value (missing = does not apply)."""
    return [c for c in runs.columns if c.startswith("axes.") and c != "axes.seed" and not names_axis(c, exclude)
            and runs[c].dropna().astype(str).nunique() > 1]


def names_axis(column_name: str, names: tuple[str, ...]) -> bool:
    """Axis column `axes.optim.lr` is named by "optim.lr" and by "optim"."""
    name = column_name.removeprefix("axes.")
    return any(name == n or name.startswith(n + ".") for n in names)


def level_keys(runs: pd.DataFrame, columns: list[str]) -> list[tuple]:
    return [tuple(None if is_missing(v) else str(v) for v in row)
            for row in runs[columns].astype(object).itertuples(index=False, name=None)]


def level_label(columns: list[str], key: tuple) -> str:
    return ", ".join(f"{c.removeprefix('axes.')}={'n/a' if v is None else v}" for c, v in zip(columns, key))


def strata(a: pd.DataFrame, b: pd.DataFrame, compared: tuple[str, ...]) -> tuple[list[tuple[str, pd.DataFrame, pd.DataFrame]], str]:
    """The (level, a, b) triples to compare: one, pooled, when every other varying axis is balanced
    between the arms (same share of runs at each level); else one per level both arms share."""
    both = pd.concat([a, b])
    columns = varying(both, compared)
    if not columns:
        return [("", a, b)], ""
    names = ", ".join(c.removeprefix("axes.") for c in columns)
    keys_a = pd.Series(level_keys(a, columns), index=a.index, dtype=object)
    keys_b = pd.Series(level_keys(b, columns), index=b.index, dtype=object)
    share_a, share_b = keys_a.value_counts(normalize=True), keys_b.value_counts(normalize=True)
    if set(share_a.index) == set(share_b.index) and all(math.isclose(share_a[k], share_b[k]) for k in share_a.index):
        return [("", a, b)], f" Pooled over {names} (balanced: both arms have the same share of runs at each level)."
    shared = sorted((k for k in share_a.index if k in share_b.index), key=lambda k: tuple("" if v is None else v for v in k))
    triples = [(level_label(columns, key), a[keys_a.map(lambda k, key=key: k == key)],
                b[keys_b.map(lambda k, key=key: k == key)]) for key in shared]
    if not triples:
        return [], (f" The arms share no level of {names} (unbalanced: "
                    f"{'; '.join(level_label(columns, k) for k in share_a.index)} vs "
                    f"{'; '.join(level_label(columns, k) for k in share_b.index)}), so they cannot be compared.")
    return triples, (f" Stratified by {names}: the arms cover its levels unequally, so the effect is taken within "
                     f"each shared level ({'; '.join(t[0] for t in triples)}) and combined with inverse-variance weights.")


def learning_strata(triples, runs: pd.DataFrame, names: tuple[str, str]):
    """The strata where at least one arm learned, and a sentence naming those left out."""
    kept, dropped = [], []
    for level, a, b in triples:
        checks = [learned(a, runs), learned(b, runs)]
        if any(ok is None for ok, _ in checks) or any(ok for ok, _ in checks):
            kept.append((level, a, b))
        else:
            dropped.append(f"{level or 'the runs'} ({names[0]}: {checks[0][1]}; {names[1]}: {checks[1][1]})")
    text = (f" No arm learned (mean outside the metric's chance band, normbench/records/metrics.py) in: "
            f"{'; '.join(dropped)}; {'those strata are' if kept else 'so the part'} left out." if dropped else "")
    return kept, text


def stratified_difference(triples, values: Callable[[pd.DataFrame], pd.Series]) -> Estimate:
    """a − b with n = seeds (intervals.seed_difference: paired where the arms share seeds, a pooled axis
    averaged within each seed), inverse-variance combined across strata."""
    return inverse_variance([_seed_difference(a, b, values)[0] for _, a, b in triples])


def _seed_difference(a: pd.DataFrame, b: pd.DataFrame, values: Callable[[pd.DataFrame], pd.Series]) -> tuple[Estimate, int]:
    if "seed" not in a or "seed" not in b:  # no seeds recorded: each run its own observation, unpaired
        return combine([(1, mean_estimate(values(a))), (-1, mean_estimate(values(b)))]), 0
    return seed_difference(values(a), a["seed"], values(b), b["seed"])


def pairing_text(triples, values: Callable[[pd.DataFrame], pd.Series], what: str = "") -> str:
    """The sentence saying which t the interval is (_seed_difference per stratum): paired on the per-seed
    differences (n pairs) or Welch on per-seed means; ``what`` names the measure it is about."""
    paired = [_seed_difference(a, b, values)[1] for _, a, b in triples]
    pooled = any(len(a) > a["seed"].nunique() or len(b) > b["seed"].nunique()
                 for _, a, b in triples if "seed" in a and "seed" in b)
    within = " (a seed's runs across the pooled levels averaged first: n is seeds)" if pooled else ""
    pairs = "/".join(map(str, paired))
    if paired and all(paired):
        body = f"paired by seed on {pairs} shared seeds: a paired t on the per-seed differences (n = {pairs} pairs){within}"
    elif any(paired):
        body = (f"paired by seed where a stratum's arms share seeds (n = {pairs} pairs; 0: Welch t on per-seed "
                f"means){within}")
    else:
        body = (f"unpaired (the arms share fewer than 2 seeds, or every shared seed gives the same difference): "
                f"Welch t on per-seed means{within}")
    return f" {what}: {body}." if what else f" {body[0].upper()}{body[1:]}."


def per_stratum_text(triples, values: Callable[[pd.DataFrame], pd.Series], alpha: float, sign: int = 1) -> str:
    """Each stratum's own difference, so a combined verdict never rests silently on one of them."""
    if len(triples) < 2:
        return ""
    shown = []
    for level, a, b in triples:
        found = _seed_difference(a, b, values)[0]
        estimate = Estimate(sign * found.value, found.var, found.df)
        interval = estimate.interval(decision_level(alpha))
        shown.append(f"{level}: {number_text(estimate.value)}"
                     + (f" [{number_text(interval[0])}, {number_text(interval[1])}]" if interval else " (interval undefined)"))
    return f" Per stratum: {'; '.join(shown)}."


def t_p(estimate: Estimate, null: float = 0.0) -> float:
    """The one-sided p of the estimate's t test on its side (its own df, not a normal tail: at 2-4 seeds the
    two differ by a factor of several); NaN without a spread or a df."""
    if not (math.isfinite(estimate.value) and estimate.var > 0 and estimate.df >= 1):
        return math.nan
    return float(stats.t.sf(abs(estimate.value - null) / math.sqrt(estimate.var), estimate.df))


def as_effect(label: str, estimate: Estimate, alpha: float, null: float = 0.0, exp: bool = False) -> Effect:
    interval = estimate.interval(decision_level(alpha))
    if exp:  # a ratio: the estimate is on the log scale, its null there 0
        return Effect(label, math.exp(estimate.value) if math.isfinite(estimate.value) else math.nan,
                      (math.exp(interval[0]), math.exp(interval[1])) if interval else None, 1.0, decision_level(alpha),
                      t_p(estimate), estimate.df)
    return Effect(label, estimate.value, interval, null, decision_level(alpha), t_p(estimate, null), estimate.df)


def fisher_p(hits_a: int, n_a: int, hits_b: int, n_b: int) -> float:
    """Fisher's exact one-sided p for two rates, on the side the observed difference lies (3/3 vs 0/3: 0.05)."""
    if hits_a * n_b == hits_b * n_a:
        return 1.0
    side = "greater" if hits_a * n_b > hits_b * n_a else "less"
    return float(stats.fisher_exact([[hits_a, n_a - hits_a], [hits_b, n_b - hits_b]], alternative=side).pvalue)


def side_of(effect: Effect | None, claimed: int) -> str:
    """supported / contradicted / inconclusive from an effect's interval and the claimed sign."""
    if effect is None or effect.interval is None:
        return INCONCLUSIVE
    low, high = (v - effect.null for v in effect.interval)
    if claimed * low > 0 and claimed * high > 0:
        return SUPPORTED
    if claimed * low < 0 and claimed * high < 0:
        return CONTRADICTED
    return INCONCLUSIVE


def lean_of(value: float, claimed: int) -> str | None:
    if not math.isfinite(value) or value == 0:
        return None
    return TOWARD_SUPPORTED if claimed * value > 0 else TOWARD_CONTRADICTED


FAILED = Measure("did not train (diverged, or finished at or below one of the task's trivial solutions, chance "
                 "included: rules.failed_to_learn)", lambda runs: rules.failed_to_learn(runs).astype(float),
                 finished_only=False)


def divergence_test(triples, a_name: str, b_name: str, alpha: float,
                    outcome: Measure | None = None) -> tuple[Effect, int, Estimate]:
    """Rate of an outcome a − b (divergence, or ``outcome``'s 0/1 per run, e.g. FAILED): Newcombe's
    interval for one stratum, Agresti–Caffo combined when stratified."""
    def hits(frame):
        return int((frame["status"] == "diverged").sum()) if outcome is None else int(outcome.values(frame).sum())
    counts = [(hits(a), len(a), hits(b), len(b)) for _, a, b in triples]
    label = (f"divergence rate: {a_name} − {b_name} (+ = {a_name} diverges more)" if outcome is None else
             f"failure rate, {outcome.name.split(' (')[0]}: {a_name} − {b_name} (+ = {a_name} fails more often; "
             f"{a_name} {sum(c[0] for c in counts)}/{sum(c[1] for c in counts)}, "
             f"{b_name} {sum(c[2] for c in counts)}/{sum(c[3] for c in counts)})")
    total = sum(k1 + k2 for k1, _, k2, _ in counts)
    approx = inverse_variance([agresti_caffo(*c) for c in counts])
    if len(counts) == 1:
        difference, interval = proportion_difference(*counts[0], level=decision_level(alpha))
        return Effect(label, difference, interval, 0.0, decision_level(alpha), fisher_p(*counts[0])), total, approx
    return as_effect(label, approx, alpha), total, approx


def short_number(x) -> str:
    """Three significant digits: what a reader compares in an effect and its interval."""
    return f"{float(x):.3g}" if isinstance(x, (int, float, np.floating)) and math.isfinite(x) else "n/a"


def effect_text(effect: Effect | None) -> str:
    if effect is None:
        return "—"
    if effect.interval is None:
        where = "interval undefined"
    elif effect.interval[0] == effect.interval[1]:
        where = "no spread: every seed gave the same value"
    else:
        where = f"{pct(effect.level)} interval [{short_number(effect.interval[0])}, {short_number(effect.interval[1])}]"
    return f"{effect.label}: {short_number(effect.estimate)} ({where})"


@dataclass
class Context:
    runs: pd.DataFrame
    arms: dict[str, pd.DataFrame]
    compare: tuple[str, ...]
    alpha: float


def undecided(estimate: Estimate, seeds: int, distance: float, claimed_value: float, alpha: float):
    """(lean, seeds_needed, mde) of a part: which way the estimate points and what would decide it."""
    if not estimate.var > 0:  # no spread (or none known): no design quantity to report
        return lean_of(claimed_value, 1), None, None
    mde = minimum_detectable_effect(estimate, alpha)
    needed = seeds_to_decide(estimate, seeds, distance, alpha) if seeds >= 1 else None
    return lean_of(claimed_value, 1), needed, (mde if math.isfinite(mde) else None)



def decided_by_first(found: list[str | None], what: str) -> tuple[str, str]:
    """A part judged on several measures, the first deciding: supported when it is and no other is
    contradicted; contradicted when one is and none is supported; inconclusive when they disagree. A
    first measure that has no value (None: an arm has no finished run, e.g. all diverged) hands the
    decision to the others: every run of an arm diverging is itself the effect, never missing data."""
    if CONTRADICTED in found and SUPPORTED in found:
        return INCONCLUSIVE, f" The {what} measures disagree."
    if CONTRADICTED in found:
        return CONTRADICTED, ""
    deciding = found[0] if found[0] is not None else next((f for f in found[1:] if f is not None), None)
    return (SUPPORTED if deciding == SUPPORTED else INCONCLUSIVE), ""
