"""Performance profiles across tasks (Dolan & Moré 2002; MLCommons AlgoPerf, Dahl et al. 2023).

For arm a and task t, s(a, t) is the group's median steps to the task's target (the lower median of
its runs, a run that never reached the target counting as ∞, as in the leaderboard), and
r(a, t) = s(a, t) / min over arms of s(·, t). The profile ρ_a(τ) is the fraction of tasks with
r(a, t) ≤ τ: ρ_a(1) is the share of tasks the arm is fastest on, and an arm that never reaches a
task's target never counts for it. AREA_TAU bounds the summary area, ∫ ρ_a d(log τ) over [1, AREA_TAU]
divided by log AREA_TAU (1 = fastest on every task).

Steps only, never seconds: runs are timed one at a time on a shared machine, and a ratio of step
times taken at different moments measures the load as much as the arm (docs/performance.md).

An arm is a group's settings without the task and the task's own settings (task.*); in a tuned
study, the evaluation runs (each at its arm's chosen lr, which may differ by task) and the lr is left
out too. Only tasks on which every arm ran count, so every ρ has one denominator.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from normbench.analysis.aggregate import format_value

AREA_TAU = 4.0
TAUS = (1.0, 2.0, 4.0)


def arm_table(summary: pd.DataFrame, axes: list[str], tuned: bool = False) -> tuple[pd.DataFrame, str]:
    """(task × arm steps-to-target medians, what was used). Columns of the frame: arms; index: tasks."""
    names = [a.removeprefix("axes.") for a in axes]
    rows = summary
    note = "all groups"
    if tuned and "role" in rows:
        rows = rows[rows["role"] == "evaluation"]
        note = "evaluation runs of the tuned study (each arm at its chosen lr)"
    drop = {"task", "role"} | ({"lr"} if note.startswith("evaluation") else set())
    keys = [n for n in names if n in rows and n not in drop and not n.startswith("task.")
            and rows[n].astype(str).nunique() > 1]
    if rows.empty:
        return pd.DataFrame(), note

    def label(row) -> str:
        text = ", ".join(f"{k}={format_value(row[k])}" for k in keys
                         if not (row[k] is None or (isinstance(row[k], float) and math.isnan(row[k]))))
        return text or "all runs"

    arms = rows.assign(arm=rows.apply(label, axis=1))
    # several groups of one arm on one task (a setting outside the arm key varies): not one number
    clash = arms.groupby(["task", "arm"]).size()
    if (clash > 1).any():
        return pd.DataFrame(), note + "; some arm has several groups on one task (another setting varies)"
    table = arms.pivot(index="task", columns="arm", values="steps_to_target_median").astype(float)
    return table, note


def step_ratios(table: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """(ratios r(a, t), summary per arm with ρ at TAUS and area, tasks left out). Needs ≥ 2 tasks."""
    complete = table.dropna(how="any")
    left_out = [str(t) for t in table.index if t not in complete.index]
    if complete.empty:
        return pd.DataFrame(), pd.DataFrame(), left_out
    best = complete.min(axis=1)
    # every arm ∞ on a task: no arm reached it; r = ∞ for all (never counted)
    ratios = complete.div(best.where(np.isfinite(best)), axis=0).fillna(math.inf)
    rows = []
    for arm in ratios.columns:
        r = ratios[arm].to_numpy(dtype=float)
        row = {"arm": arm, **{f"rho_{format_value(t)}": float((r <= t * (1 + 1e-12)).mean()) for t in TAUS},
               "area": profile_area(r), "tasks": len(r), "reached": int(np.isfinite(r).sum())}
        rows.append(row)
    summary = pd.DataFrame(rows).sort_values(["area", "arm"], ascending=[False, True], kind="stable")
    return ratios, summary.reset_index(drop=True), left_out


def profile_area(ratios: np.ndarray, tau_max: float = AREA_TAU) -> float:
    """∫ ρ(τ) d(log τ) over [1, tau_max] / log tau_max: ρ is a step function of log τ, integrated exactly."""
    r = np.asarray(ratios, dtype=float)
    if r.size == 0:
        return math.nan
    top = math.log(tau_max)
    # each task contributes (top − log r) / top when r ≤ tau_max, else 0
    contributions = [(top - math.log(x)) / top for x in r if math.isfinite(x) and x <= tau_max]
    return float(sum(contributions) / r.size)
