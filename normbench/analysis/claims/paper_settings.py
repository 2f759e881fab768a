"""The paper's settings beside the study's: where a claim's spec states a setting of the paper's experiment
(vocabulary.PaperSetting) and the study ran another, or did not sweep one the paper tuned, the verdict says so
("the paper: batch 128 (Figure 6, left); here: 32"), read from the records of the arms it applies to."""

from __future__ import annotations

import pandas as pd

from normbench.analysis.aggregate import format_value
from normbench.analysis.claims.vocabulary import Claim, _same, axis, values_text


def _here(frames: dict[str, pd.DataFrame], arms: tuple[str, ...], key: str) -> tuple[list[str], list]:
    present = [a for a in arms if a in frames]
    values = sorted({v for a in present for v in axis(frames[a], key).dropna().tolist()}, key=str)
    return present, values


def text(claim: Claim, frames: dict[str, pd.DataFrame]) -> str:
    """One sentence per stated setting that differs from the study's (or that the paper tuned and the study ran
    at one value); "" when none does."""
    out = []
    for setting in claim.paper_settings:
        present, values = _here(frames, setting.arms, setting.key)
        if not present:
            continue
        shown = values_text(pd.Series(values, dtype=object)).strip("{}") if values else "not recorded"
        arms = ", ".join(present)
        if setting.tuned:
            if len(values) <= 1:
                out.append(f"The paper tuned {setting.words} ({setting.where}); here it was not swept: "
                           f"{setting.key} = {shown} for {arms} (one value, untuned).")
            continue
        if not values or not all(_same(v, setting.value) for v in values):
            out.append(f"The paper: {setting.words} {format_value(setting.value)} ({setting.where}); here: {shown} "
                       f"({arms}).")
    return (" " + " ".join(out)) if out else ""
