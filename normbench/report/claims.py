"""Claims from the normalization literature, checked against the runs at hand.

Each claim is a function from the runs table to a Verdict, registered with @claim. A verdict is
`supported` only when the 95% interval of its effect excludes "no effect" in the claimed
direction, `contradicted` when it excludes it the other way, `inconclusive` otherwise, and
`not applicable` when the runs lack the axes or values the claim is about. No arm with fewer than
two seeds can support or contradict anything.

Scores: the primary metric (best_val) of runs that trained; a diverged run scores the task's chance
level, because a claim like "Post-LN needs warm-up" is mostly about runs that blow up without it,
and dropping those would hide the effect. Effects on scores are oriented so positive = better,
whatever the task's direction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd

from normbench.report.aggregate import PRIMARY, TRAINED, format_value
from normbench.report.intervals import Estimate, combine, mean_estimate, proportion_difference, slope_estimate

SUPPORTED, CONTRADICTED, INCONCLUSIVE, NOT_APPLICABLE = (
    "supported", "contradicted", "inconclusive", "not applicable")
FINISHED = ("ok", "diverged")  # runs whose record says how training went
_FP16 = ("fp16", "float16", "half")
_RECURRENT_NAMES = ("lstm", "gru", "rnn")


@dataclass(frozen=True)
class Effect:
    label: str  # what the number is and which sign means what
    estimate: float
    interval: tuple[float, float] | None  # 95%; None when some arm has a single run
    null: float = 0.0  # the "no effect" value: 0 for differences, 1 for ratios


@dataclass
class Verdict:
    status: str
    effect: Effect | None
    n_per_arm: dict[str, int]
    evidence: pd.DataFrame
    explanation: str
    more_effects: list[Effect] = field(default_factory=list)


@dataclass(frozen=True)
class Claim:
    id: str
    statement: str
    citation: str
    check: Callable[[pd.DataFrame], Verdict]
    compare: tuple[str, ...] = ()  # the axes whose arms the claim contrasts
    pool: tuple[str, ...] = ()     # other axes the claim may average over (e.g. depth, for warm-up)


CLAIMS: list[Claim] = []


def claim(id: str, statement: str, citation: str, compare: tuple[str, ...] = (), pool: tuple[str, ...] = ()):
    def register(check: Callable[[pd.DataFrame], Verdict]) -> Callable[[pd.DataFrame], Verdict]:
        CLAIMS.append(Claim(id, statement, citation, check, compare, pool))
        return check
    return register


def settings(runs: pd.DataFrame, free: tuple[str, ...]) -> list[tuple[str, pd.DataFrame]]:
    """Runs split into settings that agree on every varying axis outside ``free`` (and the seed),
    most seeds (then most runs) first: a claim compares like with like, never a 4-step smoke run with a real one."""
    fixed = [c for c in runs.columns if c.startswith("axes.") and c.removeprefix("axes.") not in free
             and runs[c].astype(str).nunique() > 1]
    if not fixed:
        return [("", runs)]
    keys = runs[fixed].astype(str)
    groups = [(", ".join(f"{c.removeprefix('axes.')}={v}" for c, v in zip(fixed, key)), runs.loc[part.index])
              for key, part in keys.groupby(fixed, sort=True)]  # grouping by a list: keys are tuples
    return sorted(groups, key=lambda g: (-g[1]["seed"].nunique(), -len(g[1])))  # most evidence first


def _checked(registered: Claim, runs: pd.DataFrame) -> Verdict:
    try:
        return registered.check(runs)
    except Exception as error:  # noqa: BLE001 - reported in the verdict, not swallowed
        return Verdict(INCONCLUSIVE, None, {}, pd.DataFrame(),
                       f"The check itself failed ({type(error).__name__}: {error}).")


def evaluate_claims(runs: pd.DataFrame) -> list[tuple[Claim, Verdict]]:
    """Every registered claim, judged within each setting where it applies. The headline verdict
    is the largest such setting's; the others are listed with it, never averaged into it."""
    verdicts = []
    for registered in CLAIMS:
        applicable = [(name, verdict) for name, part in settings(runs, registered.compare + registered.pool)
                      if (verdict := _checked(registered, part)).status != NOT_APPLICABLE]
        if not applicable:
            verdict = _checked(registered, runs)
            if verdict.status != NOT_APPLICABLE:  # only a mix of settings has every arm: do not mix
                verdict = _not_applicable(
                    f"No single setting has every arm: the runs that differ only in "
                    f"{', '.join(registered.compare)} (and seed) do not cover the comparison.")
            verdicts.append((registered, verdict))
            continue
        (name, verdict), others = applicable[0], applicable[1:]
        where = f" Judged within {name}." if name else ""
        if others:
            shown = "; ".join(f"{n}: {v.status}" for n, v in others[:6])
            where += f" Other settings ({len(others)}): {shown}{' …' if len(others) > 6 else ''}."
        verdict.explanation += where
        verdicts.append((registered, verdict))
    return verdicts


# --- shared pieces ------------------------------------------------------------------------------

def _not_applicable(why: str) -> Verdict:
    return Verdict(NOT_APPLICABLE, None, {}, pd.DataFrame(), why)


def _axis(runs: pd.DataFrame, name: str) -> pd.Series:
    column = f"axes.{name}"
    return runs[column] if column in runs else pd.Series(None, index=runs.index, dtype=object)


def _metric(runs: pd.DataFrame, name: str) -> pd.Series:
    return runs[name].astype(float) if name in runs else pd.Series(np.nan, index=runs.index)


def _values_text(series: pd.Series) -> str:
    values = sorted({format_value(v) for v in series.tolist()})
    return "{" + ", ".join(values) + "}" if values else "none"


def _both(runs: pd.DataFrame, axis: str, a: str, b: str, whose: str = "the runs") -> tuple[pd.DataFrame, Verdict | None]:
    """The runs whose ``axis`` is ``a`` or ``b``, and a not-applicable verdict unless both occur."""
    values = _axis(runs, axis)
    kept = runs[values.isin([a, b])]
    if set(_axis(kept, axis)) != {a, b}:
        return kept, _not_applicable(f"Needs {axis} {a} and {b}; {whose} have {axis} ∈ {_values_text(values)}.")
    return kept, None


def _finished(runs: pd.DataFrame) -> pd.DataFrame:
    return runs[runs["status"].isin(FINISHED)]


def _one_task(runs: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """Metrics of different tasks are not comparable: use the task with the most runs."""
    tasks = runs["task.name"].value_counts()
    if len(tasks) <= 1:
        return runs, ""
    chosen = tasks.index[0]
    return runs[runs["task.name"] == chosen], f" Evaluated on task {chosen} (most runs); other tasks ignored."


def _pooled_note(runs: pd.DataFrame, used: tuple[str, ...]) -> str:
    pooled = [c.removeprefix("axes.") for c in runs.columns
              if c.startswith("axes.") and c.removeprefix("axes.") not in used and c != "axes.task"
              and runs[c].astype(str).nunique() > 1]
    return f" Pooled over {', '.join(pooled)}." if pooled else ""


def _score(runs: pd.DataFrame) -> pd.Series:
    """best_val for ok runs, the task's chance level for diverged ones (raw metric units)."""
    best = _metric(runs, PRIMARY)
    chance = _metric(runs, "task.chance")
    return best.where(runs["status"] == "ok", chance.where(runs["status"] == "diverged"))


def _direction(runs: pd.DataFrame) -> tuple[int, str]:
    higher = bool(runs["task.higher_is_better"].iloc[0]) if len(runs) else True
    metric = str(runs["task.metric"].iloc[0]) if "task.metric" in runs and len(runs) else "best_val"
    return (1 if higher else -1), metric


def _recurrent(runs: pd.DataFrame) -> pd.Series:
    """Recurrent runs: the runner reports gradient flow through time only for them."""
    model = _axis(runs, "model").astype(str).str.lower()
    named = model.map(lambda m: any(name in m for name in _RECURRENT_NAMES))
    return named | _metric(runs, "metrics.grad_time_ratio_init").notna()


def _arm_row(arm: str, runs: pd.DataFrame, measures: dict[str, pd.Series] | None = None) -> dict:
    """One evidence row: the arm's size, and mean / std of each measure over its runs."""
    row = {"arm": arm, "runs": int(len(runs)), "seeds": int(runs["seed"].nunique()),
           "diverged": int((runs["status"] == "diverged").sum())}
    for name, values in (measures or {}).items():
        finite = values.astype(float)
        finite = finite[np.isfinite(finite)]
        row[f"{name} mean"] = float(finite.mean()) if len(finite) else math.nan
        row[f"{name} std"] = float(finite.std()) if len(finite) > 1 else math.nan
    return row


def _effect(label: str, estimate: Estimate, sign: int = 1) -> Effect:
    interval = estimate.interval()
    if interval is not None and sign < 0:
        interval = (-interval[1], -interval[0])
    return Effect(label, sign * estimate.value, interval)


def _direction_of(effect: Effect | None, claimed: int) -> str:
    """supported / contradicted / inconclusive from an effect interval and the claimed sign."""
    if effect is None or effect.interval is None:
        return INCONCLUSIVE
    low, high = (v - effect.null for v in effect.interval)
    if claimed * low > 0 and claimed * high > 0:
        return SUPPORTED
    if claimed * low < 0 and claimed * high < 0:
        return CONTRADICTED
    return INCONCLUSIVE


def _seed_shortfall(arms: dict[str, pd.DataFrame]) -> str:
    short = [name for name, frame in arms.items() if frame["seed"].nunique() < 2]
    return f" Fewer than 2 seeds in {', '.join(short)}: cannot support or contradict." if short else ""


def _finish(status: str, effect: Effect | None, arms: dict[str, pd.DataFrame], evidence: list[dict],
            explanation: str, more: list[Effect] | None = None) -> Verdict:
    shortfall = _seed_shortfall(arms)
    if shortfall:
        status = INCONCLUSIVE
    if effect is not None and effect.interval is None:
        explanation += " The interval is undefined (an arm has a single run)."
    return Verdict(status, effect, {name: int(len(frame)) for name, frame in arms.items()},
                   pd.DataFrame(evidence), explanation + shortfall, more or [])


def _fmt(x: float) -> str:
    return format_value(float(x)) if isinstance(x, (int, float)) and math.isfinite(x) else "n/a"


# --- the claims ---------------------------------------------------------------------------------

@claim("ln_batch_robust",
       "LayerNorm is robust to batch size; BatchNorm degrades at small batch.",
       "Ba, Kiros & Hinton 2016, Layer Normalization, §6.6",
       compare=("norm", "batch_size"))
def ln_batch_robust(runs: pd.DataFrame) -> Verdict:
    runs = _finished(runs)
    runs, missing = _both(runs, "norm", "ln", "bn")
    if missing:
        return missing
    runs, task_note = _one_task(runs)
    batch = _axis(runs, "batch_size")
    shared = set(batch[_axis(runs, "norm") == "ln"].dropna()) & set(batch[_axis(runs, "norm") == "bn"].dropna())
    if len(shared) < 2:
        return _not_applicable(f"Needs at least 2 batch sizes run with both ln and bn; found "
                               f"{_values_text(pd.Series(sorted(shared)))}.")
    small, large = min(shared), max(shared)
    sign, metric = _direction(runs)
    arms, evidence, estimates = {}, [], {}
    for kind in ("bn", "ln"):
        for size in (large, small):
            name = f"{kind} @ batch {format_value(size)}"
            frame = runs[(_axis(runs, "norm") == kind) & (batch == size)]
            arms[name] = frame
            evidence.append(_arm_row(name, frame, {metric: _score(frame)}))
            estimates[(kind, size)] = mean_estimate(_score(frame))
    drop = {k: combine([(1, estimates[(k, large)]), (-1, estimates[(k, small)])]) for k in ("bn", "ln")}
    contrast = combine([(1, drop["bn"]), (-1, drop["ln"])])
    effect = _effect(f"BN's drop − LN's drop in {metric}, batch {format_value(large)} → "
                     f"{format_value(small)} (+ = BN degrades more)", contrast, sign)
    explanation = (f"Going from batch {format_value(large)} to {format_value(small)}, BN loses "
                   f"{_fmt(sign * drop['bn'].value)} and LN loses {_fmt(sign * drop['ln'].value)} "
                   f"{metric} (positive = worse). Diverged runs score chance."
                   + task_note + _pooled_note(runs, ("norm", "batch_size")))
    return _finish(_direction_of(effect, +1), effect, arms, evidence, explanation)


@claim("postln_needs_warmup",
       "Post-LN Transformers need learning-rate warm-up; Pre-LN ones do not.",
       "Xiong et al. 2020, On Layer Normalization in the Transformer Architecture, §3.2",
       compare=("placement", "warmup_steps"), pool=("layers",))
def postln_needs_warmup(runs: pd.DataFrame) -> Verdict:
    runs = _finished(runs)
    runs, missing = _both(runs, "placement", "pre", "post")
    if missing:
        return missing
    warmup = pd.to_numeric(_axis(runs, "warmup_steps"), errors="coerce")
    for where in ("pre", "post"):
        mine = warmup[_axis(runs, "placement") == where]
        if not ((mine == 0).any() and (mine > 0).any()):
            return _not_applicable(f"Needs warmup_steps = 0 and > 0 for placement {where}; found "
                                   f"{_values_text(mine.dropna())}.")
    runs, task_note = _one_task(runs)
    warmup = pd.to_numeric(_axis(runs, "warmup_steps"), errors="coerce")
    sign, metric = _direction(runs)
    arms, evidence, estimates = {}, [], {}
    for where in ("post", "pre"):
        for warm in (True, False):
            name = f"{where}, {'warm-up' if warm else 'no warm-up'}"
            frame = runs[(_axis(runs, "placement") == where) & ((warmup > 0) if warm else (warmup == 0))]
            arms[name] = frame
            evidence.append(_arm_row(name, frame, {metric: _score(frame)}))
            estimates[(where, warm)] = mean_estimate(_score(frame))
    gain = {w: combine([(1, estimates[(w, True)]), (-1, estimates[(w, False)])]) for w in ("post", "pre")}
    effect = _effect(f"Post-LN's gain from warm-up − Pre-LN's gain, in {metric} (+ = Post-LN needs it more)",
                     combine([(1, gain["post"]), (-1, gain["pre"])]), sign)
    explanation = (f"Warm-up changes Post-LN's {metric} by {_fmt(sign * gain['post'].value)} and Pre-LN's by "
                   f"{_fmt(sign * gain['pre'].value)} (positive = better with warm-up; all warm-up lengths > 0 "
                   f"pooled). Diverged runs score chance." + task_note + _pooled_note(runs, ("placement", "warmup_steps")))
    return _finish(_direction_of(effect, +1), effect, arms, evidence, explanation)


@claim("postln_grad_depth",
       "At initialization, Post-LN's last-layer gradient norm does not depend on depth; "
       "Pre-LN's shrinks with depth.",
       "Xiong et al. 2020, On Layer Normalization in the Transformer Architecture, Theorem 1",
       compare=("placement", "layers"), pool=("warmup_steps",))  # warm-up cannot change the gradient at init
def postln_grad_depth(runs: pd.DataFrame) -> Verdict:
    runs = runs[runs["status"].isin(TRAINED)]  # the gradient at init is measured before any of them stop
    model = _axis(runs, "model").astype(str).str.lower()
    transformer = runs[model.str.contains("transformer")]
    if transformer.empty:
        return _not_applicable(f"Needs model transformer; the runs have model ∈ {_values_text(_axis(runs, 'model'))}.")
    runs, missing = _both(transformer, "placement", "pre", "post", whose="the transformer runs")
    if missing:
        return missing
    norm = _metric(runs, "profiles.last_layer_grad_norm_init")
    runs = runs[norm > 0]
    layers = pd.to_numeric(_axis(runs, "layers"), errors="coerce")
    for where in ("pre", "post"):
        depths = layers[_axis(runs, "placement") == where].dropna()
        if depths.nunique() < 2:
            return _not_applicable(f"Needs at least 2 depths (layers) with a last-layer gradient norm at init "
                                   f"for placement {where}; found {_values_text(depths)}.")
    arms, evidence, slopes = {}, [], {}
    for where in ("pre", "post"):
        mine = runs[_axis(runs, "placement") == where]
        depth = pd.to_numeric(_axis(mine, "layers"), errors="coerce")
        grad = _metric(mine, "profiles.last_layer_grad_norm_init")
        slopes[where] = slope_estimate(np.log(depth), np.log(grad))
        for d in sorted(depth.dropna().unique()):
            name = f"{where}, {format_value(d)} layers"
            frame = mine[depth == d]
            arms[name] = frame
            row = _arm_row(name, frame, {"log10 grad norm": np.log10(grad[depth == d])})
            evidence.append({**row, "geometric mean grad norm": float(10.0 ** row["log10 grad norm mean"])})
    effect = _effect("slope of log(last-layer grad norm) on log(depth): Pre-LN − Post-LN (− = Pre-LN shrinks more)",
                     combine([(1, slopes["pre"]), (-1, slopes["post"])]))
    explanation = (f"Log-log slope of the last block's gradient norm at init against depth: Pre-LN "
                   f"{_fmt(slopes['pre'].value)}, Post-LN {_fmt(slopes['post'].value)} (theory: about −0.5 "
                   f"and 0)." + _pooled_note(runs, ("placement", "layers", "model")))
    return _finish(_direction_of(effect, -1), effect, arms, evidence, explanation)


@claim("gamma_small_flow",
       "A gain initialized at 0.1 keeps gradients flowing through time better than 1.0 in normalized "
       "recurrent cells; LayerNorm's accuracy is insensitive to the choice.",
       "Cooijmans et al. 2016, Recurrent Batch Normalization, §4; Ba, Kiros & Hinton 2016, §6.2",
       compare=("gamma_init",), pool=("norm",))
def gamma_small_flow(runs: pd.DataFrame) -> Verdict:
    runs = _finished(runs)
    recurrent = runs[_recurrent(runs) & (_axis(runs, "norm").astype(str) != "none")]
    if recurrent.empty:
        return _not_applicable(f"Needs a normalized recurrent model; the runs have model ∈ "
                               f"{_values_text(_axis(runs, 'model'))}, norm ∈ {_values_text(_axis(runs, 'norm'))}.")
    gamma = pd.to_numeric(_axis(recurrent, "gamma_init"), errors="coerce")
    small, unit = np.isclose(gamma, 0.1), np.isclose(gamma, 1.0)
    if not (small.any() and unit.any()):
        return _not_applicable(f"Needs gamma_init 0.1 and 1.0 in normalized recurrent runs; found "
                               f"{_values_text(gamma.dropna())}.")
    runs, task_note = _one_task(recurrent)
    gamma = pd.to_numeric(_axis(runs, "gamma_init"), errors="coerce")
    small, unit = np.isclose(gamma, 0.1), np.isclose(gamma, 1.0)
    # grad_time_ratio = log10(|dL/dh_1| / |dL/dh_T|): 0 is perfect flow; below is vanishing,
    # above exploding. Flow is scored as -|ratio| so both failures count against.
    flow = -_metric(runs, "metrics.grad_time_ratio_init").abs()
    arms = {"gamma 0.1": runs[small], "gamma 1.0": runs[unit]}
    evidence = [_arm_row(name, frame, {"flow score": flow[frame.index]}) for name, frame in arms.items()]
    effect = _effect("flow score −|grad_time_ratio_init|, gamma 0.1 − gamma 1.0 (+ = 0.1 flows better)",
                     combine([(1, mean_estimate(flow[small])), (-1, mean_estimate(flow[unit]))]))
    sign, metric = _direction(runs)
    ln = (_axis(runs, "norm") == "ln").to_numpy()
    more: list[Effect] = []
    if (ln & small).any() and (ln & unit).any():
        score = _score(runs)
        accuracy = _effect(f"LN {metric}, gamma 0.1 − gamma 1.0 (interval containing 0 = insensitive)",
                           combine([(1, mean_estimate(score[ln & small])), (-1, mean_estimate(score[ln & unit]))]),
                           sign)
        more.append(accuracy)
        for name, mask in (("LN gamma 0.1", ln & small), ("LN gamma 1.0", ln & unit)):
            evidence.append(_arm_row(name, runs[mask], {metric: score[mask]}))
        insensitive = accuracy.interval is not None and accuracy.interval[0] <= 0 <= accuracy.interval[1]
        accuracy_note = (f" LN's {metric} differs by {_fmt(accuracy.estimate)} between the two gains: "
                         + ("consistent with insensitivity." if insensitive else
                            "the interval excludes 0, so LN is not insensitive here." if accuracy.interval
                            else "interval undefined."))
    else:
        accuracy_note = " No LN runs at both gains, so the accuracy half is not checked."
    explanation = (f"Mean −|grad_time_ratio_init|: {_fmt(evidence[0]['flow score mean'])} at gamma 0.1, "
                   f"{_fmt(evidence[1]['flow score mean'])} at 1.0 (0 = no vanishing or exploding)." + accuracy_note
                   + task_note + _pooled_note(runs, ("gamma_init",)))
    return _finish(_direction_of(effect, +1), effect, arms, evidence, explanation, more)


@claim("fp16_small_eps_nonfinite",
       "In fp16, too small an epsilon makes the normalization produce non-finite values.",
       "Practice: fp16's smallest normal is 6.1e-5, so eps below it vanishes next to a tiny variance",
       compare=("eps", "precision"))
def fp16_small_eps_nonfinite(runs: pd.DataFrame) -> Verdict:
    runs = _finished(runs)
    precision = _axis(runs, "precision").astype(str).str.lower()
    half = runs[precision.isin(_FP16)]
    if half.empty:
        return _not_applicable(f"Needs precision fp16; the runs have precision ∈ {_values_text(_axis(runs, 'precision'))}.")
    eps = pd.to_numeric(_axis(half, "eps"), errors="coerce")
    if eps.nunique() < 2:
        return _not_applicable(f"Needs at least 2 eps values in fp16 runs; found {_values_text(eps.dropna())}.")
    smallest, largest = eps.min(), eps.max()
    arms = {f"eps {format_value(smallest)}": half[eps == smallest], f"eps {format_value(largest)}": half[eps == largest]}
    evidence = [{**_arm_row(name, frame), "divergence rate": float((frame["status"] == "diverged").mean())}
                for name, frame in arms.items()]
    (low, high) = arms.values()
    k1, n1 = int((low["status"] == "diverged").sum()), len(low)
    k2, n2 = int((high["status"] == "diverged").sum()), len(high)
    difference, interval = proportion_difference(k1, n1, k2, n2)
    effect = Effect(f"divergence rate at eps {format_value(smallest)} − at eps {format_value(largest)} "
                    f"(+ = small eps diverges more; Newcombe interval)", difference, interval)
    explanation = (f"fp16 runs diverged {k1}/{n1} times at eps {format_value(smallest)} and {k2}/{n2} at eps "
                   f"{format_value(largest)}." + _pooled_note(half, ("eps", "precision")))
    return _finish(_direction_of(effect, +1), effect, arms, evidence, explanation)


@claim("rms_faster_than_ln",
       "RMSNorm is faster than LayerNorm at equal accuracy.",
       "Zhang & Sennrich 2019, Root Mean Square Layer Normalization",
       compare=("norm",))
def rms_faster_than_ln(runs: pd.DataFrame) -> Verdict:
    runs = _finished(runs)
    runs, missing = _both(runs, "norm", "rms", "ln")
    if missing:
        return missing
    runs, task_note = _one_task(runs)
    rms, ln = (_axis(runs, "norm") == "rms"), (_axis(runs, "norm") == "ln")
    arms = {"rms": runs[rms], "ln": runs[ln]}
    log_ms = np.log(_metric(runs, "throughput.step_ms_median").where(lambda v: v > 0))
    speed = combine([(1, mean_estimate(log_ms[rms])), (-1, mean_estimate(log_ms[ln]))])
    interval = speed.interval()
    ratio = Effect("step-time ratio rms / ln (geometric mean of median step ms; < 1 = rms faster)",
                   math.exp(speed.value) if math.isfinite(speed.value) else math.nan,
                   (math.exp(interval[0]), math.exp(interval[1])) if interval else None, null=1.0)
    sign, metric = _direction(runs)
    score = _score(runs)
    accuracy = _effect(f"{metric}: rms − ln (+ = rms better)",
                       combine([(1, mean_estimate(score[rms])), (-1, mean_estimate(score[ln]))]), sign)
    evidence = []
    for name, frame in arms.items():
        row = _arm_row(name, frame, {metric: score[frame.index]})
        evidence.append({**row, "median step ms": float(_metric(frame, "throughput.step_ms_median").median())})
    faster = _direction_of(ratio, -1)
    worse = _direction_of(accuracy, +1) == CONTRADICTED
    if faster == CONTRADICTED or worse:
        status = CONTRADICTED
    elif faster == SUPPORTED:
        status = SUPPORTED
    else:
        status = INCONCLUSIVE
    devices = runs["environment.device_name"].dropna().unique() if "environment.device_name" in runs else []
    device_note = (f" Timed on {len(devices)} different devices, so the speed comparison mixes them."
                   if len(devices) > 1 else "")
    explanation = (f"RMSNorm's step takes {_fmt(ratio.estimate)}× LayerNorm's; {metric} differs by "
                   f"{_fmt(accuracy.estimate)} (positive favours rms). Supported only when rms is faster and "
                   f"not less accurate." + device_note + task_note + _pooled_note(runs, ("norm",)))
    return _finish(status, ratio, arms, evidence, explanation, [accuracy])


@claim("in_cell_most_stable",
       "In a recurrent net, LayerNorm inside the cell stabilizes training more than LayerNorm on the "
       "output only, which beats no normalization.",
       "Practice: gradient std ~1 vs >100 and kurtosis 3.2 vs 8.7 between in-cell and unnormalized cells",
       compare=("norm", "placement"))
def in_cell_most_stable(runs: pd.DataFrame) -> Verdict:
    runs = _finished(runs)
    recurrent = runs[_recurrent(runs)]
    if recurrent.empty:
        return _not_applicable(f"Needs a recurrent model; the runs have model ∈ {_values_text(_axis(runs, 'model'))}.")
    placement = _axis(recurrent, "placement").astype(str)
    norm = _axis(recurrent, "norm").astype(str)
    masks = {"in_cell": (placement == "in_cell") & (norm != "none"),
             "post": (placement == "post") & (norm != "none"),
             "none": norm == "none"}
    missing = [name for name, mask in masks.items() if not mask.any()]
    if missing:
        return _not_applicable(f"Needs recurrent runs with placement in_cell, placement post and norm none; "
                               f"missing {', '.join(missing)} (placements ∈ {_values_text(placement)}, "
                               f"norms ∈ {_values_text(norm)}).")
    runs, task_note = _one_task(recurrent)
    placement, norm = _axis(runs, "placement").astype(str), _axis(runs, "norm").astype(str)
    masks = {"in_cell": (placement == "in_cell") & (norm != "none"),
             "post": (placement == "post") & (norm != "none"),
             "none": norm == "none"}
    arms = {name: runs[mask] for name, mask in masks.items()}
    kurtosis = _metric(runs, "metrics.grad_kurtosis")
    log_max = np.log10(_metric(runs, "metrics.grad_norm_max").where(lambda v: v > 0))
    evidence = []
    for name, mask in masks.items():
        row = _arm_row(name, arms[name], {"grad kurtosis": kurtosis[mask]})
        evidence.append({**row, "median grad_norm_max": float(_metric(arms[name], "metrics.grad_norm_max").median())})

    def step(metric: pd.Series, worse: str, better: str, label: str) -> Effect:
        return _effect(label, combine([(1, mean_estimate(metric[masks[worse]])),
                                       (-1, mean_estimate(metric[masks[better]]))]))

    post_vs_cell = step(kurtosis, "post", "in_cell", "grad kurtosis: post − in_cell (+ = in-cell more stable)")
    none_vs_post = step(kurtosis, "none", "post", "grad kurtosis: none − post (+ = post beats none)")
    more = [none_vs_post,
            step(log_max, "post", "in_cell", "log10 grad_norm_max: post − in_cell (+ = in-cell calmer)"),
            step(log_max, "none", "post", "log10 grad_norm_max: none − post (+ = post calmer)")]
    verdicts = {_direction_of(post_vs_cell, +1), _direction_of(none_vs_post, +1)}
    status = (CONTRADICTED if CONTRADICTED in verdicts else
              SUPPORTED if verdicts == {SUPPORTED} else INCONCLUSIVE)
    explanation = (f"Mean gradient kurtosis (normal = 3): in_cell {_fmt(evidence[0]['grad kurtosis mean'])}, "
                   f"post {_fmt(evidence[1]['grad kurtosis mean'])}, none {_fmt(evidence[2]['grad kurtosis mean'])}. "
                   f"Supported when both steps of the ordering hold." + task_note
                   + _pooled_note(runs, ("placement", "norm")))
    return _finish(status, post_vs_cell, arms, evidence, explanation, more)
