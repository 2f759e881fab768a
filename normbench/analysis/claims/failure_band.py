"""Which rule counts a run as failed, and whether a failure count hinges on the band that rule draws.

A failure-rate part (specs.fails_more_often) counts a run as failed when it diverged or its best evaluation gets
no farther than the metric's chance band (records/metrics.py: bpc 0.05) past chance or one of the task's trivial
solutions (rules.failed_to_learn: the unigram and bigram models of a character LM). The band is a declared
constant, and a run whose best evaluation ends near its edge is counted one way by it and the other way by a band
a little wider or narrower (referee 20, postln_fails_without_warmup: two Post-LN runs with warm-up 0.02 bpc past
the bigram count as failed, as runs.csv's metrics.failed_to_learn counts them; its chance-only metrics.at_chance
counts them as trained). So every such part prints the rule, the level each failed run is held at and how far
past it it got, the count by the chance band alone, and the count with the band moved by the metric's smallest
effect of interest each way (SHIFT). A decided part whose count moves with it is not testable here (engine: a
verdict a referee cannot sign when an arbitrary constant decides it); an undecided one says so beside its reading.
"""

from __future__ import annotations

import math

import pandas as pd

from normbench.analysis import rules
from normbench.records import metrics as metric_table

SHIFT = "the metric's smallest effect of interest"  # how far the band is moved each way, in words
LISTED = 6  # more failed runs than this in an arm are counted per level rather than listed


def _past(best: float, level: float, higher: bool, ratio: bool) -> float:
    """How far a best evaluation got past a level, on the band's scale (a ratio for a ratio metric); ≤ 0 (≤ 1
    for a ratio) when it did not get past it."""
    if ratio:
        return (best / level if higher else level / best) if best > 0 and level > 0 else math.nan
    return best - level if higher else level - best


def _levels(row: pd.Series) -> list[tuple[str, float]]:
    levels = [("chance", row.get("task.chance"))]
    levels += [(c.removeprefix(rules.TRIVIAL), row.get(c)) for c in row.index if str(c).startswith(rules.TRIVIAL)]
    return [(n, float(v)) for n, v in levels if v is not None and pd.notna(v) and math.isfinite(float(v))]


def held_at(row: pd.Series, band: float, found: metric_table.TaskMetric) -> tuple[str, float, float] | None:
    """(level name, its value, how far past it) of the level the run's best evaluation is held at under
    ``band`` (the worst one it does not get past by more than band), None where it gets past them all."""
    best = pd.to_numeric(pd.Series([row.get(metric_table.path(rules.SECONDARY))]), errors="coerce").iloc[0]
    if not math.isfinite(best):
        return None
    held = [(name, value, _past(best, value, found.higher_is_better, found.ratio)) for name, value in _levels(row)]
    held = [h for h in held if math.isfinite(h[2]) and h[2] <= band + 1e-12]
    if not held:
        return None
    return min(held, key=lambda h: h[1]) if found.higher_is_better else max(held, key=lambda h: h[1])


def failures(frame: pd.DataFrame, band: float, found: metric_table.TaskMetric) -> int:
    """The arm's failed runs under ``band``: diverged, or finished and held at chance or a trivial solution."""
    diverged = int((frame["status"] == "diverged").sum())
    finished = frame[frame["status"] == "ok"]
    return diverged + sum(held_at(row, band, found) is not None for _, row in finished.iterrows())


def moved(found: metric_table.TaskMetric) -> tuple[float, float]:
    """The band moved by the smallest effect of interest each way (a ratio band by its ratio, never below 1)."""
    band, step = found.chance_band, found.smallest_effect
    if found.ratio:
        return max(1.0, band / step), band * step
    return max(0.0, band - step), band + step


def _number(x: float) -> str:
    return f"{x:.3g}"


def reading(frames: dict[str, pd.DataFrame], runs: pd.DataFrame) -> tuple[str, bool]:
    """(text, hinges): the rule and each arm's failures with the level and distance, the chance-only count, the
    counts at the moved bands; ``hinges`` when a count moves with the band. ("", False) without a known metric."""
    name = str(runs["task.metric"].dropna().iloc[0]) if "task.metric" in runs and runs["task.metric"].notna().any() else ""
    found = rules.task_metric(name)
    if found is None:
        return "", False
    band, unit = found.chance_band, ("×" if found.ratio else "")
    narrow, wide = moved(found)
    shown_band = f"{unit}{band:g} {name}"
    levels = sorted({n for _, f in frames.items() for _, row in f.iterrows() for n, _ in _levels(row)})
    bits, hinges = [], False
    for arm, frame in frames.items():
        runs_held = []
        for _, row in frame[frame["status"] == "ok"].sort_values("seed").iterrows():
            held = held_at(row, band, found)
            if held is not None:
                short = held[2] < (1 if found.ratio else 0)
                past = (f"{unit}{_number(held[2])} past it" if found.ratio else
                        f"{_number(abs(held[2]))} {'short of' if short else 'past'} it")
                best = float(pd.to_numeric(row.get(metric_table.path(rules.SECONDARY)), errors="coerce"))
                runs_held.append(f"seed {int(row['seed'])} at {held[0]} ({_number(held[1])}: best {_number(best)}, "
                                 f"{past})")
        diverged = int((frame["status"] == "diverged").sum())
        counts = [failures(frame, b, found) for b in (band, narrow, wide)]
        chance_only = diverged + int(rules.at_chance(frame).sum())
        hinges |= len(set(counts)) > 1
        if len(runs_held) > LISTED:  # many runs (strata pooled): counted per level, not listed
            levels_held = [h.split(" at ", 1)[1].split(" (")[0] for h in runs_held]
            runs_held = [f"{levels_held.count(level)} held at {level}" for level in dict.fromkeys(levels_held)]
        bits.append(f"{arm} {counts[0]}/{len(frame)} failed" + (f" ({diverged} diverged)" if diverged else "")
                    + (f": {'; '.join(runs_held)}" if runs_held else "")
                    + f"; by the chance band alone {chance_only}/{len(frame)}"
                    + f"; with the band at {unit}{narrow:g} / {unit}{wide:g}: {counts[1]} / {counts[2]}")
    text = (f" Failure rule: a run fails when it diverged or its best evaluation gets no more than {shown_band} past "
            f"chance or a trivial solution of the task ({', '.join(levels)}; rules.failed_to_learn). "
            + ". ".join(bits) + f". The band moved by {SHIFT} each way ({unit}{narrow:g}, {unit}{wide:g}) "
            + ("changes a count: the part hinges on the band." if hinges else "changes no count."))
    return text, hinges
