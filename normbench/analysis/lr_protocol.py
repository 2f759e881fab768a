"""How a study set its arms' learning rates, and which of its runs a comparison reads.

Norms move the usable learning rate (Ba et al. 2016 §5.2), so a final-quality or convergence
comparison at one shared lr can measure the lr rather than the norm. A study declares one of four
protocols (normbench/studies/lr_protocol.py writes it into its records' ``study`` block; older
records are read by what their runs show):

* ``tuned``: every arm ran an lr grid on selection seeds, its lr was chosen there
  (analysis/tuning.py: chosen_lrs), and the arms are compared at their own chosen lr on fresh
  evaluation seeds (DeepOBS, Schneider et al. 2019). Only the evaluation runs answer the question.
* ``fixed``: the question is about one lr (Xiong et al.'s Post-LN failure without warm-up shows at a
  large lr); tuning would move the arms off it. The sweep says why.
* ``shared``: every arm at one lr nobody chose per arm: a confound the page names.
* ``swept``: the lr is what the question compares (the stable-lr range); the grid's lrs are arms.

Torch-free: the report and the study runner import it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from normbench.analysis import tuning
from normbench.analysis.axes import format_value

COLUMN = "study.lr_protocol"  # aggregate.runs_frame copies the study block's protocol here
WHY = "study.lr_why"


@dataclass(frozen=True)
class Protocol:
    name: str
    words: str   # how the page names it, ahead of the specifics
    confound: bool = False  # the page says that a shared lr may be what differs


PROTOCOLS = {p.name: p for p in (
    Protocol("tuned", "tuned per arm"),
    Protocol("fixed", "fixed by the question"),
    Protocol("shared", "one lr shared by every arm", confound=True),
    Protocol("swept", "swept as an arm (the question is about the lr)"),
)}


def _lrs(runs: pd.DataFrame) -> list[float]:
    if tuning.LR not in runs:
        return []
    return sorted({float(v) for v in runs[tuning.LR].dropna()})


def _lr_text(values: list[float]) -> str:
    return ", ".join(format_value(v) for v in values)


def _declared(runs: pd.DataFrame) -> tuple[str | None, str]:
    if COLUMN not in runs:
        return None, ""
    kinds = [str(v) for v in runs[COLUMN].dropna().unique() if str(v) in PROTOCOLS]
    why = [str(v) for v in runs[WHY].dropna().unique() if str(v)] if WHY in runs else []
    return (kinds[0] if len(kinds) == 1 else None), (why[0] if why else "")


def _roles(runs: pd.DataFrame) -> set[str]:
    return set(runs[tuning.ROLE].dropna().astype(str)) if tuning.ROLE in runs else set()


def kind_of(study_runs: pd.DataFrame) -> str:
    """The protocol of one study's runs: the one its records declare, else what its runs show (an
    older study: evaluation runs mean tuned, several lrs mean swept, one lr means shared)."""
    declared, _ = _declared(study_runs)
    if declared:
        return declared
    if tuning.EVALUATION in _roles(study_runs):
        return "tuned"
    return "swept" if len(_lrs(study_runs)) > 1 else "shared"


def compared_runs(study_runs: pd.DataFrame) -> pd.DataFrame:
    """The runs that answer a study's question: a tuned study's evaluation runs (its selection runs chose
    the lrs and would flatter the choice: winner's curse); every run of any other study."""
    if kind_of(study_runs) == "tuned" and tuning.EVALUATION in _roles(study_runs):
        return study_runs[study_runs[tuning.ROLE] == tuning.EVALUATION]
    return study_runs


def claim_runs(study_runs: pd.DataFrame, compares_lr: bool) -> tuple[pd.DataFrame, str]:
    """The runs a claim reads in one study, and a sentence saying so ("" when nothing changes).

    In a tuned study a claim about the norm reads the evaluation runs with the lr taken out of the
    settings: each arm is at its own chosen lr, which is part of the arm, so the claim compares the arms
    rather than splitting them into lr settings that no two arms share. A claim that compares lrs (the
    stable-lr range) reads the selection runs, where every arm ran the same grid."""
    if kind_of(study_runs) != "tuned" or tuning.EVALUATION not in _roles(study_runs):
        return study_runs, ""
    if compares_lr:
        return study_runs[study_runs[tuning.ROLE] != tuning.EVALUATION], ""
    evaluation = study_runs[study_runs[tuning.ROLE] == tuning.EVALUATION]
    chosen = {float(v) for v in evaluation[tuning.LR].dropna()} if tuning.LR in evaluation else set()
    view = evaluation.drop(columns=[c for c in (tuning.LR, tuning.ROLE) if c in evaluation])
    if tuning.LR in evaluation:  # kept out of the settings, so that each claim arm can name its own (arm_lrs)
        grid = _lrs(study_runs[study_runs[tuning.ROLE] == tuning.SELECTION])
        view = view.assign(**{CHOSEN_LR: evaluation[tuning.LR], CHOSEN_EDGE: evaluation[tuning.LR].map(
            lambda lr: grid_edge(lr, grid))})
    note = (f" Each arm at its own learning rate ({_lr_text(sorted(chosen))}), chosen on selection seeds; "
            f"judged on the evaluation runs.") if chosen else ""
    return view, note


def swept_note(selection: pd.DataFrame) -> str:
    """The lr note of a claim that compares lrs in a tuned study: it reads the selection runs, every lr of the grid
    as an arm, and chooses none."""
    seeds = sorted({int(v) for v in selection["seed"].dropna()}) if "seed" in selection else []
    each = f"{len(seeds)} seed{'s' if len(seeds) != 1 else ''} each" if seeds else "its selection seeds"
    return (f" Learning rate: {PROTOCOLS['swept'].words}: every lr of the grid ({_lr_text(_lrs(selection))}), on the "
            f"study's selection runs ({each}); no lr is chosen, and the evaluation runs are not read.")


CHOSEN_LR = "tuned.lr"  # a tuned study's evaluation run's lr, outside the axes the claims split settings by
GRID_END = "the grid's"  # how arm_lrs marks an lr chosen at an end of its grid, and arm_lr_note finds it
CHOSEN_EDGE = "tuned.edge"  # "lowest"/"highest" where that lr is the selection grid's end, else ""


def grid_edge(lr, grid: list[float]) -> str:
    """"lowest" or "highest" where a chosen lr is an end of the grid it was chosen from (its arm's best may
    lie beyond it: the grid did not bracket the optimum), "" inside the grid or where there is no grid."""
    if len(grid) < 2 or lr is None or not math.isfinite(float(lr)):
        return ""
    return "lowest" if math.isclose(float(lr), grid[0]) else "highest" if math.isclose(float(lr), grid[-1]) else ""


def arm_lrs(lrs: pd.Series, edges: pd.Series | None = None) -> str:
    """An arm's chosen lrs as its row shows them: one value, or each (a pooled arm may hold several), with
    "(the grid's lowest)" or "(the grid's highest)" where one was chosen at an end of its grid."""
    text = _lr_text(sorted({float(v) for v in lrs.dropna()}))
    ends = sorted({str(e) for e in edges.dropna() if str(e)}) if edges is not None else []
    return text + (f" ({GRID_END} {' and '.join(ends)})" if ends else "")


SELECTED_ON = ("the final validation score (equal scores: the larger area under the validation curve, "
               "then the smaller lr)")  # tuning.best_lr's rule, in words


def arm_lr_note(evidence: pd.DataFrame, on_curve: bool = False) -> str:
    """The lr note of a verdict read in a tuned study, naming each of its arms' own lrs (evidence: the
    verdict's per-arm rows, whose "lr" the engine fills from CHOSEN_LR) and the score that chose them;
    ``on_curve``: the verdict decides on the validation curve's area, which is not that score, and says so.
    "" when the rows hold none."""
    if evidence is None or "lr" not in evidence or not evidence["lr"].astype(str).str.strip().any():
        return ""
    shown = "; ".join(f"{arm}: {lr}" for arm, lr in zip(evidence["arm"], evidence["lr"]) if str(lr).strip())
    edge = any(GRID_END in str(lr) for lr in evidence["lr"])  # arm_lrs's own mark, one wording for both
    return (f" Each arm at its own learning rate ({shown}), chosen on selection seeds by {SELECTED_ON}; judged "
            f"on the evaluation runs."
            + (" This claim decides on the validation curve's area, not the score that chose the lrs: an arm's "
               "lr may favour its final score over its speed." if on_curve else "")
            + (" An lr chosen at an end of its grid did not bracket that arm's best, which may lie past it: the "
               "comparison is at the grid's best lr, not the arm's (a wider grid would settle it)." if edge else ""))


def comparison_text(comparison_runs: pd.DataFrame, study_runs: pd.DataFrame) -> str:
    """One sentence for a comparison's answer: how its arms' lrs were set, each arm's selected lr and
    the grid (tuned), or the lr every arm shares, and why (fixed), or that it is a confound (shared)."""
    if tuning.LR not in comparison_runs or comparison_runs.empty:
        return ""
    kind = kind_of(study_runs)
    _, why = _declared(study_runs)
    roles = _roles(comparison_runs)
    if kind == "tuned" and tuning.SELECTION in roles and tuning.EVALUATION not in roles:
        return (f"Learning rate: these are the selection runs of a study tuned per arm (grid "
                f"{_lr_text(_lrs(comparison_runs))}); they chose each arm's lr and answer nothing themselves.")
    if kind == "tuned":
        return _tuned_text(comparison_runs, study_runs)
    lrs = _lrs(comparison_runs)
    if kind == "swept":
        return f"Learning rate: {PROTOCOLS[kind].words}: {_lr_text(lrs)}."
    shared = _lr_text(lrs)
    if kind == "fixed":
        return f"Learning rate: {PROTOCOLS[kind].words}: {shared}" + (f" ({why})." if why else ".")
    return (f"Learning rate: {PROTOCOLS[kind].words} ({shared}), not tuned per arm: norms move the usable lr "
            f"(Ba et al. 2016 §5.2), so a difference here may be the lr's rather than the norm's.")


def _tuned_text(comparison_runs: pd.DataFrame, study_runs: pd.DataFrame) -> str:
    chosen = tuning.chosen_lrs(study_runs)
    selection = study_runs[study_runs[tuning.ROLE] == tuning.SELECTION] if tuning.ROLE in study_runs else study_runs.iloc[0:0]
    grid = _lrs(selection)
    seeds = sorted({int(s) for s in selection["seed"].dropna()}) if len(selection) else []
    picks = [f"{format_value(row.chosen_lr)} for {row.arm_label}" for row in chosen.itertuples(index=False)
             if row.chosen_lr is not None and not (isinstance(row.chosen_lr, float) and math.isnan(row.chosen_lr))]
    evaluated = sorted({int(s) for s in comparison_runs["seed"].dropna()})
    return (f"Learning rate: {PROTOCOLS['tuned'].words}: grid {_lr_text(grid) or '—'} on selection seeds "
            f"{', '.join(map(str, seeds)) or '—'}; selected {'; '.join(picks) or 'none'}; compared at those lrs on "
            f"fresh seeds {', '.join(map(str, evaluated))}.")
