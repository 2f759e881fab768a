"""One result per set of records: what the analysis decided about them, built once and read by every
consumer. The report renders it and computes nothing (normbench/report/); the sweep's last lines
(studies/sweep_answer.py) and the study runner's "decided" (studies/progress.py, studies/study.py)
read the same object, so the terminal, the runner and the page cannot disagree.

`StudyResult` holds the labelled runs, the groups (summary), the one score (its ``score`` column,
analysis/rules.py), the ranking, each comparison's regime, power and lr protocol, the claims with
their parts and measures and the lines beside them (multiplicity.py), the synthesis' effects and
plateaus (choice_effects.py), the sequential designs, the tuning and sensitivity tables, the
performance profiles and the machine's condition. What is costly and not read by every consumer
(the claims, the decisions, the tuning) is computed on first read and kept; the figures' data (a study's
heatmap grid, its curve bands, its gradient flow) are computed by its methods when the report asks for
a study's figure, so a sweep's last lines never read a curve.

The names below the dataclasses (the claim and verdict types, the statuses and rules a result is read
with) are the result's types and words: the report imports them from here and no other analysis module.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from normbench.analysis import (
    aggregate,
    choice_effects,
    conditions,
    decisions,
    lr_protocol,
    multiplicity,
    performance_profiles,
    regime,
    rules,
    sequential,
    speed,
    tuning,
)
from normbench.analysis.aggregate import NO_STUDY, REPORT_STATUSES, TRAINED  # noqa: F401  (the result's words)
from normbench.analysis.claims import (  # noqa: F401  # noqa: F401  (shown_status: the page's word for a status)
    SHIPPED,
    Claim,
    Effect,
    Part,
    Verdict,
    evaluate_claims,
    shown_status,
    verdict_figures,
)
from normbench.analysis.claims.comparison import effect_text
from normbench.analysis.claims.vocabulary import (  # noqa: F401
    CONTRADICTED,
    INCONCLUSIVE,
    NOT_APPLICABLE,
    NOT_REPRODUCED,
    NOT_TESTABLE,
    SUPPORTED,
    Extreme,
    describe,
    headline_reading,
    select,
    undecided_text,
)
from normbench.analysis.claims.yaml_claims import ClaimFileError, use_folders  # noqa: F401  (a user's claims, judged too)
from normbench.analysis.intervals import METHOD  # noqa: F401
from normbench.analysis.performance_profiles import AREA_TAU, TAUS  # noqa: F401
from normbench.analysis.ranking import EVALUATION, design_power
from normbench.analysis.ranking import RULE as RANKING_RULE  # noqa: F401
from normbench.analysis.regime import Gate  # noqa: F401
from normbench.analysis.rules import ALPHA, AT_CHANCE_RUN, NOT_TRAINED, POWER, PRIMARY, score_words  # noqa: F401
from normbench.analysis.tuning import SELECTION, TOLERANCE_TEXT  # noqa: F401
from normbench.records import metrics as metric_table
from normbench.records import published, study_plan
from normbench.records.reading import Records, read_curves

MAX_SEEDS = 200  # beyond this "about K seeds" is no plan anyone would run


@dataclass(frozen=True)
class Power:
    """What a comparison whose arms cannot be told apart could detect (ranking.design_power)."""

    mde: float        # the smallest difference the design detects, on the compared scale
    needed: int       # seeds per arm that would detect the largest difference seen (0: none known)
    largest: float    # the largest difference seen between ranked arms
    level: float      # the comparison's level (its sequential design's, else rules.ALPHA)
    delta: float      # the smallest effect of interest (rules.margin)
    delta_text: str
    ratio: bool       # the compared scale is log (a ratio metric): differences read as ×ratio


@dataclass(frozen=True)
class Comparison:
    """One comparison (a study's task, and its condition): its summary rows and what was decided on them."""

    key: object
    rows: pd.DataFrame    # its summary rows, ranked first
    gate: Gate | None     # the regime its arms fail (at chance, at ceiling, still improving), else None
    scale: str            # what its runs were measured at (regime.scale_text)
    lr: str               # how its arms' lrs were set (lr_protocol.comparison_text)
    power: Power | None   # when its ranked arms cannot be told apart
    design: sequential.Design | None


@dataclass(frozen=True)
class ClaimResult:
    """A claim's verdict in one study, with each part's measures in the analysis's words."""

    claim: Claim
    verdict: Verdict
    effects: tuple[tuple[str, ...], ...]  # per part: its measures, the deciding one first
    figures: dict = field(default_factory=dict)  # claims.csv's referee columns (claims.verdict_figures)


@dataclass(frozen=True)
class Tuning:
    """Learning-rate sensitivity, the tuned comparison and the performance profiles' inputs."""

    points: pd.DataFrame
    arms: pd.DataFrame
    score_note: str              # why the tuning reads final val where the study ranks on another score
    boards: list
    has_selection: bool
    profile_table: pd.DataFrame
    profile_used: str
    ratios: pd.DataFrame | None  # None: fewer than 2 tasks
    profile_rows: pd.DataFrame | None
    left_out: list


@dataclass(frozen=True)
class Heatmap:
    """One study's grid over its two main arm settings: a panel per task and per value of the others."""

    varying: list[str]          # the arm settings that vary (task left out); fewer than 2: no grid
    row: str = ""
    col: str = ""
    rest: list = field(default_factory=list)
    panels: list | None = None  # [(task, {axis: value}, aggregate.AxisGrid)]; None: more combinations than allowed


def _natural(value) -> tuple:
    """Numbers in numeric order, then text."""
    number = pd.to_numeric(pd.Series([value]), errors="coerce").iloc[0]
    return (0, float(number), "") if pd.notna(number) and not isinstance(value, bool) else (1, 0.0, str(value))


@dataclass(frozen=True)
class StudyResult:
    """Every study under the paths read: runs, groups, ranking, regimes, claims, designs; built by `build`."""

    records: Records | None
    runs: pd.DataFrame        # every distinct run, labelled (group, arm)
    copies: pd.DataFrame      # reruns and duplicate records, not counted again
    axes: list[str]
    summary: pd.DataFrame     # one row per group, ranked within its comparison
    timing: str = ""          # which step time the throughput shows (paired or per-run)
    designs: dict = field(default_factory=dict)   # study id -> its sequential design
    plans: list = field(default_factory=list)     # the plan files that apply (study_plan.Level)
    alpha: float | None = None
    paths: tuple = ()

    @functools.cached_property
    def titles(self) -> dict[str, str]:
        """study id -> the title the report gives it."""
        return aggregate.study_titles(self.runs)

    @functools.cached_property
    def claims(self) -> list[ClaimResult]:
        """The claims, each study's at its sequential design's last level (_claims)."""
        verdicts = _claims(self.runs, list(self.paths), self.alpha, self.designs if self.alpha is None else None)
        return [claim_result(c, v) for c, v in verdicts]

    @functools.cached_property
    def answered(self) -> tuple[pd.DataFrame, pd.DataFrame, bool]:
        """(runs, summary, tuned) the answers read: a tuned study answered from its evaluation runs only."""
        runs, summary = self.runs, self.summary
        if "axes.role" in runs and (runs["axes.role"] == "evaluation").any():
            # A tuned study: selection runs chose each arm's lr, so their scores flatter it; its answer
            # rests on the evaluation runs alone (the tuned comparison ranks them on the test metric). Other studies stay.
            tuned = runs.loc[runs["axes.role"] == "evaluation", "study"].unique()
            runs = runs[~runs["study"].isin(tuned) | (runs["axes.role"] == "evaluation")]
            return runs, summary[summary["group"].isin(runs["group"])], True
        return runs, summary, False

    @functools.cached_property
    def comparisons(self) -> list[Comparison]:
        """One per comparison the answers name, in the leaderboard's order."""
        runs, summary, _ = self.answered
        return comparisons(runs, summary, self.designs, self.runs)

    @functools.cached_property
    def decisions(self) -> list[decisions.Decision]:
        """Each comparison's decision at the result's level (analysis/decisions.py, the report's gate):
        the study runner's "decided" and "undecided" (studies/study.py, studies/progress.py)."""
        return decisions.decisions(self.runs, self.alpha if self.alpha is not None else rules.ALPHA)

    @functools.cached_property
    def claims_multiplicity(self) -> str:
        """The line beside the claims: multiplicity across them at the result's level (analysis/multiplicity.py)."""
        return multiplicity.claims_line([(c.claim, c.verdict) for c in self.claims],
                                        self.alpha if self.alpha is not None else rules.ALPHA, self.titles)

    @functools.cached_property
    def not_kept(self) -> dict[tuple[str, str], float]:
        """(claim id, study id) -> q of each directional verdict that multiplicity control does not keep."""
        return multiplicity.not_kept([(c.claim, c.verdict) for c in self.claims],
                                     self.alpha if self.alpha is not None else rules.ALPHA)

    @staticmethod
    def needs_text(claim) -> str:
        """The arms a claim compares, each as its selector reads: what a study must run for it to be judged."""
        return "needs " + "; ".join(f"{name} ({describe(selector)})" for name, selector in claim.arms.items()) + "."

    @functools.cached_property
    def external_validity(self) -> str:
        """What differs between the runs and the papers the claims come from (analysis/multiplicity.py)."""
        return multiplicity.external_validity([(c.claim, c.verdict) for c in self.claims], self.titles)

    # The synthesis' numbers (analysis/choice_effects.py), read by report/synthesis.py through the result.
    varying = staticmethod(choice_effects.varying)
    on_plateau = staticmethod(choice_effects.on_plateau)
    effect = staticmethod(choice_effects.effect)
    shown_worse = staticmethod(choice_effects.shown_worse)
    grid_end = staticmethod(choice_effects.grid_end)

    def regime_of(self, rows: pd.DataFrame) -> tuple[Gate | None, str]:
        """The gate and the scale of the summary ``rows``' arms (any set of them: the synthesis reads a family's)."""
        return regime_of(rows, self.runs[self.runs["group"].isin(rows["group"])])

    @functools.cached_property
    def roles(self) -> dict[str, tuple[list[str], list[str]]]:
        """study id -> (choices, conditions): the settings its arms vary and those it is run under."""
        return {str(s): conditions.roles(mine) for s, mine in self.runs.groupby("study", sort=False)}

    @functools.cached_property
    def finished(self) -> pd.DataFrame:
        return self.runs[self.runs["status"] != "incomplete"]

    @functools.cached_property
    def axis_values(self) -> dict[str, list]:
        """Each varying axis's values over the finished runs, in order."""
        return {a: aggregate.sorted_values(self.finished[a]) for a in self.axes}

    @functools.cached_property
    def fixed(self) -> dict:
        """The settings every finished run shares."""
        return aggregate.fixed_settings(self.runs)

    @functools.cached_property
    def machine_rows(self) -> list[list[str]]:
        """How busy the machine was while the finished runs trained (speed.condition_rows)."""
        return speed.condition_rows(self.finished)

    def published_curves(self) -> pd.DataFrame:
        """Every run's evaluations as the report publishes them (records/published.curves_table): the
        curves the still-improving gate and the steps to a target read, recomputable from the report's files."""
        return published.curves_table(self.runs)

    def published_timing(self) -> pd.DataFrame:
        """The paired timings beside the records, one row per arm per round (speed.paired_rounds)."""
        return speed.paired_rounds(speed.paired_timing(self.runs))

    @functools.cached_property
    def trained(self) -> pd.DataFrame:
        return self.runs[self.runs["status"].isin(TRAINED)]

    def heatmap(self, groups, max_facets: int) -> Heatmap:
        """The grid of a study's ``groups``: cells pool seeds only; further arm settings get a panel per
        value (never pooled), at most ``max_facets`` per task."""
        mine = self.trained[self.trained["group"].isin(groups)]
        varying = [a for a in aggregate.varying_axes(mine) if a != "axes.task"]
        if len(varying) < 2:
            return Heatmap(varying)
        row, col = aggregate.main_axes(mine, varying)
        rest = [a for a in varying if a not in (row, col)]
        panels = []
        for task, task_runs in mine.groupby("task.name", sort=True):
            combos = (sorted(task_runs[rest].drop_duplicates().to_dict("records"),
                             key=lambda combo: tuple(_natural(v) for v in combo.values())) if rest else [{}])
            if len(combos) > max_facets:
                return Heatmap(varying, row, col, rest, None)
            for combo in combos:
                cell_runs = task_runs
                for axis, value in combo.items():
                    cell_runs = cell_runs[cell_runs[axis].map(aggregate.format_value) == aggregate.format_value(value)]
                panels.append((task, combo, aggregate.axis_grid(cell_runs, row, col)))
        return Heatmap(varying, row, col, rest, panels)

    def plotted_groups(self, rows: pd.DataFrame, limit: int) -> list[str]:
        """The groups of summary ``rows`` that get a curve: the best of each task in leaderboard order."""
        return aggregate.plotted_groups(rows, limit)

    def curve_bands(self, groups: dict[str, list[str]]) -> dict[str, tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]]:
        """study id -> (validation, training loss, gradient norm) bands of its ``groups``' trained runs,
        every curve read once (records/reading.read_curves)."""
        shown = self.trained[self.trained["group"].isin([g for chosen in groups.values() for g in chosen])]
        curves = read_curves(shown["run_dir"])
        out = {}
        for study, chosen in groups.items():
            mine = shown[shown["group"].isin(chosen)]
            out[study] = (aggregate.curve_bands(curves, mine, "eval", "val_metric"),
                          aggregate.curve_bands(curves, mine, "train", "loss"),
                          aggregate.curve_bands(curves, mine, "train", "grad_norm", log=True))
        return out

    def grad_flow(self, groups: list[str]) -> pd.DataFrame:
        """Gradient flow through time of ``groups``' trained runs (the records' grad_time profiles)."""
        flow_runs = self.runs[self.runs["group"].isin(groups) & self.runs["status"].isin(TRAINED)]
        return aggregate.grad_time_profiles(self.records.runs, flow_runs)

    @functools.cached_property
    def tuning(self) -> Tuning:
        points, arms = tuning.sensitivity(self.runs)
        boards = tuning.tuned_leaderboards(self.runs)
        table, used = performance_profiles.arm_table(self.summary, self.axes, tuned=bool(boards))
        ratios = rows = None
        left_out: list = []
        if not table.empty and len(table.index) >= 2:
            ratios, rows, left_out = performance_profiles.step_ratios(table)
        return Tuning(points, arms, tuning.score_note(self.runs), boards,
                      "axes.role" in self.runs and bool((self.runs["axes.role"] == tuning.SELECTION).any()),
                      table, used, ratios, rows, left_out)


def claim_result(claim: Claim | None, verdict: Verdict) -> ClaimResult:
    """A verdict with each part's measures in the analysis's words (claims/comparison.effect_text)."""
    return ClaimResult(claim, verdict, tuple(tuple(effect_text(e) for e in p.effects) if p.effects else (effect_text(None),)
                                             for p in verdict.parts), verdict_figures(verdict))


def runs_of(records: Records) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The distinct runs of the records, and the copies set aside (a rerun, a second record of a run)."""
    return aggregate.distinct_runs(aggregate.runs_frame(records.runs))


def build(records: Records | None, runs: pd.DataFrame, copies: pd.DataFrame | None = None, paths=(),
          alpha: float | None = None, say: bool = True, designs: dict | None = None) -> StudyResult:
    """The result of the distinct ``runs`` (runs_of) under ``paths``: groups labelled, each study at the
    level its sequential plan reached (or ``alpha`` for every study), groups summarized and ranked, a
    group's throughput its paired timing where one lies beside its records. ``designs``: the studies'
    sequential designs when the caller has them (else read from the plan files under ``paths``)."""
    paths = [Path(p) for p in paths]
    axes = aggregate.varying_axes(runs)
    runs = aggregate.label_groups(runs, axes)
    # one level per study (analysis/rules.py): the one its sequential design spent, for every verdict
    if designs is None:
        designs = study_designs(paths, runs, say) if paths else {}
    levels = ({str(s): float(alpha) for s in runs["study"].unique()} if alpha is not None
              else {study: design.level for study, design in designs.items()})
    summary = aggregate.summarize_groups(runs, axes, levels)
    # a group's throughput is its paired timing (bench arms) where one lies beside its records
    summary, timing = speed.prefer_paired(summary, speed.paired_timing(runs))
    plans = sequential_levels(paths, say=False) if paths else []
    return StudyResult(records, runs, copies if copies is not None else runs.iloc[:0], axes, summary, timing,
                       designs, plans, alpha, tuple(paths))


def sequential_levels(paths: list[Path], say: bool = True) -> list[study_plan.Level]:
    """The sequential.json files (normbench.studies.study) under ``paths`` that apply, each to its own study's
    records; the others (another schema, no study id, a planted file) are named in one line on stderr."""
    plans, ignored = study_plan.levels(paths)
    if ignored and say:
        more = f" (and {len(ignored) - 1} more)" if len(ignored) > 1 else ""
        print(f"normbench report: ignored {len(ignored)} sequential plan file(s): {ignored[0][:300]}{more}",
              file=sys.stderr)
    return plans


def study_designs(paths: list[Path], runs: pd.DataFrame, say: bool = True) -> dict[str, sequential.Design]:
    """Study id -> its sequential design: the plan file of that study (study_plan: its id, its schema,
    read by the one reader) whose folder holds the study's runs. The one source of a study's level."""
    plans = sequential_levels(paths, say)
    if not plans or runs.empty:
        return {}
    designs = {}
    for study, run_dir in runs.groupby("study")["run_dir"].first().items():
        here = Path(str(run_dir)).resolve()
        plan = next((p for p in plans if p.study == str(study) and (p.folder == here or p.folder in here.parents)),
                    None)
        design = sequential.read_design(plan.data) if plan is not None else None
        if design is not None:
            designs[str(study)] = design
    return designs


def _claims(runs: pd.DataFrame, paths: list[Path], alpha: float | None, designs: dict | None = None) -> list:
    """The claims, each study's at the level its sequential plan reached (its last look), the others at
    ``alpha`` (or the claims' default): a study that peeked may not test its final data at the full α."""
    if alpha is None and designs is None:
        designs = study_designs(paths, runs)
    if alpha is not None or not designs:
        return evaluate_claims(runs, **({} if alpha is None else {"alpha": alpha}))

    study_level = {study: design.level for study, design in designs.items()}
    verdicts = []
    for level, mine in runs.groupby(runs["study"].astype(str).map(study_level).fillna(-1.0), sort=False):
        verdicts += evaluate_claims(mine, **({} if level < 0 else {"alpha": float(level)}))
    # one "not applicable" per claim that applies in no study
    decided = {c.id for c, v in verdicts if v.status != "not applicable"}
    seen, kept = set(), []
    for c, v in verdicts:
        if v.status == "not applicable":
            if c.id in decided or c.id in seen:
                continue
            seen.add(c.id)
        kept.append((c, v))
    position = {c.id: i for i, c in enumerate(SHIPPED)}
    return sorted(kept, key=lambda cv: position.get(cv[0].id, len(position)))


def _compared(runs: pd.DataFrame, groups, score: str, metric: str) -> dict[str, np.ndarray]:
    """Each group's scores on the compared scale (log for a ratio metric), failed runs left out."""
    scored = runs[(runs["status"] == "ok") & ~rules.at_chance(runs)]
    return {g: rules.to_scale(pd.to_numeric(scored.loc[scored["group"] == g, score], errors="coerce"), metric)
            for g in groups}


def regime_of(rows: pd.DataFrame, runs: pd.DataFrame) -> tuple[regime.Gate | None, str]:
    """The gate the comparison's arms fail (regime.ANSWER_GATES: at chance, at ceiling, still improving),
    and the scale its runs were measured at."""
    if runs.empty or "group" not in runs:
        return None, ""
    if "arm" in rows:  # the labels the answer names the arms by
        runs = runs.assign(arm=runs["group"].map(dict(zip(rows["group"], rows["arm"]))).fillna(runs["group"]))
    # the study runner reads the same gate (analysis/decisions.py): it never calls decided what this calls not testable
    return decisions.gate_of(runs, list(rows["group"]), _leader(rows)), regime.scale_text(runs)


def _leader(rows: pd.DataFrame) -> object:
    """The group ranked 1 that shows every other ranked group worse (decisions.lead_of, from summary's columns)."""
    if not {"rank", "shown_worse"} <= set(rows.columns):
        return None
    ranked = rows[rows["rank"].notna()]
    first = ranked[ranked["rank"] == 1]
    others = ranked[ranked["rank"] != 1]
    return first["group"].iloc[0] if len(first) == 1 and len(others) and others["shown_worse"].astype(bool).all() \
        else None


def power_of(rows: pd.DataFrame, runs: pd.DataFrame) -> Power | None:
    """What the design of a comparison whose ranked arms none is shown worse than could detect; None when
    an arm is shown worse (the ranking informs) or fewer than 2 arms are ranked."""
    ranked = rows[rows["rank"].notna()].sort_values("rank")
    if len(ranked) < 2 or bool(rows["best"].any()):
        return None
    first = rows.iloc[0]
    metric, score = str(first["metric"]), str(first.get("score") or rules.PRIMARY)
    level = float(first.get("level") or rules.ALPHA)
    compared = "test" if str(first.get("study_role")) == EVALUATION else score
    mde, needed, largest = design_power(_compared(runs, ranked["group"], metric_table.path(compared), metric),
                                        alpha=level, power=rules.POWER, limit=MAX_SEEDS)
    delta, delta_text = rules.margin(metric)
    return Power(mde, needed, largest, level, delta, delta_text, rules.ratio_scale(metric))


def comparisons(runs: pd.DataFrame, summary: pd.DataFrame, designs: dict | None = None,
                every_run: pd.DataFrame | None = None) -> list[Comparison]:
    """One per comparison (study and task), in the leaderboard's order; ``designs``: each study's
    sequential design; ``every_run``: the runs with a tuned study's selection runs, which name its lr
    grid and choices."""
    every_run = runs if every_run is None else every_run
    if summary.empty:
        return []
    out = []
    for key, rows in summary.groupby("comparison" if "comparison" in summary else "task", sort=False):
        design = (designs or {}).get(str(rows["study"].iloc[0])) if "study" in rows else None
        mine = runs[runs["group"].isin(rows["group"])]
        gate, scale = regime_of(rows, mine)
        study_runs = (every_run[every_run["study"] == rows["study"].iloc[0]] if "study" in rows and "study" in every_run
                      else every_run)
        out.append(Comparison(key, rows, gate, scale, lr_protocol.comparison_text(mine, study_runs),
                              power_of(rows, mine), design))
    return out


def of_runs(runs: pd.DataFrame, designs: dict | None = None, alpha: float | None = None) -> StudyResult:
    """The result of a runs frame read elsewhere (runs_frame's columns: the study runner's looks, a test's
    crafted records), every study at ``alpha`` when given."""
    return build(None, runs, alpha=alpha, designs=designs)


def of_frames(runs: pd.DataFrame, summary: pd.DataFrame, designs: dict | None = None) -> StudyResult:
    """The result of runs already labelled and summarized elsewhere (a test's own levels or designs)."""
    return StudyResult(None, runs, runs.iloc[:0], [], summary, designs=designs or {})
