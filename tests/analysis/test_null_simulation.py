"""Equal arms through the real code: the study runner's looks, then the report's ranking and best set.

Each repetition draws every arm's final validation scores from one normal distribution (no true
difference), lets normbench.studies.study.undecided decide at each planned look at the level the plan
spends there, stops where the runner stops, and ranks the seeds it had with
aggregate.summarize_groups (what build_report writes into summary.csv and the answer) at the level
of the last look. An arm "shown worse" is then a false verdict. The best-set rule promises each arm
that is truly best (here: every arm) at most α of being shown worse over all looks; the rate must
stay within α + 3 Monte Carlo standard errors.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from normbench.analysis import aggregate
from normbench.analysis.sequential import Plan
from normbench.studies import study

STUDY = {"schema": "normbench.study/1", "id": "null", "name": "null", "arms": ["hidden"], "command": ""}
ARMS = (64, 65, 66)


def _template(runs_of, seeds: int):
    """The runs frame of ARMS × seeds crafted records, narrowed to what ranking reads (speed only)."""
    runs = runs_of(*[{"seed": s, "best_val": 0.8, "axes": {"hidden": h}, "study": STUDY} for h in ARMS for s in range(seeds)])
    runs = aggregate.label_groups(runs, aggregate.varying_axes(runs))
    keep = [c for c in runs.columns if not c.startswith(("metrics.", "throughput.", "environment.", "profiles.", "time."))
            or c in ("metrics.final_val", "metrics.best_val")]
    return runs[keep].copy()


def null_rates(runs_of, repetitions: int, plan: Plan, seed: int = 0) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    template = _template(runs_of, plan.looks[-1])
    axes = aggregate.varying_axes(template)
    shown, any_shown = 0, 0
    for _ in range(repetitions):
        runs = template.copy()
        scores = rng.normal(0.8, 0.03, len(runs))
        runs["metrics.final_val"], runs["metrics.best_val"] = scores, scores + 0.005
        for seeds, level in zip(plan.looks, plan.levels()):
            looked = runs[runs["seed"] < seeds]
            if not study.undecided(looked, level):
                break
        summary = aggregate.summarize_groups(looked, axes, {"null": level})
        worse = int(summary["shown_worse"].sum())
        shown += worse
        any_shown += worse > 0
    per_arm = shown / (repetitions * len(ARMS))
    return {"per_arm": per_arm, "any": any_shown / repetitions,
            "se": math.sqrt(plan.alpha * (1 - plan.alpha) / repetitions)}


def test_equal_arms_are_rarely_shown_worse(runs_of):
    """Few repetitions in the default suite: the mechanism end to end, with a wide bound."""
    plan = Plan((3, 5), alpha=0.05)
    rates = null_rates(runs_of, 6, plan)
    assert rates["per_arm"] <= plan.alpha + 3 * rates["se"]


@pytest.mark.slow
def test_equal_arms_are_shown_worse_within_alpha_over_many_studies(runs_of):
    """300 studies with looks at 3, 5 and 7 seeds: shown-worse rate per arm ≤ α + 3 MC SE."""
    plan = Plan((3, 5, 7), alpha=0.05)
    rates = null_rates(runs_of, 300, plan, seed=1)
    print(f"null simulation: per-arm shown-worse rate {rates['per_arm']:.4f}, any arm {rates['any']:.4f}, "
          f"MC SE {rates['se']:.4f}")
    assert rates["per_arm"] <= plan.alpha + 3 * rates["se"]
