"""What a claim is made of: selectors over settings, measures, the part vocabulary, and the result types
(Part, Verdict). The rules that judge them are in engine.py."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np
import pandas as pd

from normbench.analysis import rules
from normbench.analysis.aggregate import format_value
from normbench.analysis.intervals import ALPHA, decision_level
from normbench.records import metrics as metric_table
from normbench.records.record import RESULT_STATUSES

SUPPORTED, CONTRADICTED, INCONCLUSIVE, NOT_APPLICABLE = (
    "supported", "contradicted", "inconclusive", "not applicable")
# the setup cannot show an effect (analysis/regime.py: at chance, at ceiling, still improving, confounded);
# "not applicable" is left for runs that lack the arms
NOT_TESTABLE = "not testable here"
# how the page prints "contradicted": a small benchmark does not refute a paper, it fails to reproduce it here
NOT_REPRODUCED = "not reproduced in this setup"
TOWARD_SUPPORTED, TOWARD_CONTRADICTED = "toward supported", "toward not reproduced"
DEPENDS = "depends on"  # a claim whose settings disagree: "depends on lr" (engine.in_study)
# Task-score margins are each metric's smallest effect of interest and "learned" is its chance band
# (normbench/records/metrics.py, applied by analysis/rules.py); a slope has its own:
SLOPE_DELTA = 0.1      # log-log slope: depth ×10 changes the gradient by at most 10^0.1 ≈ 1.26×


# --- selectors ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Is:
    """A predicate over one setting's value (None when the run lacks the setting)."""

    text: str
    test: Callable[[object], bool]

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Extreme:
    """The smallest or largest value of an axis among those every arm using it shares."""

    which: str  # "smallest" | "largest"

    def __str__(self) -> str:
        return f"its {self.which} shared value"


SMALLEST, LARGEST = Extreme("smallest"), Extreme("largest")


def is_missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA


def _number(value) -> float | None:
    if isinstance(value, (bool, np.bool_)) or is_missing(value):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _same(value, expected) -> bool:
    if is_missing(value):
        return False
    if isinstance(expected, (bool, np.bool_)) or isinstance(value, (bool, np.bool_)):
        return str(value).lower() == str(expected).lower()
    a, b = _number(value), _number(expected)
    if a is not None and b is not None:
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-15)
    return str(value) == str(expected)


POSITIVE = Is("> 0", lambda v: (_number(v) or 0.0) > 0)
TRUE = Is("true", lambda v: _same(v, True))
NOT_TRUE = Is("not true", lambda v: not _same(v, True))


def one_of(*values) -> Is:
    return Is(" or ".join(str(v) for v in values), lambda v: any(_same(v, e) for e in values))


def named(*parts: str) -> Is:
    """A value whose name contains one of ``parts`` (model "lstm" in "lstm_peephole")."""
    return Is(" or ".join(parts), lambda v: not is_missing(v) and any(p in str(v).lower() for p in parts))


def axis(runs: pd.DataFrame, name: str) -> pd.Series:
    column = f"axes.{name}"
    return runs[column] if column in runs else pd.Series(None, index=runs.index, dtype=object)


def metric(runs: pd.DataFrame, name: str) -> pd.Series:
    return pd.to_numeric(runs[name], errors="coerce") if name in runs else pd.Series(np.nan, index=runs.index)


def _matches(values: pd.Series, expected) -> pd.Series:
    if isinstance(expected, Is):
        return values.map(lambda v: bool(expected.test(None if is_missing(v) else v))).astype(bool)
    return values.map(lambda v: _same(v, expected)).astype(bool)


def select(runs: pd.DataFrame, selector: Mapping[str, object]) -> pd.Series:
    keep = pd.Series(True, index=runs.index)
    for name, expected in selector.items():
        if not isinstance(expected, Extreme):
            keep &= _matches(axis(runs, name), expected)
    return keep


def values_text(series: pd.Series) -> str:
    values = sorted({format_value(v) for v in series.dropna().tolist()})
    return "{" + ", ".join(values) + "}" if values else "none"


def describe(selector: Mapping[str, object]) -> str:
    return ", ".join(f"{k} {v}" if isinstance(v, (Is, Extreme)) else f"{k}={format_value(v)}"
                     for k, v in selector.items())


# --- measures -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Measure:
    """What a part compares, one value per run."""

    name: str
    values: Callable[[pd.DataFrame], pd.Series]
    higher: bool | None = None   # None: the task's direction (its metric)
    finished_only: bool = True   # diverged runs have no value; their rate is tested apart
    log: bool = False            # compared on the log scale; the effect reads as a ratio
    task_metric: bool = False    # the task's own metric: named by it, and checked against chance


def column(name: str, transform: Callable[[pd.Series], pd.Series] | None = None) -> Callable[[pd.DataFrame], pd.Series]:
    return lambda runs: (transform or (lambda s: s))(metric(runs, name))


# the primary score: the study's optimized_metric, final_val by default (rules.primary, asked of the runs judged)
SCORE = Measure(rules.PRIMARY, lambda runs: metric(runs, rules.primary_column(runs)), task_metric=True)


def recorded(key: str) -> Measure:
    """A record's metric as a measure: named by its key and display name, directed as the metric table says
    (``"task"``: the task's direction)."""
    entry = metric_table.metric(key)
    higher = {"higher": True, "lower": False}.get(entry.direction)
    return Measure(f"{key} ({entry.label})", column(entry.path), higher=higher)


# --- results ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Effect:
    label: str  # what the number is and which sign means what
    estimate: float
    interval: tuple[float, float] | None  # the (1 − 2α) interval; None when it cannot be had
    null: float = 0.0  # the "no effect" value: 0 for differences, 1 for ratios
    level: float = decision_level(ALPHA)
    p: float = math.nan  # the part's own test's one-sided p on the estimate's side (t on its df, Fisher's exact), when it has one
    df: float = math.nan  # the t interval's degrees of freedom, when it is one (the seeds a decision needs read it)


NEAR_WORDS = "a difference larger than δ is unlikely, though not excluded"  # a Part.near reading, one wording
# how far past δ an undecided interval may reach for NEAR_WORDS to hold: "within about ±δ" (referee 19: an interval
# reaching 3δ read "a difference larger than δ is unlikely")
NEAR_REACH = 1.25


@dataclass(frozen=True)
class Part:
    """One assertion of a claim, tested on its own."""

    assertion: str
    status: str
    test: str                     # arms, test, strata
    effects: tuple[Effect, ...] = ()  # the first is the one the status rests on
    arms: tuple[str, ...] = ()    # the arm names it compares
    margin: str = ""              # δ and why, for equivalence and non-inferiority parts
    lean: str | None = None       # inconclusive: TOWARD_SUPPORTED / TOWARD_CONTRADICTED / None
    seeds_needed: int | None = None  # seeds per arm that would decide at the effect seen
    mde: float | None = None      # the design's minimum detectable effect at α, power 0.8
    note: str = ""                # the real reason it is undecided or not applicable
    needed_unit: str = "seeds per arm"  # what seeds_needed counts (a paired timing: timing rounds)
    within: str = ""              # undecided with its interval inside ±δ: δ as shown ("0.01", "×1.05")
    near: str = ""                # undecided with its estimate inside ±δ and its interval reaching past: δ as shown
    reach: float = math.nan       # near: the interval's farthest end from no effect, in units of δ (1.07 = 1.07δ)
    reach_shown: str = ""         # near: that end as the page prints it ("0.107", "×1.12")
    excludes_null: bool = False   # near: the interval excludes no effect (a nonzero effect, its estimate inside ±δ)
    # undecided: the paired seeds a decision needs at the paired sd seen, (what, n at which the interval would just
    # clear at the estimate seen, n for 80% power), for the equivalence (TOST against ±δ), the direction and, for a
    # non-inferiority part, its own test; () where none can be had (no δ, no spread, a timing)
    decide: tuple[tuple[str, int | None, int | None], ...] = ()

    @property
    def claim(self) -> str:
        return self.assertion

    @property
    def effect(self) -> Effect | None:
        return self.effects[0] if self.effects else None


def seeds_text(part: "Part") -> str:
    """The seeds a decision of an undecided part needs (Part.decide), in words; "" where none is known."""
    bits, unit = [], "paired seeds" if len(part.arms) > 1 else "seeds"  # one arm's measure (a slope): seeds
    for what, just, powered in part.decide:
        if just is None:
            bits.append(f"{what}: more than 1000 {unit}")
        else:
            bits.append(f"{what}: ≈{just} {unit}" + (f" (≈{powered} for 80% power)" if powered and powered != just
                                                     else ""))
    return "; ".join(bits)


def undecided_text(part: "Part") -> str:
    """An undecided part's reading beside its status, one wording for the part's line, the page's cell and the
    headline: no difference larger than δ likely only where the interval lies within about ±δ (NEAR_REACH); an
    estimate inside ±δ whose interval reaches farther says so, with how far, and the seeds a decision needs."""
    seeds = seeds_text(part)
    if part.within:
        return f"no difference larger than δ = {part.within} is likely"
    if part.near:
        nonzero = "; the interval excludes 0: a nonzero effect, its estimate inside ±δ" if part.excludes_null else ""
        if part.reach <= NEAR_REACH:
            return f"estimate inside ±δ = {part.near}: {NEAR_WORDS}{nonzero}" + (f"; to decide, {seeds}" if seeds else "")
        return (f"estimate inside ±δ = {part.near}, but the interval reaches {part.reach_shown} ({part.reach:.2g}δ): "
                f"not decided{nonzero}" + (f"; to decide, {seeds}" if seeds else ""))
    bits = [f"leans {part.lean}" if part.lean else "leans neither way"]
    if part.mde is not None:
        bits.append(f"minimum detectable effect {part.mde:.3g}")
    if seeds:
        bits.append(f"to decide, {seeds}")
    elif part.seeds_needed:
        bits.append(f"about {part.seeds_needed} {part.needed_unit} would decide it at the effect seen")
    else:
        bits.append(f"no number of {part.needed_unit.split()[0]} (≤ 1000) is known to decide it")
    return "; ".join(bits)


def headline_reading(part: "Part") -> str:
    """An undecided part in a not-testable claim's headline ("part 3 ..."): no difference larger than δ likely only
    where undecided_text says so."""
    if part.within or (part.near and part.reach <= NEAR_REACH):
        return "no difference larger than δ likely"
    if part.near:
        return "estimate inside ±δ, undecided"
    return f"leaning {part.lean}" if part.lean else "undecided"


@dataclass
class Verdict:
    status: str
    effect: Effect | None
    n_per_arm: dict[str, int]
    evidence: pd.DataFrame
    explanation: str
    more_effects: list[Effect] = field(default_factory=list)
    parts: list[Part] = field(default_factory=list)
    study: str = ""
    setting: str = ""
    alpha: float = ALPHA
    others: list[tuple[str, str]] = field(default_factory=list)  # (setting, status) judged beside it
    setting_status: str = ""  # a "depends on" verdict: its headline setting's own status (the status says "depends on")
    context: str = ""  # the explanation without its per-part lines (shown above the part table)
    scale: str = ""    # what it was measured at (regime.scale_text): parameters, steps, examples, device
    seeds: dict[str, int] = field(default_factory=dict)  # distinct seeds per arm judged (n is seeds, not runs)
    lr: str = ""       # the study's lr protocol (analysis/lr_protocol.py): tuned per arm, shared, fixed, swept
    missing: tuple[str, ...] = ()  # arms the runs lack: the parts that need them read not testable here

    @property
    def n_seeds(self) -> int | None:
        """The comparison's n: the fewest distinct seeds of any arm judged (None when none was)."""
        return min(self.seeds.values()) if self.seeds else None


# --- specs --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PartSpec:
    kind: str
    assertion: str
    a: str
    b: str | None = None
    measure: Measure = SCORE
    claimed: int = 1              # slope: −1 shrinks, +1 grows, 0 flat (TOST)
    x: str | None = None          # slope and grows: the axis along which
    margin: float | None = None   # a fixed δ where the measure is not the task's metric
    margin_text: str = ""
    learned: bool = True          # check that an arm learned (module docstring)
    per_seed: Callable | None = None  # ratio: (arm runs, all runs) -> (value per seed, facts)
    setup: str = ""               # a setup check (setup_check): what would make the claim testable when it fails
    # slope: the theory's value of the slope (Xiong et al.'s Theorem 1: Pre-LN ∝ 1/√L, −0.5) and its source in
    # words; the part prints it beside the measured slope and says when the interval excludes it
    expected: float | None = None
    expected_text: str = ""


@dataclass(frozen=True)
class PaperSetting:
    """A setting of the paper's experiment that the claim's result may hang on, as data: the value the paper ran
    (``value``), or that it tuned it (``tuned``), for the claim arms it applies to. The engine prints it beside
    the study's own value where they differ, or where the paper tuned what the study did not sweep
    (paper_settings.text; referee 20: the page never said the "large" batch was 32, not Figure 6's 128)."""

    key: str                    # the axis, as the arms name it ("batch_size", "norm.alpha_init")
    arms: tuple[str, ...]       # the claim arms it applies to
    words: str                  # how the page names it ("batch", "DyT's α0")
    where: str                  # where the paper states it ("Figure 6, left")
    value: object = None        # the paper's value (None with tuned)
    tuned: bool = False         # the paper tuned it for the models the claim is about


@dataclass(frozen=True)
class Mechanism:
    """What the paper's explanation needs to happen, read from the records beside the verdict and never judged:
    ``measure`` higher for the claim arm ``arm`` at ``axis`` = ``more_at`` than at ``axis`` = ``than`` (shown.py
    says whether it did, on the means of the finished runs; referee 25: Derf's saturation was printed per
    optimizer, but the page never said that the paper's mechanism needs more of it under Muon and got less)."""

    measure: "Measure"
    arm: str
    axis: str
    more_at: object
    than: object
    because: str  # the paper's explanation, in a few words


@dataclass(frozen=True)
class Require:
    selector: Mapping[str, object]
    needs: str


@dataclass(frozen=True, eq=False)
class Claim:
    id: str
    statement: str
    citation: str
    arms: Mapping[str, Mapping[str, object]]
    parts: tuple[PartSpec, ...]
    requires: tuple[Require, ...] = ()
    pool: tuple[str, ...] = ()        # other axes the claim may average over (balanced, else stratified)
    also_compare: tuple[str, ...] = ()  # axes tied to the arms (steps with batch size, depth for a slope)
    statuses: tuple[str, ...] = RESULT_STATUSES  # runs whose record says how training went
    prepare: Callable[[pd.DataFrame], tuple[pd.DataFrame, str] | str] | None = None  # a hook, rarely
    design: str = ""                  # how the arms are chosen and what "supported" needs, one or two sentences
    # The claim as its paper states it (docs/claim-sources.md): the sentence, verbatim (or marked
    # "Paraphrase:" where no copy of the paper could be checked), where it stands (paper, section,
    # figure or table), the quantity the paper measured, and the setup the claim needs to be testable.
    quote: str = ""
    where: str = ""
    measures: str = ""
    regime: str = ""
    # The regime as named predicates on the records (predicates.PREDICATES), each gating the parts it names;
    # a claim with regime prose and no predicates cannot decide (engine.judge).
    needs: tuple = ()
    # The scale the paper's result was measured at, in a few words (model, data, device), which the page's
    # external-validity paragraph names beside the verdict (analysis/multiplicity.py); else the regime's
    # "the paper's scale is ..." clause; "" where neither states one.
    paper_scale: str = ""
    # Which way the verdict may move at the paper's scale, and why, in the paper's own terms (its mechanism's
    # dependence on depth, length, steps or architecture); the external-validity paragraph prints it beside the
    # two scales. "" where the spec gives none (the paragraph then says only that it may move).
    scale_moves: str = ""
    # The paper's settings the result may hang on (PaperSetting): printed beside the study's where they differ.
    paper_settings: tuple = ()
    # Axes along which the page's per-arm lines beside the verdict (where each arm ended, the measures shown) are
    # split, one entry per arm and value, where an arm pools several (an lr grid, two optimizers): shown.py.
    split: tuple[str, ...] = ()
    # Measures shown beside the verdict per (split) arm and never judged: a condition the paper's mechanism needs,
    # so a reader sees whether it arose here (Derf's saturation under each optimizer): shown.py.
    shown: tuple[Measure, ...] = ()
    # What the paper's explanation needs to see happen (Mechanism), said beside the verdict: arose here or not.
    mechanism: tuple[Mechanism, ...] = ()

    @property
    def source(self) -> str:
        """The citation's authors and year ("Ba, Kiros & Hinton 2016"), or "Practice" for a claim no paper
        states (its mechanism's source follows in the citation)."""
        if self.citation.startswith("Practice"):
            return "Practice"
        found = re.match(r"(.*?\b(19|20)\d\d)\b", self.citation)
        return found.group(1) if found else self.citation.split(":")[0]

    @property
    def compare(self) -> tuple[str, ...]:
        keys = [k for selector in self.arms.values() for k in selector]
        return tuple(dict.fromkeys([*keys, *self.also_compare]))


# --- vocabulary ---------------------------------------------------------------------------------

def better(assertion: str, a: str, b: str, measure: Measure = SCORE) -> PartSpec:
    return PartSpec("better", assertion, a, b, measure)


def not_worse(assertion: str, a: str, b: str, measure: Measure = SCORE) -> PartSpec:
    return PartSpec("not_worse", assertion, a, b, measure)


def equivalent(assertion: str, a: str, b: str, measure: Measure = SCORE) -> PartSpec:
    return PartSpec("equivalent", assertion, a, b, measure)


def more_stable(assertion: str, a: str, b: str) -> PartSpec:
    return PartSpec("more_stable", assertion, a, b, learned=False)


def faster(assertion: str, a: str, b: str) -> PartSpec:
    return PartSpec("faster", assertion, a, b, learned=False)


def higher_rate(assertion: str, a: str, b: str) -> PartSpec:
    """a diverges more often than b (the divergence is the effect, so no learning check)."""
    return PartSpec("higher_rate", assertion, a, b, learned=False)


def ratio(assertion: str, a: str, b: str, per_seed: Callable, name: str) -> PartSpec:
    return PartSpec("ratio", assertion, a, b, Measure(name, lambda r: pd.Series(np.nan, index=r.index)),
                    learned=False, per_seed=per_seed)


def slope(assertion: str, a: str, x: str, measure: Measure, claimed: int, margin: float = SLOPE_DELTA,
          margin_text: str = "", expected: float | None = None, expected_text: str = "") -> PartSpec:
    return PartSpec("slope", assertion, a, None, measure, claimed, x, margin, margin_text, learned=False,
                    expected=expected, expected_text=expected_text)


def setup_check(assertion: str, a: str, b: str, remedy: str, measure: Measure = SCORE) -> PartSpec:
    """A precondition, not a claim: a is better than b here, where the claim's effect cannot show otherwise
    (e.g. a claim that a norm prevents the unnormalized arm's divergence needs that arm to do worse at the lr
    used). Unless it is supported, every part of the claim is "not testable here" (engine.judge), ``remedy``
    saying what would make it testable; it never contradicts the claim. Whether the papers' regime holds here
    (normalization mattering, for DyT or Derf against LN) is the verdict's external validity, never a setup check."""
    return PartSpec("better", assertion, a, b, measure, setup=remedy)


def sign(assertion: str, a: str, measure: Measure, claimed: int) -> PartSpec:
    """One arm's measure lies on the claimed side of 0 (−1 below, +1 above): a mechanism read with its sign,
    e.g. a gradient that vanishes going back in time (mechanism_parts.sign_part)."""
    return PartSpec("sign", assertion, a, None, measure, claimed, learned=False)


def converges_faster(assertion: str, a: str, b: str) -> PartSpec:
    return PartSpec("converges_faster", assertion, a, b)


def grows(assertion: str, a: str, b: str, x: str, toward: str = "largest") -> PartSpec:
    """a's advantage over b grows along x, toward its largest (or, with toward="smallest", its
    smallest) value: the difference of differences between the two ends (an interaction)."""
    return PartSpec("grows", assertion, a, b, claimed=1 if toward == "largest" else -1, x=x)


def converges_grows(assertion: str, a: str, b: str, x: str, toward: str = "largest") -> PartSpec:
    """grows, on the validation curve's area (val_auc) instead of the final score: "a converges faster
    than b, and more so toward this end of x". Gated as converges_faster is (off chance and plateaus; a
    curve still rising is what the area measures, not a reason to wait)."""
    return PartSpec("converges_grows", assertion, a, b, claimed=1 if toward == "largest" else -1, x=x)


