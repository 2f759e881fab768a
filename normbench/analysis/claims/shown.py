"""What a verdict's page shows beside it per arm and per setting, never judged: each arm split along the axes a
claim names (Claim.split), so an arm that pools an lr grid or two optimizers says where each of its settings
ended against the task's reference levels (reference_levels.text), and the measures a claim names to show
(Claim.shown) per split arm: the condition its paper's mechanism needs, which a reader must see arose here.

Referee 24: qknorm_lr_sensitivity pooled the lr grid into one arm and never said that at lr 0.1 the arm without
qk-norm ended between the unigram and the bigram while qk-norm reached the bigram; derf_muon_interaction never said
that Derf saturates far less under Muon (0.064) than under AdamW (0.445), so the paper's mechanism did not arise."""

from __future__ import annotations

import pandas as pd

from normbench.analysis import lr_protocol, rules
from normbench.analysis.aggregate import format_value
from normbench.analysis.claims.vocabulary import Claim, Mechanism, axis, select


def split_arms(claim: Claim, frames: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Each arm, and where its runs span more than one value of a split axis, one entry per value
    ("no qk-norm @ lr=0.1"), in the axes' order; an arm with one value keeps its name."""
    return {name: frame for name, (_, frame) in split_cells(claim, frames).items()}


def split_cells(claim: Claim, frames: dict[str, pd.DataFrame]) -> dict[str, tuple[str, pd.DataFrame]]:
    """split_arms with the claim arm each entry came from (entry name -> (claim arm, runs)): each run in one entry,
    so the arm table and its run counts list every run once (referee 26: derf_muon_interaction's rows "rms" and
    "derf" pooled AdamW and Muon, means matching no cell of the 2 × 2, and "@ muon" repeated the Muon runs; an
    interaction's pooled arms beside its cells, ln_batch_robust's "ln: 6, bn: 6", likewise)."""
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
    # an arm of the claim that already is one split entry ("rms @ muon" beside "rms" split by optim) is said once,
    # and one whose runs are exactly those of finer entries (an interaction's "ln", both batch sizes, beside "ln @
    # small batch" and "ln @ large batch") is said through them, not as a pooled row beside them
    runs = {name: frozenset(frame.index) for name, (_, frame) in split.items()}
    kept, seen = {}, set()
    for name, (arm, frame) in split.items():
        finer = [other for key, other in runs.items() if other < runs[name]]
        if runs[name] in seen or (finer and frozenset().union(*finer) == runs[name]):
            continue
        kept[name] = (arm, frame)
        seen.add(runs[name])
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


def mechanism_text(claim: Claim, frames: dict[str, pd.DataFrame], selection: pd.DataFrame | None = None) -> str:
    """One sentence per Mechanism of the claim: whether what the paper's explanation needs arose here, on the means
    of the arm's finished runs at the two settings, each named with the lr it was taken at; where those lrs differ
    (a tuned study: each cell at its own lr), the reads at each lr both settings ran, from ``selection`` (a tuned
    study's selection runs, every cell over one lr grid) or else the arm's own runs. "" when the claim names none.

    Referee 26: the page compared Derf's saturation under AdamW at lr 0.01 with Muon's at lr 0.03; the selection
    runs, one seed per lr, read 0.201 against 0.167 at lr 0.003 and 0.327 against 0.131 at 0.01."""
    return "".join(_mechanism(m, frames.get(m.arm), _arm_selection(claim, m.arm, frames.get(m.arm), selection))
                   for m in claim.mechanism)


def _lr(frame: pd.DataFrame) -> pd.Series:
    """Each run's lr: a tuned study's evaluation run carries it outside the axes (lr_protocol.CHOSEN_LR)."""
    if lr_protocol.CHOSEN_LR in frame and frame[lr_protocol.CHOSEN_LR].notna().any():
        return pd.to_numeric(frame[lr_protocol.CHOSEN_LR], errors="coerce")
    return pd.to_numeric(axis(frame, "lr"), errors="coerce")


def _arm_selection(claim: Claim, arm: str, frame: pd.DataFrame | None, selection: pd.DataFrame | None) -> pd.DataFrame:
    """The selection runs of one claim arm in the setting ``frame`` was judged in (its other fixed axes)."""
    if frame is None or selection is None or selection.empty or arm not in claim.arms:
        return pd.DataFrame()
    runs = selection[select(selection, claim.arms[arm])]
    for column in (c for c in frame.columns if c.startswith("axes.") and c in runs):
        if column in ("axes.lr", "axes.role", "axes.seed") or frame[column].nunique(dropna=False) != 1:
            continue
        value = frame[column].iloc[0]
        runs = runs[runs[column].isna()] if pd.isna(value) else runs[runs[column].astype(str) == str(value)]
    return runs


def _finished(frame: pd.DataFrame, m: Mechanism, level) -> pd.DataFrame:
    return frame[(axis(frame, m.axis) == level) & (frame["status"] == "ok")]


def _lrs_text(lrs: pd.Series) -> str:
    values = sorted({format_value(float(v)) for v in lrs.dropna()}, key=float)
    return f"lr {', '.join(values)}" if values else ""


def _mechanism(m: Mechanism, frame: pd.DataFrame | None, selection: pd.DataFrame) -> str:
    needs = (f" The paper's explanation ({m.because}) needs {m.measure.name} higher for {m.arm} at "
             f"{m.axis}={format_value(m.more_at)} than at {m.axis}={format_value(m.than)}")
    if frame is None:
        return needs + ": not recorded at both here, so whether it arose cannot be read."
    means, lrs = [], []
    for level in (m.more_at, m.than):
        runs = _finished(frame, m, level)
        values = pd.to_numeric(m.measure.values(runs), errors="coerce").dropna()
        means.append(float(values.mean()) if len(values) else None)
        lrs.append(_lrs_text(_lr(runs.loc[values.index])) if len(values) else "")
    if None in means:
        return needs + ": not recorded at both here, so whether it arose cannot be read."
    arose = means[0] > means[1]
    same = lrs[0] == lrs[1]
    if not any(lrs):
        read = f"here {means[0]:.3g} against {means[1]:.3g} (means of the finished runs, not judged)"
    elif same:
        read = f"here {means[0]:.3g} against {means[1]:.3g}, both at {lrs[0]} (means of the finished runs, not judged)"
    else:
        read = (f"here {means[0]:.3g} at {lrs[0]} against {means[1]:.3g} at {lrs[1]} (means of the finished runs, "
                f"each setting at its own lr, not judged)")
    text = needs + f": {read}, so " + ("it arose" if arose else "it did not arise")
    text += (" in this setup" if same or not all(lrs) else " in this setup at those lrs") + "."
    return text + ("" if same or not all(lrs) else _equal_lr(m, selection if not selection.empty else frame))


def _equal_lr(m: Mechanism, runs: pd.DataFrame) -> str:
    """The measure at each lr both settings ran, like with like, or that none was shared. A read where a run did not
    train (rules.failed_to_learn: at chance or held at a trivial solution) is marked and not counted: a collapsed
    model's saturation says nothing of the paper's explanation (referee 27: at lr 0.1 both Derf runs were at chance,
    and that read was the one "higher at optim=muon")."""
    source = "the selection runs" if "axes.role" in runs and runs["axes.role"].astype(str).eq("selection").all() \
        else "the runs"
    at = {}
    for level in (m.more_at, m.than):
        finished = _finished(runs, m, level)
        values = pd.to_numeric(m.measure.values(finished), errors="coerce").dropna()
        untrained = rules.failed_to_learn(finished).loc[values.index].astype(bool)
        at[level] = pd.DataFrame({"value": values, "untrained": untrained}).groupby(
            _lr(finished).loc[values.index]).agg(mean=("value", "mean"), size=("value", "size"),
                                                 untrained=("untrained", "sum"))
    shared = sorted(set(at[m.more_at].index) & set(at[m.than].index))
    if not shared:
        return " No runs share an lr at both settings, so the two means are not like with like."

    def untrained(lr) -> str:
        said = [f"{m.axis}={format_value(level)}" for level in (m.more_at, m.than) if at[level].loc[lr, "untrained"]]
        return f" ({' and '.join(said)} did not train)" if said else ""

    reads = [f"lr {format_value(float(lr))}: {at[m.more_at].loc[lr, 'mean']:.3g} against "
             f"{at[m.than].loc[lr, 'mean']:.3g}{untrained(lr)}" for lr in shared]
    trained = [lr for lr in shared if not untrained(lr)]
    higher = [format_value(float(lr)) for lr in trained if at[m.more_at].loc[lr, "mean"] > at[m.than].loc[lr, "mean"]]
    counts = sorted({int(n) for level in at for n in at[level].loc[shared, "size"]})
    seeds = sorted({int(s) for s in runs["seed"].dropna()}) if "seed" in runs else []
    per = ("one run" if counts == [1] else f"{'–'.join(map(str, (counts[0], counts[-1]) if len(counts) > 1 else counts))} runs")
    where = (f"at {len(higher)} of the {len(trained)} where both trained" if len(trained) < len(shared)
             else f"at {len(higher)} of {len(shared)}")
    return (f" At equal lrs ({source}, seed{'s' if len(seeds) != 1 else ''} {', '.join(map(str, seeds))}; {per} per "
            f"setting and lr; not judged): " + "; ".join(reads) + f"; higher at {m.axis}={format_value(m.more_at)} "
            f"{where}" + (f" (lr {', '.join(higher)})" if higher else "") + ".")
