"""The report by study: each study's question, answer, leaderboards, figures and claims in one section.

build.py computes every piece (answers, leaderboards, figures, claim views) for the whole report;
this module only sorts them into one StudySection per study, keeps a study's figures to the
MAX_FIGURES most informative (figures.STUDY_FIGURE_ORDER) and moves a caption's sentences that
would be repeated on the page into the legend, written once.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field, replace

import pandas as pd

from normbench.report import figures
from normbench.report.tables import ClaimView, Leaderboard

MAX_FIGURES = 6  # a study's figures beyond this say less than its leaderboard already does

# Figure file stem -> the figures function that draws it (a stem starts with its kind).
_KIND_OF = (("heatmap", "heatmaps"), ("curves_loss", "loss_curves"), ("curves_", "learning_curves"),
            ("grad_norm", "grad_norm_curves"), ("grad_flow", "grad_flow"), ("throughput", "throughput"),
            ("peak_memory", "peak_memory"), ("tradeoff", "tradeoff"))
NOT_IN_STUDIES = ("peak_memory",)  # one memory table for the report instead of a chart per study



@dataclass
class StudySection:
    id: str
    anchor: str  # its HTML id
    title: str  # the study's name
    question: str  # its purpose, as its sweep file states it
    choices: list[str]  # swept keys a user picks: the arms
    conditions: list[str]  # swept keys that change the task or budget: ranked within, not across
    answers: list = field(default_factory=list)  # answers.TaskAnswer, one per task
    leaderboards: list[Leaderboard] = field(default_factory=list)
    figures: list[figures.Figure] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)  # titles of figures drawn but not shown here
    claims: list[ClaimView] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)  # what made it


def figure_kind(figure: figures.Figure) -> str:
    """The figures function that drew `figure`, from its file stem."""
    return next((kind for prefix, kind in _KIND_OF if figure.name.startswith(prefix)), figure.name)


def figure_order() -> tuple[str, ...]:
    return figures.STUDY_FIGURE_ORDER


def pick_figures(drawn: list[figures.Figure], limit: int = MAX_FIGURES) -> tuple[list[figures.Figure], list[str]]:
    """The `limit` most informative of a study's figures (figure_order, then drawing order), shown in
    that order; and the titles of the rest. Figures of kinds the order does not name come last."""
    order = figure_order()
    kept = [f for f in drawn if f is not None and figure_kind(f) not in NOT_IN_STUDIES]
    ranked = sorted(kept, key=lambda f: order.index(figure_kind(f)) if figure_kind(f) in order else len(order))
    return ranked[:limit], [f.title for f in ranked[limit:]]


PAGE_BYTES = 3_000_000  # report.html's cap (page_check.facts.MAX_BYTES checks it)
PAGE_MARGIN = 20_000    # what a figure's markup adds beyond its bytes, and the left-out note
PAGE_FIGURE_BYTES = int(2.5 * 2**20)  # embedded figures (base64, both renderings): the page stays under 3 MB (10^6 bytes) with its text


def fit_page(sections: list[StudySection], size_of, budget: int = PAGE_FIGURE_BYTES) -> None:
    """Leaves figures out of the page, least informative first (figure_order, from the study showing
    the most), until the embedded figures fit ``budget`` bytes; every study keeps its first figure while
    the page can hold them, and past that the largest of those leave first (16 studies' first figures and
    their text came to 3.05 MB on 2026-12-05). ``size_of(figure)``: the bytes it adds to the page. A figure
    left out stays in figures/, named."""
    order = figure_order()

    def rank(f: figures.Figure) -> int:
        kind = figure_kind(f)
        return order.index(kind) if kind in order else len(order)

    total = sum(size_of(f) for s in sections for f in s.figures)
    while total > budget:
        candidates = [(len(s.figures), rank(s.figures[-1]), i) for i, s in enumerate(sections) if len(s.figures) > 1]
        if not candidates:  # one figure a study and still too large: the largest leave first
            candidates = [(size_of(s.figures[-1]), 0, i) for i, s in enumerate(sections) if s.figures]
            if not candidates:
                return
        *_, index = max(candidates)
        dropped = sections[index].figures.pop()
        sections[index].left_out.insert(0, dropped.title)
        total -= size_of(dropped)


_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"“])")


def written_once(sections: list[StudySection], extra: list[figures.Figure] = ()) -> list[str]:
    """Caption sentences that more than one figure on the page would repeat: taken out of every
    caption and returned, to be written once in the legend. A caption left empty says so."""
    shown = [f for s in sections for f in s.figures] + list(extra)
    counts: dict[str, int] = {}
    for f in shown:
        for sentence in dict.fromkeys(_SENTENCE.split(f.caption.strip())):
            counts[sentence] = counts.get(sentence, 0) + 1
    repeated = [s for s, n in counts.items() if n > 1 and s]

    def trimmed(f: figures.Figure) -> figures.Figure:
        kept = [s for s in _SENTENCE.split(f.caption.strip()) if s not in repeated]
        rest = " ".join(kept)
        note = "How to read it: the legend's figure notes." if len(kept) < len(_SENTENCE.split(f.caption.strip())) else ""
        return replace(f, caption=" ".join(p for p in (rest, note) if p))

    for section in sections:
        section.figures = [trimmed(f) for f in section.figures]
    return repeated


def reproduce_commands(study_runs: pd.DataFrame) -> list[str]:
    """The command that made a study, with every seed its finished runs hold (not the pilot's)."""
    command = str(study_runs["study.command"].dropna().astype(str).iloc[0]) if "study.command" in study_runs else ""
    if not command:
        return []
    seeds = sorted({int(s) for s in pd.to_numeric(study_runs["seed"], errors="coerce").dropna()})
    try:
        words = shlex.split(command)
    except ValueError:
        return [command]
    if any(runner in command for runner in ("normbench.study", "normbench study")) or not seeds:  # the study runner: its budget decides
        return [command]
    words = [w for w in words if w.split("=", 1)[0].lstrip("+~") != "seed"]
    return [shlex.join(words + [f"seed={','.join(str(s) for s in seeds)}"])]


def study_runner_command(plan: dict) -> str:
    """The normbench.studies.study command a study's sequential.json describes (its overrides, budget, looks,
    α), or "" when the file does not hold them as plain values: the file is data, checked, never run."""
    overrides, looks, budget, alpha = (plan.get(k) for k in ("overrides", "looks", "budget_s", "alpha"))
    if not (isinstance(overrides, list) and all(isinstance(o, str) for o in overrides)
            and isinstance(looks, list) and looks and all(isinstance(n, int) and not isinstance(n, bool) for n in looks)
            and isinstance(budget, (int, float)) and not isinstance(budget, bool) and budget > 0):
        return ""
    words = ["python", "-m", "normbench", "study", *overrides, "--budget", f"{budget:.0f}s", "--pilot", str(looks[0])]
    if len(looks) > 1:
        words += ["--step", str(looks[1] - looks[0]), "--max-seeds", str(looks[-1])]
    if isinstance(alpha, (int, float)) and not isinstance(alpha, bool):
        words += ["--alpha", f"{alpha:g}"]
    return shlex.join(words)


def anchor(text: str) -> str:
    return "study-" + (re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-") or "runs")
