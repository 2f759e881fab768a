"""Multiplicity across the claims line, and what differs from the papers.

Every claim part is a one-sided test at α in each direction, so each claim with no true effect still
reads "supported" or "contradicted" with probability up to 2α; eighteen of them at α = 0.05 would
give about 1.8 directional verdicts by chance alone. The claims line therefore says:

- how many directional verdicts (supported, contradicted) there are, at which α;
- how many **pieces of evidence** they rest on: verdicts judged on the same runs (the same study and
  setting, an arm selecting the same settings: ``postln_needs_warmup`` and
  ``postln_fails_without_warmup`` from the same 4 + 4 runs) are one piece, counted once;
- how many directional verdicts chance alone would give over those pieces (2α each);
- how many survive Benjamini–Hochberg at α over one p per piece (the smallest of its verdicts') of
  every judged claim, inconclusive ones included (a directional verdict's own p is below α by
  construction, so BH over those alone would keep them all), with each verdict's q beside it. The p is read from the verdict's (1 − 2α) interval by a normal
  approximation (the interval's half-width over z gives the standard error; on the log scale for a
  ratio): an approximation, said so on the page, since a verdict keeps its interval, not its test.

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

from normbench.analysis.claims.vocabulary import CONTRADICTED, INCONCLUSIVE, SUPPORTED
from normbench.analysis.rules import ALPHA

DIRECTIONAL = (SUPPORTED, CONTRADICTED)
JUDGED = (SUPPORTED, CONTRADICTED, INCONCLUSIVE)  # the verdicts with an interval: BH's family
_PAPER_SCALE = re.compile(r"the paper'?s scale is ([^;.]+(?:\.\d[^;.]*)*)", re.IGNORECASE)


@dataclass(frozen=True)
class Reading:
    """One verdict on the claims line: its claim id, status, approximate p, BH q and evidence piece."""

    claim: str
    status: str
    p: float
    q: float
    piece: int          # verdicts with the same piece share their runs
    shares_with: tuple[str, ...] = ()


def p_value(effect) -> float:
    """The one-sided p on the estimate's side, from the effect's interval (normal approximation; a ratio
    effect, null 1, on the log scale). NaN when the interval is missing or degenerate."""
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


def readings(pairs, alpha: float = ALPHA) -> tuple[list[Reading], int]:
    """(claim, verdict) pairs -> (one Reading per directional verdict in their order, the number of pieces
    of evidence BH ran over). BH runs over every judged verdict's p (inconclusive ones too: a directional
    verdict's own p is below α by construction, so BH over those alone would keep them all)."""
    judged = [(c, v) for c, v in pairs if v.status in JUDGED]
    signatures = [_signature(v) for _, v in judged]
    piece = list(range(len(judged)))
    for i in range(len(judged)):  # verdicts sharing any arm's runs are one piece of evidence
        for j in range(i):
            if signatures[i] & signatures[j]:
                piece[i] = piece[j]
                break
    ps = [p_value(v.effect) for _, v in judged]
    per_piece: dict[int, float] = {}
    for k, p in zip(piece, ps):
        if math.isfinite(p):
            per_piece[k] = min(p, per_piece.get(k, math.inf))
    keys = list(per_piece)
    qs = dict(zip(keys, benjamini_hochberg([per_piece[k] for k in keys])))
    out = []
    for i, ((claim, verdict), k) in enumerate(zip(judged, piece)):
        if verdict.status not in DIRECTIONAL:
            continue
        others = tuple(c.id for (c, v), kk in zip(judged, piece)
                       if kk == k and c.id != claim.id and v.status in DIRECTIONAL)
        out.append(Reading(claim.id, verdict.status, ps[i], qs.get(k, math.nan), k, others))
    return out, len(keys)


def claims_line(pairs, alpha: float = ALPHA) -> str:
    """The multiplicity sentence beside the claims line ("" when no verdict is directional)."""
    found, family = readings(pairs, alpha)
    if not found:
        return ""
    pieces = len({r.piece for r in found})
    shared = sorted({tuple(sorted((r.claim, *r.shares_with))) for r in found if r.shares_with})
    kept = [r.claim for r in found if math.isfinite(r.q) and r.q <= alpha]
    lines = (f"Multiplicity: {_count(len(found), 'directional verdict')} (supported or contradicted), each part "
             f"one-sided at α = {alpha:g} in each direction, resting on "
             f"{_count(pieces, 'independent piece', 'independent pieces')} of evidence")
    if shared:
        lines += " (" + "; ".join(" and ".join(group) + " share their runs: one piece" for group in shared) + ")"
    lines += (f"; with no true effect anywhere, about {2 * alpha * pieces:.2g} of them would be directional by "
              f"chance. Benjamini–Hochberg at {alpha:g} over one p per piece of the {family} judged (inconclusive ones "
              f"included; each p read from the verdict's interval by a normal approximation) keeps {len(kept)} of "
              f"{len(found)}"
              + (f": {', '.join(kept)}" if kept else "") + "; q per verdict: "
              + ", ".join(f"{r.claim} {_q(r.q)}" for r in found) + ".")
    return lines


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


def external_validity(pairs) -> str:
    """The paragraph beside the claims line: what differs from the papers, and which verdicts may move."""
    decided = [(c, v) for c, v in pairs if v.status in DIRECTIONAL]
    if not decided:
        return ""
    ours = sorted({str(v.scale).split(";")[0] for _, v in decided if getattr(v, "scale", "")})
    stated = [(c.id, paper_scale(c)) for c, _ in decided if paper_scale(c)]
    unstated = [c.id for c, _ in decided if not paper_scale(c)]
    text = ("External validity: these verdicts were " + ("; ".join(ours) if ours else "measured at a scale not recorded")
            + "; each paper's own scale, where its claim spec states one, is named below.")
    if stated:
        text += (" Verdicts whose claim spec names the paper's scale, which may move with scale toward or away from "
                 "the paper's result: "
                 + "; ".join(f"{claim} (paper: {scale})" for claim, scale in stated) + ".")
    if unstated:
        text += f" The specs of {', '.join(unstated)} state no paper scale: read them as about this scale only."
    return text
