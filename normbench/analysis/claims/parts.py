"""How each part of the vocabulary is tested (engine.py states the rules: one α, pooling, learning)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np
import pandas as pd
from scipy import stats

from normbench.metrics import TIMING_NOISY, path
from normbench.analysis import rules
from normbench.analysis.aggregate import PRIMARY, format_value
from normbench.analysis.claims.vocabulary import (CONTRADICTED, INCONCLUSIVE,
                                                NOT_APPLICABLE, NOT_TESTABLE, SCORE, SUPPORTED, TOWARD_CONTRADICTED,
                                                TOWARD_SUPPORTED, Effect, Measure, Part, PartSpec, _missing, axis,
                                                column, metric, recorded, values_text)
from normbench.analysis.intervals import (Estimate, agresti_caffo, combine, decision_level, equivalence,
                                        inverse_variance, mean_estimate, minimum_detectable_effect,
                                        non_inferiority, proportion_difference, seeds_to_decide, slope_estimate)


# --- shared pieces ------------------------------------------------------------------------------

def pct(level: float) -> str:
    """90%, 99.8%: a level as people write it."""
    return f"{level * 100:.4g}%"


def _fmt(x) -> str:
    return format_value(float(x)) if isinstance(x, (int, float, np.floating)) and math.isfinite(x) else "n/a"


def _task(runs: pd.DataFrame) -> tuple[int, str, float | None]:
    """(+1 higher is better / −1 lower, the metric's name, its chance level or None)."""
    higher = bool(runs["task.higher_is_better"].iloc[0]) if "task.higher_is_better" in runs and len(runs) else True
    name = str(runs["task.metric"].dropna().iloc[0]) if "task.metric" in runs and runs["task.metric"].notna().any() else "score"
    chance = metric(runs, "task.chance").dropna()
    return (1 if higher else -1), name, (float(chance.iloc[0]) if len(chance) else None)


def _sign(measure: Measure, runs: pd.DataFrame) -> int:
    return _task(runs)[0] if measure.higher is None else (1 if measure.higher else -1)


def _measure_name(measure: Measure, runs: pd.DataFrame) -> str:
    return f"{_task(runs)[1]} ({measure.name})" if measure.task_metric else measure.name


def _better_word(sign: int) -> str:
    return "higher is better" if sign > 0 else "lower is better"


def _values(measure: Measure, frame: pd.DataFrame) -> pd.Series:
    values = measure.values(frame).astype(float)
    if measure.finished_only:
        values = values.where(frame["status"] == "ok")
    if measure.log:
        values = np.log(values.where(values > 0))
    return values


def _seeds(*frames: pd.DataFrame) -> int:
    return min((int(f["seed"].nunique()) for f in frames), default=0)


def _score_margin(runs: pd.DataFrame) -> tuple[float, str]:
    """The equivalence margin δ of a task score: the metric's smallest effect of interest (rules.margin;
    on the log scale for a ratio metric), from the task alone, never from the results."""
    return rules.margin(_task(runs)[1])


def learned(frame: pd.DataFrame, runs: pd.DataFrame) -> tuple[bool | None, str]:
    """Whether an arm's finished runs' mean lies outside the metric's chance band (rules.chance_limit;
    None when the task records no chance level), and the numbers that say so."""
    sign, name, chance = _task(runs)
    threshold = rules.chance_limit(name, chance)
    if threshold is None:
        return None, "no chance level recorded"
    scores = metric(frame, PRIMARY).where(frame["status"] == "ok").dropna()
    if scores.empty:
        return False, "no run finished"
    mean = float(scores.mean())
    return sign * (mean - threshold) > 0, f"mean {_fmt(mean)} vs chance {_fmt(chance)}, needs {'>' if sign > 0 else '<'} {_fmt(threshold)}"


def varying(runs: pd.DataFrame, exclude: tuple[str, ...] = ()) -> list[str]:
    """Axis columns with more than one distinct non-missing value (missing = does not apply)."""
    return [c for c in runs.columns if c.startswith("axes.") and c != "axes.seed" and not _named(c, exclude)
            and runs[c].dropna().astype(str).nunique() > 1]


def _named(column_name: str, names: tuple[str, ...]) -> bool:
    """Axis column `axes.optim.lr` is named by "optim.lr" and by "optim"."""
    name = column_name.removeprefix("axes.")
    return any(name == n or name.startswith(n + ".") for n in names)


def _keys(runs: pd.DataFrame, columns: list[str]) -> list[tuple]:
    return [tuple(None if _missing(v) else str(v) for v in row)
            for row in runs[columns].astype(object).itertuples(index=False, name=None)]


def _level_label(columns: list[str], key: tuple) -> str:
    return ", ".join(f"{c.removeprefix('axes.')}={'n/a' if v is None else v}" for c, v in zip(columns, key))


def strata(a: pd.DataFrame, b: pd.DataFrame, compared: tuple[str, ...]) -> tuple[list[tuple[str, pd.DataFrame, pd.DataFrame]], str]:
    """The (level, a, b) triples to compare: one, pooled, when every other varying axis is balanced
    between the arms (same share of runs at each level); else one per level both arms share."""
    both = pd.concat([a, b])
    columns = varying(both, compared)
    if not columns:
        return [("", a, b)], ""
    names = ", ".join(c.removeprefix("axes.") for c in columns)
    keys_a = pd.Series(_keys(a, columns), index=a.index, dtype=object)
    keys_b = pd.Series(_keys(b, columns), index=b.index, dtype=object)
    share_a, share_b = keys_a.value_counts(normalize=True), keys_b.value_counts(normalize=True)
    if set(share_a.index) == set(share_b.index) and all(math.isclose(share_a[k], share_b[k]) for k in share_a.index):
        return [("", a, b)], f" Pooled over {names} (balanced: both arms have the same share of runs at each level)."
    shared = sorted((k for k in share_a.index if k in share_b.index), key=lambda k: tuple("" if v is None else v for v in k))
    triples = [(_level_label(columns, key), a[keys_a.map(lambda k, key=key: k == key)],
                b[keys_b.map(lambda k, key=key: k == key)]) for key in shared]
    if not triples:
        return [], (f" The arms share no level of {names} (unbalanced: "
                    f"{'; '.join(_level_label(columns, k) for k in share_a.index)} vs "
                    f"{'; '.join(_level_label(columns, k) for k in share_b.index)}), so they cannot be compared.")
    return triples, (f" Stratified by {names}: the arms cover its levels unequally, so the effect is taken within "
                     f"each shared level ({'; '.join(t[0] for t in triples)}) and combined with inverse-variance weights.")


def _learning_strata(triples, runs: pd.DataFrame, names: tuple[str, str]):
    """The strata where at least one arm learned, and a sentence naming those left out."""
    kept, dropped = [], []
    for level, a, b in triples:
        checks = [learned(a, runs), learned(b, runs)]
        if any(ok is None for ok, _ in checks) or any(ok for ok, _ in checks):
            kept.append((level, a, b))
        else:
            dropped.append(f"{level or 'the runs'} ({names[0]}: {checks[0][1]}; {names[1]}: {checks[1][1]})")
    text = (f" No arm learned (mean outside the metric's chance band, normbench/metrics.py) in: "
            f"{'; '.join(dropped)}; {'those strata are' if kept else 'so the part'} left out." if dropped else "")
    return kept, text


def _difference(triples, values: Callable[[pd.DataFrame], pd.Series]) -> Estimate:
    return inverse_variance([combine([(1, mean_estimate(values(a))), (-1, mean_estimate(values(b)))])
                             for _, a, b in triples])


def _per_stratum(triples, values: Callable[[pd.DataFrame], pd.Series], alpha: float, sign: int = 1) -> str:
    """Each stratum's own difference, so a combined verdict never rests silently on one of them."""
    if len(triples) < 2:
        return ""
    shown = []
    for level, a, b in triples:
        estimate = combine([(sign, mean_estimate(values(a))), (-sign, mean_estimate(values(b)))])
        interval = estimate.interval(decision_level(alpha))
        shown.append(f"{level}: {_fmt(estimate.value)}"
                     + (f" [{_fmt(interval[0])}, {_fmt(interval[1])}]" if interval else " (interval undefined)"))
    return f" Per stratum: {'; '.join(shown)}."


def _as_effect(label: str, estimate: Estimate, alpha: float, null: float = 0.0, exp: bool = False) -> Effect:
    interval = estimate.interval(decision_level(alpha))
    if exp:
        return Effect(label, math.exp(estimate.value) if math.isfinite(estimate.value) else math.nan,
                      (math.exp(interval[0]), math.exp(interval[1])) if interval else None, 1.0, decision_level(alpha))
    return Effect(label, estimate.value, interval, null, decision_level(alpha))


def _side(effect: Effect | None, claimed: int) -> str:
    """supported / contradicted / inconclusive from an effect's interval and the claimed sign."""
    if effect is None or effect.interval is None:
        return INCONCLUSIVE
    low, high = (v - effect.null for v in effect.interval)
    if claimed * low > 0 and claimed * high > 0:
        return SUPPORTED
    if claimed * low < 0 and claimed * high < 0:
        return CONTRADICTED
    return INCONCLUSIVE


def _lean_of(value: float, claimed: int) -> str | None:
    if not math.isfinite(value) or value == 0:
        return None
    return TOWARD_SUPPORTED if claimed * value > 0 else TOWARD_CONTRADICTED


FAILED = Measure("did not train (diverged, or finished without leaving the chance band: rules.failed)",
                 lambda runs: rules.failed(runs).astype(float), finished_only=False)


def _divergence(triples, a_name: str, b_name: str, alpha: float,
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
        return Effect(label, difference, interval, 0.0, decision_level(alpha)), total, approx
    return _as_effect(label, approx, alpha), total, approx


def _short(x) -> str:
    """Three significant digits: what a reader compares in an effect and its interval."""
    return f"{float(x):.3g}" if isinstance(x, (int, float, np.floating)) and math.isfinite(x) else "n/a"


def _effect_text(effect: Effect | None) -> str:
    if effect is None:
        return "—"
    if effect.interval is None:
        where = "interval undefined"
    elif effect.interval[0] == effect.interval[1]:
        where = "no spread: every seed gave the same value"
    else:
        where = f"{pct(effect.level)} interval [{_short(effect.interval[0])}, {_short(effect.interval[1])}]"
    return f"{effect.label}: {_short(effect.estimate)} ({where})"


# --- the parts ----------------------------------------------------------------------------------

@dataclass
class _Context:
    runs: pd.DataFrame
    arms: dict[str, pd.DataFrame]
    compare: tuple[str, ...]
    alpha: float


def _undecided(estimate: Estimate, seeds: int, distance: float, claimed_value: float, alpha: float):
    """(lean, seeds_needed, mde) of a part: which way the estimate points and what would decide it."""
    if not estimate.var > 0:  # no spread (or none known): no design quantity to report
        return _lean_of(claimed_value, 1), None, None
    mde = minimum_detectable_effect(estimate, alpha)
    needed = seeds_to_decide(estimate, seeds, distance, alpha) if seeds >= 1 else None
    return _lean_of(claimed_value, 1), needed, (mde if math.isfinite(mde) else None)


def _score_part(spec: PartSpec, ctx: _Context) -> Part:
    """better / not_worse / equivalent on a per-run measure, divergence rate tested apart."""
    a, b = ctx.arms[spec.a], ctx.arms[spec.b]
    runs, alpha = ctx.runs, ctx.alpha
    sign, name = _sign(spec.measure, runs), _measure_name(spec.measure, runs)
    triples, design = strata(a, b, ctx.compare)
    dropped = ""
    if triples and spec.learned and spec.measure.task_metric:
        triples, dropped = _learning_strata(triples, runs, (spec.a, spec.b))
    level = decision_level(alpha)
    kinds = {"better": f"Welch t, one-sided at α = {alpha:g} each way ({pct(level)} interval) on",
             "not_worse": f"non-inferiority (TOST's lower test at α = {alpha:g}: the {pct(level)} interval's worse end above −δ) on",
             "equivalent": f"equivalence by TOST at α = {alpha:g} (the {pct(level)} interval inside ±δ) on"}
    what = "finished runs" if spec.measure.finished_only else "all runs"
    test = (f"{spec.a} vs {spec.b}: {kinds[spec.kind]} {name} of {what}"
            f"{'; divergence rate apart (Newcombe; a diverged run is worse than any finished one)' if spec.measure.finished_only else ''}."
            f"{design}{dropped if triples else ''}")
    arms = (spec.a, spec.b)
    if not triples:
        return Part(spec.assertion, NOT_APPLICABLE, test, (), arms, note=(dropped or design).strip())
    # a ratio metric (MSE) is compared on the log scale: its effect is the ratio of geometric means
    ratio = spec.measure.task_metric and not spec.measure.log and rules.ratio_scale(_task(runs)[1])
    values = ((lambda frame: np.log(_values(spec.measure, frame).where(_values(spec.measure, frame) > 0))) if ratio
              else (lambda frame: _values(spec.measure, frame)))
    raw = _difference(triples, values)
    label = (f"{name}: {spec.a} / {spec.b} (ratio of geometric means; {_better_word(sign)})" if ratio
             else f"{name}: {spec.a} − {spec.b} ({_better_word(sign)})")
    margin, margin_text = (math.nan, "")
    if spec.kind != "better":
        margin, margin_text = ((spec.margin, spec.margin_text) if spec.margin is not None else _score_margin(runs))
        label = f"{label[:-1]}; margin " + (f"×{_fmt(math.exp(margin))})" if ratio else f"±{_fmt(margin)})")
    score = _as_effect(label, raw, alpha, exp=ratio)
    rate, diverged, _ = _divergence(triples, spec.a, spec.b, alpha)
    effects = (score, rate) if diverged and spec.measure.finished_only else (score,)
    test += _per_stratum(triples, values, alpha)
    oriented = Estimate(sign * raw.value, raw.var, raw.df)
    seeds = _seeds(*[f[f["status"] == "ok"] for _, f1, f2 in triples for f in (f1, f2)]) if spec.measure.finished_only \
        else _seeds(*[f for _, f1, f2 in triples for f in (f1, f2)])
    note, lean, needed, mde = "", None, None, None
    if spec.kind == "better":
        by_score = _side(score, sign)
        by_rate = _side(rate, -1) if diverged and spec.measure.finished_only else INCONCLUSIVE
        found = {by_score, by_rate}
        status = (INCONCLUSIVE if {SUPPORTED, CONTRADICTED} <= found else CONTRADICTED if CONTRADICTED in found
                  else SUPPORTED if SUPPORTED in found else INCONCLUSIVE)
        if {SUPPORTED, CONTRADICTED} <= found:
            note = " Divergence rate and finished-run scores point opposite ways."
        if status == INCONCLUSIVE:
            lean, needed, mde = _undecided(raw, seeds, abs(raw.value), oriented.value, alpha)
            if not math.isfinite(raw.value) and diverged:
                lean = _lean_of(-rate.estimate, 1)
    else:
        if not math.isfinite(margin):
            by_score = INCONCLUSIVE
            note = f" {margin_text}."
        elif spec.kind == "not_worse":
            by_score = {"not worse": SUPPORTED, "worse": CONTRADICTED}.get(non_inferiority(oriented, margin, alpha), INCONCLUSIVE)
        else:
            by_score = {"equivalent": SUPPORTED, "different": CONTRADICTED}.get(equivalence(oriented, margin, alpha), INCONCLUSIVE)
        one_sided = spec.kind == "not_worse"
        relevant = int((a["status"] == "diverged").sum()) if one_sided else diverged
        by_rate = INCONCLUSIVE
        if relevant and spec.measure.finished_only:
            differs = _side(rate, +1) == SUPPORTED if one_sided else _side(rate, +1) != INCONCLUSIVE
            by_rate = CONTRADICTED if differs else INCONCLUSIVE
            note += (" Divergence rates differ." if differs else
                     f" {relevant} run(s) diverged, so {'non-inferiority' if one_sided else 'equivalence'} cannot be shown.")
        if CONTRADICTED in (by_score, by_rate):
            status = CONTRADICTED
        elif by_score == SUPPORTED and not (relevant and spec.measure.finished_only):
            status = SUPPORTED
        else:
            status = INCONCLUSIVE
        if status == INCONCLUSIVE and math.isfinite(margin) and math.isfinite(oriented.value):
            # the distance from the estimate to the boundary it must clear, on the side it leans to
            inside = oriented.value + margin if one_sided else margin - abs(oriented.value)
            lean, needed, mde = _undecided(raw, seeds, abs(inside), inside, alpha)
    return Part(spec.assertion, status, test, effects, arms, margin_text, lean, needed, mde, note)


def _stability_part(spec: PartSpec, ctx: _Context) -> Part:
    """"a is more stable than b": gradient kurtosis decides; the largest gradient norm and the
    divergence rate may contradict it, and contradict each other."""
    a, b, alpha = ctx.arms[spec.a], ctx.arms[spec.b], ctx.alpha
    triples, design = strata(a, b, ctx.compare)
    level = decision_level(alpha)
    test = (f"{spec.a} vs {spec.b}: Welch t at α = {alpha:g} each way ({pct(level)} interval) on gradient kurtosis "
            f"of finished runs, on log10 grad_norm_max, and Newcombe interval on divergence rate; "
            f"supported when kurtosis is lower and neither other measure is shown worse, contradicted when a "
            f"measure is shown worse and none better (that measure decides), inconclusive when they disagree.{design}")
    arms = (spec.a, spec.b)
    if not triples:
        return Part(spec.assertion, NOT_APPLICABLE, test, (), arms, note=design.strip())
    ok = lambda f, s: s.where(f["status"] == "ok")  # noqa: E731
    kurt_of = lambda f: ok(f, metric(f, path("grad_kurtosis")))  # noqa: E731
    max_of = lambda f: ok(f, np.log10(metric(f, path("grad_norm_max")).where(lambda v: v > 0)))  # noqa: E731
    kurtosis = _difference(triples, lambda f: -kurt_of(f))
    log_max = _difference(triples, lambda f: -max_of(f))

    def means(values) -> str:  # each arm's own mean: the numbers the difference is made of
        return "; ".join(f"{name} mean {_short(values(frame).mean())}" for name, frame in ((spec.a, a), (spec.b, b)))
    effects = (_as_effect(f"grad kurtosis: {spec.b} − {spec.a} (+ = {spec.a} more stable; {means(kurt_of)})",
                          kurtosis, alpha),
               _as_effect(f"log10 grad_norm_max: {spec.b} − {spec.a} (+ = {spec.a} calmer; {means(max_of)})",
                          log_max, alpha))
    rate, diverged, _ = _divergence(triples, spec.a, spec.b, alpha)
    found = [_side(effects[0], +1), _side(effects[1], +1), _side(rate, -1) if diverged else INCONCLUSIVE]
    status, note = _decided_by_first(found, "stability")
    everything = effects + ((rate,) if diverged else ())
    # The measure that decided comes first (it is the effect shown) and is named: kurtosis when it
    # decides or nothing does, else the measure whose interval gave the verdict.
    decider = 0 if status == INCONCLUSIVE or found[0] == status else found.index(status)
    everything = (everything[decider],) + tuple(e for i, e in enumerate(everything) if i != decider)
    names = ("gradient kurtosis", "log10 grad_norm_max", "the divergence rate")
    readings = "; ".join(f"{n}: {f}" for n, f, shown in zip(names, found, (True, True, bool(diverged))) if shown)
    note = (f" Undecided ({readings})." if status == INCONCLUSIVE else f" Decided by {names[decider]} ({readings}).") + note
    lean, needed, mde = None, None, None
    if status == INCONCLUSIVE:
        lean, needed, mde = _undecided(kurtosis, _seeds(a, b), abs(kurtosis.value), kurtosis.value, alpha)
    return Part(spec.assertion, status, test, everything, arms, "", lean, needed, mde, note)


def _decided_by_first(found: list[str], what: str) -> tuple[str, str]:
    """A part judged on several measures, the first deciding: supported when it is and no other is
    contradicted; contradicted when one is and none is supported; inconclusive when they disagree."""
    if CONTRADICTED in found and SUPPORTED in found:
        return INCONCLUSIVE, f" The {what} measures disagree."
    if CONTRADICTED in found:
        return CONTRADICTED, ""
    return (SUPPORTED if found[0] == SUPPORTED else INCONCLUSIVE), ""


def _timing(runs: pd.DataFrame) -> tuple[pd.Series, str]:
    """Which runs' step times can be compared: those whose p90/p10 shows no interference."""
    p10, p90 = metric(runs, path("step_ms_p10")), metric(runs, path("step_ms_p90"))
    if p10.isna().all() or p90.isna().all():
        return pd.Series(False, index=runs.index), (
            "the records carry no step-time spread (throughput.step_ms_p10/p90), so interference cannot be ruled out")
    quiet = (p90 / p10.where(p10 > 0)) <= TIMING_NOISY
    set_aside = int((~quiet).sum())
    return quiet, (f"runs were timed separately, not interleaved; {set_aside} run(s) whose step-time p90/p10 "
                   f"exceeds {TIMING_NOISY:g} (or is unknown) were set aside as disturbed" if set_aside else
                   f"runs were timed separately, not interleaved; every run's step-time p90/p10 is ≤ {TIMING_NOISY:g}")


def _paired_rounds(a: pd.DataFrame, b: pd.DataFrame, keys: tuple[str, ...]) -> tuple[np.ndarray, int, str]:
    """Per-round log step-time ratios a / b from a paired timing (python -m normbench.bench arms) that
    timed both arms in the same rounds: each group of a is paired with the group of b that shares its
    other settings (every axis but the arms' own keys), and the pairs' log ratios are averaged per round.
    (logs, pairs, source); logs empty when no such timing exists."""
    from normbench.analysis.speed import paired_timing

    timed = paired_timing(pd.concat([a, b]))
    if timed.empty:
        return np.array([]), 0, ""
    others = [c for c in a.columns if c.startswith("axes.") and c.removeprefix("axes.") not in keys]

    def setting(frame: pd.DataFrame) -> dict:
        first = frame.groupby("group", sort=False).first()
        return {g: tuple(format_value(v) for v in row) for g, row in first[others].iterrows()}

    sa, sb = setting(a), setting(b)
    best: tuple[np.ndarray, int, str] = (np.array([]), 0, "")
    for source, rows in timed.groupby("source", sort=False):
        rounds = {r.group: np.asarray(r.rounds_ms, float) for r in rows.itertuples()}
        pairs = [(ga, gb) for ga in sa if ga in rounds for gb in sb if gb in rounds and sb[gb] == sa[ga]]
        if not pairs or len({len(rounds[g]) for pair in pairs for g in pair}) != 1:
            continue
        logs = np.mean([np.log(rounds[ga] / rounds[gb]) for ga, gb in pairs], axis=0)
        if len(pairs) > best[1]:
            best = (logs, len(pairs), str(source))
    return best


def _faster_part(spec: PartSpec, ctx: _Context) -> Part:
    a, b, alpha = ctx.arms[spec.a], ctx.arms[spec.b], ctx.alpha
    logs, pairs, source = _paired_rounds(a, b, ctx.compare)
    if len(logs) >= 2:  # a paired timing: the arms interleaved in one process decide, not the runs' own clocks
        from normbench.analysis.speed import sign_test

        level = decision_level(alpha)
        signs = sign_test(logs, level)
        interval = (math.exp(signs.low), math.exp(signs.high)) if math.isfinite(signs.low) else None
        effect = Effect(f"step-time ratio {spec.a} / {spec.b} (median of per-round ratios, paired timing; < 1 = "
                        f"{spec.a} faster; {signs.below} of {len(logs)} rounds below 1)", math.exp(signs.median),
                        interval, 1.0, level)
        test = (f"{spec.a} vs {spec.b}: paired timing (bench arms: the arms' training steps interleaved in one process, "
                f"{len(logs)} rounds, {pairs} pair(s) of groups matched on their other settings), sign test at "
                f"α = {alpha:g} each way on the per-round log ratios ({pct(level)} order-statistic interval of the "
                f"median): a load spike is one round on one side, whatever its size.")
        status = (SUPPORTED if signs.p_below <= alpha else CONTRADICTED if signs.p_above <= alpha else INCONCLUSIVE)
        needed = signs.rounds_to_decide(alpha) if status == INCONCLUSIVE else None
        lean = _lean_of(-signs.median, 1) if status == INCONCLUSIVE else None
        more = (f" `python -m normbench.bench arms SWEEP_DIR --rounds {needed}` times that many." if needed else "")
        return Part(spec.assertion, status, test, (effect,), (spec.a, spec.b), "", lean, needed, None,
                    f" Rounds, not seeds, are the replicates here ({source}).{more}", needed_unit="timing rounds")
    both = pd.concat([a, b])
    quiet, timing_note = _timing(both)
    log_ms = np.log(metric(both, path("step_ms_median")).where(lambda v: v > 0)).where(quiet)
    devices = both["environment.device_name"].dropna().unique() if "environment.device_name" in both else []
    speed = combine([(1, mean_estimate(log_ms[a.index])), (-1, mean_estimate(log_ms[b.index]))])
    effect = _as_effect(f"step-time ratio {spec.a} / {spec.b} (geometric mean of median step ms, undisturbed runs; "
                        f"< 1 = {spec.a} faster)", speed, alpha, exp=True)
    test = (f"{spec.a} vs {spec.b}: Welch t at α = {alpha:g} each way ({pct(decision_level(alpha))} interval) on log "
            f"median step time; {timing_note}"
            f"{'; timed on ' + str(len(devices)) + ' different devices' if len(devices) > 1 else ''}.")
    kept = {spec.a: int(log_ms[a.index].notna().sum()), spec.b: int(log_ms[b.index].notna().sum())}
    arms = (spec.a, spec.b)
    if len(devices) > 1:
        return Part(spec.assertion, INCONCLUSIVE, test, (effect,), arms, note=" Cannot be judged: the arms mix devices.")
    if min(kept.values()) < 2:
        total = {spec.a: len(a), spec.b: len(b)}
        return Part(spec.assertion, INCONCLUSIVE, test, (effect,), arms, note=(
            f" Cannot be judged: fewer than 2 undisturbed timings in an arm "
            f"({', '.join(f'{k}: {v} of {total[k]} runs' for k, v in kept.items())})."))
    status = _side(effect, -1)
    lean, needed, mde = (_undecided(speed, min(kept.values()), abs(speed.value), -speed.value, alpha)
                         if status == INCONCLUSIVE else (None, None, None))
    return Part(spec.assertion, status, test, (effect,), arms, "", lean, needed, mde)


def _rate_part(spec: PartSpec, ctx: _Context) -> Part:
    """a's rate of an outcome exceeds b's: divergence (the default measure), or the 0/1 outcome its
    measure gives per run (FAILED: diverged or did not train, rules.failed)."""
    a, b, alpha = ctx.arms[spec.a], ctx.arms[spec.b], ctx.alpha
    triples, design = strata(a, b, ctx.compare)
    outcome = None if spec.measure is SCORE else spec.measure
    what = "divergence rate" if outcome is None else f"rate of runs that {outcome.name}"
    test = (f"{spec.a} vs {spec.b}: {what} difference, Newcombe interval ({pct(decision_level(alpha))}, "
            f"one-sided at α = {alpha:g} each way).{design}")
    arms = (spec.a, spec.b)
    if not triples:
        return Part(spec.assertion, NOT_APPLICABLE, test, (), arms, note=design.strip())
    rate, _, approx = _divergence(triples, spec.a, spec.b, alpha, outcome)
    status = _side(rate, +1)
    lean, needed, mde = (_undecided(approx, _seeds(a, b), abs(approx.value), approx.value, alpha)
                         if status == INCONCLUSIVE else (None, None, None))
    return Part(spec.assertion, status, test, (rate,), arms, "", lean, needed, mde)


def _ratio_part(spec: PartSpec, ctx: _Context) -> Part:
    """a's per-seed value ÷ b's (geometric means), Welch on the logs; a zero-width interval falls
    back to the exact sign test at α (every seed agreeing on a discrete grid is no spread, not proof)."""
    a, b, alpha = ctx.arms[spec.a], ctx.arms[spec.b], ctx.alpha
    (va, fa), (vb, fb) = spec.per_seed(a, ctx.runs), spec.per_seed(b, ctx.runs)
    arms = (spec.a, spec.b)
    test = (f"{spec.a} vs {spec.b}: {fa.get('rule', spec.measure.name)}; Welch t at α = {alpha:g} each way "
            f"({pct(decision_level(alpha))} interval) on the log of the per-seed values, exponentiated to a ratio, "
            f"must exceed 1.")
    why = fa.get("not_applicable") or fb.get("not_applicable")
    if why:
        return Part(spec.assertion, NOT_APPLICABLE, test, (), arms, note=why)
    estimate = combine([(1, mean_estimate(np.log(va))), (-1, mean_estimate(np.log(vb)))])
    effect = _as_effect(f"{spec.measure.name} ratio: {spec.a} ÷ {spec.b} (geometric mean over seeds; > 1 = {spec.a} larger)",
                        estimate, alpha, exp=True)
    status, note = _side(effect, +1), ""
    seeds = min(len(va), len(vb))
    if estimate.var == 0 and status != INCONCLUSIVE:
        # One-sided exact sign test: n seeds of n agreeing.
        sign_p = stats.binomtest(seeds, seeds, 0.5, alternative="greater").pvalue
        if sign_p > alpha:
            needed = next(n for n in range(1, 64) if stats.binomtest(n, n, 0.5, alternative="greater").pvalue <= alpha)
            status, note = INCONCLUSIVE, (
                f" Every seed agrees, but with no spread the t interval says nothing; by an exact sign test "
                f"{seeds} agreeing seed(s) give p = {sign_p:.3g}, and {needed} would be needed for p ≤ {alpha:g}.")
            lean = _lean_of(estimate.value, 1)
            return Part(spec.assertion, status, test, (effect,), arms, "", lean, needed, None,
                        note + _caveats(spec, fa, fb, estimate))
    lean, needed, mde = (_undecided(estimate, seeds, abs(estimate.value), estimate.value, alpha)
                         if status == INCONCLUSIVE else (None, None, None))
    return Part(spec.assertion, status, test, (effect,), arms, "", lean, needed, mde,
                note + _caveats(spec, fa, fb, estimate))


def _caveats(spec: PartSpec, fa: dict, fb: dict, estimate: Estimate) -> str:
    found = [f"{name}: {facts['caveat']}" for name, facts in ((spec.a, fa), (spec.b, fb)) if facts.get("caveat")]
    if estimate.var == 0:
        found.append("every seed of each arm has the same value, so the interval has no width: the ratio is known "
                     "only to the grid's resolution")
    return (" " + "; ".join(found) + ".") if found else ""


MIN_SLOPE_LEVELS = 3  # a log-log slope from two depths is a line through two points


def _slope_part(spec: PartSpec, ctx: _Context) -> Part:
    frame, alpha = ctx.arms[spec.a], ctx.alpha
    x = pd.to_numeric(axis(frame, spec.x), errors="coerce")
    arms = (spec.a,)
    name = spec.measure.name
    level = decision_level(alpha)
    if x.dropna().nunique() < MIN_SLOPE_LEVELS:
        return Part(spec.assertion, NOT_TESTABLE, f"OLS slope of log({name}) on log({spec.x}).", (), arms,
                    note=(f"not testable here: a slope needs at least {MIN_SLOPE_LEVELS} values of {spec.x} (two "
                          f"always lie on a line, so straightness cannot be seen); {spec.a} has {values_text(x)} — "
                          f"testable with {MIN_SLOPE_LEVELS} or more {spec.x} values spread over a factor ≥ 2"))
    y = spec.measure.values(frame).astype(float)
    estimate = slope_estimate(np.log(x.where(x > 0)), np.log(y.where(y > 0)))
    seeds = int(frame["seed"].nunique())
    if spec.claimed:
        word = "shrinks" if spec.claimed < 0 else "grows"
        effect = _as_effect(f"slope of log({name}) on log({spec.x}), {spec.a} ({'−' if spec.claimed < 0 else '+'} = {word})",
                            estimate, alpha)
        status = _side(effect, spec.claimed)
        test = (f"OLS slope of log({name}) on log({spec.x}), t interval ({pct(level)}, one-sided at α = {alpha:g} each "
                f"way) on n − 2 df, must be {'< 0' if spec.claimed < 0 else '> 0'}.")
        lean, needed, mde = (_undecided(estimate, seeds, abs(estimate.value), spec.claimed * estimate.value, alpha)
                             if status == INCONCLUSIVE else (None, None, None))
        return Part(spec.assertion, status, test, (effect,), arms, "", lean, needed, mde)
    delta = spec.margin
    effect = _as_effect(f"slope of log({name}) on log({spec.x}), {spec.a} (flat = inside ±{delta:g})", estimate, alpha)
    status = {"equivalent": SUPPORTED, "different": CONTRADICTED}.get(equivalence(estimate, delta, alpha), INCONCLUSIVE)
    margin = spec.margin_text or f"δ = {delta:g} in log-log units, fixed before the data"
    test = f"OLS slope of log({name}) on log({spec.x}), TOST at α = {alpha:g}: the {pct(level)} interval inside ±δ, {margin}."
    lean = needed = mde = None
    if status == INCONCLUSIVE and math.isfinite(estimate.value):
        inside = delta - abs(estimate.value)
        lean, needed, mde = _undecided(estimate, seeds, abs(inside), inside, alpha)
    return Part(spec.assertion, status, test, (effect,), arms, margin, lean, needed, mde)


TARGET_SHARE = 0.5  # steps to target: the first evaluation this share of the way from chance to the setting's best


def curve_summaries(runs: pd.DataFrame) -> pd.DataFrame:
    """Per run (index of ``runs``), from its metrics.jsonl: train_loss_auc and val_auc (the means of
    the training loss and of the validation metric over the run, as the runner records them) and
    steps_to_target (the first evaluation at least TARGET_SHARE of the way from chance to the best
    evaluation of any run here; NaN when never reached or diverged). Empty when no curves can be read."""
    from pathlib import Path

    from normbench.report.records import read_curves

    dirs = runs["run_dir"].dropna().astype(str) if "run_dir" in runs else pd.Series(dtype=str)
    if dirs.empty or not any((Path(d) / "metrics.jsonl").is_file() for d in dirs):
        return pd.DataFrame(index=runs.index)
    curves = read_curves(dirs.unique())
    train, evals = curves[curves["kind"] == "train"], curves[curves["kind"] == "eval"]
    loss = train.groupby("run_dir")["loss"].mean()
    val = evals.groupby("run_dir")["val_metric"].mean()
    sign, _, chance = _task(runs)
    ok_dirs = set(runs.loc[runs["status"] == "ok", "run_dir"].astype(str))
    finished = evals[evals["run_dir"].isin(ok_dirs)]["val_metric"]
    reached = pd.Series(dtype=float)
    if chance is not None and finished.notna().any():
        best = float(finished.max() if sign > 0 else finished.min())
        target = chance + TARGET_SHARE * (best - chance)
        hits = evals[evals["run_dir"].isin(ok_dirs) & (sign * (evals["val_metric"] - target) >= 0)]
        reached = hits.groupby("run_dir")["step"].min()
    by_dir = runs["run_dir"].astype(str)
    return pd.DataFrame({"train_loss_auc": by_dir.map(loss), "val_auc": by_dir.map(val),
                         "steps_to_target": by_dir.map(reached)}, index=runs.index)


def _with_curves(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs with metrics.train_loss_auc / val_auc filled from their curves where the record
    lacks them, and curves.steps_to_target (curve_summaries) when curves exist."""
    summaries = curve_summaries(runs)
    if summaries.columns.empty:
        return runs
    runs = runs.copy()
    for name in ("train_loss_auc", "val_auc"):
        stored = metric(runs, path(name))
        runs[path(name)] = stored.where(stored.notna(), summaries[name])
    runs["curves.steps_to_target"] = summaries["steps_to_target"]
    return runs


TRAIN_LOSS_AUC, VAL_AUC = recorded("train_loss_auc"), recorded("val_auc")


def _convergence_part(spec: PartSpec, ctx: _Context) -> Part:
    """"a converges faster than b", as the papers' figures show it: on the validation curve (Ba et al.
    2016 Figs. 2, 5; Cooijmans et al. 2016 Figs. 2-4). The area under the validation curve (val_auc, the
    mean evaluation over the run) decides; the steps to a target on that curve and the divergence rate
    may contradict it (a diverged run counts as slower than every finished one). The training-loss area
    is shown beside it and never decides: a BatchNorm arm's training loss is under batch statistics,
    its evaluations under running ones, so the two curves are not the same model's."""
    runs = _with_curves(ctx.runs)
    a, b, alpha = runs.loc[ctx.arms[spec.a].index], runs.loc[ctx.arms[spec.b].index], ctx.alpha
    arms = (spec.a, spec.b)
    level = decision_level(alpha)
    test = (f"{spec.a} vs {spec.b}: Welch t at α = {alpha:g} each way ({pct(level)} interval) on val_auc, the area "
            f"under the validation curve, of finished runs (decides), on the steps to a target on the validation "
            f"curve (log, runs that reached it), and Newcombe interval on the divergence rate (a diverged run counts "
            f"as slowest); supported when val_auc is better and neither other measure is shown worse, "
            f"contradicted when a measure is shown worse and none better. train_loss_auc is shown, not deciding.")
    if metric(pd.concat([a, b]), path("val_auc")).isna().all():
        return Part(spec.assertion, NOT_APPLICABLE, test, (), arms,
                    note="The records carry no metrics.val_auc and no readable validation curve (metrics.jsonl).")
    triples, design = strata(a, b, ctx.compare)
    dropped = ""
    if triples:
        triples, dropped = _learning_strata(triples, runs, arms)
    test += design + (dropped if triples else "")
    if not triples:
        return Part(spec.assertion, NOT_APPLICABLE, test, (), arms, note=(dropped or design).strip())

    # a loss spans decades (rules.ratio_record_metric): its area is compared as a ratio (log scale), and
    # so is the validation curve's area of a ratio metric (MSE) (analysis/rules.py)
    def logged(measure):
        return lambda f: np.log(_values(measure, f).where(lambda v: v > 0))

    sign, task_name, _ = _task(runs)
    val_ratio = rules.ratio_scale(task_name)
    val_values = logged(VAL_AUC) if val_ratio else (lambda f: _values(VAL_AUC, f))
    val = _difference(triples, val_values)
    test += _per_stratum(triples, val_values, alpha)
    effects = [_as_effect(f"val_auc: {spec.a} {'/' if val_ratio else '−'} {spec.b} ({_better_word(sign)}; the "
                          f"validation curve's area decides)", val, alpha, exp=val_ratio)]
    found = [_side(effects[0], sign)]
    reached = lambda f: np.log(runs.loc[f.index, "curves.steps_to_target"].where(lambda v: v > 0))  # noqa: E731
    if "curves.steps_to_target" in runs and all(reached(f).notna().sum() >= 2 for _, f1, f2 in triples for f in (f1, f2)):
        steps = _difference(triples, reached)
        effects.append(_as_effect(f"steps to target on the validation curve: {spec.a} / {spec.b} (ratio of geometric "
                                  f"means over the runs that reached it; < 1 = {spec.a} faster)", steps, alpha, exp=True))
        found.append(_side(effects[-1], -1))
    loss = metric(pd.concat([a, b]), path("train_loss_auc"))
    if loss.notna().any():
        effects.append(_as_effect(f"train_loss_auc: {spec.a} / {spec.b} (ratio of geometric means; < 1 = lower training "
                                  f"loss; shown, not deciding)", _difference(triples, logged(TRAIN_LOSS_AUC)), alpha, exp=True))
    rate, diverged, _ = _divergence(triples, spec.a, spec.b, alpha)
    if diverged:
        effects.append(rate)
        found.append(_side(rate, -1))
    status, disagree = _decided_by_first(found, "convergence")
    note, lean, needed, mde = _steps_note(runs, a, b, arms) + disagree, None, None, None
    if status == INCONCLUSIVE:
        seeds = _seeds(*[f[f["status"] == "ok"] for _, f1, f2 in triples for f in (f1, f2)])
        lean, needed, mde = _undecided(val, seeds, abs(val.value), sign * val.value, alpha)
    return Part(spec.assertion, status, test, tuple(effects), arms, "", lean, needed, mde, note)


def _steps_note(runs: pd.DataFrame, a: pd.DataFrame, b: pd.DataFrame, names: tuple[str, str]) -> str:
    """Steps to the study-relative target per arm (shown beside the decision, from the curves)."""
    if "curves.steps_to_target" not in runs or runs["curves.steps_to_target"].isna().all():
        return ""
    shown = []
    for name, frame in zip(names, (a, b)):
        steps = runs.loc[frame.index, "curves.steps_to_target"]
        shown.append(f"{name} median {_fmt(float(steps.median())) if steps.notna().any() else '—'} "
                     f"({int(steps.notna().sum())}/{len(steps)} runs reached it)")
    return (f" Steps to target ({TARGET_SHARE:.0%} of the way from chance to the best evaluation here; a diverged "
            f"run never reaches it): {'; '.join(shown)}.")


def _grows_part(spec: PartSpec, ctx: _Context) -> Part:
    """(a − b at the largest x) − (a − b at the smallest x), oriented + = a's advantage grows (toward the
    smallest x with claimed −1). Paired by seed when at least 2 seeds finished in all four cells (the
    per-seed contrasts' t interval), else Welch–Satterthwaite over the four cells. A ratio metric (MSE)
    is compared on the log scale, so the contrast is a log-ratio of ratios."""
    a, b, runs, alpha = ctx.arms[spec.a], ctx.arms[spec.b], ctx.runs, ctx.alpha
    arms = (spec.a, spec.b)
    xa, xb = pd.to_numeric(axis(a, spec.x), errors="coerce"), pd.to_numeric(axis(b, spec.x), errors="coerce")
    shared = sorted(set(xa.dropna()) & set(xb.dropna()))
    sign, name = _task(runs)[0], _task(runs)[1]
    level = decision_level(alpha)
    toward = "smallest" if spec.claimed < 0 else "largest"
    test = (f"{spec.a} − {spec.b} at the {toward} {spec.x} minus at the other end (a difference of differences, paired "
            f"by seed where the seeds finished in all four cells, else Welch–Satterthwaite df), {name} of finished runs"
            f"{' on the log scale' if rules.ratio_scale(name) else ''}, one-sided at α = {alpha:g} each way "
            f"({pct(level)} interval).")
    if len(shared) < 2:
        return Part(spec.assertion, NOT_APPLICABLE, test, (), arms,
                    note=f"Needs at least 2 values of {spec.x} in both {spec.a} and {spec.b}; shared: {values_text(pd.Series(shared, dtype=float))}.")
    low, high = (shared[0], shared[-1]) if spec.claimed > 0 else (shared[-1], shared[0])  # from → toward
    cells = {(arm, where): frame[np.isclose(x, where)] for arm, frame, x in ((spec.a, a, xa), (spec.b, b, xb))
             for where in (low, high)}
    if not any(learned(f, runs)[0] is not False for f in cells.values()):
        return Part(spec.assertion, NOT_APPLICABLE, test, (), arms, note="No arm learned at either end of the axis.")
    logged = rules.ratio_scale(name)
    score = lambda f: np.log(_values(SCORE, f).where(lambda v: v > 0)) if logged else _values(SCORE, f)  # noqa: E731
    weights = {(spec.a, high): sign, (spec.b, high): -sign, (spec.a, low): -sign, (spec.b, low): sign}
    by_seed = {cell: score(frame).groupby(frame["seed"]).mean().dropna() for cell, frame in cells.items()}
    paired = sorted(set.intersection(*[set(v.index) for v in by_seed.values()]))
    how = ""
    if len(paired) >= 2:
        per_seed = sum(w * by_seed[cell].loc[paired] for cell, w in weights.items())
        contrast = mean_estimate(per_seed)
        left = sum(len(f) for f in cells.values()) - 4 * len(paired)
        how = f"paired by seed over {len(paired)} seeds" + (f", {left} run(s) without a partner left out" if left else "")
    else:
        contrast = combine([(w, mean_estimate(score(cells[cell]))) for cell, w in weights.items()])
        how = "unpaired (Welch)"
    effect = _as_effect(f"growth of {spec.a}'s advantage over {spec.b} from {spec.x} = {format_value(low)} to "
                        f"{format_value(high)} ({name}{', log scale' if logged else ''}, + = grows; {how})", contrast, alpha)
    status, note = _side(effect, +1), ""
    if len(paired) >= 2 and not contrast.var > 0 and status != INCONCLUSIVE:
        # every seed's contrast equal: no spread, so the t interval says nothing; the exact sign test does
        sign_p = stats.binomtest(len(paired), len(paired), 0.5, alternative="greater").pvalue
        if sign_p > alpha:
            return Part(spec.assertion, INCONCLUSIVE, test, (effect,), arms, "", _lean_of(contrast.value, 1), None, None,
                        f" Every seed's contrast is the same, so the interval has no width; by an exact sign test "
                        f"{len(paired)} agreeing seeds give p = {sign_p:.3g} > α.")
    lean, needed, mde = (_undecided(contrast, _seeds(*cells.values()), abs(contrast.value), contrast.value, alpha)
                         if status == INCONCLUSIVE else (None, None, None))
    return Part(spec.assertion, status, test, (effect,), arms, "", lean, needed, mde, note)


_KINDS = {"better": _score_part, "not_worse": _score_part, "equivalent": _score_part, "more_stable": _stability_part,
          "faster": _faster_part, "higher_rate": _rate_part, "ratio": _ratio_part, "slope": _slope_part,
          "converges_faster": _convergence_part, "grows": _grows_part}


def evaluate_part(spec: PartSpec, ctx: _Context) -> Part:
    part = _KINDS[spec.kind](spec, ctx)
    short = [name for name in part.arms if ctx.arms[name]["seed"].nunique() < 2]
    if not short or part.status == NOT_APPLICABLE:
        return part
    note = part.note + f" Fewer than 2 seeds in {', '.join(short)}"
    if part.status == INCONCLUSIVE:
        return replace(part, note=note + ".")
    lean = TOWARD_SUPPORTED if part.status == SUPPORTED else TOWARD_CONTRADICTED
    return replace(part, status=INCONCLUSIVE, lean=lean, seeds_needed=None, mde=None,
                   note=note + ": cannot support or contradict.")


