"""Learning rate: each arm's sensitivity to it, its chosen value, and the tuned comparison.

An *arm* is every result-affecting setting but the learning rate and the seed (role included, so a
tuned study's selection and evaluation runs are never pooled). Within an arm, each lr is one group
of seeds, and the best lr is the best group under the report's one ranking rule
(normbench/analysis/ranking.py: diverged runs rank below every finished run, best = highest mean
rank), applied to SCORE. No second rule is invented here.

SCORE is the *final* validation metric, not the best one: the tuned comparison reads the test metric,
which is measured on the final model, and a learning rate that peaks early and then degrades should
not be chosen for a peak the final model no longer has. It is also the honest measure of stability:
a late blow-up that stays finite shows in the final value and hides in the best.

Stable range. An lr is *stable* for an arm when none of its runs diverged and the mean SCORE of its
finished runs is no more than the tolerance worse than the arm's best lr's mean: STABLE_ACCURACY
accuracy points, or, for other metrics, STABLE_SHARE of the distance from chance to that best mean.
The stable range is the ratio of the largest to the smallest stable lr (stable lrs need not be
contiguous; the table lists them). Both tolerances are fixed here, before any data are seen.

Tuned comparison (DeepOBS, Schneider et al. 2019; AlgoPerf): the lr of each arm is chosen on the
runs whose role is "selection" only; arms are compared on the *test* metric of their "evaluation"
runs, fresh seeds at the chosen lr, so the choice cannot flatter the comparison (winner's curse).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from normbench.analysis import rules
from normbench.analysis.aggregate import TRAINED, format_value
from normbench.analysis.intervals import mean_estimate
from normbench.analysis.ranking import best_set
from normbench.records.metrics import path

# final_val whatever score the study ranks on (rules.primary), deliberately (module docstring); score_note says so on the page
SCORE = path(rules.PRIMARY)
TEST = path("test")
CURVE = path("val_auc")  # breaks a tie on SCORE: the run that got there sooner (the mean over its evaluations)
LR = "axes.lr"
ROLE = "axes.role"
STABLE_ACCURACY = 0.02  # accuracy points below the arm's best that still count as "works"
STABLE_SHARE = 0.10     # other metrics: share of the chance-to-best distance
SELECTION, EVALUATION = "selection", "evaluation"
TOLERANCE_TEXT = (f"an lr is stable when none of its runs diverged and its mean final validation metric is "
                  f"within {STABLE_ACCURACY:g} accuracy (other metrics: {STABLE_SHARE:.0%} of the distance from "
                  f"chance to the arm's best) of the arm's best lr")


def score_note(runs: pd.DataFrame) -> str:
    """Why the lr is judged on final_val when the study ranks on another score (empty when it does not)."""
    ranked = rules.primary(runs)
    if ranked == rules.PRIMARY:
        return ""
    return (f" This study ranks its arms on {ranked} (optimized_metric), but each arm's lr is chosen and judged stable "
            f"on {rules.PRIMARY}: the tuned comparison reads the test metric, measured on the final model, and an lr "
            f"must not be chosen for a peak the final model no longer has.")


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def arm_columns(runs: pd.DataFrame) -> list[str]:
    """The axis columns that define an arm: every setting but lr (the seed is no axis)."""
    return [c for c in runs.columns if c.startswith("axes.") and c not in (LR, "axes.seed")]


def with_arms(runs: pd.DataFrame) -> pd.DataFrame:
    """The trained runs that have an lr, with `arm` (a key) and `arm_label` (the varying settings)."""
    if LR not in runs:
        return runs.iloc[0:0].assign(arm=None, arm_label=None)
    trained = runs[runs["status"].isin(TRAINED) & runs[LR].notna()].copy()
    columns = arm_columns(trained)
    keys = [tuple(None if _missing(v) else str(v) for v in row)
            for row in trained[columns].astype(object).itertuples(index=False, name=None)]
    trained["arm"] = pd.Series(["|".join("" if v is None else v for v in k) for k in keys], index=trained.index,
                               dtype=object)
    # labels name what varies within a task (the task itself is shown beside them)
    by_task = trained.groupby("task.name", sort=False)
    varying = [c for c in columns if c != "axes.task"
               and any(part[c].dropna().astype(str).nunique() > 1 for _, part in by_task)]

    def label(row) -> str:
        parts = [f"{c.removeprefix('axes.')}={format_value(row[c])}" for c in varying if not _missing(row[c])]
        return ", ".join(parts) or "all runs"

    trained["arm_label"] = trained.apply(label, axis=1) if len(trained) else pd.Series(dtype=object)
    return trained


def _higher(runs: pd.DataFrame) -> bool:
    return bool(runs["task.higher_is_better"].iloc[0])


def tolerance(metric: str, best: float, chance: float | None) -> float:
    """How far below the arm's best an lr may fall and still count as stable (see module docstring)."""
    if metric == "accuracy":
        return STABLE_ACCURACY
    if chance is None or not math.isfinite(chance) or not math.isfinite(best):
        return math.nan
    return STABLE_SHARE * abs(chance - best)


def best_lr(arm: pd.DataFrame, score: str = SCORE) -> tuple[float | None, str]:
    """The arm's best lr under ranking.best_set (each lr a group), and why there is none."""
    if arm[LR].nunique() < 2:
        return None, "a single lr"
    if arm.groupby(LR)["seed"].nunique().max() < 2:
        return _best_single_run(arm, score)
    runs = arm.assign(group=arm[LR].astype(float).map(lambda v: repr(float(v))))
    chosen = best_set(runs, _higher(arm), score=score)
    if chosen.best is None:
        return None, _no_lr(chosen.comparisons)
    return float(chosen.best), ""


def _no_lr(table: pd.DataFrame) -> str:
    """Why best_set ranked no lr, from its eligibility table: what is missing, counted (hostile E06: every run
    finished, at or worse than chance, and the reason said none had)."""
    if table.empty:
        return "no lr has a finished run"
    counts = [f"{n} {what}" for n, what in ((int(table["diverged"].sum()), "diverged"),
                                            (int(table["at_chance"].sum()), "at or worse than chance"))
              if n]
    single = int((table["why"] == "fewer than 2 seeds").sum())
    counts += [f"{single} lr{'s' if single > 1 else ''} with fewer than 2 finished runs"] if single else []
    return f"no lr has 2 runs with one that trained ({int(table['runs'].sum())} runs: {'; '.join(counts)})"


def _best_single_run(arm: pd.DataFrame, score: str) -> tuple[float | None, str]:
    """One selection seed an lr (normbench study --selection-seeds 1): the lr of the best finished run. No test
    can rank single runs, so this is the ranking rule's order alone (a diverged run or one that did not
    train is never chosen); the evaluation seeds then compare the arms. Equal scores (a quantized metric such
    as accuracy on a few hundred examples ties often): the larger area under the validation curve, the run that
    got there sooner, so a convergence claim is not handed the slowest of tied lrs (referee 17); then the
    smaller lr."""
    arm = arm.sort_values(LR)
    values = pd.to_numeric(arm[score], errors="coerce")
    ok = (arm["status"] == "ok") & np.isfinite(values)
    stuck = ok & rules.at_chance(arm)
    finished = ok & ~stuck
    if not finished.any():  # hostile h15 B8: every run finished, none trained, and this said none had finished
        counts = [f"{n} {what}" for n, what in ((int((arm["status"] == "diverged").sum()), "diverged"),
                                                (int(stuck.sum()), "at or worse than chance"),
                                                (int((~ok & (arm["status"] != "diverged")).sum()), "not finished"))
                  if n]
        return None, f"no lr has a run that trained ({len(arm)} runs: {'; '.join(counts)})"
    sign = 1.0 if _higher(arm) else -1.0
    oriented = sign * values[finished]
    tied = oriented.index[oriented == oriented.max()]
    curve = sign * pd.to_numeric(arm[CURVE], errors="coerce") if CURVE in arm else pd.Series(math.nan, index=arm.index)
    area = curve.loc[tied].fillna(-math.inf)  # a run without a curve loses a tie, it does not win it
    return float(arm.loc[area.idxmax(), LR]), ""  # idxmax: the first of equal areas, the smaller lr (sorted)


def lr_points(arm: pd.DataFrame, score: str = SCORE) -> pd.DataFrame:
    """One row per lr of one arm: runs, diverged, mean and 95% interval of the finished runs' score."""
    rows = []
    for lr, mine in arm.groupby(LR, sort=True):
        ok = mine[mine["status"] == "ok"][score].astype(float)
        estimate = mean_estimate(ok)
        interval = estimate.interval()
        rows.append({"lr": float(lr), "runs": len(mine), "seeds": int(mine["seed"].nunique()),
                     "diverged": int((mine["status"] == "diverged").sum()),
                     "finished": int(np.isfinite(ok).sum()), "mean": estimate.value,
                     "low": interval[0] if interval else math.nan, "high": interval[1] if interval else math.nan})
    return pd.DataFrame(rows, columns=["lr", "runs", "seeds", "diverged", "finished", "mean", "low", "high"])


def stable_lrs(points: pd.DataFrame, best: float | None, metric: str, higher: bool,
               chance: float | None) -> tuple[list[float], float]:
    """The stable lrs of one arm (module docstring) and the tolerance used."""
    if best is None:
        return [], math.nan
    reference = float(points.loc[np.isclose(points["lr"], best), "mean"].iloc[0])
    tol = tolerance(metric, reference, chance)
    if not math.isfinite(tol):
        return [], tol
    sign = 1.0 if higher else -1.0
    ok = (points["diverged"] == 0) & (points["finished"] > 0) & (sign * (points["mean"] - reference) >= -tol - 1e-12)
    return sorted(points.loc[ok, "lr"].astype(float).tolist()), tol


def sensitivity(runs: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(points, arms) for every arm run at ≥ 2 learning rates.

    points: task, arm, arm_label, lr, runs, seeds, diverged, finished, mean, low, high.
    arms: task, arm, arm_label, role, metric, higher_is_better, lrs, best_lr, best_mean, tolerance,
    stable_lrs, largest_stable, smallest_stable, stable_range (largest / smallest), why (no best lr).
    """
    trained = with_arms(runs)
    point_frames, rows = [], []
    for (task, arm), mine in trained.groupby(["task.name", "arm"], sort=True):
        if mine[LR].nunique() < 2:
            continue
        points = lr_points(mine)
        label = str(mine["arm_label"].iloc[0])
        point_frames.append(points.assign(task=task, arm=arm, arm_label=label))
        metric = str(mine["task.metric"].iloc[0]) if "task.metric" in mine else "metric"
        higher = _higher(mine)
        chance = float(mine["task.chance"].dropna().iloc[0]) if "task.chance" in mine and mine["task.chance"].notna().any() else None
        best, why = best_lr(mine)
        stable, tol = stable_lrs(points, best, metric, higher, chance)
        rows.append({
            "task": task, "arm": arm, "arm_label": label,
            "role": str(mine[ROLE].iloc[0]) if ROLE in mine and not _missing(mine[ROLE].iloc[0]) else "single",
            "metric": metric, "higher_is_better": higher, "lrs": len(points),
            "best_lr": best, "best_mean": float(points.loc[np.isclose(points["lr"], best), "mean"].iloc[0]) if best else math.nan,
            "tolerance": tol, "stable_lrs": stable,
            "largest_stable": max(stable) if stable else math.nan,
            "smallest_stable": min(stable) if stable else math.nan,
            "stable_range": max(stable) / min(stable) if stable else math.nan,
            "grid_low": float(points["lr"].min()), "grid_high": float(points["lr"].max()), "why": why,
        })
    points = (pd.concat(point_frames, ignore_index=True) if point_frames else
              pd.DataFrame(columns=["task", "arm", "arm_label", "lr", "runs", "seeds", "diverged", "finished",
                                    "mean", "low", "high"]))
    return points, pd.DataFrame(rows)


def _arm_without_role(runs: pd.DataFrame) -> pd.Series:
    """An arm key that ignores the role, to pair an evaluation arm with its selection arm."""
    columns = [c for c in arm_columns(runs) if c != ROLE]
    return pd.Series(["|".join("" if _missing(v) else str(v) for v in row)
                      for row in runs[columns].astype(object).itertuples(index=False, name=None)],
                     index=runs.index, dtype=object)


def chosen_lrs(runs: pd.DataFrame) -> pd.DataFrame:
    """Each arm's lr chosen on its selection runs alone (role "selection"), one row per arm.

    Columns: task, arm (role-free key), arm_label, chosen_lr, why, selection_seeds (sorted list).
    Evaluation runs are dropped before anything is computed, so no evaluation seed can sway a choice.
    """
    if ROLE not in runs:
        return pd.DataFrame(columns=["task", "arm", "arm_label", "chosen_lr", "why", "selection_seeds"])
    selection = runs[runs[ROLE] == SELECTION]
    trained = with_arms(selection)
    trained = trained.assign(arm=_arm_without_role(trained))
    rows = []
    for (task, arm), mine in trained.groupby(["task.name", "arm"], sort=True):
        chosen, why = best_lr(mine)
        rows.append({"task": task, "arm": arm, "arm_label": str(mine["arm_label"].iloc[0]), "chosen_lr": chosen,
                     "why": why, "selection_seeds": sorted(int(s) for s in mine["seed"].unique())})
    return pd.DataFrame(rows, columns=["task", "arm", "arm_label", "chosen_lr", "why", "selection_seeds"])


def tuned_leaderboards(runs: pd.DataFrame) -> list[dict]:
    """Per task: the evaluation runs' arms ranked on the test metric with ranking.best_set.

    Each entry: task, metric, higher_is_better, rows (arm_label, chosen_lr, lr run, n, diverged, test
    mean / interval, star, shown_worse p), note (seed overlap, lr mismatches, arms without selection).
    """
    if ROLE not in runs or TEST not in runs:
        return []
    evaluation = runs[(runs[ROLE] == EVALUATION) & runs["status"].isin(TRAINED)]
    if evaluation.empty:
        return []
    chosen = chosen_lrs(runs)
    evaluation = with_arms(evaluation)
    evaluation = evaluation.assign(arm=_arm_without_role(evaluation))
    selection_seeds = set(int(s) for s in runs.loc[runs[ROLE] == SELECTION, "seed"].dropna())
    boards = []
    for task, mine in evaluation.groupby("task.name", sort=True):
        higher = _higher(mine)
        ranked = best_set(mine.assign(group=mine["arm"]), higher, score=TEST)
        table = ranked.comparisons.set_index("group")
        rows, notes = [], []
        for arm, part in mine.groupby("arm", sort=False):
            ok = part[part["status"] == "ok"][TEST].astype(float)
            estimate = mean_estimate(ok)
            interval = estimate.interval()
            pick = chosen[(chosen["task"] == task) & (chosen["arm"] == arm)]
            chosen_lr = pick["chosen_lr"].iloc[0] if len(pick) else None
            ran = sorted(set(part[LR].astype(float)))
            if chosen_lr is None or _missing(chosen_lr):
                notes.append(f"{part['arm_label'].iloc[0]}: no lr chosen on selection runs "
                             f"({pick['why'].iloc[0] if len(pick) else 'no selection runs'})")
            elif not all(math.isclose(r, chosen_lr, rel_tol=1e-9) for r in ran):
                notes.append(f"{part['arm_label'].iloc[0]}: evaluated at lr {', '.join(format_value(r) for r in ran)}, "
                             f"but the selection runs choose {format_value(chosen_lr)}")
            rows.append({"arm": arm, "arm_label": str(part["arm_label"].iloc[0]), "chosen_lr": chosen_lr,
                         "lr_run": ran, "n": len(part), "seeds": int(part["seed"].nunique()),
                         "diverged": int((part["status"] == "diverged").sum()),
                         "test_mean": estimate.value, "test_low": interval[0] if interval else math.nan,
                         "test_high": interval[1] if interval else math.nan,
                         "star": arm in ranked.members, "best": arm == ranked.best or arm in ranked.ties,
                         "tie": arm in ranked.ties,
                         "p": float(table.loc[arm, "p"]) if arm in table.index else math.nan})
        sign = 1.0 if higher else -1.0
        rows.sort(key=lambda r: (not r["best"], not r["star"],
                                 -sign * r["test_mean"] if math.isfinite(r["test_mean"]) else math.inf))
        overlap = sorted(selection_seeds & set(int(s) for s in mine["seed"]))
        if overlap:
            notes.append(f"evaluation seeds {overlap} were also selection seeds: the comparison is not independent "
                         f"of the choice")
        boards.append({"task": task, "metric": str(mine["task.metric"].iloc[0]) if "task.metric" in mine else "metric",
                       "higher_is_better": higher, "rows": rows, "notes": notes,
                       "evaluation_seeds": sorted(int(s) for s in mine["seed"].unique())})
    return boards

