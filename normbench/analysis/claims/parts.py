"""How each part of the vocabulary is tested (engine.py states the rules: one α, pooling,
learning): one entry per part kind, naming the module function that judges it, and the seeds rule
every part obeys. The kinds live by what they are judged on: score_parts, speed_parts,
convergence_parts; what they share (strata, effects, the divergence test) is comparison."""

from __future__ import annotations

import math
from dataclasses import replace

from normbench.analysis.claims.comparison import Context, measure_sign, score_margin
from normbench.analysis.claims.convergence_parts import convergence_part, grows_part
from normbench.analysis.claims.mechanism_parts import sign_part
from normbench.analysis.claims.score_parts import rate_part, ratio_part, score_part, slope_part, stability_part
from normbench.analysis.claims.speed_parts import faster_part
from normbench.analysis.claims.vocabulary import (
    INCONCLUSIVE,
    NOT_APPLICABLE,
    SUPPORTED,
    TOWARD_CONTRADICTED,
    TOWARD_SUPPORTED,
    Part,
    PartSpec,
    undecided_text,
)
from normbench.analysis.intervals import paired_seeds, t_quantile
from normbench.analysis.rules import POWER

_KINDS = {"better": score_part, "not_worse": score_part, "equivalent": score_part, "more_stable": stability_part,
          "faster": faster_part, "higher_rate": rate_part, "ratio": ratio_part, "slope": slope_part,
          "converges_faster": convergence_part, "grows": grows_part, "converges_grows": grows_part,
          "sign": sign_part}
# A step-time ratio within ×1.05 either way: smaller than any speed difference the papers claim (RMSNorm 7%-64%,
# DyT's per-layer savings), so "no difference larger than δ" answers a speed question as well as a verdict would.
SPEED_DELTA = 1.05


def margin_of(spec: PartSpec, ctx: Context) -> float | None:
    """δ of a part on its effect's scale (a difference, or the log of a ratio), fixed before the data: the
    part's own, a speed ratio's SPEED_DELTA, or the task score's smallest effect of interest; None where
    the measure has none."""
    if spec.margin is not None:
        return spec.margin
    if spec.kind == "faster":
        return math.log(SPEED_DELTA)
    if spec.measure.task_metric and spec.kind in ("better", "not_worse", "equivalent", "grows", "converges_faster",
                                                             "converges_grows"):
        return score_margin(ctx.runs)[0]
    return None


def _from_null(part: Part) -> tuple[float, float, float] | None:
    """(estimate, low, high) of the deciding effect measured from no effect (the log of a ratio); None without."""
    effect = part.effect
    if effect is None or effect.interval is None or not math.isfinite(effect.estimate):
        return None
    values = (effect.estimate, *effect.interval)
    if effect.null == 1.0:
        return tuple(math.log(v) for v in values) if min(values) > 0 else None
    return tuple(v - effect.null for v in values)


def inside_margin(part: Part, delta: float | None) -> bool:
    """Whether the deciding effect's interval already lies inside ±δ of no effect (on the log scale for a ratio)."""
    found = _from_null(part)
    if delta is None or found is None or not math.isfinite(delta) or delta <= 0:
        return False
    return -delta < found[1] and found[2] < delta


def estimate_inside(part: Part, delta: float | None) -> bool:
    """Whether the deciding effect's estimate lies inside ±δ (its interval may reach past)."""
    found = _from_null(part)
    return delta is not None and found is not None and math.isfinite(delta) and delta > 0 and abs(found[0]) < delta


def _shown(part: Part, delta: float) -> str:
    return f"×{math.exp(delta):.3g}" if part.effect.null == 1.0 else f"{delta:.3g}"


def _paired_sd(part: Part, seeds: int) -> float:
    """The per-seed standard deviation behind an undecided part's interval (on the log scale for a ratio): its
    half-width over t_{1−α} on the interval's df (n − 1 where the effect names none), times √n."""
    found, effect = _from_null(part), part.effect
    if found is None or seeds < 2:
        return math.nan
    df = effect.df if math.isfinite(effect.df) and effect.df >= 1 else seeds - 1
    half = (found[2] - found[1]) / 2
    return half / t_quantile(0.5 + effect.level / 2, df) * math.sqrt(seeds)


def seeds_to_settle(part: Part, spec: PartSpec, ctx: Context, delta: float | None) -> tuple:
    """Part.decide of an undecided part: the paired seeds at which, at the paired sd seen, the equivalence (TOST
    against ±δ: the interval inside ±δ), the direction (the interval off 0) and, for a non-inferiority part, its own
    test (the interval's worse end inside δ) would be decided; () for a timing (rounds decide it) or no spread."""
    found = _from_null(part)
    if found is None or part.needed_unit != "seeds per arm" or part.effect.interval[0] == part.effect.interval[1]:
        return ()
    seeds = min(ctx.arms[name]["seed"].nunique() for name in part.arms)
    sd = _paired_sd(part, seeds)
    alpha = (1 - part.effect.level) / 2
    estimate = found[0]

    def both(distance: float) -> tuple[int | None, int | None]:
        return paired_seeds(sd, distance, alpha, 0.5), paired_seeds(sd, distance, alpha, POWER)

    out = []
    usable = delta is not None and math.isfinite(delta) and delta > 0
    if usable and abs(estimate) < delta:
        out.append(("equivalence (TOST, ±δ)", *both(delta - abs(estimate))))
    if spec.kind == "not_worse" and usable:
        worse = -measure_sign(spec.measure, ctx.runs) * estimate  # + = a worse than b
        if worse < delta:
            out.append(("non-inferiority (the worse end inside δ)", *both(delta - worse)))
    if estimate != 0 and found[1] <= 0 <= found[2]:  # an interval already off 0 has decided the direction
        out.append(("direction", *both(abs(estimate))))
    return tuple(out) if math.isfinite(sd) and sd > 0 else ()


def evaluate_part(spec: PartSpec, ctx: Context) -> Part:
    part = _KINDS[spec.kind](spec, ctx)
    delta = margin_of(spec, ctx)
    judged = part.status == INCONCLUSIVE and "Cannot be judged" not in part.note
    # a part its own module could not judge (mixed devices, too few timings) says nothing about δ either
    if judged and inside_margin(part, delta):
        # undecided, yet the interval already excludes any effect of interest: more seeds would only say so again
        shown = _shown(part, delta)
        part = replace(part, seeds_needed=None, mde=None, lean=None, within=shown,
                       note=part.note.split(" `python -m")[0] + f" Its interval lies inside ±δ (δ = {shown}): no "
                            f"difference larger than δ is likely.")
    elif judged and estimate_inside(part, delta):
        # referee 17: an estimate already inside ±δ is not a case for "≈200 seeds would decide" its sign; referee 19:
        # nor is it "a difference larger than δ is unlikely" when the interval reaches 2-3δ: that is said only where
        # the interval lies within about ±δ (NEAR_REACH), else how far it reaches and the seeds a decision needs
        shown, (_, low, high) = _shown(part, delta), _from_null(part)
        far = low if abs(low) > abs(high) else high
        reach_shown = f"×{math.exp(far):.3g}" if part.effect.null == 1.0 else f"{far + part.effect.null:.3g}"
        part = replace(part, seeds_needed=None, near=shown, reach=abs(far) / delta, reach_shown=reach_shown,
                       excludes_null=low > 0 or high < 0, decide=seeds_to_settle(part, spec, ctx, delta))
        reading = undecided_text(part)
        part = replace(part, note=part.note.split(" `python -m")[0] + f" {reading[0].upper()}{reading[1:]}.")
    elif judged:
        part = replace(part, decide=seeds_to_settle(part, spec, ctx, delta))
    short = [name for name in part.arms if ctx.arms[name]["seed"].nunique() < 2]
    if not short or part.status == NOT_APPLICABLE:
        return part
    note = part.note + f" Fewer than 2 seeds in {', '.join(short)}"
    if part.status == INCONCLUSIVE:
        return replace(part, note=note + ".")
    lean = TOWARD_SUPPORTED if part.status == SUPPORTED else TOWARD_CONTRADICTED
    return replace(part, status=INCONCLUSIVE, lean=lean, seeds_needed=None, mde=None,
                   note=note + ": cannot support or contradict.")
