"""The claims engine: one set of rules that judges every claim spec (specs.py) against the runs.

A claim names its **arms** as selectors over settings (``{"norm": "ln", "placement": "in_cell"}``)
and asserts **parts** from a small vocabulary (``better``, ``not_worse``, ``equivalent``,
``more_stable``, ``faster``, ``higher_rate``, ``ratio``, ``slope``, ``converges_faster``,
``grows``); each part is tested on its own and reported, and the claim is

* `supported` only when every part is supported,
* `contradicted` when some part is contradicted,
* `inconclusive` otherwise (a part whose arms have fewer than 2 seeds is never decided),
* `not applicable` when the runs lack the arms or axes the claim is about, or no part can be tested,
* `not testable here` when every part that can be tested is gated by its regime, or the rest are
  supported (a gated part means the claim is not supported; more seeds would not change that).

Regime predicates. Before a part is tested, the predicates its claim names for it (Claim.needs,
predicates.PREDICATES: "BN pools ≤ N vectors", "equal data", "off the task's trivial solutions" ...)
are checked on the records of its arms; one that fails makes the part `not testable here: WHY (the
regime needs WHAT) — testable with CHANGE`. A claim with regime prose and no predicates cannot decide.
A part whose arm the runs lack reads not testable here while the parts whose arms exist are judged;
the claim is not applicable only when no part has its arms.

Regimes. Before a part is tested, the records of the arms it compares are checked once, here, by
the gates of analysis/regime.py that apply to its kind (regime.GATES: at chance, at ceiling, still
improving, confounded); a gated part reads `not testable here: REASON — testable with WHAT`, carries
its measured effect labelled as no verdict, no lean, no seeds-to-decide and no detectable effect, and is
never contradicted. A claim
whose arms exist only in different settings that differ in steps, data or task (and none of its own
axes) is confounded as a whole. Every verdict carries the scale it was measured at (Verdict.scale,
regime.scale_text), also the last sentence of its explanation.

One α. ``evaluate_claims(runs, alpha)`` makes every directional part a one-sided test at α in each
direction, so one (1 − 2α) interval decides both ways (90% at α = 0.05): *supported* when it lies
wholly on the claimed side of the null, *contradicted* when wholly on the other side. Equivalence
parts are TOST at α: the same (1 − 2α) interval inside (−δ, +δ) is *supported*, wholly outside is
*contradicted*; non-inferiority ("not worse") is TOST's lower test on the same interval. A slope is
the OLS slope's t interval; a divergence rate, Newcombe's interval at the same level; a zero-width
interval (every seed equal) falls back to the exact sign test at α. A sequential study runner may
pass a spent α per look: it reaches every test.

Margins δ are fixed before any data: each task metric's smallest effect of interest
(normbench/records/metrics.py; accuracy 0.01, bits/char 0.02, MSE a ratio of 1.1: MSE is compared on the log
scale, its effects read as ratios), SLOPE_DELTA in log-log units for slopes (analysis/rules.py).

Learned something. A part that compares task scores first checks, in each stratum, that at least one
of its arms learned: its finished runs' mean primary score lies outside the metric's chance band
(rules.chance_limit, the band that marks a run "did not train"). Arms that all sit at chance (a degenerate stratum: too large an lr, too few steps) say nothing
about the claim; that stratum is left out, named in the part's test, and a part with no stratum left
is not applicable with that reason. Parts measured at initialization, on timings or on gradients do
not depend on learning and skip the check.

Lr chosen for another measure. In a tuned study a part whose measure is not the score that chose each arm's lr
(a convergence part reads val_auc; the lrs were picked on the final score) is checked on the selection seeds
(lr_choice.py): where picking each arm's lr on the part's own measure turns the arms' order over, the part is not
testable here; otherwise its test names both picks and says the order holds.

Divergence. A diverged run is a result and counts as worse than every finished run; it is never
scored at chance. Score comparisons test the divergence rate and the finished runs' measure apart and
show both; either may decide unless they point opposite ways.

Where. Claims are judged within each study (the runs' ``study`` column; absent = one study), never
pooling two studies; within a study, within each setting that agrees on every axis the claim does not
compare or pool, and the settings' verdicts combine by one rule: supported (or contradicted, or
inconclusive) when every setting says so, "depends on KEY" when they differ and at least one decided,
KEY the axes on which the settings differ, each setting's verdict listed. No sort order chooses a
verdict; the setting with most seeds only supplies the effect shown first. Inside a setting another axis is
pooled only when balanced between the two arms of a part, else the effect is taken within each level
both share and combined with inverse-variance weights.

Inconclusive parts say which way the estimate leans (``lean``), the minimum detectable effect of the
design at α and power 0.8 (``mde``), and the paired seeds a decision needs at the paired sd seen
(``decide``, parts.seeds_to_settle: for the equivalence against ±δ, the direction and a non-inferiority
part's own test, each where the interval would just clear its boundary and for 80% power); an estimate
inside ±δ reads "a difference larger than δ is unlikely" only where its interval lies within about ±δ.
A gated part carries its measured effect, labelled measured, not judged (SHOWN_NOT_JUDGED).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd

from normbench.analysis import lr_protocol, regime, rules
from normbench.analysis.aggregate import format_value
from normbench.analysis.claims import failure_band, lr_choice, paper_settings, predicates, reference_levels, shown
from normbench.analysis.claims.comparison import FAILED, Context, effect_text, level_keys, pct, task_direction, varying
from normbench.analysis.claims.convergence_parts import TRAIN_LOSS_AUC, VAL_AUC
from normbench.analysis.claims.parts import evaluate_part
from normbench.analysis.claims.vocabulary import (
    CONTRADICTED,
    DEPENDS,
    INCONCLUSIVE,
    NOT_APPLICABLE,
    NOT_REPRODUCED,
    NOT_TESTABLE,
    SCORE,
    SUPPORTED,
    Claim,
    Extreme,
    Is,
    Part,
    PartSpec,
    Verdict,
    axis,
    describe,
    metric,
    select,
    undecided_text,
    values_text,
)
from normbench.analysis.intervals import ALPHA, decision_level
from normbench.records.metrics import path

# --- one claim in one setting -------------------------------------------------------------------

def not_applicable(why: str) -> Verdict:
    """A claim the records cannot judge: not applicable (the arms are missing), or not testable here when
    a claim's own hook found the setup unable to show the effect (its text says so)."""
    status = NOT_TESTABLE if why.lower().startswith("not testable here") else NOT_APPLICABLE
    return Verdict(status, None, {}, pd.DataFrame(), why)


def compared_arms(claim: Claim) -> list[str]:
    """The arms some part of the claim compares, in the claim's order: the arms it requires. An arm no part
    names (dyt_matches_ln's and derf_outperforms' norm=none, read only by the external-validity caveat,
    specs.normalization_matters) is optional: a study without it is judged on the parts, and the caveat says it
    could not be read."""
    used = {n for spec in claim.parts for n in (spec.a, spec.b) if n} | _checked_arms(claim, None)
    return [name for name in claim.arms if name in used]


def _checked_arms(claim: Claim, index: int | None) -> set[str]:
    """The arms a regime check of the claim reads (an argument naming one: flow_vanishes' arm=none), of every
    check when ``index`` is None, else of those gating part ``index`` (1-based)."""
    return {str(value) for need in claim.needs if index is None or not need.parts or index in need.parts
            for _, value in need.args if isinstance(value, str) and value in claim.arms}


def _testable_parts(claim: Claim, present: set[str]) -> list[PartSpec]:
    return [s for s in claim.parts if all(n in present for n in (s.a, s.b) if n)]


def _missing_text(claim: Claim, runs: pd.DataFrame, missing: list[str]) -> str:
    keys = list(dict.fromkeys(k for n in missing for k in claim.arms[n]))
    have = "; ".join(f"{k} ∈ {values_text(axis(runs, k))}" for k in keys)
    return f"Needs {'; '.join(f'{n} ({describe(claim.arms[n])})' for n in missing)}; the runs have {have}."


def _resolve(claim: Claim, runs: pd.DataFrame) -> tuple[dict[str, pd.DataFrame], dict[str, dict], str | None]:
    """Each arm's runs; Extreme values resolved among the values every arm using them shares. An arm the runs
    lack is left out when some part can be judged without it (its parts read not testable here, judge)."""
    frames = {name: runs[select(runs, selector)] for name, selector in claim.arms.items()}
    missing = [name for name, frame in frames.items() if frame.empty]
    if missing and not _testable_parts(claim, set(frames) - set(missing)):
        return {}, {}, _missing_text(claim, runs, missing)
    frames = {name: frame for name, frame in frames.items() if name not in missing}
    resolved: dict[str, dict] = {name: {} for name in frames}
    extremes = list(dict.fromkeys(k for s in claim.arms.values() for k, v in s.items() if isinstance(v, Extreme)))
    for key in extremes:
        users = [n for n, s in claim.arms.items() if isinstance(s.get(key), Extreme) and n in frames]
        if not users:
            continue
        shared = set.intersection(*[set(pd.to_numeric(axis(frames[n], key), errors="coerce").dropna()) for n in users])
        if len(shared) < 2:
            return {}, {}, (f"Needs at least 2 values of {key} shared by {', '.join(users)}; shared: "
                            f"{values_text(pd.Series(sorted(shared), dtype=float))}.")
        for name in users:
            value = min(shared) if claim.arms[name][key].which == "smallest" else max(shared)
            frames[name] = frames[name][np.isclose(pd.to_numeric(axis(frames[name], key), errors="coerce"), value)]
            resolved[name][key] = value
    return frames, resolved, None


def _arm_rows(claim: Claim, frames: dict[str, pd.DataFrame], resolved: dict[str, dict], runs: pd.DataFrame) -> pd.DataFrame:
    measures = {"score": SCORE}
    for spec in claim.parts:
        if spec.kind in ("converges_faster", "converges_grows"):
            measures.update({"train_loss_auc": TRAIN_LOSS_AUC, "val_auc": VAL_AUC})
        elif spec.kind in ("better", "not_worse", "equivalent", "slope") and spec.measure is not SCORE:
            measures[spec.measure.name.split(" (")[0]] = spec.measure
    rows = []
    _, name, _ = task_direction(runs)
    paired = _paired_ms(frames) if any(s.kind == "faster" for s in claim.parts) else {}
    # a setting some arm selects by a condition (warm-up > 0) shows the values its runs have (referee 17: the page
    # never said warm-up was 100 of 300 steps), in every arm that selects on it: one selected by a plain value
    # (model.qk_norm=True beside NOT_TRUE, norm.bn_mask=False beside TRUE) printed "—" (referee 24)
    conditioned = {k for selector in claim.arms.values() for k, wanted in selector.items() if isinstance(wanted, Is)}
    # one row per cell of the claim's split axes, each run in one row (shown.split_cells)
    for cell, (arm, frame) in shown.split_cells(claim, frames).items():
        chosen = {k: values_text(axis(frame, k)).strip("{}") for k in claim.arms.get(arm, {})
                  if k in conditioned and k not in resolved[arm]}
        row = {"arm": cell, **{k: format_value(v) for k, v in resolved[arm].items()}, **chosen, "runs": int(len(frame)),
               "seeds": int(frame["seed"].nunique()), "diverged": int((frame["status"] == "diverged").sum()),
               # the failure rates' one rule (rules.failed_to_learn): finished at chance or at a trivial solution
               "did not train": int((rules.failed_to_learn(frame) & (frame["status"] != "diverged")).sum())}
        if lr_protocol.CHOSEN_LR in frame and frame[lr_protocol.CHOSEN_LR].notna().any():  # a tuned study's arm
            row["lr"] = lr_protocol.arm_lrs(frame[lr_protocol.CHOSEN_LR], frame.get(lr_protocol.CHOSEN_EDGE))
        elif axis(frame, "lr").notna().any():  # shared or fixed: the lr the arm ran at, named (a claim about the lr)
            row["lr"] = values_text(axis(frame, "lr")).strip("{}")
        for label, measure in measures.items():
            values = measure.values(frame).astype(float)
            values = values.where(frame["status"] == "ok") if measure.finished_only else values
            if getattr(measure, "log", False):  # a measure compared on the log scale is shown on it, as its name says
                values = np.log(values.where(values > 0))
            values = values[np.isfinite(values)]
            label = f"{name} ({rules.primary(runs)})" if label == "score" else label  # which score: the primary
            row[f"{label} mean"] = float(values.mean()) if len(values) else math.nan
            row[f"{label} std"] = float(values.std()) if len(values) > 1 else math.nan
        if any(s.kind == "more_stable" for s in claim.parts):
            ok = frame["status"] == "ok"
            row["grad kurtosis mean"] = float(metric(frame[ok], path("grad_kurtosis")).mean())
        if paired:  # the arms timed interleaved in one process: those step times, not the runs' own
            row[PAIRED_MS] = paired[arm]
        elif any(s.kind == "faster" for s in claim.parts):
            row[PER_RUN_MS] = float(metric(frame, path("step_ms_median")).median())
        rows.append(row)
    return pd.DataFrame(rows)


def _runs_per_cell(claim: Claim, frames: dict[str, pd.DataFrame]) -> dict[str, int]:
    """The runs of each row of the arm table (one per cell of the claim's split axes): each run counted once."""
    return {cell: int(len(frame)) for cell, (_, frame) in shown.split_cells(claim, frames).items()}


PAIRED_MS = "paired step ms (bench arms: interleaved in one process)"
PER_RUN_MS = "median step ms (per-run, noisy: not a result)"


def _paired_ms(frames: dict[str, pd.DataFrame]) -> dict[str, float]:
    """Each arm's step ms from the study's paired timing (speed.paired_timing: the median over its groups' paired
    medians), or {} unless every arm has one: the runs' own step times were taken on a loaded machine (referee 19:
    the table showed RMS 12% slower per run where the paired ratio is 0.997)."""
    from normbench.analysis.speed import paired_timing

    out = {}
    for arm, frame in frames.items():
        timed = paired_timing(frame) if "group" in frame else pd.DataFrame()
        # a file that lists only the rounds: their median is the arm's paired step time
        ms = [row.step_ms_median if pd.notna(row.step_ms_median) else
              float(np.median(row.rounds_ms)) if isinstance(row.rounds_ms, list) and row.rounds_ms else math.nan
              for row in timed.itertuples()]
        ms = [m for m in ms if math.isfinite(m)]
        if not ms:
            return {}
        out[arm] = float(np.median(ms))
    return out


def shown_status(status: str) -> str:
    """A status as the page prints it: "contradicted" reads "not reproduced in this setup" (the runs differ from
    the paper's in scale and often in task or architecture too, which the scale sentence names; referee 18: "at
    this scale" blamed the size for what the task did), every other status as it is."""
    return NOT_REPRODUCED if status == CONTRADICTED else status


def shown_verdict(claim: Claim, verdict: Verdict) -> str:
    """The claim's verdict as the page prints it: a contradicted one with what differs from the paper."""
    if verdict.status != CONTRADICTED:
        return verdict.status
    paper = claim.measures or claim.where or claim.citation
    here = verdict.scale.split(";")[0] if verdict.scale else "this benchmark's scale"
    return f"{NOT_REPRODUCED} (the paper: {paper}; here: {here})"


def verdict_figures(verdict: Verdict) -> dict:
    """The row a referee reads beside the verdict (claims.csv): the deciding effect with its units (its label)
    and (1 − 2α) interval, the seeds (n = the fewest distinct seeds of any arm judged), the scale and the lr
    protocol; empty strings where the verdict has none."""
    effect = verdict.effect
    low, high = effect.interval if effect is not None and effect.interval is not None else (None, None)
    return {"effect": "" if effect is None else effect.estimate, "effect_low": "" if low is None else low,
            "effect_high": "" if high is None else high, "effect_what": "" if effect is None else effect.label,
            "seeds": "" if verdict.n_seeds is None else verdict.n_seeds, "scale": verdict.scale, "lr": verdict.lr}


def part_line(index: int, part: Part) -> str:
    extra = f" ({undecided_text(part)})" if part.status == INCONCLUSIVE else ""
    if part.status == NOT_TESTABLE:
        return f" Part {index} — {part.assertion}: {part.note.strip()}. Test: {part.test}"
    return (f" Part {index} — {part.assertion}: {shown_status(part.status)}{extra}. Effect: {effect_text(part.effect)}. "
            f"Test: {part.test}{part.note}")


def relevant(claim: Claim, runs: pd.DataFrame) -> tuple[pd.DataFrame, str | None]:
    """The runs a claim can use (its statuses and requirements, in one of its arms), or why none
    can: what no subset of the runs can gain, so it is checked once per study."""
    runs = runs[runs["status"].isin(claim.statuses)]
    for need in claim.requires:
        kept = runs[select(runs, need.selector)]
        if kept.empty:
            have = "; ".join(f"{k} ∈ {values_text(axis(runs, k))}" for k in need.selector)
            return runs, f"Needs {need.needs}; the runs have {have}."
        runs = kept
    masks = {name: select(runs, selector) for name, selector in claim.arms.items()}
    missing = [name for name, mask in masks.items() if not mask.any()]
    if missing and not _testable_parts(claim, {n for n in masks if n not in missing}):
        return runs, _missing_text(claim, runs, missing)
    return runs[np.logical_or.reduce(list(masks.values()))], None


def judge(claim: Claim, runs: pd.DataFrame, alpha: float = ALPHA, selection: pd.DataFrame | None = None) -> Verdict:
    """One claim on one setting's runs; ``selection``: a tuned study's selection runs, which chose each arm's lr
    (lr_choice.check reads them for a part whose measure is not the one that chose)."""
    decision_level(alpha)  # rejects an α outside (0, 0.5)
    runs, why = relevant(claim, runs)
    if why:
        return not_applicable(why)
    frames, resolved, why = _resolve(claim, runs)
    if why:
        return not_applicable(why)
    prepared, voided = "", ""
    if claim.prepare is not None:
        out = claim.prepare(runs)
        if isinstance(out, str) and not out.lower().startswith("not testable here"):
            return not_applicable(out)
        if isinstance(out, str):  # the claim's own regime check failed: its parts are measured, not judged
            voided = out
        else:
            runs, prepared = out
            frames, resolved, why = _resolve(claim, runs)
            if why:
                return not_applicable(why)
    ctx = Context(runs, frames, claim.compare, alpha)
    curves = (regime.read_evals(runs["run_dir"].dropna()) if "run_dir" in runs and any(
        regime.STILL_IMPROVING in regime.gates_for(s.kind, s.measure.task_metric) for s in claim.parts) else None)
    if voided:
        return _voided(claim, voided, frames, resolved, runs, ctx, selection)
    parts = [_absent(claim, spec, frames, runs) or _unmet(claim, i, spec, ctx) or _gated(claim, spec, ctx, curves)
             or evaluate_part(spec, ctx) for i, spec in enumerate(claim.parts, 1)]
    # a gated failure-rate part still says which rule counted its failures (its arms' counts are what gated it)
    parts = [_failure_rule_shown(spec, p, frames, runs) for spec, p in zip(claim.parts, parts)]
    if selection is not None and not selection.empty:
        parts = [_lr_chosen_for(claim, spec, part, frames, selection, runs) for spec, part in zip(claim.parts, parts)]
    if all(p.status == NOT_APPLICABLE for p in parts):
        return not_applicable("No part can be tested: " + " ".join(
            f"{p.assertion}: {p.note.strip() or 'not applicable'}" for p in parts))
    parts = _after_setup(claim, parts)
    missing = tuple(n for n in compared_arms(claim) if n not in frames)
    # a part whose arms ran and whose checks read no absent arm (in_cell_most_stable without none reads nothing)
    # a one-arm part (a slope over depth) that its gates stop says nothing about a claim comparing arms: only a
    # part comparing two arms that both ran keeps a study with a missing arm from "not applicable" (without
    # this, postln_grad_depth's pre slope made every Pre-LN study an entry "not testable here")
    present = [(spec, p) for i, (spec, p) in enumerate(zip(claim.parts, parts), 1)
               if all(n in frames for n in (spec.a, spec.b) if n) and not _checked_arms(claim, i) & set(missing)]
    if missing and not any(p.status in (SUPPORTED, CONTRADICTED, INCONCLUSIVE)
                           or (p.status == NOT_TESTABLE and spec.a and spec.b) for spec, p in present):
        # a study that lacks an arm and has no part whose arms it ran says nothing about the claim; a part whose
        # arms it ran reads its own gates (derf_muon's derf vs rms: outside the quoted domain, a shared lr)
        return not_applicable(_missing_text(claim, runs, list(missing)) + " No part with its arms present can be "
                              "tested here: " + " ".join(f"{p.assertion}: {p.note.strip()}" for p in parts
                                                         if p.status == NOT_TESTABLE and "the runs have no" not in p.note))
    status = claim_status([p.status for p in parts])
    level = decision_level(alpha)
    measured = regime.scale_text(pd.concat(list(frames.values())))
    context = (f"{claim.design}{prepared}{paper_settings.text(claim, frames)}{_levels_text(claim, frames, runs, selection)} Each part is a one-sided test at α = {alpha:g} in each direction on one "
               f"{pct(level)} interval (equivalence: TOST at α, the same interval inside ±δ).").strip()
    explanation = context + "".join(part_line(i, p) for i, p in enumerate(parts, 1)) + f" Scale: {measured}."
    effects = deciding_first(status, parts)
    return Verdict(status, effects[0] if effects else None, _runs_per_cell(claim, frames),
                   _arm_rows(claim, frames, resolved, runs), explanation, effects[1:], parts, alpha=alpha,
                   context=context, scale=measured, seeds={n: int(f["seed"].nunique()) for n, f in frames.items()},
                   missing=missing)


def _levels_text(claim: Claim, frames: dict[str, pd.DataFrame], runs: pd.DataFrame,
                 selection: pd.DataFrame | None = None) -> str:
    """Where each arm ended against the task's reference levels (reference_levels.text), for a claim some part of
    which reads how far training got (the task's score, its curve, a failure count, or a ratio over an lr grid of
    final scores); a claim measured at initialization or on timings says nothing of it. Each arm split along the
    claim's split axes, then the measures the claim shows beside its verdict and its mechanism, read at equal lrs on
    ``selection`` (a tuned study's selection runs) where the judged cells ran at different lrs (shown.py)."""
    reads_training = any(s.measure.task_metric or s.kind.startswith("converges") or s.kind == "ratio"
                         or s.measure is FAILED for s in claim.parts)
    levels = reference_levels.text(shown.split_arms(claim, frames), runs) if reads_training else ""
    return levels + shown.measures_text(claim, frames) + shown.mechanism_text(claim, frames, selection)


def _failure_rule_shown(spec: PartSpec, part: Part, frames: dict[str, pd.DataFrame], runs: pd.DataFrame) -> Part:
    """A failure-rate part its gates stopped, with the rule that counts a failure and its band's sensitivity
    (failure_band.reading; a judged one has it from rate_part)."""
    if spec.measure is not FAILED or part.status != NOT_TESTABLE or "Failure rule:" in part.test or \
            not all(n in frames for n in (spec.a, spec.b) if n):
        return part
    said, hinges = failure_band.reading({n: frames[n] for n in (spec.a, spec.b) if n}, runs)
    note = part.note + ("; the failure count hinges on the band (above)" if hinges and part.note else "")
    return replace(part, test=part.test + said, note=note)


def _lr_chosen_for(claim: Claim, spec: PartSpec, part: Part, frames: dict[str, pd.DataFrame], selection: pd.DataFrame,
                   runs: pd.DataFrame) -> Part:
    """The part once its arms' lr choice is checked against its own measure (lr_choice.check): not testable here
    where the arms' order on the selection seeds turns over with the choice, its test naming the picks either way."""
    if part.status == NOT_APPLICABLE:
        return part
    note, text = lr_choice.check(claim, spec, frames, selection, runs)
    if note and part.status != NOT_TESTABLE:
        return Part(part.assertion, NOT_TESTABLE, part.test + text, not_judged(part.effects), part.arms, part.margin,
                    note=note)
    return replace(part, test=part.test + text) if text else part


def _voided(claim: Claim, why: str, frames: dict, resolved: dict, runs: pd.DataFrame, ctx: Context,
            selection: pd.DataFrame | None = None) -> Verdict:
    """A claim whose own regime check (its prepare hook) failed: not testable here, for the reason it gives,
    with each part's measured effect beside it, labelled as no verdict (SHOWN_NOT_JUDGED)."""
    parts = [Part(spec.assertion, NOT_TESTABLE, f"{' vs '.join(n for n in (spec.a, spec.b) if n)}: the claim's regime "
                  f"check failed (above).", measured_only(spec, ctx) if all(n in frames for n in (spec.a, spec.b) if n)
                  else (), tuple(n for n in (spec.a, spec.b) if n), note="not judged: the claim's regime check failed "
                  "(the verdict's first line)") for spec in claim.parts]
    measured = regime.scale_text(pd.concat(list(frames.values()))) if frames else ""
    effects = [e for p in parts for e in p.effects]
    why += paper_settings.text(claim, frames) + _levels_text(claim, frames, runs, selection)
    return Verdict(NOT_TESTABLE, effects[0] if effects else None, _runs_per_cell(claim, frames),
                   _arm_rows(claim, frames, resolved, runs), why, effects[1:], parts, alpha=ctx.alpha, context=why,
                   scale=measured, seeds={n: int(f["seed"].nunique()) for n, f in frames.items()})


def deciding_first(status: str, parts: list[Part]) -> list:
    """Every part's effects, those of the part the claim's verdict rests on first (the first part whose status
    is the claim's: a claim not reproduced by its part 3 leads with part 3's effect), so the effect printed beside a
    verdict (claims.csv, the claims line) is the one that decided it; part 1's when no part has the claim's status.
    Referee 21: ln_batch_robust and bn_gamma_small_flow printed part 1's effect, which supports the claim, beside
    "not reproduced"."""
    lead = next((p for p in parts if p.status == status and p.effects), None)
    return [*(lead.effects if lead else ())] + [e for p in parts if p is not lead for e in p.effects]


def claim_status(statuses: list[str]) -> str:
    """A claim from its parts' statuses (parts that cannot be tested aside): contradicted when one part
    is; supported when every part is; not testable here when a part is gated (the claim cannot be
    supported here, whatever its other parts read, and seeds would not change that: an inconclusive
    part beside it keeps its own reading, but the claim does not advise seeds); inconclusive otherwise."""
    tested = [s for s in statuses if s != NOT_APPLICABLE]
    if CONTRADICTED in tested:
        return CONTRADICTED
    if tested and all(s == SUPPORTED for s in tested) and len(tested) == len(statuses):
        return SUPPORTED
    if NOT_TESTABLE in tested:
        return NOT_TESTABLE
    return INCONCLUSIVE


def _after_setup(claim: Claim, parts: list[Part]) -> list[Part]:
    """A claim's parts once its setup checks (vocabulary.setup_check) are read: when one is not supported,
    every part is not testable here, the check keeping its effect so the reader sees why."""
    failed = [(spec, part) for spec, part in zip(claim.parts, parts) if spec.setup and part.status != SUPPORTED]
    if not failed:
        return parts
    spec, part = failed[0]
    reason = (part.note.strip().removeprefix("not testable here: ").split(" — ")[0] if part.status == NOT_TESTABLE
              else f"the setup check \"{spec.assertion}\" is {part.status}")
    note = f"not testable here: {reason} — testable with {spec.setup}"
    # the setup check keeps its effect (why); every other part keeps what it measured, labelled as no verdict
    return [p if p.status == NOT_APPLICABLE and s is not spec else
            Part(p.assertion, NOT_TESTABLE, p.test, p.effects if s.setup else not_judged(p.effects), p.arms, p.margin,
                 note=note)
            for s, p in zip(claim.parts, parts)]


def _absent(claim: Claim, spec: PartSpec, frames: dict[str, pd.DataFrame], runs: pd.DataFrame) -> Part | None:
    """A part one of whose arms the runs lack, while another part can be judged: not testable here, the
    arm named (a part that cannot be judged never takes the ones that can with it)."""
    names = tuple(n for n in (spec.a, spec.b) if n)
    lacking = [n for n in names if n not in frames]
    if not lacking:
        return None
    selectors = "; ".join(f"{n} ({describe(claim.arms[n])})" for n in lacking)
    return Part(spec.assertion, NOT_TESTABLE, f"{' vs '.join(names)}: the arms are checked before any test.", (),
                names, note=f"not testable here: the runs have no {selectors} — testable with a study that runs "
                            f"{'that arm' if len(lacking) == 1 else 'those arms'} beside the others")


def _unmet(claim: Claim, index: int, spec: PartSpec, ctx: Context) -> Part | None:
    """The part as "not testable here" when a regime predicate that gates it fails on the records of its
    arms (predicates.py), or when the claim's regime is prose that nothing checks."""
    names = tuple(n for n in (spec.a, spec.b) if n)
    test = f"{' vs '.join(names)}: the claim's regime predicates checked before any test"
    if claim.regime and not claim.needs:
        return Part(spec.assertion, NOT_TESTABLE, test + ".", measured_only(spec, ctx), names,
                    note=predicates.prose_only(claim))
    failed = []  # every predicate that fails is named, not only the first: fixing one must not reveal the next
    for need in claim.needs:
        if need.covers(index):
            named = need.arguments.get("arm")  # a predicate about one arm reads it even where the part does not compare it
            read = names + ((named,) if named in ctx.arms and named not in names else ())
            note = predicates.failure(need, {n: ctx.arms[n] for n in read}, ctx.runs)
            if note:
                failed.append((need.name, note))
    if not failed:
        return None
    # referee 19: own_lr, same_lr and timed_as_paper blanked the effect, hiding data that read for or against the
    # paper (derf_muon_interaction −0.144 bpc): what the runs measured is shown, labelled as no verdict
    return Part(spec.assertion, NOT_TESTABLE, f"{test} ({', '.join(name for name, _ in failed)}).",
                measured_only(spec, ctx), names, note=_joined_notes([note for _, note in failed]))


def _joined_notes(notes: list[str]) -> str:
    """Several "not testable here: WHY — testable with REMEDY" notes as one: the reasons, then the remedies."""
    if len(notes) == 1:
        return notes[0]
    split = [note.removeprefix("not testable here: ").split(" — testable with ", 1) for note in notes]
    reasons = "; and ".join(part[0] for part in split)
    remedies = "; and ".join(part[1] for part in split if len(part) > 1)
    return f"not testable here: {reasons}" + (f" — testable with {remedies}" if remedies else "")


def _gated(claim: Claim, spec: PartSpec, ctx: Context, curves: pd.DataFrame | None) -> Part | None:
    """The part as "not testable here" when the regime of its arms cannot show an effect (regime.GATES
    for its kind), None when it can be tested: every part kind is gated here, once."""
    names = tuple(n for n in (spec.a, spec.b) if n)
    gates = regime.gates_for(spec.kind, spec.measure.task_metric)
    gate = regime.check({n: ctx.arms[n] for n in names}, ctx.runs, gates, claim.compare + claim.pool, curves)
    if gate is None:
        return None
    return Part(spec.assertion, NOT_TESTABLE, f"{' vs '.join(names)}: regime checked before any test ({gate.kind}).",
                measured_only(spec, ctx), names, note=gate.text)


SHOWN_NOT_JUDGED = "measured, not judged (the regime check failed)"  # on every gated part's measured effect


def measured_only(spec: PartSpec, ctx: Context) -> tuple:
    """What the runs show for a part its regime check voids, labelled as no verdict: a gate that hides the
    measured gap reads as a way not to report a result against the paper (referee 17); () when nothing can be
    measured."""
    try:
        effects = evaluate_part(spec, ctx).effects
    except (KeyError, ValueError, ZeroDivisionError, IndexError, TypeError):  # a measure gated runs cannot give
        return ()
    return not_judged(effects)


def not_judged(effects) -> tuple:
    """Effects labelled as measured, not judged (SHOWN_NOT_JUDGED), once: a label that says so already is kept."""
    return tuple(e if e.label.startswith(SHOWN_NOT_JUDGED) else replace(e, label=f"{SHOWN_NOT_JUDGED}: {e.label}")
                 for e in effects)


# --- settings and studies -----------------------------------------------------------------------

def settings(runs: pd.DataFrame, free: tuple[str, ...]) -> list[tuple[str, pd.DataFrame]]:
    """Runs split into settings that agree on every varying axis outside ``free`` (and the seed),
    most seeds (then most runs) first: a claim compares like with like.

    A run whose value is missing (the setting does not apply to it, e.g. eps for norm=none) joins
    every setting that agrees with it on the axes it has. So does the un-normalised model, whose
    placement is recorded as ``none``: it is the same model at every placement."""
    view = runs
    if "axes.placement" in runs:
        view = runs.assign(**{"axes.placement": runs["axes.placement"].where(runs["axes.placement"] != "none")})
    fixed = varying(view, free)
    if not fixed:
        return [("", runs)]
    keys = level_keys(view, fixed)

    def covers(general: tuple, specific: tuple) -> bool:
        return all(g is None or g == s for g, s in zip(general, specific))

    distinct = sorted(set(keys), key=lambda k: tuple("" if v is None else v for v in k))
    chosen = [k for k in distinct if not any(other != k and covers(k, other) for other in distinct)]
    typed = {c: {str(v): v for v in runs[c].dropna().unique()} for c in fixed}  # 1e-05 prints as 1e-05
    groups = []
    for key in chosen:
        members = [i for i, row in zip(runs.index, keys) if covers(row, key)]
        name = ", ".join(f"{c.removeprefix('axes.')}={'n/a' if v is None else format_value(typed[c].get(v, v))}"
                         for c, v in zip(fixed, key))
        groups.append((name, runs.loc[members]))
    return sorted(groups, key=lambda g: (-g[1]["seed"].nunique(), -len(g[1])))


def _checked(claim: Claim, runs: pd.DataFrame, alpha: float, selection: pd.DataFrame | None = None) -> Verdict:
    try:
        return judge(claim, runs, alpha, selection)
    except Exception as error:  # noqa: BLE001 - reported in the verdict, not swallowed
        return Verdict(INCONCLUSIVE, None, {}, pd.DataFrame(), f"The check itself failed ({type(error).__name__}: {error}).")


def in_study(claim: Claim, runs: pd.DataFrame, alpha: float) -> Verdict:
    """A claim within one study: judged within each setting where it applies; the headline is the
    setting with most seeds, the others listed with it by name and verdict, never averaged into it.
    A study tuned per arm is judged on its evaluation runs, each arm at its own lr (analysis/lr_protocol.py)."""
    protocol = lr_protocol.kind_of(runs)  # of the whole study, before its evaluation runs are picked
    # the runs that chose each arm's lr, read by a part whose measure is not the one that chose (lr_choice)
    selection = lr_choice.selection_runs(runs) if protocol == "tuned" and "lr" not in claim.compare else None
    runs, lr_note = lr_protocol.claim_runs(runs, compares_lr="lr" in claim.compare)
    runs, why = relevant(claim, runs)
    if why:
        return not_applicable(why)
    applicable = [(name, verdict) for name, frame in settings(runs, claim.compare + claim.pool)
                  if (verdict := _checked(claim, frame, alpha, selection)).status != NOT_APPLICABLE]
    # a setting that lacks an arm some other setting has is not a second opinion, only a poorer first one
    whole = [(name, verdict) for name, verdict in applicable if not verdict.missing]
    applicable = whole or applicable
    if not applicable:
        verdict = _checked(claim, runs, alpha)
        if verdict.status != NOT_APPLICABLE:  # only a mix of settings has every arm: do not mix
            confound = _confounded_mix(claim, runs)
            verdict = confound or not_applicable(f"No single setting has every arm: the runs that differ only in "
                                                 f"{', '.join(claim.compare)} (and seed) do not cover the comparison.")
        return verdict
    # a setting where the claim is not testable is no second opinion: the claim depends on a setting only
    # where two testable settings disagree (rnn_table read "depends on task" for supported on adding and not
    # testable on fortunes_lm); the headline is the testable setting with most seeds
    testable = [(n, v) for n, v in applicable if v.status != NOT_TESTABLE]
    # a setting where the claim is not reproduced refutes a claim stated without that setting: unless another setting
    # supports it (then it depends on the setting), it leads, beside undecided ones (referee 23: "depends on
    # task.n_train" for not reproduced at 16000 windows and undecided at 1000)
    refuted = {v.status for _, v in testable} & {SUPPORTED, CONTRADICTED} == {CONTRADICTED}
    if refuted:
        testable.sort(key=lambda item: item[1].status != CONTRADICTED)  # stable: the most seeds first within each
    applicable = testable + [(n, v) for n, v in applicable if v.status == NOT_TESTABLE]
    (name, verdict), others = applicable[0], applicable[1:]
    if not verdict.context.strip() and verdict.explanation.strip():  # a setup hook's reason (no parts): shown on
        verdict.context = verdict.explanation  # the page, which renders the context, not the explanation
    # a claim that compares lrs reads a tuned study's selection runs, every lr of the grid: the lr is swept as its arm,
    # none chosen (referee 27: ln_larger_stable_lr read "tuned per arm ... chosen on selection seeds")
    swept = protocol == "tuned" and "lr" in claim.compare
    verdict.lr = lr_protocol.PROTOCOLS["swept" if swept else protocol].words
    verdict.setting, verdict.others = name, [(n, v.status) for n, v in others]
    statuses = {v.status for _, v in testable}
    gated = [n for n, v in applicable if v.status == NOT_TESTABLE]
    if len(statuses) > 1 and SUPPORTED in statuses:
        keys = _differing([n for n, _ in testable])
        shown = "; ".join(f"{n}: {shown_status(v.status)}" for n, v in testable[:8])  # the page's words, as everywhere
        verdict.setting_status, verdict.status = verdict.status, f"{DEPENDS} {keys}"
        where = (f" Judged at each of {len(testable)} testable settings, which disagree ({shown}"
                 f"{' …' if len(testable) > 8 else ''}): the claim depends on {keys}. The effect shown is {name}'s.")
    elif refuted and len(statuses) > 1:
        where = (f" Judged at each of {len(applicable)} settings: {shown_status(CONTRADICTED)} at {name}, which a claim "
                 f"stated for every setting cannot outweigh; the others: "
                 + "; ".join(f"{n}: {shown_status(v.status)}" for n, v in others[:6]) + (" …" if len(others) > 6 else "")
                 + f". The effect shown is {name}'s.")
    elif others:
        agree = (f"which agree: {shown_status(verdict.status)}" if len(testable) == len(applicable) else
                 f"testable at {len(testable)} ({shown_status(verdict.status)}), not testable here at {', '.join(gated)}"
                 if testable else "not testable here at any")
        where = (f" Judged at each of {len(applicable)} settings, {agree}. The effect shown is "
                 f"{name}'s; the others: " + "; ".join(f"{n}: {shown_status(v.status)}" for n, v in others[:6])
                 + (" …" if len(others) > 6 else "") + ".")
    else:
        where = f" Judged within {name}." if name else ""
    if verdict.status == CONTRADICTED:  # what differs from the paper stands first wherever the verdict is read
        differs = shown_verdict(claim, verdict).removeprefix(NOT_REPRODUCED).strip(" ()")
        verdict.context = f"Not reproduced in this setup ({differs}). {verdict.context}"
        verdict.explanation = f"Not reproduced in this setup ({differs}). {verdict.explanation}"
    on_curve = any(spec.kind.startswith("converges") for spec in claim.parts)  # decided on val_auc
    if swept:
        lr_note = lr_protocol.swept_note(runs)
    elif protocol == "tuned":  # each arm's own lr, chosen: the rows say which (elsewhere their lr column is what ran)
        lr_note = lr_protocol.arm_lr_note(verdict.evidence, on_curve) or lr_note
    # the lr note joins a text that says something; alone it would read as the verdict's reason
    verdict.explanation += where + (lr_note if verdict.explanation.strip() else "")
    verdict.context += where + (lr_note if verdict.context.strip() else "")
    return verdict


def _confounded_mix(claim: Claim, runs: pd.DataFrame) -> Verdict | None:
    """A claim whose arms exist only in settings that differ in steps, data or task (regime.confounded):
    not testable here, every part, rather than not applicable."""
    frames, _, why = _resolve(claim, runs)
    if why:
        return None
    gate = regime.confounded(frames, claim.compare + claim.pool)
    if gate is None:
        return None
    parts = [Part(s.assertion, NOT_TESTABLE, f"{' vs '.join(n for n in (s.a, s.b) if n)}: regime checked before any "
                                             f"test ({gate.kind}).", (), tuple(n for n in (s.a, s.b) if n), note=gate.text)
             for s in claim.parts]
    measured = regime.scale_text(pd.concat(list(frames.values())))
    context = f"{claim.design} No single setting has every arm, and the arms' settings differ: {gate.text}.".strip()
    return Verdict(NOT_TESTABLE, None, {n: int(len(f)) for n, f in frames.items()}, pd.DataFrame(),
                   context + "".join(part_line(i, p) for i, p in enumerate(parts, 1)) + f" Scale: {measured}.",
                   parts=parts, context=context, scale=measured)


def _differing(names: list[str]) -> str:
    """The axes whose values differ between settings named "k=v, k=v" (settings())."""
    values: dict[str, set[str]] = {}
    for name in names:
        for pair in name.split(", "):
            key, _, value = pair.partition("=")
            values.setdefault(key, set()).add(value)
    differ = [k for k, v in values.items() if len(v) > 1]
    return ", ".join(differ) or "the setting"


def studies(runs: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """The runs of each study (the ``study`` column; absent or empty = one unnamed study)."""
    if "study" not in runs or runs["study"].isna().all():
        return [("", runs)]
    label = runs["study"].astype(object).where(runs["study"].notna(), "").astype(str)
    return [(str(name), frame) for name, frame in runs.groupby(label, sort=True)]


def evaluate(claims: list[Claim], runs: pd.DataFrame, alpha: float = ALPHA) -> list[tuple[Claim, Verdict]]:
    """Every claim within every study: one verdict per (claim, study) where it applies, and one
    "not applicable" entry for a claim that applies in no study. Studies are never pooled."""
    decision_level(alpha)
    # one score per study, chosen once (rules.primary), so that every arm's frame reads the same one
    # (under a constant lr, the mean of the last evaluations: rules.final_quality_score)
    parts = [(study, frame.assign(**{rules.CONFIG_KEY: rules.final_quality_score(frame)})) for study, frame in studies(runs)]
    out = []
    for claim in claims:
        found, missed = [], []
        for study, frame in parts:
            verdict = in_study(claim, frame, alpha)
            verdict.study, verdict.alpha = study, alpha
            (found if verdict.status != NOT_APPLICABLE else missed).append(verdict)
        if found:
            out.extend((claim, v) for v in found)
        elif len(missed) == 1:
            out.append((claim, missed[0]))
        else:
            why = "; ".join(f"{v.study or 'unnamed'}: {v.explanation}" for v in missed[:4])
            out.append((claim, not_applicable(f"Not applicable in any of the {len(missed)} studies ({why}"
                                              f"{' …' if len(missed) > 4 else ''}).")))
    return out
