"""The `faster` part: step times from a paired timing (bench arms) where one exists, else the
runs' own step times, with the disturbed runs (step-time p90/p10 past TIMING_NOISY) set aside."""

from __future__ import annotations

import math
import os

import numpy as np
import pandas as pd

from normbench.analysis.aggregate import format_value
from normbench.analysis.claims.comparison import Context, as_effect, lean_of, pct, side_of, undecided
from normbench.analysis.claims.vocabulary import (
    CONTRADICTED,
    INCONCLUSIVE,
    SUPPORTED,
    Effect,
    Part,
    PartSpec,
    is_missing,
    metric,
)
from normbench.analysis.intervals import combine, decision_level, mean_estimate
from normbench.records.metrics import TIMING_NOISY, path


def _timing(runs: pd.DataFrame) -> tuple[pd.Series, str]:
    """Which runs' step times can be compared: those whose p90/p10 shows no interference."""
    p10, p90 = metric(runs, path("step_ms_p10")), metric(runs, path("step_ms_p90"))
    if p10.isna().all() or p90.isna().all():
        return pd.Series(False, index=runs.index), (
            "the records carry no step-time spread (throughput.step_ms_p10/p90), so interference cannot be ruled out")
    quiet = (p90 / p10.where(p10 > 0)) <= TIMING_NOISY
    set_aside = int((~quiet).sum())
    return quiet, (f"runs were timed separately, not interleaved; {set_aside} run(s) whose step-time p90/p10 "
                   f"exceeds {TIMING_NOISY:g} (or is unknown) were set aside as disturbed" if set_aside else
                   f"runs were timed separately, not interleaved; every run's step-time p90/p10 is ≤ {TIMING_NOISY:g}")


def _paired_rounds(a: pd.DataFrame, b: pd.DataFrame, keys: tuple[str, ...]) -> tuple[np.ndarray, int, str]:
    """Per-round log step-time ratios a / b from a paired timing (python -m normbench.bench arms) that
    timed both arms in the same rounds: each group of a is paired with the group of b that shares its
    other settings (every axis but the arms' own keys), and the pairs' log ratios are averaged per round.
    (logs, pairs, source); logs empty when no such timing exists."""
    from normbench.analysis.speed import paired_timing

    timed = paired_timing(pd.concat([a, b]))
    if timed.empty:
        return np.array([]), 0, ""
    others = [c for c in a.columns if c.startswith("axes.") and c.removeprefix("axes.") not in keys]

    def setting(frame: pd.DataFrame) -> dict:
        first = frame.groupby("group", sort=False).first()
        return {g: tuple(None if is_missing(v) else format_value(v) for v in row) for g, row in first[others].iterrows()}

    def alike(x: tuple, y: tuple) -> bool:
        # a setting one arm lacks does not apply to it (DyT has no eps, RMSNorm no alpha_init): no difference
        return all(u is None or v is None or u == v for u, v in zip(x, y))

    sa, sb = setting(a), setting(b)
    best: tuple[np.ndarray, int, str] = (np.array([]), 0, "")
    for source, rows in timed.groupby("source", sort=False):
        rounds = {r.group: np.asarray(r.rounds_ms, float) for r in rows.itertuples()}
        pairs = [(ga, gb) for ga in sa if ga in rounds for gb in sb if gb in rounds and alike(sa[ga], sb[gb])]
        if not pairs or len({len(rounds[g]) for pair in pairs for g in pair}) != 1:
            continue
        logs = np.mean([np.log(rounds[ga] / rounds[gb]) for ga, gb in pairs], axis=0)
        if len(pairs) > best[1]:
            best = (logs, len(pairs), str(source))
    return best


def faster_part(spec: PartSpec, ctx: Context) -> Part:
    a, b, alpha = ctx.arms[spec.a], ctx.arms[spec.b], ctx.alpha
    logs, pairs, source = _paired_rounds(a, b, ctx.compare)
    if len(logs) >= 2:  # a paired timing: the arms interleaved in one process decide, not the runs' own clocks
        from normbench.analysis.speed import sign_test

        level = decision_level(alpha)
        signs = sign_test(logs, level)
        interval = (math.exp(signs.low), math.exp(signs.high)) if math.isfinite(signs.low) else None
        effect = Effect(f"step-time ratio {spec.a} / {spec.b} (median of per-round ratios, paired timing; < 1 = "
                        f"{spec.a} faster; {signs.below} of {len(logs)} rounds below 1; rounds "
                        f"{math.exp(min(logs)):.3g}–{math.exp(max(logs)):.3g})", math.exp(signs.median),
                        interval, 1.0, level)
        test = (f"{spec.a} vs {spec.b}: paired timing (bench arms: the arms' training steps interleaved in one process, "
                f"{len(logs)} rounds, {pairs} pair(s) of groups matched on their other settings), sign test at "
                f"α = {alpha:g} each way on the per-round log ratios ({pct(level)} order-statistic interval of the "
                f"median): a load spike is one round on one side, whatever its size.")
        status = (SUPPORTED if signs.p_below <= alpha else CONTRADICTED if signs.p_above <= alpha else INCONCLUSIVE)
        needed = signs.rounds_to_decide(alpha) if status == INCONCLUSIVE else None
        lean = lean_of(-signs.median, 1) if status == INCONCLUSIVE else None
        more = (f" `python -m normbench.bench arms SWEEP_DIR --rounds {needed}` times that many." if needed else "")
        return Part(spec.assertion, status, test, (effect,), (spec.a, spec.b), "", lean, needed, None,
                    f" Rounds, not seeds, are the replicates here ({_shown(source)}).{more}", needed_unit="timing rounds")
    both = pd.concat([a, b])
    quiet, timing_note = _timing(both)
    log_ms = np.log(metric(both, path("step_ms_median")).where(lambda v: v > 0)).where(quiet)
    devices = both["environment.device_name"].dropna().unique() if "environment.device_name" in both else []
    speed = combine([(1, mean_estimate(log_ms[a.index])), (-1, mean_estimate(log_ms[b.index]))])
    effect = as_effect(f"step-time ratio {spec.a} / {spec.b} (geometric mean of median step ms, undisturbed runs; "
                       f"< 1 = {spec.a} faster)", speed, alpha, exp=True)
    test = (f"{spec.a} vs {spec.b}: Welch t at α = {alpha:g} each way ({pct(decision_level(alpha))} interval) on log "
            f"median step time; {timing_note}"
            f"{'; timed on ' + str(len(devices)) + ' different devices' if len(devices) > 1 else ''}.")
    kept = {spec.a: int(log_ms[a.index].notna().sum()), spec.b: int(log_ms[b.index].notna().sum())}
    arms = (spec.a, spec.b)
    if len(devices) > 1:
        return Part(spec.assertion, INCONCLUSIVE, test, (effect,), arms, note=" Cannot be judged: the arms mix devices.")
    if min(kept.values()) < 2:
        total = {spec.a: len(a), spec.b: len(b)}
        return Part(spec.assertion, INCONCLUSIVE, test, (effect,), arms, note=(
            f" Cannot be judged: fewer than 2 undisturbed timings in an arm "
            f"({', '.join(f'{k}: {v} of {total[k]} runs' for k, v in kept.items())})."))
    status = side_of(effect, -1)
    lean, needed, mde = (undecided(speed, min(kept.values()), abs(speed.value), -speed.value, alpha)
                         if status == INCONCLUSIVE else (None, None, None))
    return Part(spec.assertion, status, test, (effect,), arms, "", lean, needed, mde)


def _shown(source: str) -> str:
    """The timing file as the reader can find it: relative to the folder the report was built in where it
    lies under it (a committed report names no machine's paths), else as given."""
    relative = os.path.relpath(os.path.abspath(source))
    return source if relative.startswith("..") else relative
