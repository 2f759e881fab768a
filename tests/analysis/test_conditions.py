"""Conditions are ranked within, never across: a setting that changes the problem or its budget
(steps, task settings, or a setting tied one to one to them) splits the comparison."""

from normbench.analysis.aggregate import label_groups, summarize_groups, varying_axes
from normbench.analysis.conditions import condition_axes
from normbench.analysis.result import of_frames
from normbench.report.answers import answers


def summary_of(runs):
    axes = varying_axes(runs)
    runs = label_groups(runs, axes)
    return runs, summarize_groups(runs, axes)


def batch_runs(runs_of):
    """LN and BN at batch 4 (2400 steps) and 64 (150 steps), equal data: the long runs score higher."""
    rows = []
    for batch, steps, base in ((4, 2400, 0.95), (64, 150, 0.80)):
        for norm, gap in (("ln", 0.0), ("bn", -0.05)):
            for seed in range(4):
                rows.append({"seed": seed, "best_val": base + gap + 0.002 * seed,
                             "axes": {"norm": norm, "batch_size": batch, "steps": steps}})
    return runs_of(*rows)


def test_a_choice_tied_to_the_steps_is_a_condition_and_each_is_ranked_apart(runs_of):
    runs, summary = summary_of(batch_runs(runs_of))
    assert condition_axes(runs) == ["axes.steps", "axes.batch_size"]
    assert summary["comparison"].nunique() == 2  # one ranking per batch size, never batch 4 over batch 64
    for _, rows in summary.groupby("condition"):
        first = rows.loc[rows["rank"] == 1, "arm"].tolist()
        assert len(first) == 1 and first[0].startswith("norm=ln")  # within each condition LN is first
    said = [a.headline for a in answers(of_frames(runs, summary))]
    assert len(said) == 2 and all(" at steps=" in s for s in said)


def test_without_a_condition_everything_is_one_comparison(runs_of):
    rows = [{"seed": s, "best_val": v + 0.001 * s, "axes": {"norm": n}} for s in range(3) for n, v in (("ln", 0.9), ("bn", 0.8))]
    runs, summary = summary_of(runs_of(*rows))
    assert condition_axes(runs) == [] and summary["comparison"].nunique() == 1 and (summary["condition"] == "").all()


def test_a_choice_not_tied_to_the_condition_stays_a_choice(runs_of):
    rows = [{"seed": s, "best_val": 0.8 + 0.001 * s, "axes": {"norm": n, "task.min_length": m}}
            for s in range(3) for n in ("ln", "bn") for m in (4, 32)]
    runs, summary = summary_of(runs_of(*rows))
    assert condition_axes(runs) == ["axes.task.min_length"]
    assert summary["comparison"].nunique() == 2 and set(summary["arm"].str.split(",").str[0]) == {"norm=ln", "norm=bn"}
