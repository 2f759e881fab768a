"""Where a comparison can show an effect: the regime gates, and the scale a verdict is about.

A comparison can only show a difference where its arms have room to differ. Before a claim part or
an answer is judged, the records of the arms it compares (two or more arms inside one study and one
setting) are checked against five gates; a part that fails one reads **not testable here** (the
status ``NOT_TESTABLE`` of analysis/claims/vocabulary.py) with the reason and what would make it
testable, never "contradicted", and never advice to buy seeds: more seeds of a setup that cannot
show an effect decide nothing.

=================  ===========================================================  =====================
gate               rule (from the records), checked in this order               testable with
=================  ===========================================================  =====================
on a trivial       every arm's finished-run mean sits within the metric's       the change that takes
plateau            chance band of one of the task's trivial solutions (the      the task off that
                   record's task.trivial: mqar's any value from the context,    plateau (TRIVIAL_REMEDY:
                   a character model's unigram or bigram model, a               mqar: a set-up where
                   classifier's majority class; rules.sits_on), the same one    recall is learned; a
                   for every arm                                                character model: more
                                                                                steps or a larger model)
at chance          every arm's finished runs have a mean primary score on       more steps or an
                   chance's side of the metric's chance band                    easier task
                   (rules.chance_limit, the band of rules.at_chance); an arm
                   with no finished run learned nothing either
at ceiling         every arm's finished-run mean lies within the metric's       a harder task (longer
                   smallest effect of interest of its best possible value       sequences, more keys)
                   (rules.ceiling_limit: accuracy ≥ 1 − 0.01, bits/char ≤ 0.02;
                   MSE, compared as a ratio, below RATIO_CEILING × chance) and
                   no run of any arm failed (a divergence rate could still
                   tell them apart)
still improving    in some arm, more than half of the finished runs whose       a learning rate that
                   curves can be read are still improving: their last           decays to the end
                   evaluation beats the best of the earlier evaluations in the  (optim.schedule=cosine)
                   final FINAL_SHARE (25%) of the run (or, with none there, the  where the runs kept
                   one before it) by more than the smallest effect of interest  one, or more steps (at
                   (on the compared scale: a ratio for MSE). Where the primary  least twice the steps
                   score is final_val_smoothed, the curve read is the same      run)
                   smoothed one: each evaluation the mean of the last 3
confounded         the arms differ in steps, examples seen (steps ×             equal steps and data
                   batch_size), or a task or data setting (axes.task*,
                   task.seq_len, task.n_train ...), and that quantity is none
                   of the claim's own axes (the arms' selector keys, the axes
                   tied to them, the axes it pools over; examples seen is
                   the claim's own when steps or batch_size is)
=================  ===========================================================  =====================

Which gates apply to which part kind (GATES) — a gate applies where its regime takes the question's
information away:

=====================================  ===================================================
part kind                              gates
=====================================  ===================================================
better, not_worse, equivalent, grows   on a trivial plateau, at chance, at ceiling, still
(on the task's own score)              improving, confounded (two arms both at chance or
                                       both at ceiling are "equal" without information:
                                       equivalence and non-inferiority are gated too)
better, not_worse, equivalent on       confounded (a gradient or a probe has no chance
another measure                        band and no ceiling)
converges_faster                       on a trivial plateau (reaching a shortcut sooner is
                                       trainability, not the task), at chance, confounded
                                       (a convergence question is about the curve, not its
                                       end: never "still improving"; two arms at the ceiling
                                       can still get there at different speeds)
more_stable, higher_rate, ratio,       confounded (stability, divergence or failure rates and
slope, faster                          gradients at initialization do not need learning)
=====================================  ===================================================

A kind not in the table (a new one) gets the confounded gate only.

Still improving gates every arm alike, the one ahead included: a lead measured while an arm is still
improving is a gap between two points of moving curves (at a constant lr, often one iterate's noise), not
a property of the arms, and more steps could move either (referee 19: a "leader" exemption let a last-
iterate ×0.318 read supported where the mean of the last 3 evaluations gave ×0.56 [0.14, 2.27]).

Answers (report/answers.py) gate each comparison of a study's ranking by on a trivial plateau, at
chance, at ceiling and still improving, and (decisions.untrained_arm) by an arm that did not train at its tuned
lr; a ranking compares the study's own configurations, so its
arms differing in a swept setting is its design, not a confound.

The scale. ``scale(runs)`` and ``scale_text(runs)`` state what a verdict was measured at: the
models' parameter counts (the record's ``parameters``), the steps, the examples seen and the
device, e.g. "measured at 52k parameters, 600 steps, 19k examples, CPU; a verdict about this scale,
not the paper's". Every claim verdict carries it (Verdict.scale) and so does every answer.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd

from normbench.analysis import rules
from normbench.records.convergence import FINAL_EVALS, trailing_means
from normbench.records.metrics import SMOOTHED_SCORE as SMOOTHED

AT_CHANCE, AT_CEILING, STILL_IMPROVING, CONFOUNDED = "at chance", "at ceiling", "still improving", "confounded"
ON_PLATEAU = "on a trivial plateau"
SCORE_GATES = (ON_PLATEAU, AT_CHANCE, AT_CEILING, STILL_IMPROVING, CONFOUNDED)
GATES: dict[str, tuple[str, ...]] = {
    "better": SCORE_GATES, "not_worse": SCORE_GATES, "equivalent": SCORE_GATES, "grows": SCORE_GATES,
    "converges_faster": (ON_PLATEAU, AT_CHANCE, CONFOUNDED), "converges_grows": (ON_PLATEAU, AT_CHANCE, CONFOUNDED),
    "more_stable": (CONFOUNDED,), "higher_rate": (CONFOUNDED,), "ratio": (CONFOUNDED,), "slope": (CONFOUNDED,),
    "faster": (CONFOUNDED,),
}
ANSWER_GATES = (ON_PLATEAU, AT_CHANCE, AT_CEILING, STILL_IMPROVING)
FINAL_SHARE = rules.FINAL_SHARE
REMEDY = {AT_CHANCE: "more steps or an easier task",
          AT_CEILING: "a harder task (longer sequences, more keys or a smaller model)",
          CONFOUNDED: "equal steps and data: arms that differ only in what the claim is about"}
# What takes a task off each trivial plateau (the names normbench/tasks/trivial.py and the tasks give);
# a plateau not named here gets the last entry.
TRIVIAL_REMEDY = {
    "any value from the context": "a set-up where recall is learned, found by pilot (a smaller learning rate, "
                                  "more steps or fewer key-value pairs)",
    "unigram model": "more steps or a larger model (past character frequencies)",
    "bigram model": "more steps or a larger model (past which character follows which)",
    "majority class": "more steps, a larger model or an easier task (fewer, more distinct classes)",
    None: "more steps or an easier task",
}


@dataclass(frozen=True)
class Gate:
    """Why a comparison cannot show an effect here, and what would let it."""

    kind: str    # AT_CHANCE, AT_CEILING, STILL_IMPROVING, CONFOUNDED
    reason: str  # "every arm is at chance (ln: mean 0.1 …)"
    remedy: str  # "more steps or an easier task"

    @property
    def text(self) -> str:
        return f"not testable here: {self.reason} — testable with {self.remedy}"


def gates_for(kind: str, task_score: bool = True) -> tuple[str, ...]:
    """The gates a part of ``kind`` is subject to (GATES); on a measure other than the task's own
    score, only the confound."""
    found = GATES.get(kind, (CONFOUNDED,))
    return found if task_score else tuple(g for g in found if g == CONFOUNDED)


# --- the task -----------------------------------------------------------------------------------

def _task(runs: pd.DataFrame) -> tuple[str, bool, float | None]:
    name = str(runs["task.metric"].dropna().iloc[0]) if "task.metric" in runs and runs["task.metric"].notna().any() else ""
    higher = bool(runs["task.higher_is_better"].iloc[0]) if "task.higher_is_better" in runs and len(runs) else True
    found = rules.task_metric(name)
    if found is not None:
        higher = found.higher_is_better
    chance = pd.to_numeric(runs.get("task.chance", pd.Series(np.nan, index=runs.index)), errors="coerce").dropna()
    return name, higher, (float(chance.iloc[0]) if len(chance) else None)


def _fmt(x: float) -> str:
    return f"{x:.3g}" if math.isfinite(x) else "n/a"


def _finished_mean(frame: pd.DataFrame, score: str) -> float:
    values = pd.to_numeric(frame[score], errors="coerce").where(frame["status"] == "ok") if score in frame \
        else pd.Series(dtype=float)
    values = values.dropna()
    return float(values.mean()) if len(values) else math.nan


# --- the gates ----------------------------------------------------------------------------------

def _every_arm(arms: Mapping[str, pd.DataFrame], runs: pd.DataFrame, reading) -> list[str] | None:
    """"ARM: what it reads" for every arm, or None as soon as one arm's ``reading(frame, mean)`` is None
    (that arm is not in the regime); ``mean`` is the arm's finished-run mean of the primary score."""
    score, shown = rules.primary_column(runs), []
    for arm, frame in arms.items():
        text = reading(frame, _finished_mean(frame, score))
        if text is None:
            return None
        shown.append(f"{arm}: {text}")
    return shown


def at_chance(arms: Mapping[str, pd.DataFrame], runs: pd.DataFrame) -> Gate | None:
    name, higher, chance = _task(runs)
    limit = rules.chance_limit(name, chance)
    if limit is None or not arms:
        return None

    def reading(frame, mean):  # an arm with no finished run counts as at chance
        if not math.isfinite(mean):
            return "no run finished"
        return None if (mean > limit if higher else mean < limit) else f"mean {_fmt(mean)}"
    shown = _every_arm(arms, runs, reading)
    return None if shown is None else Gate(
        AT_CHANCE, f"every arm is at chance ({'; '.join(shown)}; chance {_fmt(chance)}, the chance band ends at "
                   f"{_fmt(limit)} {name})", REMEDY[AT_CHANCE])


def at_ceiling(arms: Mapping[str, pd.DataFrame], runs: pd.DataFrame) -> Gate | None:
    name, higher, chance = _task(runs)
    limit = rules.ceiling_limit(name, chance)
    if limit is None or not arms:
        return None

    def reading(frame, mean):  # a failed run shows room below the ceiling
        below = not math.isfinite(mean) or (mean < limit if higher else mean > limit) or rules.failed(frame).any()
        return None if below else f"mean {_fmt(mean)}"
    shown = _every_arm(arms, runs, reading)
    return None if shown is None else Gate(
        AT_CEILING, f"every arm is at the ceiling ({'; '.join(shown)}; within {rules.ceiling_words(name)} of the best "
                    f"possible {_fmt(rules.best_value(name))} {name}, no run failed)", REMEDY[AT_CEILING])


def _plateau_values(frame: pd.DataFrame) -> dict[str, float]:
    """{trivial solution: its value} of one arm's runs (the first recorded value of each)."""
    out = {}
    for column in rules.trivial_columns(frame):
        values = pd.to_numeric(frame[column], errors="coerce").dropna()
        if len(values):
            out[column.removeprefix(rules.TRIVIAL)] = float(values.iloc[0])
    return out


def _held(frame: pd.DataFrame, plateau: str) -> int:
    """Finished runs of one arm whose best evaluation is held at ``plateau`` (rules.plateaus)."""
    return int(((rules.plateaus(frame) == plateau) & (frame["status"] == "ok")).sum())


def on_plateau(arms: Mapping[str, pd.DataFrame], runs: pd.DataFrame) -> Gate | None:
    """Every arm's finished-run mean sits on one and the same trivial solution of the task (rules.sits_on)."""
    name, _, _ = _task(runs)
    if not arms or rules.task_metric(name) is None:
        return None
    score = rules.primary_column(runs)
    per_arm = {arm: (_finished_mean(frame, score), _plateau_values(frame)) for arm, frame in arms.items()}
    names = [n for n in dict.fromkeys(k for _, found in per_arm.values() for k in found)]
    for plateau in names:
        if all(plateau in found and rules.sits_on(mean, name, found[plateau]) for mean, found in per_arm.values()):
            values = "/".join(_fmt(v) for v in sorted({found[plateau] for _, found in per_arm.values()}))
            shown = "; ".join(f"{arm}: mean {_fmt(per_arm[arm][0])}, {_held(frame, plateau)} of "
                              f"{int((frame['status'] == 'ok').sum())} finished runs held at it"
                              for arm, frame in arms.items())
            band = f"{'×' if rules.ratio_scale(name) else ''}{rules.plateau_band(name):g}"
            return Gate(ON_PLATEAU, f"on the task's trivial plateau {plateau} ({values} {name}; {shown}; "
                                    f"every arm within {band} of it)", TRIVIAL_REMEDY.get(plateau, TRIVIAL_REMEDY[None]))
    # arms on different trivial solutions compare two trivial solutions, not the arms (warmup_depth: Post-LN
    # at the unigram model's bpc without warm-up, at the bigram model's with it): every arm that gets
    # beyond none of its task's trivial solutions (rules.not_beyond, by more than the band) gates too
    def trivial(mean: float, found: dict[str, float]) -> tuple[str, str] | None:
        on = [k for k, v in found.items() if rules.sits_on(mean, name, v)]
        if on:
            return on[0], "at"
        below = [k for k, v in found.items() if rules.not_beyond(mean, name, v)]
        return (below[0], "at or below") if below else None

    held = {arm: trivial(mean, found) for arm, (mean, found) in per_arm.items()}
    if held and all(held.values()):
        best = held[next(iter(held))][0]
        shown = "; ".join(f"{arm}: mean {_fmt(per_arm[arm][0])}, {held[arm][1]} the {held[arm][0]} "
                          f"({_fmt(per_arm[arm][1][held[arm][0]])})" for arm in arms)
        band = f"{'×' if rules.ratio_scale(name) else ''}{rules.plateau_band(name):g}"
        return Gate(ON_PLATEAU, f"every arm at or below one of the task's trivial solutions ({shown}; none beyond "
                                f"it by more than {band} {name}): the arms differ at most in which trivial solution "
                                f"they reached", TRIVIAL_REMEDY.get(best, TRIVIAL_REMEDY[None]))
    return None


def improving(frame: pd.DataFrame, runs: pd.DataFrame, curves: pd.DataFrame | None = None) -> tuple[int, int, int]:
    """(runs still improving, runs whose curves could be read, the most steps run) of one arm's finished runs
    (the rule in the module docstring)."""
    name, higher, _ = _task(runs)
    delta, _ = rules.margin(name)
    finished = frame[frame["status"] == "ok"]
    if "run_dir" not in finished or finished.empty:
        return 0, 0, 0
    dirs = finished["run_dir"].dropna().astype(str)
    if curves is None:
        curves = read_evals(dirs)
    sign = 1.0 if higher else -1.0
    smoothed = rules.primary(runs) == SMOOTHED  # the gate reads the curve the score reads
    still = seen = longest = 0
    for run_dir, evals in curves[curves["run_dir"].isin(set(dirs))].groupby("run_dir"):
        evals = evals.sort_values("step")
        raw = evals["val_metric"].to_numpy(float)
        values = rules.to_scale(np.array(trailing_means(list(raw))) if smoothed else raw, name)
        steps = evals["step"].to_numpy(float)
        keep = np.isfinite(values)
        values, steps = values[keep], steps[keep]
        if len(values) < 2:
            continue
        seen += 1
        last = steps[-1]
        longest = max(longest, int(last))
        window = values[:-1][steps[:-1] >= (1 - FINAL_SHARE) * last]
        earlier = (window.max() if higher else window.min()) if len(window) else values[-2]
        if sign * (values[-1] - earlier) > delta:
            still += 1
    return still, seen, longest


def read_evals(run_dirs) -> pd.DataFrame:
    """The eval lines (run_dir, step, val_metric) of the runs' metrics.jsonl; empty when none can be read.
    Each file is read once per version (its size and modification time): every claim and setting asks."""
    frames = []
    for run_dir in dict.fromkeys(map(str, run_dirs)):
        path = Path(run_dir) / "metrics.jsonl"
        try:
            found = path.stat()
        except OSError:
            continue
        frames.append(_evals_of(run_dir, found.st_mtime_ns, found.st_size))
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["run_dir", "step", "val_metric"])


@functools.lru_cache(maxsize=4096)
def _evals_of(run_dir: str, mtime_ns: int, size: int) -> pd.DataFrame:
    from normbench.records.reading import read_curves  # the record reader: analysis may read records

    curves = read_curves([run_dir])
    return curves.loc[curves["kind"] == "eval", ["run_dir", "step", "val_metric"]].reset_index(drop=True)


def still_improving(arms: Mapping[str, pd.DataFrame], runs: pd.DataFrame,
                    curves: pd.DataFrame | None = None) -> Gate | None:
    """The gate when some arm is still improving, whichever arm it is (the module docstring: no leader is
    exempt)."""
    if curves is None:
        dirs = pd.concat(list(arms.values()))["run_dir"] if arms and "run_dir" in runs else []
        curves = read_evals(list(pd.Series(dirs).dropna()))
    if curves.empty:
        return None
    name = _task(runs)[0]
    _, delta_text = rules.margin(name)
    shown, longest, constant = [], 0, False
    for arm, frame in arms.items():
        # an arm pooled over settings (lengths, depths) is judged in each: half its runs still improving at one
        # length is not made whole by the runs of another that had levelled off (bn_masked_varlen read 3 of 6)
        parts = (list(frame.groupby("group", sort=True)) if "group" in frame and frame["group"].nunique() > 1
                 else [(None, frame)])
        for group, rows in parts:
            still, seen, steps = improving(rows, runs, curves)
            longest = max(longest, steps)
            if seen and still > seen / 2:
                shown.append(f"{arm}{f' at {group}' if group is not None else ''}: {still} of {seen} runs")
                constant = constant or _constant_lr(rows)
    if not shown:
        return None
    curve = (f"a mean of their last {FINAL_EVALS} evaluations" if rules.primary(runs) == SMOOTHED
             else "a last evaluation")
    earlier = "earlier means" if rules.primary(runs) == SMOOTHED else "earlier evaluations"
    more = f"more steps (at least {2 * longest})"
    return Gate(STILL_IMPROVING,
                f"still improving at the end ({'; '.join(shown)} end with {curve} better than the best of "
                f"their final {FINAL_SHARE:.0%}'s {earlier} by more than {delta_text}), so final quality "
                f"is not yet a property of the arm",
                f"a learning rate that decays to the end (optim.schedule=cosine) or {more}" if constant else more)


def _constant_lr(frame: pd.DataFrame) -> bool:
    """Whether some of an arm's runs kept one learning rate to the end (optim.schedule constant, the default)."""
    column = "axes.optim.schedule"
    if column not in frame:
        return True  # a record from before the setting, or one that did not record it: the default, constant
    return bool((frame[column].fillna("constant").astype(str) == "constant").any())


def _quantities(frame: pd.DataFrame) -> dict[str, pd.Series]:
    """What a comparison about the norm must hold fixed, per run: steps, examples seen, task and data settings."""
    out: dict[str, pd.Series] = {}
    steps = pd.to_numeric(frame["axes.steps"], errors="coerce") if "axes.steps" in frame else None
    if steps is not None:
        out["steps"] = steps
        if "axes.batch_size" in frame:
            out["examples seen"] = steps * pd.to_numeric(frame["axes.batch_size"], errors="coerce")
    for column in frame.columns:  # the axes first; a recorded task fact only where no axis names it
        if column == "axes.task" or column.startswith("axes.task."):
            out[column.removeprefix("axes.")] = frame[column]
    for column in _TASK_FACTS:
        if column in frame and column not in out and not (column == "task.name" and "task" in out):
            out[column] = frame[column]
    return out


_TASK_FACTS = ("task.name", "task.seq_len", "task.n_train", "task.n_val", "task.n_test")


def _own(quantity: str, own: tuple[str, ...]) -> bool:
    """Whether the claim itself varies ``quantity``: examples seen through steps or batch_size, every task
    setting through any task axis (a harder length changes the recorded sequence length with it)."""
    if quantity == "examples seen":
        return any(n in own for n in ("steps", "batch_size"))
    if quantity.startswith("task"):
        return any(n == "task" or n.startswith("task.") for n in own)
    return quantity in own


def confounded(arms: Mapping[str, pd.DataFrame], own: tuple[str, ...] = ()) -> Gate | None:
    """The arms differ in steps, examples seen or a task setting that is none of ``own`` (the claim's axes)."""
    if len(arms) < 2:
        return None
    per_arm = {arm: _quantities(frame) for arm, frame in arms.items()}
    keys = dict.fromkeys(k for q in per_arm.values() for k in q)
    differ = []
    for key in keys:
        if _own(key, own):
            continue
        values = {arm: frozenset(_text(v) for v in q[key].dropna()) for arm, q in per_arm.items() if key in q}
        values = {arm: v for arm, v in values.items() if v}
        if len(values) >= 2 and len(set(values.values())) > 1:
            differ.append(f"{key}: " + "; ".join(f"{arm} {'/'.join(sorted(v))}" for arm, v in values.items()))
    if not differ:
        return None
    return Gate(CONFOUNDED, f"the arms differ in more than the claim is about ({' — '.join(differ)})", REMEDY[CONFOUNDED])


def _text(value) -> str:
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        number = float(value)
        return f"{number:.6g}" if math.isfinite(number) else str(number)
    return str(value)


def check(arms: Mapping[str, pd.DataFrame], runs: pd.DataFrame, gates: tuple[str, ...] = SCORE_GATES,
          own: tuple[str, ...] = (), curves: pd.DataFrame | None = None) -> Gate | None:
    """The first gate of ``gates`` (in that order) the arms fail, or None: the comparison can show an effect."""
    arms = {name: frame for name, frame in arms.items() if frame is not None}
    for gate in gates:
        found = (at_chance(arms, runs) if gate == AT_CHANCE else on_plateau(arms, runs) if gate == ON_PLATEAU
                 else at_ceiling(arms, runs) if gate == AT_CEILING
                 else still_improving(arms, runs, curves) if gate == STILL_IMPROVING
                 else confounded(arms, own) if gate == CONFOUNDED else None)
        if found is not None:
            return found
    return None


# --- the scale ----------------------------------------------------------------------------------

def _counts(values: pd.Series) -> tuple[float, float] | None:
    values = pd.to_numeric(values, errors="coerce").dropna()
    return (float(values.min()), float(values.max())) if len(values) else None


def scale(runs: pd.DataFrame) -> dict:
    """What the runs were measured at: {"parameters", "steps", "examples", "length"} (the task's sequence
    length): (min, max) or None when not recorded; "tasks" and "device": their names, sorted."""
    steps = pd.to_numeric(runs["axes.steps"], errors="coerce") if "axes.steps" in runs else pd.Series(dtype=float)
    batch = pd.to_numeric(runs["axes.batch_size"], errors="coerce") if "axes.batch_size" in runs else pd.Series(dtype=float)
    devices = sorted({str(d) for d in runs["environment.device"].dropna()}) if "environment.device" in runs else []
    length = pd.to_numeric(runs["task.seq_len"], errors="coerce") if "task.seq_len" in runs else pd.Series(dtype=float)
    return {"parameters": _counts(runs["parameters"]) if "parameters" in runs else None,
            "steps": _counts(steps), "examples": _counts(steps * batch) if len(batch) else None,
            "tasks": sorted({str(t) for t in runs["task.name"].dropna()}) if "task.name" in runs else [],
            "length": _counts(length) if length.notna().any() else None, "device": devices,
            "models": _models(runs)}


def _models(runs: pd.DataFrame) -> list[str]:
    """The models the runs are ("1-layer LSTM", "8-layer Transformer"), sorted: what a paper's setup differs in
    beside the scale (referee 17: an in-cell BN LSTM read against the paper's MLP without a word)."""
    if "axes.model" not in runs:
        return []
    names = {"rnn": "tanh RNN", "lstm": "LSTM", "gru": "GRU", "transformer": "Transformer"}
    layers = runs["axes.layers"] if "axes.layers" in runs else pd.Series(None, index=runs.index)
    found = {(f"{int(n)}-layer " if pd.notna(n) and float(n).is_integer() else "") + names.get(str(m), str(m))
             for m, n in zip(runs["axes.model"], layers) if pd.notna(m)}
    return sorted(found)


def _compact(x: float) -> str:
    for size, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= size:
            return f"{x / size:.3g}{unit}"
    return f"{x:.3g}"


def _span(found: tuple[float, float] | None, words: str) -> str:
    if found is None:
        return f"{words} not recorded"
    low, high = _compact(found[0]), _compact(found[1])
    return f"{low} {words}" if low == high else f"{low}–{high} {words}"  # alike as printed: one number


def scale_text(runs: pd.DataFrame) -> str:
    """"measured at 52k parameters, 600 steps, 19.2k examples, adding at sequence length 64, CPU; a verdict about
    this scale, not the paper's" (the task and its length where the records say)."""
    found = scale(runs)
    device = "/".join(d.upper() if d in ("cpu", "cuda", "mps") else d for d in found["device"]) or "device not recorded"
    task = "/".join(found["tasks"])  # the task and its sequence length: what a paper's setup differs in first
    if task and found["length"] is not None:
        task += f" at sequence length {_span(found['length'], '').strip()}"
    return (f"measured at {_span(found['parameters'], 'parameters')}, {_span(found['steps'], 'steps')}, "
            f"{_span(found['examples'], 'examples')}, " + (f"{task}, " if task else "")
            + (f"{' / '.join(found['models'])}, " if found["models"] else "")
            + f"{device}; a verdict about this scale, not the paper's")
