"""The parts judged on scores: better, not worse and equivalent on a per-run measure, more
stable (over learning rates), a higher rate, a ratio, a slope over depth."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from normbench.analysis import lr_sensitivity, rules
from normbench.analysis.claims import failure_band
from normbench.analysis.claims.comparison import (
    FAILED,
    Context,
    as_effect,
    better_word,
    decided_by_first,
    divergence_test,
    lean_of,
    learning_strata,
    measure_name,
    measure_sign,
    measure_values,
    number_text,
    pairing_text,
    pct,
    per_stratum_text,
    score_margin,
    seed_count,
    short_number,
    side_of,
    strata,
    stratified_difference,
    task_direction,
    undecided,
)
from normbench.analysis.claims.vocabulary import (
    CONTRADICTED,
    INCONCLUSIVE,
    NOT_APPLICABLE,
    NOT_TESTABLE,
    SCORE,
    SUPPORTED,
    Effect,
    Part,
    PartSpec,
    axis,
    metric,
    values_text,
)
from normbench.analysis.intervals import (
    Estimate,
    combine,
    decision_level,
    equivalence,
    mean_estimate,
    non_inferiority,
    seed_difference,
    slope_estimate,
)
from normbench.records.metrics import path


def score_part(spec: PartSpec, ctx: Context) -> Part:
    """better / not_worse / equivalent on a per-run measure, divergence rate tested apart."""
    a, b = ctx.arms[spec.a], ctx.arms[spec.b]
    runs, alpha = ctx.runs, ctx.alpha
    sign, name = measure_sign(spec.measure, runs), measure_name(spec.measure, runs)
    triples, design = strata(a, b, ctx.compare)
    dropped = ""
    if triples and spec.learned and spec.measure.task_metric:
        triples, dropped = learning_strata(triples, runs, (spec.a, spec.b))
    level = decision_level(alpha)
    kinds = {"better": f"t, one-sided at α = {alpha:g} each way ({pct(level)} interval) on",
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
    ratio = spec.measure.task_metric and not spec.measure.log and rules.ratio_scale(task_direction(runs)[1])
    values = ((lambda frame: np.log(measure_values(spec.measure, frame).where(measure_values(spec.measure, frame) > 0))) if ratio
              else (lambda frame: measure_values(spec.measure, frame)))
    raw = stratified_difference(triples, values)
    label = (f"{name}: {spec.a} / {spec.b} (ratio of geometric means; {better_word(sign)})" if ratio
             else f"{name}: {spec.a} − {spec.b} ({better_word(sign)})")
    margin, margin_text = (math.nan, "")
    if spec.kind != "better":
        margin, margin_text = ((spec.margin, spec.margin_text) if spec.margin is not None else score_margin(runs))
        label = f"{label[:-1]}; margin " + (f"×{number_text(math.exp(margin))})" if ratio else f"±{number_text(margin)})")
    score = as_effect(label, raw, alpha, exp=ratio)
    rate, diverged, _ = divergence_test(triples, spec.a, spec.b, alpha)
    effects = (score, rate) if diverged and spec.measure.finished_only else (score,)
    test += pairing_text(triples, values) + per_stratum_text(triples, values, alpha)
    oriented = Estimate(sign * raw.value, raw.var, raw.df)
    seeds = seed_count(*[f[f["status"] == "ok"] for _, f1, f2 in triples for f in (f1, f2)]) if spec.measure.finished_only \
        else seed_count(*[f for _, f1, f2 in triples for f in (f1, f2)])
    if spec.kind == "better":
        status, note, lean, needed, mde = _better_verdict(score, rate, raw, oriented, sign, diverged,
                                                          spec.measure.finished_only, seeds, alpha)
    else:
        status, note, lean, needed, mde = _margin_verdict(spec, a, oriented, margin, margin_text, rate, diverged,
                                                          raw, seeds, alpha)
    return Part(spec.assertion, status, test, effects, arms, margin_text, lean, needed, mde, note)


def _better_verdict(score: Effect, rate: Effect | None, raw: Estimate, oriented: Estimate, sign: int, diverged: int,
                    finished_only: bool, seeds: int, alpha: float):
    """(status, note, lean, seeds_needed, mde) of a `better` part: the finished-run scores and the
    divergence rate each decide, and where they point opposite ways nothing is decided."""
    note, lean, needed, mde = "", None, None, None
    by_score = side_of(score, sign)
    by_rate = side_of(rate, -1) if diverged and finished_only else INCONCLUSIVE
    found = {by_score, by_rate}
    status = (INCONCLUSIVE if {SUPPORTED, CONTRADICTED} <= found else CONTRADICTED if CONTRADICTED in found
              else SUPPORTED if SUPPORTED in found else INCONCLUSIVE)
    if {SUPPORTED, CONTRADICTED} <= found:
        note = " Divergence rate and finished-run scores point opposite ways."
    if status == INCONCLUSIVE:
        lean, needed, mde = undecided(raw, seeds, abs(raw.value), oriented.value, alpha)
        if not math.isfinite(raw.value) and diverged:
            lean = lean_of(-rate.estimate, 1)
    return status, note, lean, needed, mde


def _margin_verdict(spec: PartSpec, a: pd.DataFrame, oriented: Estimate, margin: float, margin_text: str,
                    rate: Effect | None, diverged: int, raw: Estimate, seeds: int, alpha: float):
    """(status, note, lean, seeds_needed, mde) of a not_worse / equivalent part: the interval against
    the margin, and a divergence rate that differs (or any divergence) keeps it from being supported."""
    note, lean, needed, mde = "", None, None, None
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
        differs = side_of(rate, +1) == SUPPORTED if one_sided else side_of(rate, +1) != INCONCLUSIVE
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
        lean, needed, mde = undecided(raw, seeds, abs(inside), inside, alpha)
    return status, note, lean, needed, mde


def stability_part(spec: PartSpec, ctx: Context) -> Part:
    """"a is more stable than b": gradient kurtosis decides; the largest gradient norm and the
    divergence rate may contradict it, and contradict each other."""
    a, b, alpha = ctx.arms[spec.a], ctx.arms[spec.b], ctx.alpha
    triples, design = strata(a, b, ctx.compare)
    level = decision_level(alpha)
    test = (f"{spec.a} vs {spec.b}: t at α = {alpha:g} each way ({pct(level)} interval) on gradient kurtosis "
            f"of finished runs, on log10 grad_norm_max, and Newcombe interval on divergence rate; "
            f"supported when kurtosis is lower and neither other measure is shown worse, not reproduced when a "
            f"measure is shown worse and none better (that measure decides), inconclusive when they disagree.{design}")
    arms = (spec.a, spec.b)
    if not triples:
        return Part(spec.assertion, NOT_APPLICABLE, test, (), arms, note=design.strip())
    ok = lambda f, s: s.where(f["status"] == "ok")  # noqa: E731
    kurt_of = lambda f: ok(f, metric(f, path("grad_kurtosis")))  # noqa: E731
    max_of = lambda f: ok(f, np.log10(metric(f, path("grad_norm_max")).where(lambda v: v > 0)))  # noqa: E731
    kurtosis = stratified_difference(triples, lambda f: -kurt_of(f))
    log_max = stratified_difference(triples, lambda f: -max_of(f))
    test += pairing_text(triples, kurt_of, "gradient kurtosis") + pairing_text(triples, max_of, "log10 grad_norm_max")

    def means(values) -> str:  # each arm's own mean: the numbers the difference is made of
        return "; ".join(f"{name} mean {short_number(values(frame).mean())}" for name, frame in ((spec.a, a), (spec.b, b)))
    effects = (as_effect(f"grad kurtosis: {spec.b} − {spec.a} (+ = {spec.a} more stable; {means(kurt_of)})",
                         kurtosis, alpha),
               as_effect(f"log10 grad_norm_max: {spec.b} − {spec.a} (+ = {spec.a} calmer; {means(max_of)})",
                         log_max, alpha))
    rate, diverged, _ = divergence_test(triples, spec.a, spec.b, alpha)
    found = [side_of(effects[0], +1), side_of(effects[1], +1), side_of(rate, -1) if diverged else INCONCLUSIVE]
    status, note = decided_by_first(found, "stability")
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
        lean, needed, mde = undecided(kurtosis, seed_count(a, b), abs(kurtosis.value), kurtosis.value, alpha)
    return Part(spec.assertion, status, test, everything, arms, "", lean, needed, mde, note)


def rate_part(spec: PartSpec, ctx: Context) -> Part:
    """a's rate of an outcome exceeds b's: divergence (the default measure), or the 0/1 outcome its
    measure gives per run (FAILED: diverged or did not learn the task, rules.failed_to_learn)."""
    a, b, alpha = ctx.arms[spec.a], ctx.arms[spec.b], ctx.alpha
    triples, design = strata(a, b, ctx.compare)
    outcome = None if spec.measure is SCORE else spec.measure
    what = "divergence rate" if outcome is None else f"rate of runs that {outcome.name}"
    test = (f"{spec.a} vs {spec.b}: {what} difference, Newcombe interval ({pct(decision_level(alpha))}, "
            f"one-sided at α = {alpha:g} each way).{design}")
    arms = (spec.a, spec.b)
    if not triples:
        return Part(spec.assertion, NOT_APPLICABLE, test, (), arms, note=design.strip())
    rate, _, approx = divergence_test(triples, spec.a, spec.b, alpha, outcome)
    status = side_of(rate, +1)
    if outcome is FAILED:  # which rule counted a failure, and whether its band decides the count
        said, hinges = failure_band.reading({spec.a: a, spec.b: b}, ctx.runs)
        test += said
        if hinges and status != INCONCLUSIVE:
            return Part(spec.assertion, NOT_TESTABLE, test, (rate,), arms, note=(
                f"not testable here: the failure count hinges on the band that counts a failure (moving it by "
                f"{failure_band.SHIFT} changes a count, above), so the verdict would be the band's, not the runs' — "
                f"testable with runs whose best evaluation ends clear of the band's edge (more steps, or more seeds)"))
    lean, needed, mde = (undecided(approx, seed_count(a, b), abs(approx.value), approx.value, alpha)
                         if status == INCONCLUSIVE else (None, None, None))
    return Part(spec.assertion, status, test, (rate,), arms, "", lean, needed, mde)


def ratio_part(spec: PartSpec, ctx: Context) -> Part:
    """a's per-seed value ÷ b's (geometric means) on the logs: paired by seed (a one-sample t on the per-seed
    log ratios) where the arms share PAIRED_MIN or more seeds, else Welch; a zero-width interval falls
    back to the exact sign test at α (every seed agreeing on a discrete grid is no spread, not proof)."""
    a, b, alpha = ctx.arms[spec.a], ctx.arms[spec.b], ctx.alpha
    (va, fa), (vb, fb) = spec.per_seed(a, ctx.runs), spec.per_seed(b, ctx.runs)
    arms = (spec.a, spec.b)
    level = f"at α = {alpha:g} each way ({pct(decision_level(alpha))} interval)"
    test = f"{spec.a} vs {spec.b}: {fa.get('rule', spec.measure.name)}; "
    why = fa.get("not_applicable") or fb.get("not_applicable")
    if why:
        return Part(spec.assertion, NOT_APPLICABLE, test + f"t {level} on the log of the per-seed values, "
                    f"exponentiated to a ratio, must exceed 1.", (), arms, note=why)
    # a seed draws the same data and initialization in both arms: its common effect cancels in the log ratio
    estimate, pairs = seed_difference(np.log(va), va.index, np.log(vb), vb.index)
    how = (f"paired by seed over {pairs} seeds" if pairs else
           "unpaired (Welch; the arms share fewer than 2 seeds, or every shared seed gives the same ratio)")
    test += (f"{'a paired t on the per-seed log ratios' if pairs else 'Welch t on the log of the per-seed values'} "
             f"{level}, exponentiated to a ratio, must exceed 1 ({how}).")
    if lr_sensitivity.BY_LR in fa and lr_sensitivity.BY_LR in fb:  # an area over an lr grid: which lrs make it
        test += lr_sensitivity.carried_text(fa[lr_sensitivity.BY_LR], fb[lr_sensitivity.BY_LR], spec.a, spec.b,
                                            task_direction(ctx.runs)[1])
    effect = as_effect(f"{spec.measure.name} ratio: {spec.a} ÷ {spec.b} (geometric mean over seeds; > 1 = {spec.a} "
                       f"larger; {how})", estimate, alpha, exp=True)
    status, note = side_of(effect, +1), ""
    seeds = pairs or min(len(va), len(vb))
    if estimate.var == 0 and status != INCONCLUSIVE:
        # One-sided exact sign test: n seeds of n agreeing.
        sign_p = stats.binomtest(seeds, seeds, 0.5, alternative="greater").pvalue
        if sign_p > alpha:
            needed = next(n for n in range(1, 64) if stats.binomtest(n, n, 0.5, alternative="greater").pvalue <= alpha)
            status, note = INCONCLUSIVE, (
                f" Every seed agrees, but with no spread the t interval says nothing; by an exact sign test "
                f"{seeds} agreeing seed(s) give p = {sign_p:.3g}, and {needed} would be needed for p ≤ {alpha:g}.")
            lean = lean_of(estimate.value, 1)
            return Part(spec.assertion, status, test, (effect,), arms, "", lean, needed, None,
                        note + _caveats(spec, fa, fb, estimate))
    lean, needed, mde = (undecided(estimate, seeds, abs(estimate.value), estimate.value, alpha)
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


def _seed_slopes(x: pd.Series, y: pd.Series, seeds: pd.Series):
    """(the slope's estimate, how it was had). n is distinct seeds: where 2 or more seeds each span
    MIN_SLOPE_LEVELS values of x, each seed's own OLS slope is one observation and the estimate is their mean
    (t on seeds − 1 df). Else the pooled OLS over the runs (n − 2 df), whose interval is over the x values of
    one seed, not over seeds (evaluate_part holds a part with fewer than 2 seeds inconclusive)."""
    slopes = []
    for _, rows in pd.DataFrame({"x": x, "y": y}).groupby(seeds.to_numpy()):
        rows = rows.dropna()
        if rows["x"].nunique() >= MIN_SLOPE_LEVELS:
            slopes.append(slope_estimate(rows["x"], rows["y"]).value)
    slopes = [s for s in slopes if math.isfinite(s)]
    if len(slopes) >= 2:
        return mean_estimate(slopes), f"one slope per seed ({len(slopes)} seeds, each over its own depths; n = seeds)"
    return slope_estimate(x, y), "pooled over the runs (n − 2 df: fewer than 2 seeds span the axis)"


def _against_theory(spec: PartSpec, effect: Effect, x: pd.Series) -> str:
    """The theory's slope beside the measured one (PartSpec.expected), each as the change it makes across the
    x values run, and whether the interval excludes the theory's value: a slope with the claimed sign but a
    quarter of the predicted size is not the theory's mechanism at full strength (referee 20: Pre-LN −0.129 vs
    Theorem 1's −0.5). "" where the spec states no theory."""
    if spec.expected is None or not math.isfinite(effect.estimate):
        return ""
    low, high = float(x.min()), float(x.max())
    span = high / low

    def change(slope: float) -> str:
        return f"{(span ** slope - 1) * 100:+.0f}%"
    where = f"from {spec.x} {low:g} to {high:g}"
    theory = "0" if spec.expected == 0 else f"{spec.expected:+g}"
    said = (f" Theory: slope {theory} ({spec.expected_text}), {change(spec.expected)} {where}; measured "
            f"{effect.estimate:+.3g}, {change(effect.estimate)}")
    interval = effect.interval
    if interval is None:
        return said + "."
    excludes = not interval[0] <= spec.expected <= interval[1]
    if spec.expected == 0:
        if excludes:
            word = "grows" if effect.estimate > 0 else "shrinks"
            return said + (f": the interval [{interval[0]:.3g}, {interval[1]:.3g}] excludes 0, the measure {word} with "
                           f"{spec.x}, the direction away from the theory's independence.")
        return said + f": the interval [{interval[0]:.3g}, {interval[1]:.3g}] includes the theory's 0."
    ratio = effect.estimate / spec.expected
    return said + (f" ({ratio:.2g} of the theory's slope): the interval [{interval[0]:.3g}, {interval[1]:.3g}] "
                   + ("excludes the theory's value, so the measured magnitude is far from it." if excludes else
                      "includes the theory's value."))


def slope_part(spec: PartSpec, ctx: Context) -> Part:
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
    estimate, how = _seed_slopes(np.log(x.where(x > 0)), np.log(y.where(y > 0)), frame["seed"])
    seeds = int(frame["seed"].nunique())
    if spec.claimed:
        word = "shrinks" if spec.claimed < 0 else "grows"
        effect = as_effect(f"slope of log({name}) on log({spec.x}), {spec.a} ({'−' if spec.claimed < 0 else '+'} = {word})",
                           estimate, alpha)
        status = side_of(effect, spec.claimed)
        test = (f"OLS slope of log({name}) on log({spec.x}), {how}, t interval ({pct(level)}, one-sided at α = {alpha:g} "
                f"each way), must be {'< 0' if spec.claimed < 0 else '> 0'}.")
        lean, needed, mde = (undecided(estimate, seeds, abs(estimate.value), spec.claimed * estimate.value, alpha)
                             if status == INCONCLUSIVE else (None, None, None))
        test += _against_theory(spec, effect, x)
        return Part(spec.assertion, status, test, (effect,), arms, "", lean, needed, mde)
    delta = spec.margin
    effect = as_effect(f"slope of log({name}) on log({spec.x}), {spec.a} (flat = inside ±{delta:g})", estimate, alpha)
    status = {"equivalent": SUPPORTED, "different": CONTRADICTED}.get(equivalence(estimate, delta, alpha), INCONCLUSIVE)
    margin = spec.margin_text or f"δ = {delta:g} in log-log units, fixed before the data"
    test = (f"OLS slope of log({name}) on log({spec.x}), {how}, TOST at α = {alpha:g}: the {pct(level)} interval inside "
            f"±δ, {margin}.") + _against_theory(spec, effect, x)
    lean = needed = mde = None
    if status == INCONCLUSIVE and math.isfinite(estimate.value):
        inside = delta - abs(estimate.value)
        lean, needed, mde = undecided(estimate, seeds, abs(inside), inside, alpha)
    return Part(spec.assertion, status, test, (effect,), arms, margin, lean, needed, mde)
