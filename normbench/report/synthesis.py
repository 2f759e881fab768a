"""The report's first section: per model family, what the studies' evidence favours, and how sure.

It states nothing new. Each line is one study on one task (and condition): the arms that could be
the best (ranking.RULE) where some arm is shown worse, a tie where none is, or the gate that makes
final quality untestable there; with the claims that study decided and the scale its runs were at.
Above the lines, one recommendation per family gathers its testable lines: what they favour, what
they leave tied, and which studies could not test final quality. Only the families the records ran
are listed (runs naming no family: one "no evidence yet" line per family).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from normbench.records.values import format_value
from normbench.configuration.families import families
from normbench.report.tables import ClaimView, Table

SCALE_KEYS = (("hidden", "hidden"), ("layers", "layers"), ("steps", "steps"))


@dataclass
class FamilyLine:
    family: str
    favoured: str  # the arm, or "no evidence yet"
    studies: list[tuple[str, str]] = field(default_factory=list)  # (title, anchor) of the studies behind it
    sure: str = ""
    scale: str = ""
    kind: str = ""  # FAVOURED, TIED, GATED or UNRANKED: what the line can say about a choice
    arms: list[str] = field(default_factory=list)  # the favoured (or tied) arms
    task: str = ""  # the task, and the condition where the study has one


FAVOURED, TIED, GATED, UNRANKED = "favoured", "tied", "not testable here", "not ranked yet"


def _no_evidence(family: str) -> FamilyLine:
    return FamilyLine(family, "no evidence yet", [], "no study ran this family", "")


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


def synthesis(summary: pd.DataFrame, runs: pd.DataFrame, sections: list, regime_of) -> list[FamilyLine]:
    """One line per (family, study, task and condition) the evidence covers, in the families' registration order
    (normbench/configuration/families.py); a family no study
    covers gets one "no evidence yet" line. ``sections``: sections.StudySection, for titles, anchors
    and claims; ``regime_of``: summary rows -> (gate, scale), the result's (analysis/result.py)."""
    family = _family_of(runs)
    out = []
    for key, name in ((f.name, f.display) for f in families()):
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
                gate, _ = regime_of(rows)
                if gate is not None:  # the same gate the study's answer names: no favourite from such a setup
                    kind, arms, favoured = GATED, [], gate.text
                elif ranked.empty:
                    kind, arms, favoured = UNRANKED, [], "not ranked yet"
                elif ranked["shown_worse"].astype(bool).any():
                    kind, arms = FAVOURED, list(ranked[ranked["best"].astype(bool)]["arm"].astype(str))
                    favoured = "; ".join(f"{a} ★" for a in arms[:3])
                    favoured += f" and {len(arms) - 3} more" if len(arms) > 3 else ""
                else:
                    kind, arms = TIED, list(ranked["arm"].astype(str))
                    favoured = f"none yet ({arms[0]} ranks first, not shown better)"
                study_runs = runs[runs["group"].isin(rows["group"])]
                lines.append(FamilyLine(name, f"{favoured} · task {task}", [(section.title, section.anchor)],
                                        _sureness(rows, section.claims), _scale(study_runs), kind, arms, task))
        out += lines
    # the families the records ran, and only those: a sweep of LSTMs lists no empty RNN, GRU and
    # Transformer rows above its answer; records naming no family keep one "no evidence yet" line each
    return out or [_no_evidence(f.display) for f in families()]


def synthesis_table(lines: list[FamilyLine]) -> Table:
    rows = [[line.family, line.favoured, ", ".join(t for t, _ in line.studies) or "—", line.sure, line.scale or "—"]
            for line in lines]
    columns = ["family", "favoured (norm, placement …)", "study", "how sure", "scale"]
    return Table(columns, rows, wrap=tuple(columns), keep=("family", "favoured (norm, placement …)", "how sure"))


def _studies(lines: list[FamilyLine]) -> str:
    return ", ".join(dict.fromkeys(title for line in lines for title, _ in line.studies))


def recommendation(family: str, lines: list[FamilyLine]) -> FamilyLine:
    """The family's one line over its study lines: the favoured arms of every testable study that shows
    one arm worse (each with its study), else the arms the testable studies leave tied (a tie is the
    answer "none of these is shown better here"), else why none could be tested. The sort order of
    nothing picks it: every favoured arm is named, with its study."""
    favoured = [line for line in lines if line.kind == FAVOURED]
    tied = [line for line in lines if line.kind == TIED]
    gated = [line for line in lines if line.kind == GATED]
    if not any(line.studies for line in lines):
        return _no_evidence(family)
    if favoured:
        text = " · ".join(f"{' or '.join(line.arms[:3])}{' …' if len(line.arms) > 3 else ''} "
                          f"({line.studies[0][0]}, {line.task})" for line in favoured)
    elif tied:
        text = "no choice shown better: " + " · ".join(
            f"{', '.join(line.arms)} tie ({line.studies[0][0]}, {line.task})" for line in tied)
    elif gated:
        text = "not testable here yet: final quality could not be tested in any study of this family (see its lines)"
    else:
        text = "not ranked yet (one seed per arm)"
    counts = [f"{len(group)} {word}" for group, word in ((favoured, "favour an arm"), (tied, "tie"),
                                                         (gated, "not testable here"))
              if group]
    sure = "study lines: " + ", ".join(counts)
    behind = favoured or tied or gated or lines
    kind = FAVOURED if favoured else TIED if tied else GATED if gated else UNRANKED
    return FamilyLine(family, text, [s for line in behind for s in line.studies], sure,
                      "; ".join(dict.fromkeys(line.scale for line in behind if line.scale)), kind)


def recommendations(lines: list[FamilyLine]) -> list[FamilyLine]:
    """One recommendation per registered family the lines cover (every family when none is), in registration
    order."""
    names = [f.display for f in families()]
    covered = [name for name in names if any(line.family == name and line.studies for line in lines)]
    return [recommendation(name, [line for line in lines if line.family == name]) for name in covered or names]


def recommendation_table(lines: list[FamilyLine]) -> Table:
    rows = [[line.family, line.favoured, _studies([line]) or "—", line.sure] for line in recommendations(lines)]
    columns = ["family", "recommendation (norm, placement …)", "studies", "how sure"]
    return Table(columns, rows, wrap=tuple(columns), keep=("family", "recommendation (norm, placement …)"))
