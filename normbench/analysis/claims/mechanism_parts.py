"""The part judged on one arm's mechanism measure read with its sign: ``sign`` (vocabulary.sign).

A mechanism claim says which way a quantity goes ("the gradient vanishes going back in time"); the
measure keeps its sign, so the opposite phenomenon (a gradient that grows going back) reads against the
claim, whatever its magnitude, where an absolute value would have read it as "more constant". Each seed is
one observation (the mean of its runs), n = seeds; the (1 − 2α) t interval of the mean decides: supported
when it lies wholly on the claimed side of 0, contradicted when wholly on the other.
"""

from __future__ import annotations

from normbench.analysis.claims.comparison import Context, as_effect, measure_values, pct, side_of, undecided
from normbench.analysis.claims.vocabulary import INCONCLUSIVE, NOT_APPLICABLE, Part, PartSpec
from normbench.analysis.intervals import decision_level, mean_estimate


def sign_part(spec: PartSpec, ctx: Context) -> Part:
    frame, alpha = ctx.arms[spec.a], ctx.alpha
    values = measure_values(spec.measure, frame)
    per_seed = values.groupby(frame["seed"]).mean().dropna()
    side = "< 0" if spec.claimed < 0 else "> 0"
    test = (f"{spec.a}: the mean of {spec.measure.name} over seeds (one value per seed, n = {len(per_seed)}), t interval "
            f"({pct(decision_level(alpha))}, one-sided at α = {alpha:g} each way), must be {side}.")
    if per_seed.empty:
        return Part(spec.assertion, NOT_APPLICABLE, test, (), (spec.a,),
                    note=f"{spec.a} records no {spec.measure.name}.")
    estimate = mean_estimate(per_seed)
    effect = as_effect(f"{spec.measure.name}, mean of {spec.a} ({side} is the claim)", estimate, alpha)
    status = side_of(effect, spec.claimed)
    lean, needed, mde = ((undecided(estimate, len(per_seed), abs(estimate.value), spec.claimed * estimate.value, alpha))
                         if status == INCONCLUSIVE else (None, None, None))
    return Part(spec.assertion, status, test, (effect,), (spec.a,), "", lean, needed, mde)
