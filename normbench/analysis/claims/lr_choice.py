"""Whether a tuned study's lr choice can answer a part that reads another measure than the one that chose it.

A tuned study picks each arm's lr on its selection seeds by the final validation score (analysis/tuning.py:
best_lr on SCORE). A convergence part reads the validation curve's area (val_auc): an lr that gives the best
final score may be a slow one, so the arms' speeds are compared at lrs nobody chose for speed (referee 20 on
ln_beats_bn_varlen: BN masked got lr 0.003 for its final score, at which its curve is five times slower than
at 0.01). The rule, the same for every part whose measure is not the one that chose the lrs: on the selection
seeds, within each stratum both arms share (a pooled length, a batch size), pick each arm's lr by the part's own
measure too, and read the two arms' order on that measure at either pick.

* Both picks agree, or differ without changing which arm is ahead on the selection seeds: the part is judged,
  and its test says which lr each measure picked and the order at each (a referee can see it did not matter).
* The order turns over in some stratum, by more than the metric's δ at both choices: the part is not testable here (the lrs answer another question), with
  the remedy: choose the lrs on the part's measure.
"""

from __future__ import annotations

import math

import pandas as pd

from normbench.analysis import rules, tuning
from normbench.analysis.aggregate import format_value
from normbench.analysis.claims.comparison import level_keys, level_label, task_direction, varying
from normbench.analysis.claims.vocabulary import Claim, PartSpec, metric, select

# the measure each part kind reads, where it is not the score that chose the lrs (tuning.SCORE)
PART_MEASURE = {"converges_faster": tuning.CURVE, "converges_grows": tuning.CURVE}
SCORE_WORDS = "the final validation score"
MEASURE_WORDS = {tuning.CURVE: "val_auc (the validation curve's area)"}


def selection_runs(study_runs: pd.DataFrame) -> pd.DataFrame:
    """A tuned study's selection runs (empty for any other study)."""
    if tuning.ROLE not in study_runs:
        return study_runs.iloc[0:0]
    return study_runs[study_runs[tuning.ROLE].astype(str) == tuning.SELECTION]


def _strata(a: pd.DataFrame, b: pd.DataFrame) -> list[str]:
    """The axes a stratum is fixed on: those that vary across both arms' selection runs and that both arms share
    values of (an axis whose values separate the arms, the norm or a gain tied to it, is what they compare)."""
    both = pd.concat([a, b])
    out = []
    for column in varying(both, ("lr", "role")):
        if set(a[column].dropna().astype(str)) & set(b[column].dropna().astype(str)) or \
                (a[column].isna().any() and b[column].isna().any()):
            out.append(column)
    return out


def _pick(runs: pd.DataFrame, score: str) -> float | None:
    """The lr the arm's selection runs pick on ``score`` (tuning.best_lr's rule), None where they pick none."""
    if score not in runs or runs[tuning.LR].nunique() < 2 or metric(runs, score).isna().all():
        return None
    return tuning.best_lr(runs, score)[0]


def _at(runs: pd.DataFrame, lr: float | None, measure: str) -> float:
    if lr is None:
        return math.nan
    here = runs[(runs["status"] == "ok") & pd.to_numeric(runs[tuning.LR], errors="coerce").map(
        lambda v: math.isclose(float(v), lr, rel_tol=1e-9))]
    values = metric(here, measure).dropna()
    return float(values.mean()) if len(values) else math.nan


def check(claim: Claim, spec: PartSpec, frames: dict[str, pd.DataFrame], selection: pd.DataFrame,
          runs: pd.DataFrame) -> tuple[str, str]:
    """(note, text) for one part: ``note`` "not testable here: ..." when the order of the part's arms on its
    measure turns over between the lrs picked by the score and by the measure, else ""; ``text`` the picks and
    orders, for the part's test ("" when there is nothing to check: no selection runs, or the part reads the
    score that chose the lrs)."""
    measure = PART_MEASURE.get(spec.kind)
    if measure is None or selection.empty or not spec.b or spec.a not in frames or spec.b not in frames:
        return "", ""
    a = selection[select(selection, claim.arms[spec.a])]
    b = selection[select(selection, claim.arms[spec.b])]
    if a.empty or b.empty:
        return "", ""
    columns = _strata(a, b)
    evaluated = set(level_keys(pd.concat([frames[spec.a], frames[spec.b]]), columns)) if all(
        c in frames[spec.a] and c in frames[spec.b] for c in columns) else None
    sign, name, _ = task_direction(runs)
    delta, _ = rules.margin(name)  # an order is clear when the arms differ by more than the metric's δ
    logged = rules.ratio_scale(name)

    def ahead(x: float, y: float) -> float:
        """a's lead over b on the measure (log ratio for a ratio metric); NaN where either is missing."""
        if logged:
            return sign * (math.log(x) - math.log(y)) if x > 0 and y > 0 else math.nan
        return sign * (x - y)
    keys_a = pd.Series(level_keys(a, columns), index=a.index, dtype=object)
    keys_b = pd.Series(level_keys(b, columns), index=b.index, dtype=object)
    shown, flipped = [], []
    for key in sorted(set(keys_a) & set(keys_b), key=lambda k: tuple("" if v is None else v for v in k)):
        if evaluated is not None and key not in evaluated:
            continue
        mine = {spec.a: a[keys_a == key], spec.b: b[keys_b == key]}
        picks = {n: (_pick(f, tuning.SCORE), _pick(f, measure)) for n, f in mine.items()}
        if any(p is None for pair in picks.values() for p in pair):
            continue
        by_score = {n: _at(mine[n], picks[n][0], measure) for n in mine}
        by_measure = {n: _at(mine[n], picks[n][1], measure) for n in mine}
        ahead_score = ahead(by_score[spec.a], by_score[spec.b])
        ahead_measure = ahead(by_measure[spec.a], by_measure[spec.b])
        where = level_label(columns, key) if columns else ""
        lrs = "; ".join(f"{n} {format_value(s)} / {format_value(m)}" for n, (s, m) in picks.items())
        # a reversal counts when the order is clear (beyond δ) at both choices: a flip inside δ is noise
        turned = ahead_score * ahead_measure < 0 and min(abs(ahead_score), abs(ahead_measure)) > delta
        order = (lambda x: f"{spec.a} {'ahead' if x > 0 else 'behind'}")
        shown.append(f"{where + ': ' if where else ''}lr by score / by {measure.split('.')[-1]}: {lrs}; {measure.split('.')[-1]} "
                     f"{spec.a} vs {spec.b} {by_score[spec.a]:.3g} vs {by_score[spec.b]:.3g} "
                     f"at the score's lrs ({order(ahead_score)}), {by_measure[spec.a]:.3g} vs "
                     f"{by_measure[spec.b]:.3g} at {measure.split('.')[-1]}'s ({order(ahead_measure)})")
        if turned:
            flipped.append(where)
    if not shown:
        return "", ""
    seeds = sorted({int(s) for s in pd.concat([a, b])["seed"].dropna()})
    text = (f" The lrs were chosen on {SCORE_WORDS}; this part reads {MEASURE_WORDS.get(measure, measure)}. On the "
            f"selection seeds ({', '.join(map(str, seeds))}): " + "; ".join(shown) + ".")
    if not flipped:
        return "", text + (" The order of the arms is the same at either choice, or turns over by no more than δ "
                           "(the metric's smallest effect of interest).")
    note = (f"not testable here: lr chosen on {SCORE_WORDS}, the part reads {MEASURE_WORDS.get(measure, measure)}, "
            f"and on the selection seeds the arms' order on it turns over when each arm's lr is picked on it instead"
            f"{' (' + ', '.join(flipped) + ')' if any(flipped) else ''} — testable with each arm's lr selected on the part's measure "
            f"({MEASURE_WORDS.get(measure, measure)})")
    return note, text
