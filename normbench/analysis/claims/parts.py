"""How each part of the vocabulary is tested (engine.py states the rules: one α, pooling,
learning): one entry per part kind, naming the module function that judges it, and the seeds rule
every part obeys. The kinds live by what they are judged on: score_parts, speed_parts,
convergence_parts; what they share (strata, effects, the divergence test) is comparison."""

from __future__ import annotations

import math
from dataclasses import replace

from normbench.analysis.claims.comparison import Context, score_margin
from normbench.analysis.claims.convergence_parts import convergence_part, grows_part
from normbench.analysis.claims.mechanism_parts import sign_part
from normbench.analysis.claims.score_parts import rate_part, ratio_part, score_part, slope_part, stability_part
from normbench.analysis.claims.speed_parts import faster_part
from normbench.analysis.claims.vocabulary import (
    INCONCLUSIVE,
    NEAR_WORDS,
    NOT_APPLICABLE,
    SUPPORTED,
    TOWARD_CONTRADICTED,
    TOWARD_SUPPORTED,
    Part,
    PartSpec,
)

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


def evaluate_part(spec: PartSpec, ctx: Context) -> Part:
    part = _KINDS[spec.kind](spec, ctx)
    delta = margin_of(spec, ctx)
    # a part its own module could not judge (mixed devices, too few timings) says nothing about δ either
    if part.status == INCONCLUSIVE and "Cannot be judged" not in part.note and inside_margin(part, delta):
        # undecided, yet the interval already excludes any effect of interest: more seeds would only say so again
        shown = _shown(part, delta)
        part = replace(part, seeds_needed=None, mde=None, lean=None, within=shown,
                       note=part.note.split(" `python -m")[0] + f" Its interval lies inside ±δ (δ = {shown}): no "
                            f"difference larger than δ is likely.")
    elif part.status == INCONCLUSIVE and "Cannot be judged" not in part.note and estimate_inside(part, delta):
        # referee 17: an estimate already inside ±δ is not a case for "≈200 seeds would decide" its sign; what the
        # runs say is that no difference of interest is likely, and whether the interval excludes none at all
        shown, (_, low, high) = _shown(part, delta), _from_null(part)
        part = replace(part, seeds_needed=None, near=shown,
                       note=part.note.split(" `python -m")[0] + f" Its estimate lies inside ±δ (δ = {shown}) and its "
                            f"interval reaches past δ: {NEAR_WORDS}"
                            + (", and the interval excludes no difference at all: one smaller than δ is detected"
                               if low > 0 or high < 0 else "") + ".")
    short = [name for name in part.arms if ctx.arms[name]["seed"].nunique() < 2]
    if not short or part.status == NOT_APPLICABLE:
        return part
    note = part.note + f" Fewer than 2 seeds in {', '.join(short)}"
    if part.status == INCONCLUSIVE:
        return replace(part, note=note + ".")
    lean = TOWARD_SUPPORTED if part.status == SUPPORTED else TOWARD_CONTRADICTED
    return replace(part, status=INCONCLUSIVE, lean=lean, seeds_needed=None, mde=None,
                   note=note + ": cannot support or contradict.")
