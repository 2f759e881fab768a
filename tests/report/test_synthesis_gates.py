"""The synthesis names no favourite from a setup that cannot show one: the study's answer's gate."""

from normbench.analysis.aggregate import label_groups, summarize_groups, varying_axes
from normbench.report.sections import StudySection
from normbench.report.synthesis import synthesis


def lines_for(runs):
    axes = varying_axes(runs)
    runs = label_groups(runs, axes)
    summary = summarize_groups(runs, axes)
    section = StudySection(str(runs["study"].iloc[0]), "study-x", "x", "", ["norm"], [])
    return [line for line in synthesis(summary, runs, [section]) if line.studies]


def test_arms_at_chance_favour_nothing_and_arms_apart_favour_the_best(runs_of):
    at_chance = [{"seed": s, "best_val": 0.10 + 0.001 * s + 0.002 * (n == "ln"), "axes": {"norm": n}}
                 for s in range(4) for n in ("ln", "bn")]
    gated = lines_for(runs_of(*at_chance))
    assert len(gated) == 1 and gated[0].favoured.startswith("not testable here: every arm is at chance")
    apart = [{"seed": s, "best_val": (0.80 if n == "ln" else 0.60) + 0.001 * s, "axes": {"norm": n}}
             for s in range(4) for n in ("ln", "bn")]
    favoured = lines_for(runs_of(*apart))
    assert len(favoured) == 1 and favoured[0].favoured.startswith("norm=ln ★")
