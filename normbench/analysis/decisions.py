"""What each comparison has decided at a look: the one reading the study runner and the report share.

A comparison (ranking.comparisons: one study's arms on one task at one condition) is, at a level α:

- **not testable here** when its arms fail a regime gate (analysis/regime.py's ANSWER_GATES: every
  arm at chance, every arm at the ceiling, or still improving at the end), or when an arm at its tuned lr
  gets past the task's trivial solutions in fewer than half its runs (untrained_arm: the claims' own
  arm_trains check, so a tie with an arm that did not learn the task is never offered). The report's answer then
  says "not testable here: REASON — testable with WHAT" and offers no seeds; the study runner buys
  none for it and prints the same line, never "ranked first".
- **decided** when the ranking's rule (ranking.best_set) shows every other arm worse than the first,
  or each arm it does not show worse is shown different from, or equivalent to, the first within the
  metric's smallest effect of interest (sequential.decide at α).
- **undecided** otherwise: more seeds may decide it.
- **not ranked** when no arm has the two seeds a rank needs.

Both consumers read ``gate_of`` for the gate (the report's answers.regime_of calls it), so the runner
cannot call decided what the report calls not testable, and the reverse.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from normbench.analysis import regime, rules, tuning
from normbench.analysis.ranking import best_set, comparison_score, comparisons
from normbench.records.record import RESULT_STATUSES

GATED, DECIDED, UNDECIDED, UNRANKED = "not testable here", "decided", "undecided", "not ranked"


@dataclass(frozen=True)
class Decision:
    """One comparison's state at a look; arms are named by their labels (the runs' ``arm``)."""

    study: str
    task: str
    status: str                          # GATED, DECIDED, UNDECIDED or UNRANKED
    best: str | None = None              # the arm ranked first
    arms: tuple[str, ...] = ()           # the ranked arms, rank 1 first
    worse: tuple[str, ...] = ()          # arms shown worse than the first
    open: tuple[str, ...] = ()           # "first vs other" pairs more seeds may decide
    gate: regime.Gate | None = None

    def line(self) -> str:
        """The comparison's answer in one line, in the report's words."""
        if self.status == GATED:
            return f"{self.task}: {self.gate.text}"
        if self.status == UNRANKED:
            return f"{self.task}: no arm is ranked yet (a rank needs 2 seeds)"
        if self.worse:
            kept = [a for a in self.arms[1:] if a not in self.worse]
            also = f"; could also be the best: {', '.join(kept)}" if kept else ""
            return f"{self.task}: {self.best} ranks first{also}; shown worse: {', '.join(self.worse)}"
        return (f"{self.task}: the {len(self.arms)} arms are not told apart ({self.best} ranks first, "
                f"not shown better)")


def gate_of(runs: pd.DataFrame, order: list | None = None, leader: object = None) -> regime.Gate | None:
    """The regime gate one comparison's arms fail (ANSWER_GATES), None when testable or fewer than 2
    arms. ``runs``: the comparison's runs with ``group`` (and ``arm``, the label the text names);
    ``order``: the groups in the order to name them (default: as they appear); ``leader`` is accepted and
    no longer exempts anything: still improving gates the arm ahead too (regime.still_improving)."""
    if runs.empty or "group" not in runs:
        return None
    labels = runs.groupby("group", sort=False)["arm"].first() if "arm" in runs else pd.Series(dtype=object)
    groups = [g for g in (order if order is not None else runs["group"].unique()) if (runs["group"] == g).any()]
    arms = {str(labels.get(g, g)): runs[runs["group"] == g] for g in groups}
    if len(arms) < 2:
        return None
    return regime.check(arms, runs, regime.ANSWER_GATES) or untrained_arm(arms, runs)


UNTRAINED_ARM = "did not train at its tuned lr"


def untrained_arm(arms: dict[str, pd.DataFrame], runs: pd.DataFrame) -> regime.Gate | None:
    """The gate of a comparison in which an arm at its tuned lr (a tuned study's evaluation runs) gets past every
    trivial solution of the task in fewer than half its runs: the claims' arm_trains check (rules.failed_to_learn),
    read here too, so that the answer, the synthesis and the study runner never offer a tie with, or seeds to
    decide against, an arm that did not learn the task (referee 24: DyT at 1000 windows, 1 of 3 runs past the
    bigram model at lr 0.03, the grid's top chosen on one seed, read "not told apart"). An arm of a swept lr is
    an lr, not an arm's choice: it is not gated (its failures are what its study compares)."""
    from normbench.analysis.claims.predicates import PREDICATES  # the claims' check, not a second copy
    from normbench.analysis.claims.specs import ARM_LR_REMEDY

    why = {name: found for name, frame in arms.items()
           if tuning.ROLE in frame and len(frame) and frame[tuning.ROLE].eq(tuning.EVALUATION).all()
           and (found := PREDICATES["arm_trains"].check(arms, runs, {"arm": name}))}
    if not why:
        return None
    # the arms first, so that a line that keeps the reason up to its first " (" (the synthesis) still names them
    names, its = " and ".join(why), "its tuned lr" if len(why) == 1 else "their tuned lrs"
    return regime.Gate(UNTRAINED_ARM, f"{names} did not train at {its} ({'; '.join(why.values())})", ARM_LR_REMEDY)


def lead_of(ranked) -> object:
    """The group a ranking (ranking.BestSet) shows better than every other ranked group, or None."""
    return ranked.best if ranked.best is not None and ranked.members == [ranked.best] and ranked.informative \
        else None


def _open_pairs(mine: pd.DataFrame, ranked, level: float, higher: bool, score: str) -> list[str]:
    """The "first vs other" pairs neither shown worse nor decided by sequential.decide at ``level``."""
    from normbench.analysis.sequential import decide, decide_paired

    sign = 1.0 if higher else -1.0
    finished = mine[(mine["status"] == "ok") & ~rules.at_chance(mine)]
    name = mine["task.metric"].iloc[0] if "task.metric" in mine else None
    scores = {g: pd.Series(sign * rules.to_scale(finished.loc[finished["group"] == g, score], name),
                           index=finished.loc[finished["group"] == g, "seed"] if "seed" in finished else None)
              for g in ranked.order}
    delta = rules.margin(name)[0]  # the smallest effect of interest every claim part uses
    pairs = []
    for other in ranked.order[1:]:
        if other not in ranked.members:  # shown worse by the best-set rule (failures count): decided
            continue
        a, b = scores[ranked.best], scores[other]
        # arms that share seeds are read on their per-seed differences, as the best set reads them; the
        # unpaired test only where pairing cannot apply (fewer than 2 shared seeds, or no spread), never both
        shared = a.index.intersection(b.index) if "seed" in finished else []
        differences = (a.groupby(level=0).mean() - b.groupby(level=0).mean()).loc[shared].to_numpy() \
            if len(shared) >= 2 else np.array([])
        if len(differences) >= 2 and np.ptp(differences) > 0:
            verdict = decide_paired(differences, level, delta)
        else:
            verdict = decide(a.to_numpy(), b.to_numpy(), level, delta) if len(a) >= 2 and len(b) >= 2 else None
        if verdict is None:
            pairs.append(f"{ranked.best} vs {other}")
    return pairs


def decisions(runs: pd.DataFrame, level: float) -> list[Decision]:
    """Every comparison of ``runs`` (a labelled runs frame: aggregate.label_groups) at level ``level``."""
    out = []
    for study, task, mine in comparisons(runs[runs["status"].isin(RESULT_STATUSES)]):
        score = rules.primary_column(mine)  # the score its study is read on (rules.study_scores), as the leaderboard
        condition = str(mine["condition"].iloc[0]) if "condition" in mine else ""
        task += f" at {condition}" if condition and condition != "nan" else ""  # as the report names it
        higher = bool(mine["task.higher_is_better"].iloc[0])
        ranks_on = comparison_score(mine, score)  # as the leaderboard ranks it (a tuned study's evaluation: test)
        ranked = best_set(mine, higher, score=ranks_on, alpha=level)
        label = (mine.groupby("group", sort=False)["arm"].first() if "arm" in mine else pd.Series(dtype=object))
        name = lambda g: str(label.get(g, g))  # noqa: E731 - a label lookup, three uses below
        gate = gate_of(mine, [*ranked.order, *(g for g in mine["group"].unique() if g not in ranked.order)],
                       lead_of(ranked))
        if gate is not None:
            out.append(Decision(study, task, GATED, gate=gate))
            continue
        if ranked.best is None:
            out.append(Decision(study, task, UNRANKED))
            continue
        pairs = _open_pairs(mine, ranked, level, higher, ranks_on)
        worse = tuple(name(g) for g in ranked.order if g not in ranked.members)
        out.append(Decision(study, task, UNDECIDED if pairs else DECIDED, name(ranked.best),
                            tuple(name(g) for g in ranked.order), worse, tuple(pairs)))
    return out
