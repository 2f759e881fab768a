"""What a verdict's page shows beside it per arm and per setting, never judged: each arm split along the axes a
claim names (Claim.split), so an arm that pools an lr grid or two optimizers says where each of its settings
ended against the task's reference levels (reference_levels.text), and the measures a claim names to show
(Claim.shown) per split arm: the condition its paper's mechanism needs, which a reader must see arose here.

Referee 24: qknorm_lr_sensitivity pooled the lr grid into one arm and never said that at lr 0.1 the arm without
qk-norm ended between the unigram and the bigram while qk-norm reached the bigram; derf_muon_interaction never said
that Derf saturates far less under Muon (0.064) than under AdamW (0.445), so the paper's mechanism did not arise."""

from __future__ import annotations

import pandas as pd

from normbench.analysis.aggregate import format_value
from normbench.analysis.claims.vocabulary import Claim, Mechanism, axis


def split_arms(claim: Claim, frames: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Each arm, and where its runs span more than one value of a split axis, one entry per value
    ("no qk-norm @ lr=0.1"), in the axes' order; an arm with one value keeps its name."""
    return {name: frame for name, (_, frame) in split_cells(claim, frames).items()}


def split_cells(claim: Claim, frames: dict[str, pd.DataFrame]) -> dict[str, tuple[str, pd.DataFrame]]:
    """split_arms with the claim arm each entry came from (entry name -> (claim arm, runs)): each run in one entry,
    so the arm table and its run counts list every run once (referee 26: derf_muon_interaction's rows "rms" and
    "derf" pooled AdamW and Muon, means matching no cell of the 2 × 2, and "@ muon" repeated the Muon runs)."""
    split = {name: (name, frame) for name, frame in frames.items()}
    for key in claim.split:
        out = {}
        for name, (arm, frame) in split.items():
            values = axis(frame, key)
            levels = sorted(values.dropna().unique(), key=lambda v: (isinstance(v, str), v))
            if len(levels) < 2:
                out[name] = (arm, frame)
                continue
            for level in levels:
                out[f"{name} @ {key}={format_value(level)}"] = (arm, frame[values == level])
        split = out
    # an arm of the claim that already is one split entry ("rms @ muon" beside "rms" split by optim) is said once
    kept, seen = {}, set()
    for name, (arm, frame) in split.items():
        runs = frozenset(frame.index)
        if runs not in seen:
            kept[name] = (arm, frame)
            seen.add(runs)
    return kept


def measures_text(claim: Claim, frames: dict[str, pd.DataFrame]) -> str:
    """One sentence per measure the claim shows: its mean and range over the finished runs of each split arm;
    an arm that did not record it is named as such. "" when the claim shows none."""
    said = []
    for measure in claim.shown:
        arms = []
        for name, frame in split_arms(claim, frames).items():
            values = pd.to_numeric(measure.values(frame[frame["status"] == "ok"]), errors="coerce").dropna()
            if not len(values):
                arms.append(f"{name}: not recorded")
                continue
            low, high = format_value(float(f"{values.min():.3g}")), format_value(float(f"{values.max():.3g}"))
            spread = "" if low == high else f", {low}–{high}"
            arms.append(f"{name}: {float(values.mean()):.3g} ({len(values)} runs{spread})")
        said.append(f" Shown beside the verdict, not judged: {measure.name}, per arm" +
                    (f" and {', '.join(claim.split)}" if claim.split else "") + ": " + "; ".join(arms) + ".")
    return "".join(said)


def mechanism_text(claim: Claim, frames: dict[str, pd.DataFrame]) -> str:
    """One sentence per Mechanism of the claim: whether what the paper's explanation needs arose here, on the means
    of the arm's finished runs at the two settings; "" when the claim names none."""
    return "".join(_mechanism(m, frames.get(m.arm)) for m in claim.mechanism)


def _mechanism(m: Mechanism, frame: pd.DataFrame | None) -> str:
    needs = (f" The paper's explanation ({m.because}) needs {m.measure.name} higher for {m.arm} at "
             f"{m.axis}={format_value(m.more_at)} than at {m.axis}={format_value(m.than)}")
    means = []
    for level in (m.more_at, m.than):
        runs = frame[(axis(frame, m.axis) == level) & (frame["status"] == "ok")] if frame is not None else None
        values = pd.to_numeric(m.measure.values(runs), errors="coerce").dropna() if runs is not None else pd.Series()
        means.append(float(values.mean()) if len(values) else None)
    if None in means:
        return needs + ": not recorded at both here, so whether it arose cannot be read."
    arose = means[0] > means[1]
    return (needs + f": here {means[0]:.3g} against {means[1]:.3g} (means of the finished runs, not judged), so it "
            + ("arose in this setup." if arose else "did not arise in this setup."))
