"""Choices and conditions: which swept settings a study's ranking compares, and which it ranks within.

A *choice* is a setting a user picks for their model (norm, placement, lr, eps, depth). A *condition*
changes the problem or its budget (the task's settings, the steps, the data), so ranking across it
would rank an easier task or a longer run, not a better choice: "min_length=4 ranks first" says the
task got easier. A study's conditions are the varying axes named in CONDITION_KEYS or under `task.`,
and every other varying axis whose levels are tied one to one to theirs: in the batch-size study at
equal data, each batch size has its own step count (steps = examples / batch_size), so batch size is
a condition there and the norms are ranked at each batch size, as the paper compares them.
The ranking (analysis/ranking.py) compares groups within one study, task and condition.
"""

from __future__ import annotations

import pandas as pd

from normbench.analysis.axes import format_value, varying_axes

# Settings that change the problem or its budget; any `task.` setting does too.
CONDITION_KEYS = ("steps", "length", "min_length", "max_length", "n_train", "budget")


def is_condition_key(axis: str) -> bool:
    name = axis.removeprefix("axes.")
    return name.split(".")[-1] in CONDITION_KEYS or name.startswith("task.")


def _tied(runs: pd.DataFrame, axis: str, others: list[str]) -> bool:
    """Whether ``axis``'s levels and the joint levels of ``others`` determine each other."""
    if not others:
        return False
    frame = runs[[axis, *others]].astype(str).drop_duplicates()
    return (frame.groupby(axis)[others].nunique().max().max() == 1
            and frame.groupby(others)[axis].nunique().max() == 1)


def condition_axes(runs: pd.DataFrame) -> list[str]:
    """The condition axes (``axes.`` columns) of one study's runs: named conditions, then the varying
    axes tied one to one to them (the task itself is a comparison of its own, not listed)."""
    varying = [a for a in varying_axes(runs) if a != "axes.task"]
    named = [a for a in varying if is_condition_key(a)]
    finished = runs[runs["status"] != "incomplete"]
    tied = [a for a in varying if a not in named and _tied(finished, a, named)]
    return named + tied


def condition_labels(runs: pd.DataFrame) -> pd.Series:
    """Per run, its condition within its study ("steps=150, batch_size=64"), "" where a study has none."""
    labels = pd.Series("", index=runs.index, dtype=object)
    if runs.empty:
        return labels
    groups = runs.groupby("study", sort=False) if "study" in runs else [("", runs)]
    for _, mine in groups:
        axes = condition_axes(mine)
        if axes:
            labels[mine.index] = [", ".join(f"{a.removeprefix('axes.')}={format_value(v)}" for a, v in zip(axes, row)
                                            if pd.notna(v)) for row in mine[axes].itertuples(index=False)]
    return labels


def roles(study_runs: pd.DataFrame) -> tuple[list[str], list[str]]:
    """(choices, conditions) of one study: the keys it sweeps (varying over its runs) split into the
    arms a user picks (declared in the study's arms, or any key not a condition) and the conditions
    (task, length, budget) it is run under."""
    varying = [a.removeprefix("axes.") for a in varying_axes(study_runs)]
    declared = set()
    if "study.arms" in study_runs:
        for text in study_runs["study.arms"].dropna().astype(str).unique():
            declared |= {k.split(".")[-1] for k in text.split(",") if k} | {k for k in text.split(",") if k}

    tied = {a.removeprefix("axes.") for a in condition_axes(study_runs)}

    def condition(key: str) -> bool:
        return key in tied or key == "task" or is_condition_key(key)

    if declared:
        choices = [k for k in varying if k in declared and not condition(k)]
    else:
        choices = [k for k in varying if not condition(k)]
    return choices, [k for k in varying if k not in choices]
