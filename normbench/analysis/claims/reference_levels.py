"""Where each arm ended against its task's reference levels (the trivial solutions a task declares: a character
LM's unigram and bigram models, normbench/tasks/trivial.py), said in every verdict on such a task, whatever its
status: a gate that makes a part not testable must not hide that one arm sat exactly at the unigram model while
the other got past the bigram (referee 20 on postln_needs_warmup: the paper's failure signature, never printed).

A run is *at* a level when its final score lies within the metric's chance band of it (rules.sits_on), *past* it
when it is better by more than the band, *short of* every level when it is worse than the worst by more; each
run is read against the best level it reached. Per arm: how many seeds ended where, their scores' range and the
level's range (the levels are computed per run's data)."""

from __future__ import annotations

import math

import pandas as pd

from normbench.analysis import rules
from normbench.analysis.claims.vocabulary import metric


def _number(x: float) -> str:
    return f"{x:.4g}"


def _where(value: float, levels: list[tuple[str, float]], name: str, higher: bool) -> tuple[str, str]:
    """(how the run relates to it, the level's name) for the best level the run reached, levels best-first."""
    for level, at in levels:
        if rules.sits_on(value, name, at):
            return "at", level
        if (value > at) == higher:
            return "past", level
    return "short of", levels[-1][0]


def text(frames: dict[str, pd.DataFrame], runs: pd.DataFrame) -> str:
    """One sentence, "" where the task declares no reference level or the metric is unknown."""
    columns = [c for c in rules.trivial_columns(runs) if metric(runs, c).notna().any()]
    name = str(runs["task.metric"].dropna().iloc[0]) if "task.metric" in runs and runs["task.metric"].notna().any() else ""
    found = rules.task_metric(name)
    if not columns or found is None:
        return ""
    score = rules.primary_column(runs)
    higher = found.higher_is_better
    arms = []
    for arm, frame in frames.items():
        groups: dict[tuple[str, str], list[tuple[float, float]]] = {}
        diverged = int((frame["status"] == "diverged").sum())
        for index in frame.index[frame["status"] == "ok"]:
            value = float(pd.to_numeric(frame.at[index, score], errors="coerce")) if score in frame else math.nan
            levels = [(c.removeprefix(rules.TRIVIAL), float(v)) for c in columns
                      if math.isfinite(v := float(pd.to_numeric(frame.at[index, c], errors="coerce")))]
            if not math.isfinite(value) or not levels:
                continue
            levels.sort(key=lambda lv: lv[1], reverse=higher)  # best first
            how, level = _where(value, levels, name, higher)
            groups.setdefault((how, level), []).append((value, dict(levels)[level]))
        seeds = int(frame["seed"].nunique())
        said = [f"{f'short of every level (the worst: {level})' if how == 'short of' else f'{how} the {level}'} in "
                f"{len(pairs)}/{len(frame)} runs ({_range([v for v, _ in pairs])} vs "
                f"{_range([lv for _, lv in pairs])})" for (how, level), pairs in groups.items()]
        said += [f"diverged in {diverged}/{len(frame)}"] if diverged else []
        if said:
            arms.append(f"{arm}: {', '.join(said)}" + (f" ({seeds} seeds)" if seeds != len(frame) else ""))
    if not arms:
        return ""
    return (f" Where each arm ended against the task's reference levels ({name}, {score.split('.')[-1]}; within "
            f"{found.chance_band:g} of a level counts as at it): " + "; ".join(arms) + ".")


def _range(values: list[float]) -> str:
    low, high = min(values), max(values)
    return _number(low) if _number(low) == _number(high) else f"{_number(low)}–{_number(high)}"
