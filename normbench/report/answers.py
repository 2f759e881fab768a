"""The report's first section: per task, which norm and placement to use, in sentences a reader can quote.

The answer is the leaderboard's ★ set (ranking.RULE, summary.csv's `best` column), never a new
statistic: the best group with its mean, 95% interval and seeds, its final-validation and test
values beside the best-of-evaluations one (which flatters), then the groups not shown worse, then
what the choice costs in speed and stability. When a task's groups span several model families,
each family gets its own best set by the same rule, computed on that family's runs alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from normbench.report.aggregate import PRIMARY, RANK_SCORE, TIMING_NOISY, TRAINED, format_value
from normbench.report.figures import METRIC_RANGE
from normbench.report.ranking import best_set
from normbench.report.tables import number

NORMS = {"ln": "LN", "rms": "RMSNorm", "bn": "BN", "dyt": "DyT", "scale": "ScaleNorm", "none": "no norm"}
MODELS = {"lstm": "an LSTM", "gru": "a GRU", "rnn": "a tanh RNN", "transformer": "a Transformer"}
_LISTED = 5  # groups named in "not shown worse" before "and N more"


@dataclass
class TaskAnswer:
    task: str
    metric: str
    higher_is_better: bool
    headline: str                 # the sentence to quote
    also: str = ""                # the other ★ groups
    tradeoff: str = ""            # speed and stability of the choice
    families: list[str] = field(default_factory=list)  # one sentence per model family, when several
    caveat: str = ""              # groups left unranked, best-of-evaluations optimism


def _interval(low: float, high: float, metric: str) -> str:
    """The 95% interval, clipped to what the metric can be (a t-interval on 3 seeds can reach below 0 MSE)."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return "interval undefined"
    floor, ceiling = METRIC_RANGE.get(metric, (None, None))
    low = low if floor is None else max(low, floor)
    high = high if ceiling is None else min(high, ceiling)
    return f"95% CI {number(low, 2)}–{number(high, 2)}"


def _settings(first_run: pd.Series, extra: list[str]) -> str:
    """ "in_cell LN" plus the other settings that tell this group apart within its task."""
    norm = format_value(first_run.get("axes.norm"))
    placement = format_value(first_run.get("axes.placement"))
    name = NORMS.get(norm, norm)
    core = name if norm == "none" or placement in ("none", "n/a") else f"{placement} {name}"
    rest = [f"{a.removeprefix('axes.')}={format_value(first_run.get(a))}" for a in extra
            if format_value(first_run.get(a)) != "n/a"]
    return core + (f" ({', '.join(rest)})" if rest else "")


def _model_phrase(models: list[str]) -> str:
    if len(models) == 1:
        return MODELS.get(models[0], f"model {models[0]}")
    return "models " + ", ".join(models)


class _Task:
    """One task's runs and summary rows, and the wording of its groups."""

    def __init__(self, task: str, runs: pd.DataFrame, summary: pd.DataFrame, axes: list[str]):
        self.task, self.runs, self.summary = task, runs, summary
        self.metric = str(summary["metric"].iloc[0])
        self.higher = bool(summary["higher_is_better"].iloc[0])
        self.first = runs.groupby("group", sort=False).first()
        self.axes = axes
        self.extra: list[str] = []

    def naming(self, groups: list[str]) -> None:
        """Name groups by norm and placement plus the other settings that differ among `groups`
        (a setting that does not apply to a group, such as gamma_init without a norm, is no difference)."""
        core = {"axes.task", "axes.model", "axes.norm", "axes.placement"}
        chosen = self.first.loc[groups]
        self.extra = [a for a in self.axes if a not in core and a in chosen
                      and chosen[a].dropna().map(format_value).nunique() > 1]

    def name(self, group: str) -> str:
        return _settings(self.first.loc[group], self.extra)

    def model_of(self, group: str) -> str:
        return format_value(self.first.loc[group].get("axes.model"))

    def row(self, group: str) -> pd.Series:
        return self.summary[self.summary["group"] == group].iloc[0]

    def value(self, group: str, name: str = "best_val") -> str:
        row = self.row(group)
        n = row.get(f"{name}_n")
        if pd.isna(row.get(f"{name}_mean")):
            return "not recorded"
        text = number(row[f"{name}_mean"], 3)
        if n and n >= 2:
            text += f" ({_interval(row[f'{name}_ci_low'], row[f'{name}_ci_high'], self.metric)})"
        return text

    def seeds(self, group: str) -> str:
        seeds = int(self.row(group)["seeds"])
        return f"{seeds} seed{'s' if seeds != 1 else ''}"


def task_answer(task: str, runs: pd.DataFrame, summary: pd.DataFrame, axes: list[str]) -> TaskAnswer:
    t = _Task(task, runs, summary, axes)
    members = summary.loc[summary["best"].astype(bool), "group"].tolist()
    unranked = summary[summary["n"] < 2]
    caveat = (f"{len(unranked)} of {len(summary)} groups ran fewer than 2 seeds, so they are not ranked "
              f"(see the leaderboard). " if len(unranked) else "")
    if not members:
        return TaskAnswer(task, t.metric, t.higher,
                          f"On {task}, no group can be named best: none has 2 or more runs with a finished one.",
                          caveat=caveat)
    best = _best_of(t, members)
    t.naming(members)
    models = sorted({t.model_of(g) for g in members})
    headline = (f"On {task} with {_model_phrase([t.model_of(best)])}, {t.name(best)} reaches "
                f"{t.value(best, 'final_val')} val {t.metric} at the last evaluation, {t.seeds(best)}; "
                f"on test {t.value(best, 'test')}; the best of its evaluations {t.value(best)}.")
    others = [g for g in members if g != best]
    if others:
        listed = [f"{t.name(g)}{'' if len(models) == 1 else ' with ' + t.model_of(g)} {number(t.row(g)['final_val_mean'], 3)}"
                  for g in others[:_LISTED]]
        more = f" and {len(others) - _LISTED} more" if len(others) > _LISTED else ""
        also = f"Not shown worse: {', '.join(listed)}{more}."
    else:
        ranked = int((summary["n"] >= 2).sum())
        also = ("Every other ranked group is shown worse." if ranked > 1 else
                "No other group ran 2 or more seeds, so nothing was compared with it.")
    tradeoff = _tradeoff(t, best, members)
    families, lone = _families(t)
    return TaskAnswer(task, t.metric, t.higher, headline, also, tradeoff, families, caveat + lone)


def _score(runs: pd.DataFrame) -> str:
    """The leaderboard's ranking score (aggregate.RANK_SCORE), or best_val for records without it."""
    return RANK_SCORE if RANK_SCORE in runs and runs[RANK_SCORE].notna().any() else PRIMARY


def _best_of(t: _Task, members: list[str]) -> str:
    """The rule's best group: ranking.best_set on the task's runs (summary lists ★ groups, not which one led)."""
    return best_set(t.runs, t.higher, score=_score(t.runs)).best or members[0]


def _tradeoff(t: _Task, best: str, members: list[str]) -> str:
    row = t.row(best)
    parts = []
    diverged = int(row["n_diverged"])
    parts.append(f"{diverged} of {int(row['n'])} runs diverged" if diverged else f"none of its {int(row['n'])} runs diverged")
    speed = row["samples_per_s_median"]
    if pd.notna(speed):
        noisy = row.get("timing_noise_median")
        flag = (f" (timing noisy: p90/p10 {noisy:.2g})" if pd.notna(noisy) and noisy > TIMING_NOISY else "")
        parts.append(f"it trains at {number(speed, 3)} samples/s{flag}")
        faster = t.summary[t.summary["group"].isin(members) & (t.summary["samples_per_s_median"] > speed)]
        if len(faster):
            fastest = faster.sort_values("samples_per_s_median").iloc[-1]
            parts.append(f"the fastest group not shown worse, {t.name(fastest['group'])}, runs at "
                         f"{number(fastest['samples_per_s_median'], 3)} samples/s")
    unstable = t.summary[t.summary["divergence_rate"] > 0]
    if len(unstable):
        parts.append(f"{len(unstable)} group(s) of this task had a diverged run")
    text = "; ".join(parts)
    return text[0].upper() + text[1:] + "."


def _families(t: _Task) -> tuple[list[str], str]:
    """Per model family, its own best set (same rule, that family's runs) when the task has several;
    and a sentence naming the families none of whose groups ran 2 seeds."""
    trained = t.runs[t.runs["status"].isin(TRAINED)]
    if "axes.model" not in trained or trained["axes.model"].nunique() < 2:
        return [], ""
    lines, without, with_best = [], [], []
    for model, mine in trained.groupby("axes.model", sort=True):
        result = best_set(mine, t.higher, score=_score(mine))
        if result.best is None:
            without.append(str(model))
            continue
        with_best.append(str(model))
        t.naming(result.members)
        others = [t.name(g) for g in result.members[1:]]
        lines.append(f"With {MODELS.get(model, model)}: {t.name(result.best)}, {t.value(result.best, 'final_val')} at the last evaluation, "
                     f"{t.seeds(result.best)}" + (f"; not shown worse: {', '.join(others[:_LISTED])}"
                                                  + (" …" if len(others) > _LISTED else "") if others else "")
                     + ".")
    lone = (f"No {', '.join(without)} group ran 2 or more seeds, so those families get no answer. "
            if without else "")
    return (lines if len(with_best) > 1 else []), lone


def answers(runs: pd.DataFrame, summary: pd.DataFrame, axes: list[str]) -> list[TaskAnswer]:
    if summary.empty:
        return []
    trained = runs[runs["status"].isin(TRAINED)]
    return [task_answer(str(task), trained[trained["task.name"] == task], rows, axes)
            for task, rows in summary.groupby("task", sort=True)]
