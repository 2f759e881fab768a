"""A study's axes: the swept settings of its runs (the ``axes.`` columns), which of them vary and in
what order a reader meets them (how a setting's value is written is normbench/records/values.py). Below the aggregation and the
conditions (analysis/conditions.py), which both read them."""

from __future__ import annotations

import pandas as pd

from normbench.records.values import format_value  # noqa: F401  (its readers' name: the labels are written with it)

_AXIS_PREFERENCE = ("norm", "placement", "model", "batch_size", "lr", "eps", "gamma_init",
                    "warmup_steps", "layers", "hidden", "precision", "impl", "optim", "steps",
                    "norm_fp32")


def axis_columns(runs: pd.DataFrame) -> list[str]:
    return [c for c in runs.columns if c.startswith("axes.") and c != "axes.seed"]


def varying_axes(runs: pd.DataFrame) -> list[str]:
    """Axis columns with more than one distinct value among the finished runs, in a reading order."""
    finished = runs[runs["status"] != "incomplete"]
    # a missing value is a setting that does not apply (eps without a norm): it varies nothing
    varying = [c for c in axis_columns(finished) if finished[c].dropna().astype(str).nunique() > 1]

    def order(column: str) -> tuple[int, str]:
        name = column.removeprefix("axes.")
        rank = (-1 if name in ("task", "model") else
                _AXIS_PREFERENCE.index(name) if name in _AXIS_PREFERENCE else len(_AXIS_PREFERENCE))
        return (rank, name)

    return sorted(varying, key=order)


def fixed_settings(runs: pd.DataFrame) -> dict[str, object]:
    finished = runs[runs["status"] != "incomplete"]
    fixed = {}
    for column in axis_columns(finished):
        values = finished[column].dropna().unique()
        if finished[column].astype(str).nunique() == 1 and len(values):
            fixed[column.removeprefix("axes.")] = values[0]
    return fixed
