"""The lr-sensitivity area of an lr sweep (Wortsman et al. 2023, "LR sensitivity"): how much final quality an arm loses,
on average over a log-spaced grid of learning rates, against its best lr.

Their definition, for a loss ℓ, a grid of lrs η over [a, b] and ℓ₀ the loss at initialization:

    LR sensitivity = E_η [ min(ℓ(η), ℓ₀) − ℓ* ],   ℓ* = min_η ℓ(η)

(a diverged run, or one worse than the start, counts as ℓ₀). For a task metric in either direction the
same area is taken on the signed score s = sign · metric (higher better), with the task's chance level
as the uninformed value: E_η [ s* − max(s(η), s_chance) ]. 0 = every lr of the grid as good as the best;
larger = more sensitive. The grid must be the same for the arms compared (shared lrs only).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

FLOOR = 1e-9  # an area of exactly 0 (every lr as good as the best) is kept positive for the log-scale ratio


def sensitivity(scores: dict[float, float | None], chance: float, higher: bool) -> float:
    """The area for one seed: ``scores`` maps each lr of the grid to its final metric (None or NaN:
    diverged); ``chance`` the task's uninformed value; ``higher`` the metric's direction."""
    if not scores:
        raise ValueError("lr sensitivity needs at least one lr")
    sign = 1.0 if higher else -1.0
    floor = sign * chance
    signed = [floor if v is None or not math.isfinite(v) else max(sign * v, floor) for v in scores.values()]
    best = max(signed)
    return sum(best - s for s in signed) / len(signed)


def per_seed(arm: pd.DataFrame, runs: pd.DataFrame) -> tuple[pd.Series, dict]:
    """A ratio part's hook (vocabulary.ratio): per seed, the area over the lrs every arm in ``runs`` shares,
    from the final validation metric (diverged: chance)."""
    from normbench.analysis.claims.comparison import task_direction
    from normbench.analysis.claims.vocabulary import axis, metric, values_text
    from normbench.records.metrics import path

    sign, name, chance = task_direction(runs)
    lr_all = pd.to_numeric(axis(runs, "lr"), errors="coerce")
    rule = (f"per seed, the lr-sensitivity area (Wortsman et al. 2023): the mean over the shared lr grid of the "
            f"best lr's final {name} minus each lr's (diverged or worse than chance: chance)")
    if chance is None:
        return pd.Series(dtype=float), {"rule": rule, "not_applicable": f"The task records no chance level for {name}."}
    grid = sorted(set(lr_all.dropna()))
    if len(grid) < 3:
        return pd.Series(dtype=float), {"rule": rule, "not_applicable": (
            f"Needs an lr grid of at least 3 learning rates; found {values_text(pd.Series(grid, dtype=float))}.")}
    lr = pd.to_numeric(axis(arm, "lr"), errors="coerce")
    final = metric(arm, path("final_val"))
    values, short, by_lr = {}, [], {}
    for seed, rows in arm.groupby("seed", sort=True):
        scores = {}
        for index in rows.index:
            value = final[index] if arm.loc[index, "status"] == "ok" else None
            scores[float(lr[index])] = None if value is None or pd.isna(value) else float(value)
        if set(scores) != set(grid):
            short.append(int(seed))
            continue
        values[int(seed)] = max(sensitivity(scores, float(chance), sign > 0), FLOOR)
        for lr_value, lost in contributions(scores, float(chance), sign > 0).items():
            by_lr.setdefault(lr_value, []).append(lost)
    caveat = (f"seed(s) {', '.join(map(str, short))} left out: not run at every lr of the grid" if short else "")
    return pd.Series(values, dtype=float), {"rule": rule + f" (grid {values_text(pd.Series(grid, dtype=float))})",
                                            "caveat": caveat, BY_LR: {k: float(np.mean(v)) for k, v in by_lr.items()}}


BY_LR = "by_lr"  # a ratio part's facts: each lr's mean share of the area over seeds (contributions)
CARRIED = 0.80   # one lr carrying more than this share of the arms' difference in area carries the verdict


def contributions(scores: dict[float, float | None], chance: float, higher: bool) -> dict[float, float]:
    """Each lr's term of the area for one seed: (best − its score) / the grid's size; they sum to sensitivity()."""
    sign = 1.0 if higher else -1.0
    signed = {lr: sign * chance if v is None or not math.isfinite(v) else max(sign * v, sign * chance)
              for lr, v in scores.items()}
    best = max(signed.values())
    return {lr: (best - s) / len(signed) for lr, s in signed.items()}


def carried_text(a_by_lr: dict[float, float], b_by_lr: dict[float, float], a: str, b: str, unit: str) -> str:
    """Each lr's share of the difference in area a − b (means over seeds), and whether one lr carries more than
    CARRIED of it: an area ratio that one grid point makes says that point's result, not a sensitivity over the
    grid (referee 20: qknorm_lr's ratio came entirely from lr 0.1). "" without both arms' terms."""
    shared = sorted(set(a_by_lr) & set(b_by_lr))
    if not shared:
        return ""
    differences = {lr: a_by_lr[lr] - b_by_lr[lr] for lr in shared}
    total = sum(differences.values())
    terms = "; ".join(f"lr {lr:g}: {differences[lr]:+.3g}" for lr in shared)
    said = (f" Per lr, the difference in area {a} − {b} ({unit}, means over seeds; they sum to {total:+.3g}): {terms}.")
    if total == 0 or not math.isfinite(total):
        return said
    top = max(shared, key=lambda lr: differences[lr] / total)
    share = differences[top] / total
    if share > CARRIED:
        others = max((abs(differences[lr]) for lr in shared if lr != top), default=0.0)
        return said + (f" One lr carries it: lr {top:g} gives {share:.0%} of the difference (the others at most "
                       f"{others:.3g} each), so the ratio says how the arms differ at that lr more than across the grid.")
    return said + f" No one lr carries more than {CARRIED:.0%} of it (the largest, lr {top:g}: {share:.0%})."


def lr_grid_is_log_spaced(grid: list[float], rel: float = 0.05) -> bool:
    """Wortsman et al. take the expectation over a log-spaced grid: equal ratios between neighbours."""
    if len(grid) < 3:
        return False
    ratios = np.diff(np.log(sorted(grid)))
    return bool(np.all(np.abs(ratios - ratios.mean()) <= rel * abs(ratios.mean())))
