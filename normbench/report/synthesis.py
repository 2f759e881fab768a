"""The report's first section: per model family, what the studies' evidence favours, and how sure.

It states nothing new: each line is a study's rank-1 arm (ranking.RULE) on one task, whether the
other arms were shown worse, the claims that study decided, and the scale its runs were at. A
family no study covered says "no evidence yet".
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from normbench.analysis.aggregate import format_value
from normbench.report.tables import ClaimView, Table
from normbench.report import answers

FAMILIES = (("rnn", "RNN"), ("lstm", "LSTM"), ("gru", "GRU"), ("transformer", "Transformer"))
SCALE_KEYS = (("hidden", "hidden"), ("layers", "layers"), ("steps", "steps"))


@dataclass
class FamilyLine:
    family: str
    favoured: str  # the arm, or "no evidence yet"
    studies: list[tuple[str, str]] = field(default_factory=list)  # (title, anchor) of the studies behind it
    sure: str = ""
    scale: str = ""


def _family_of(runs: pd.DataFrame) -> pd.Series:
    """group -> model family, from the runs' model setting (missing: unknown)."""
    column = "axes.model" if "axes.model" in runs else None
    if column is None:
        return pd.Series(dtype=str)
    return runs.groupby("group")[column].first().astype(str).str.lower()


def _scale(runs: pd.DataFrame) -> str:
    parts = []
    for key, word in SCALE_KEYS:
        column = f"axes.{key}"
        if column in runs and runs[column].notna().any():
            values = sorted({format_value(v) for v in runs[column].dropna()}, key=lambda v: (len(v), v))
            parts.append(f"{word} {'/'.join(values)}")
    return ", ".join(parts) or "not recorded"


def _sureness(rows: pd.DataFrame, claims: list[ClaimView]) -> str:
    ranked = rows[rows["rank"].notna()]
    if ranked.empty:
        return "not ranked yet (one seed per arm)"
    stars = int(ranked["best"].astype(bool).sum())
    worse = int(ranked["shown_worse"].astype(bool).sum()) if "shown_worse" in ranked else 0
    seeds = int(ranked["seeds"].min()) if "seeds" in ranked and ranked["seeds"].notna().any() else 0
    words = (f"{stars} of {len(ranked)} arms could be the best (★), {worse} shown worse" if worse else
             f"no arm shown worse: the {len(ranked)} arms are not told apart")
    words += f", {seeds}+ seeds per arm"
    decided = [c for c in claims if c.status in ("supported", "contradicted")]
    if decided:
        words += "; claims " + ", ".join(f"{c.id} {c.status}" for c in decided)
    return words


def synthesis(summary: pd.DataFrame, runs: pd.DataFrame, sections: list) -> list[FamilyLine]:
    """One line per (family, study, task and condition) the evidence covers, in FAMILIES order; a family no study
    covers gets one "no evidence yet" line. ``sections``: sections.StudySection, for titles, anchors
    and claims."""
    family = _family_of(runs)
    out = []
    for key, name in FAMILIES:
        lines = []
        for section in sections:
            mine = summary[(summary["study"].astype(str) == section.id)
                           & summary["group"].map(family).eq(key)]
            # one line per comparison: a task, and a condition where the study has one (analysis/conditions.py)
            for _, rows in mine.groupby("comparison" if "comparison" in mine else "task", sort=False):
                task = str(rows["task"].iloc[0])
                condition = str(rows["condition"].iloc[0]) if "condition" in rows else ""
                task += f" at {condition}" if condition and condition != "nan" else ""
                ranked = rows[rows["rank"].notna()].sort_values("rank", kind="stable")
                gate, _ = answers.regime_of(rows, runs[runs["group"].isin(rows["group"])])
                if gate is not None:  # the same gate the study's answer names: no favourite from such a setup
                    favoured = gate.text
                elif ranked.empty:
                    favoured = "not ranked yet"
                elif ranked["shown_worse"].astype(bool).any():
                    stars = ranked[ranked["best"].astype(bool)]
                    favoured = "; ".join(f"{a} ★" for a in stars["arm"].astype(str)[:3])
                    favoured += f" and {len(stars) - 3} more" if len(stars) > 3 else ""
                else:
                    favoured = f"none yet ({ranked['arm'].astype(str).iloc[0]} ranks first, not shown better)"
                study_runs = runs[runs["group"].isin(rows["group"])]
                lines.append(FamilyLine(name, f"{favoured} · task {task}", [(section.title, section.anchor)],
                                        _sureness(rows, section.claims), _scale(study_runs)))
        out += lines or [FamilyLine(name, "no evidence yet", [], "no study ran this family", "")]
    return out


def synthesis_table(lines: list[FamilyLine]) -> Table:
    rows = [[line.family, line.favoured, ", ".join(t for t, _ in line.studies) or "—", line.sure, line.scale or "—"]
            for line in lines]
    columns = ["family", "favoured (norm, placement …)", "study", "how sure", "scale"]
    return Table(columns, rows, wrap=tuple(columns), keep=("family", "favoured (norm, placement …)", "how sure"))
