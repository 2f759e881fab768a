"""Adding seeds until a question is decided, without peeking inflating false verdicts.

A study runner looks at its runs after every round of seeds. Testing each look at α would inflate
false verdicts (five looks at 5% give about 14%). The looks are therefore planned (seeds per arm
at each look, up to a maximum) and α is *spent* across them with the Lan–DeMets spending function
of O'Brien–Fleming type (Lan & DeMets 1983):

    α(t) = 2 − 2 Φ(z_{1−α/2} / √t),  t = seeds so far / maximum seeds,

so early looks get very little of α and the last look nearly all of it. Look k tests at the level
α_k = α(t_k) − α(t_{k−1}). By the union bound, the chance that any look gives a false verdict in a
given direction is at most Σ α_k = α(1) = α, whatever the correlation between looks: a
conservative, exact-enough control that needs no boundary recursion. Each directional verdict
("A better", "B better") is a one-sided test at α_k, i.e. it reads the (1 − 2α_k) interval; an
equivalence (within ±δ) is TOST on the same interval. `simulate` checks the rule: with no true
difference, the false-verdict rate stays within α (tests/analysis/test_sequential.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

A_BETTER, B_BETTER, EQUIVALENT = "a better", "b better", "equivalent"


@dataclass(frozen=True)
class Plan:
    """Looks at `looks` seeds per arm (increasing), total one-sided error α per direction."""

    looks: tuple[int, ...]
    alpha: float = 0.05

    def __post_init__(self):
        if not self.looks or any(b <= a for a, b in zip(self.looks, self.looks[1:])) or self.looks[0] < 2:
            raise ValueError(f"looks must increase from at least 2 seeds, got {self.looks}")
        if not 0 < self.alpha < 0.5:
            raise ValueError(f"alpha must be in (0, 0.5), got {self.alpha}")

    @classmethod
    def rounds(cls, pilot: int, step: int, maximum: int, alpha: float = 0.05) -> "Plan":
        looks = list(range(pilot, maximum + 1, step))
        if looks[-1] != maximum:
            looks.append(maximum)
        return cls(tuple(looks), alpha)

    def spent(self, seeds: int) -> float:
        """α(t) at `seeds` per arm: the error the looks up to there may have used."""
        t = min(1.0, seeds / self.looks[-1])
        return 2 - 2 * stats.norm.cdf(stats.norm.ppf(1 - self.alpha / 2) / math.sqrt(t))

    def levels(self) -> list[float]:
        """α_k of each look: what that look may spend."""
        spent = [self.spent(n) for n in self.looks]
        return [spent[0]] + [b - a for a, b in zip(spent, spent[1:])]


def decide(a: np.ndarray, b: np.ndarray, level: float, delta: float | None = None) -> str | None:
    """One look at arms a and b (higher = better): "a better" / "b better" when the (1 − 2·level)
    Welch interval of mean(a) − mean(b) excludes 0 on that side; "equivalent" when a margin δ is
    given and that interval lies inside (−δ, δ); None (undecided) otherwise."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    difference = a.mean() - b.mean()
    se = math.sqrt(va + vb)
    if se == 0:
        return None if difference == 0 and delta is None else (
            EQUIVALENT if delta is not None and abs(difference) < delta else A_BETTER if difference > 0 else B_BETTER)
    df = (va + vb) ** 2 / ((va ** 2 / (len(a) - 1) if va else 0) + (vb ** 2 / (len(b) - 1) if vb else 0))
    half = stats.t.ppf(1 - level, df) * se
    return _reading(difference - half, difference + half, delta)


def decide_paired(differences: np.ndarray, level: float, delta: float | None = None) -> str | None:
    """decide() on arms that share seeds: the (1 − 2·level) t interval of the per-seed differences a − b
    (n − 1 df). Differences all equal carry no spread: None, the caller falls back to decide()."""
    d = np.asarray(differences, float)
    if len(d) < 2 or np.ptp(d) == 0:
        return None
    half = stats.t.ppf(1 - level, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d))
    return _reading(d.mean() - half, d.mean() + half, delta)


def _reading(low: float, high: float, delta: float | None) -> str | None:
    """What an interval of a − b decides: a side when it excludes 0, equivalence when it lies inside ±delta."""
    if low > 0:
        return A_BETTER
    if high < 0:
        return B_BETTER
    if delta is not None and -delta < low and high < delta:
        return EQUIVALENT
    return None


def run_plan(a: np.ndarray, b: np.ndarray, plan: Plan, delta: float | None = None) -> tuple[str | None, int]:
    """The sequential rule on two arms' full seed lists: (verdict, seeds per arm used). Stops at
    the first look that decides."""
    for seeds, level in zip(plan.looks, plan.levels()):
        verdict = decide(a[:seeds], b[:seeds], level, delta)
        if verdict is not None:
            return verdict, seeds
    return None, plan.looks[-1]


def simulate(plan: Plan, repetitions: int = 2000, sd: float = 1.0, difference: float = 0.0,
             delta: float | None = None, seed: int = 0) -> dict[str, float]:
    """The rule's verdict rates on arms drawn N(difference, sd) and N(0, sd), with Monte Carlo
    standard errors: under difference = 0, "a better" and "b better" are false verdicts."""
    rng = np.random.default_rng(seed)
    counts = {A_BETTER: 0, B_BETTER: 0, EQUIVALENT: 0, None: 0}
    used = 0
    for _ in range(repetitions):
        a = rng.normal(difference, sd, plan.looks[-1])
        b = rng.normal(0.0, sd, plan.looks[-1])
        verdict, seeds = run_plan(a, b, plan, delta)
        counts[verdict] += 1
        used += seeds
    rates = {str(k): v / repetitions for k, v in counts.items()}
    rates.update({f"{k} se": math.sqrt(r * (1 - r) / repetitions) for k, r in list(rates.items())})
    rates["mean seeds"] = used / repetitions
    return rates


@dataclass(frozen=True)
class Design:
    """What a study's sequential.json (normbench.studies.study) says it did: the level its ranking, best set,
    answers and claims are read at is the last look's (rules: one level per study)."""

    looks: tuple[int, ...]          # planned seeds per arm at each look
    levels: tuple[float, ...]       # α_k of each planned look
    done: tuple[int, ...]           # seeds per arm at the looks taken
    stopped: str                    # decided, budget, maximum seeds
    level: float                    # the last look's level

    def text(self) -> str:
        if not self.looks:
            return f"Sequential design: tested at the level its last look spent, {self.level:.3g}."
        looks = ", ".join(f"{n} ({lvl:.2g})" for n, lvl in zip(self.looks, self.levels))
        taken = len(self.done)
        why = {"decided": "every question decided",
               "decided or not testable": "every testable question decided, the rest not testable here "
                                          "(more seeds would not decide it)", "budget": "the next round would overrun the budget",
               "maximum seeds": "the seed limit was reached"}.get(self.stopped, self.stopped)
        return (f"Sequential design: looks planned at {looks} seeds per arm (level of each look in brackets, "
                f"α spent over the looks); {taken} look(s) taken, at {', '.join(map(str, self.done))} seeds; stopped: "
                f"{why}. Ranking, best set, claims and detectable differences here are read at the last look's "
                f"level, {self.level:.3g}.")


def read_design(data: dict) -> Design | None:
    """The Design of one parsed sequential.json, None when it is not one."""
    try:
        rounds = data.get("rounds") or []
        level = float(data["final_level"])
        design = Design(tuple(int(n) for n in data.get("looks") or ()), tuple(float(v) for v in data.get("levels") or ()),
                        tuple(int(r["seeds_per_arm"]) for r in rounds), str(data.get("stopped", "")), level)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    return design if 0 < level < 0.5 else None
