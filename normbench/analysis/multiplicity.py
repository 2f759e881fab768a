"""Multiplicity across the claims line, and what differs from the papers.

Every claim part is a one-sided test at α in each direction, so each claim with no true effect still
reads "supported" or "contradicted" with probability up to 2α; eighteen of them at α = 0.05 would
give about 1.8 directional verdicts by chance alone. The claims line therefore says:

- how many verdicts were judged (supported, contradicted, inconclusive: each one test), at which α, and
  how many directional verdicts chance alone would give over them (2α each: the count of tests, not of
  the verdicts that came out directional);
- which verdicts rest on the same runs (the same study and setting, an arm selecting the same settings:
  ``postln_needs_warmup`` and ``postln_fails_without_warmup`` from the same 4 + 4 runs): not
  independent, which moves the spread of that chance count, not its mean;
- which directional verdicts survive Benjamini–Hochberg at α over one p per judged verdict,
  inconclusive ones included (a directional verdict's own p is below α by construction, so BH over
  those alone would keep them all), which do not, and every judged verdict's q. The p is read from the verdict's (1 − 2α) interval by a normal
  approximation (the interval's half-width over z gives the standard error; on the log scale for a
  ratio) only where the part's test gives no p of its own; where it does (a t on its degrees of freedom,
  Fisher's exact test for one rate comparison: 3/3 against 0/3 is p = 0.05, never < 0.001), that p.

``external_validity`` writes the paragraph beside the claims line from the claim specs and the
verdicts: the scale each decided verdict was measured at (regime.scale_text) beside the scale its
paper states (the spec's ``paper_scale`` field where it has one, else the "the paper's scale is …"
clause of its ``regime``), and which decided verdicts may move with scale (those whose paper states a
scale: theirs was larger than any run here). No sentence is written per claim by hand.

Imports: analysis.claims.vocabulary (statuses), scipy. Torch-free.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from scipy import stats

from normbench.analysis.claims.engine import shown_status
from normbench.analysis.claims.vocabulary import CONTRADICTED, DEPENDS, INCONCLUSIVE, SUPPORTED
from normbench.analysis.rules import ALPHA

DIRECTIONAL = (SUPPORTED, CONTRADICTED)
JUDGED = (SUPPORTED, CONTRADICTED, INCONCLUSIVE)  # the verdicts with an interval: BH's family
_PAPER_SCALE = re.compile(r"the paper'?s scale is ([^;.]+(?:\.\d[^;.]*)*)", re.IGNORECASE)


@dataclass(frozen=True)
class Reading:
    """One judged verdict on the claims line: its claim id (and study), status, approximate p, BH q and the
    verdicts it shares its runs with."""

    claim: str
    status: str
    p: float
    q: float
    study: str = ""
    piece: int = 0      # verdicts with the same piece rest on runs they share (linked through any arm's runs)


def p_value(effect) -> float:
    """The one-sided p on the estimate's side: the part's own test's where it gives one (Effect.p: t on its
    degrees of freedom, Fisher's exact test for one rate comparison), else from the effect's interval by a normal
    approximation (a ratio effect, null 1, on the log scale). NaN when neither can be had."""
    if effect is not None and math.isfinite(getattr(effect, "p", math.nan)):
        return float(effect.p)
    if effect is None or effect.interval is None or not math.isfinite(effect.estimate):
        return math.nan
    low, high, value, null = effect.interval[0], effect.interval[1], effect.estimate, effect.null
    if null == 1.0:  # a ratio
        if min(low, high, value) <= 0:
            return math.nan
        low, high, value, null = math.log(low), math.log(high), math.log(value), 0.0
    z = float(stats.norm.ppf(0.5 + effect.level / 2))
    se = (high - low) / (2 * z)
    if not se > 0:
        return math.nan
    return float(stats.norm.sf(abs(value - null) / se))


def verdict_p(verdict) -> float:
    """The p of the part a verdict rests on, among its parts with the verdict's own status: a contradicted
    claim the smallest (one contradicted part contradicts it), a supported one the largest (every part had
    to be supported), an inconclusive one the smallest (the part closest to deciding). The verdict's
    headline effect where it carries no parts."""
    parts = [part for part in getattr(verdict, "parts", None) or () if part.status == verdict.status]
    if not parts:
        return p_value(verdict.effect)
    ps = [p_value(part.effect) for part in parts]
    if any(not math.isfinite(p) for p in ps):
        finite = [p for p in ps if math.isfinite(p)]
        return math.nan if verdict.status == SUPPORTED or not finite else min(finite)
    return max(ps) if verdict.status == SUPPORTED else min(ps)


def benjamini_hochberg(ps: list[float]) -> list[float]:
    """BH adjusted p-values (q) in the input order; NaN stays NaN and is not counted."""
    finite = sorted((p, i) for i, p in enumerate(ps) if math.isfinite(p))
    m, qs, running = len(finite), [math.nan] * len(ps), 1.0
    for rank in range(m, 0, -1):
        p, i = finite[rank - 1]
        running = min(running, p * m / rank)
        qs[i] = running
    return qs


def _signature(verdict) -> set:
    """What a verdict's runs are: (study, setting, one arm's selected settings) for each arm."""
    evidence = getattr(verdict, "evidence", None)
    if evidence is None or evidence.empty or "runs" not in evidence:
        return set()
    settings = list(evidence.columns[1:list(evidence.columns).index("runs")])
    return {(verdict.study, verdict.setting, tuple((c, str(row[c])) for c in settings))
            for _, row in evidence.iterrows()}


def readings(pairs, alpha: float = ALPHA) -> list[Reading]:
    """(claim, verdict) pairs -> one Reading per judged verdict (supported, contradicted, inconclusive) in
    their order. BH runs over all of them, one p each, read from the effect of the part the verdict rests
    on (a directional verdict's own p is below α by construction, so BH over those alone would keep them
    all). An inconclusive verdict with no interval to read a p from enters at p = 1 (a valid p that never
    rejects); a directional one without keeps q NaN and is never counted as kept. BH holds under the
    positive dependence of verdicts that share runs, so those stay separate hypotheses, named beside."""
    judged = [(c, v) for c, v in pairs if v.status in JUDGED]
    signatures = [_signature(v) for _, v in judged]
    ps = [verdict_p(v) for _, v in judged]
    ps = [1.0 if not math.isfinite(p) and v.status == INCONCLUSIVE else p for p, (_, v) in zip(ps, judged)]
    qs = benjamini_hochberg(ps)
    piece = list(range(len(judged)))
    for i in range(len(judged)):  # one piece per group of verdicts linked by shared runs
        for j in range(i):
            if signatures[i] & signatures[j]:
                old, new = piece[i], piece[j]
                piece = [new if k == old else k for k in piece]
    return [Reading(claim.id, verdict.status, ps[i], qs[i], str(getattr(verdict, "study", "") or ""), piece[i])
            for i, (claim, verdict) in enumerate(judged)]


def not_kept(pairs, alpha: float = ALPHA) -> dict[tuple[str, str], float]:
    """(claim id, study) -> q of each directional verdict Benjamini–Hochberg over the judged verdicts does not
    keep: what the claims line and the claim's section say beside its status."""
    return {(r.claim, r.study): r.q for r in readings(pairs, alpha)
            if r.status in DIRECTIONAL and not (math.isfinite(r.q) and r.q <= alpha)}


def claims_line(pairs, alpha: float = ALPHA, titles: dict[str, str] | None = None) -> str:
    """The multiplicity sentence beside the claims line ("" when no verdict is directional). Every number in
    it counts the same set: the judged verdicts, each one test, each listed with its q. ``titles``: study
    id -> the title the report gives it, naming a claim judged in several studies."""
    found = readings(pairs, alpha)
    directional = [r for r in found if r.status in DIRECTIONAL]
    if not directional:
        return ""
    ids = [r.claim for r in found]

    def name(r: Reading) -> str:
        study = (titles or {}).get(r.study, r.study)
        return f"{r.claim} ({study})" if ids.count(r.claim) > 1 and study else r.claim
    kept = [r for r in directional if math.isfinite(r.q) and r.q <= alpha]
    lost = [r for r in directional if r not in kept]
    groups = [[name(r) for r in found if r.piece == k] for k in dict.fromkeys(r.piece for r in found)]
    shared = [group for group in groups if len(group) > 1]
    # each status in the page's words, with the entries it counts (referee 20: "3 contradicted", bare and unnamed)
    by_status = "; ".join(f"{sum(r.status == s for r in found)} {shown_status(s)}: "
                          + ", ".join(entry_of(r.claim, r.study, titles) for r in found if r.status == s)
                          for s in JUDGED if any(r.status == s for r in found))
    line = (f"Multiplicity: {_count(len(found), 'judged verdict')} ({by_status}), each a one-sided test at "
            f"α = {alpha:g} in each direction, so with no true effect anywhere about {2 * alpha * len(found):.2g} of "
            f"the {len(found)} would be directional by chance (2α each")
    if shared:
        line += ("; " + "; ".join(" and ".join(group) for group in shared)
                 + " rest on shared runs, which moves the spread of that count, not its mean")
    elif len(found) > 1:  # referee 22: say that the count's spread is that of independent tests
        studies = len({r.study for r in found})
        line += (f"; the {len(found)} come from {_count(studies, 'study', 'studies')} and share no runs"
                 if studies == len(found) else f"; no two of the {len(found)} share runs")
    line += (f"); {len(directional)} are directional. Benjamini–Hochberg at {alpha:g} over one p per judged verdict "
             f"(all {len(found)}, inconclusive ones included; each p is the own test's of the part the verdict rests "
             f"on: a t on its degrees of freedom, Fisher's exact test for one rate comparison, and only where the "
             f"part has neither, read from its interval by a normal approximation"
             + ("; an inconclusive verdict with no interval enters at p = 1" if any(
                 r.status == INCONCLUSIVE and r.p == 1.0 for r in found) else "")
             + f") keeps {len(kept)} of the {len(directional)} directional"
             + (f": {', '.join(name(r) for r in kept)}" if kept else ""))
    if lost:
        line += f"; it does not keep {', '.join(f'{name(r)} ({shown_status(r.status)}, q {_q(r.q)})' for r in lost)}"
    # referee 22: a part shown supported or not reproduced inside a verdict that is not judged is not a verdict
    outside = [f"{entry_of(claim.id, getattr(verdict, 'study', ''), titles)} part {i}" for claim, verdict in pairs if verdict.status not in JUDGED
               and not str(verdict.status).startswith(DEPENDS) for i, part in enumerate(getattr(verdict, "parts", ()) or (), 1) if part.status in DIRECTIONAL]
    if outside:
        line += (f"; outside this count and the correction, parts shown {shown_status(SUPPORTED)} or "
                 f"{shown_status(CONTRADICTED)} inside verdicts that are not judged (their gates hold the verdict): "
                 + ", ".join(outside))
    # a claim whose settings disagree ("depends on task.n_train") is no one test: outside too, with what each said
    split = [f"{entry_of(claim.id, getattr(verdict, 'study', ''), titles)}: " + "; ".join(
                f"{shown_status(status)} at {setting}" for setting, status in _settings(verdict))
             for claim, verdict in pairs if str(verdict.status).startswith(DEPENDS)]
    if split:
        line += "; outside them as well, the claims whose settings disagree: " + ", ".join(split)
    undecided = any(r.status == INCONCLUSIVE for r in found)
    return (line + "; q per judged verdict" + (" (an inconclusive one's: its undecided part's difference from no "
                                               "effect, which decides nothing)" if undecided else "")
            + ": " + ", ".join(f"{name(r)} {_q(r.q)}" for r in found) + ".")


def _settings(verdict) -> list[tuple[str, str]]:
    """(setting, status) of each setting a claim was judged at: its headline one, then the others."""
    first = [(verdict.setting, verdict.setting_status)] if getattr(verdict, "setting_status", "") else []
    return first + list(getattr(verdict, "others", ()) or ())


def entry_of(claim_id: str, study, titles: dict[str, str] | None) -> str:
    """A verdict as the claims line names it: its claim and the title of its study."""
    study = str(study or "")
    study = (titles or {}).get(study, study)
    return f"{claim_id} ({study})" if study else claim_id


def _q(q: float) -> str:
    return "n/a" if not math.isfinite(q) else "< 0.001" if q < 0.001 else f"{q:.2g}"


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def paper_scale(claim) -> str:
    """The scale the claim's paper worked at, from its spec: ``paper_scale`` where given, else the "the
    paper's scale is …" clause of its regime; "" when the spec states none."""
    given = getattr(claim, "paper_scale", "")
    if given:
        return str(given)
    found = _PAPER_SCALE.search(str(getattr(claim, "regime", "") or ""))
    return found.group(1).strip() if found else ""


def external_validity(pairs, titles: dict[str, str] | None = None) -> str:
    """The paragraph beside the claims line: for each judged verdict (directional or inconclusive), the scale it
    was measured at beside its paper's, and which way it may move at the paper's scale where its spec says
    (Claim.scale_moves), so a reader sees which verdict stands how far from the paper it tests."""
    decided = [(c, v) for c, v in pairs if v.status in JUDGED]
    if not decided:
        return ""

    def entry(claim, verdict) -> str:
        study = (titles or {}).get(verdict.study, verdict.study)
        here = str(getattr(verdict, "scale", "") or "").split(";")[0].removeprefix("measured at ") or "not recorded"
        paper = paper_scale(claim)
        moves = str(getattr(claim, "scale_moves", "") or "")
        said = shown_status(verdict.status)
        return (f"{claim.id}" + (f" ({study}, {said})" if study else f" ({said})") + f": here {here}; "
                + (f"the paper: {paper}" if paper else "its spec states no paper scale, so about this scale only")
                + (f"; at the paper's scale: {moves}" if moves else ""))

    return ("External validity: each verdict holds at the scale it was measured at, and may move toward or away "
            "from its paper's result at the paper's scale; so may the synthesis's recommendations, which are read "
            "at the same scales (a norm=none choice from a small model says normalization was not needed there). "
            + "; ".join(entry(c, v) for c, v in decided) + ".")
