"""How each part of the vocabulary is tested (engine.py states the rules: one α, pooling,
learning): one entry per part kind, naming the module function that judges it, and the seeds rule
every part obeys. The kinds live by what they are judged on: score_parts, speed_parts,
convergence_parts; what they share (strata, effects, the divergence test) is comparison."""

from __future__ import annotations

from dataclasses import replace

from normbench.analysis.claims.comparison import Context
from normbench.analysis.claims.convergence_parts import convergence_part, grows_part
from normbench.analysis.claims.score_parts import rate_part, ratio_part, score_part, slope_part, stability_part
from normbench.analysis.claims.speed_parts import faster_part
from normbench.analysis.claims.vocabulary import (INCONCLUSIVE, NOT_APPLICABLE, SUPPORTED, TOWARD_CONTRADICTED,
                                                TOWARD_SUPPORTED, Part, PartSpec)


_KINDS = {"better": score_part, "not_worse": score_part, "equivalent": score_part, "more_stable": stability_part,
          "faster": faster_part, "higher_rate": rate_part, "ratio": ratio_part, "slope": slope_part,
          "converges_faster": convergence_part, "grows": grows_part}


def evaluate_part(spec: PartSpec, ctx: Context) -> Part:
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
