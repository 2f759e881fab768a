"""The literature's claims, as data: arms as selectors over settings, parts from the engine's vocabulary.

A new claim is one ``Claim(...)`` here and one row in tests/analysis/test_claims.py. Hooks (``prepare``,
a ratio's ``per_seed``) exist only where a claim's measurement needs one: equal data for batch sizes,
one observation per seed for a gradient at initialization, the largest lr at which an arm trains.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from normbench.metrics import path
from normbench.record import TRAINED_STATUSES
from normbench.analysis import rules
from normbench.analysis.aggregate import format_value
from normbench.analysis.claims.parts import _keys, _named, _task, axis, column, metric, values_text, varying
from normbench.analysis.claims.vocabulary import (
    LARGEST, NOT_TRUE, POSITIVE, SLOPE_DELTA, SMALLEST, TRUE, Claim, Measure, Require, better,
    converges_faster, equivalent, faster, grows, higher_rate, more_stable, named, not_worse, one_of, ratio, slope)

RECURRENT = Require({"model": named("rnn", "lstm", "gru")}, "a recurrent model (rnn, lstm or gru)")
TRAINS_SHARE = 0.50  # an lr "trains" a seed when it gets this share of the way from chance to the best
# Settings that cannot change a quantity measured at initialization, before the first update.
INIT_INVARIANT = ("warmup_steps", "lr", "steps", "optim", "schedule")
FLOW_AT_INIT = Measure("flow score −|grad_time_ratio_init| (0 = no vanishing or exploding)",
                       column(path("grad_time_ratio_init"), lambda s: -s.abs()), higher=True, finished_only=False)
GRAD_AT_INIT = Measure("last-layer grad norm at init", column("profiles.last_layer_grad_norm_init"), finished_only=False)


# --- hooks --------------------------------------------------------------------------------------

def equal_data(runs: pd.DataFrame) -> tuple[pd.DataFrame, str] | str:
    """The runs at one amount of data (steps × batch_size) covering at least 2 batch sizes in both
    ln and bn (the level with most runs): at equal steps a smaller batch also sees fewer examples."""
    batch = pd.to_numeric(axis(runs, "batch_size"), errors="coerce")
    steps = pd.to_numeric(axis(runs, "steps"), errors="coerce")
    norm = axis(runs, "norm")
    if steps.isna().all():
        return runs, " The runs record no steps, so whether the arms saw equal data is unknown."
    seen = batch * steps
    levels = []
    for level in seen.dropna().unique():
        at = seen == level
        if len(set(batch[at & (norm == "ln")]) & set(batch[at & (norm == "bn")])) >= 2:
            levels.append((int(at.sum()), float(level), at))
    if not levels:
        arms = sorted({(str(n), b, s) for n, b, s in zip(norm, batch, seen) if pd.notna(b) and pd.notna(s)})
        return (f"Not comparable: no two batch sizes saw equal data in both ln and bn (examples seen, steps × "
                f"batch_size: {'; '.join(f'{n} @ batch {format_value(b)}: {format_value(s)}' for n, b, s in arms)}). "
                f"A smaller batch at the same steps sees fewer examples; the claim needs equal examples seen "
                f"(sweeps/batch_size.yaml).")
    _, level, at = max(levels, key=lambda lv: lv[:2])
    interval = (pd.to_numeric(axis(runs, "eval_every"), errors="coerce") * batch)[at].dropna()
    evals = ("" if interval.empty else f", each evaluated every {format_value(interval.iloc[0])} examples"
             if interval.nunique() == 1 else ", evaluated at different intervals of examples (best-of-more-"
             "evaluations favours the arm evaluated more often)")
    others = f" {len(levels) - 1} other equal-data level(s) left aside." if len(levels) > 1 else ""
    return runs[at], f" The arms saw equal data: {format_value(level)} examples each (steps × batch_size){evals}.{others}"


def once_per_seed_at_init(runs: pd.DataFrame) -> tuple[pd.DataFrame, str] | str:
    """Runs that differ only in settings that cannot change a gradient at init are one observation."""
    runs = runs[metric(runs, "profiles.last_layer_grad_norm_init") > 0]
    if runs.empty:
        return "Needs a last-layer gradient norm at initialization (profiles.layer_grad_norm_init) in the records."
    pooled = [c.removeprefix("axes.") for c in varying(runs) if _named(c, INIT_INVARIANT)]
    others = [c for c in runs.columns if c.startswith("axes.") and not _named(c, INIT_INVARIANT)]
    keys = pd.Series(_keys(runs, others + ["seed"]), index=runs.index, dtype=object)
    kept = runs[~keys.duplicated()]
    collapsed = len(runs) - len(kept)
    return kept, (f" {collapsed} run(s) differing only in {', '.join(pooled)} (which cannot change a gradient "
                  f"measured before the first update) were counted once per seed." if collapsed else "")


def shared_lr_grid(runs: pd.DataFrame) -> tuple[pd.DataFrame, str] | str:
    lr = pd.to_numeric(axis(runs, "lr"), errors="coerce")
    norm = axis(runs, "norm")
    shared = set(lr[norm == "ln"].dropna()) & set(lr[norm == "none"].dropna())
    if len(shared) < 2:
        return (f"Needs an lr grid (≥ 2 learning rates run with both ln and none); shared lrs: "
                f"{values_text(pd.Series(sorted(shared), dtype=float))}.")
    return runs[lr.isin(shared)], ""


def largest_training_lr(arm: pd.DataFrame, runs: pd.DataFrame) -> tuple[pd.Series, dict]:
    """Per seed, the largest lr of the grid at which the arm *trains*: the run finished (did not
    diverge) and its final metric got TRAINS_SHARE of the way from chance to the best lr's mean in
    this setting (any arm). One noisy seed, or an arm with a lower peak, still trains; a seed that
    trains at no lr counts one grid step below the smallest, so it is counted, not dropped."""
    sign, name, chance = _task(runs)
    lr = pd.to_numeric(axis(runs, "lr"), errors="coerce")
    grid = sorted(set(lr.dropna()))
    rule = (f"per seed, the largest lr of the shared grid ({values_text(pd.Series(grid, dtype=float))}) at which "
            f"the run trains: finished, not diverged, and its final {name} at least {TRAINS_SHARE:.0%} of the way "
            f"from chance to the best mean of any arm at any lr in this setting")
    if chance is None:
        return pd.Series(dtype=float), {"rule": rule, "not_applicable": f"The task records no chance level for {name}."}
    ok = runs[runs["status"] == "ok"]
    score = metric(ok, path("final_val"))
    groups = [c for c in ok.columns if c.startswith("axes.") and c != "axes.seed"]
    means = score.groupby(pd.Series(_keys(ok, groups), index=ok.index, dtype=object)).mean() if len(ok) else pd.Series(dtype=float)
    best = float(means.max() if sign > 0 else means.min()) if len(means) else math.nan
    limit = rules.chance_limit(name, chance)
    if not (math.isfinite(best) and (limit is None or sign * (best - limit) > 0)):
        return pd.Series(dtype=float), {"rule": rule, "not_applicable": (
            f"No arm learned at any lr (best mean {format_value(best)} vs chance {format_value(chance)}).")}
    threshold = chance + TRAINS_SHARE * (best - chance)
    step = (grid[-1] / grid[0]) ** (1 / (len(grid) - 1))
    values = {}
    for seed, mine in arm.groupby("seed", sort=True):
        final = metric(mine, path("final_val"))
        trains = mine[(mine["status"] == "ok") & np.isfinite(final) & (sign * (final - threshold) >= 0)]
        values[int(seed)] = float(pd.to_numeric(axis(trains, "lr")).max()) if len(trains) else grid[0] / step
    series = pd.Series(values, dtype=float)
    top, below = int(np.isclose(series, grid[-1]).sum()), int((series < grid[0] * (1 - 1e-9)).sum())
    caveat = "; ".join(filter(None, [
        f"{top} seed(s) trained at the largest lr tried ({format_value(grid[-1])}), so its value is a lower bound" if top else "",
        f"{below} seed(s) trained at no lr and count one grid step below the smallest" if below else ""]))
    return series, {"rule": rule + f" (threshold {format_value(threshold)})", "caveat": caveat}


# --- the claims ---------------------------------------------------------------------------------

CLAIMS: list[Claim] = [
    Claim("ln_batch_robust",
          "LayerNorm is robust to batch size; BatchNorm degrades at small batch.",
          "Ba, Kiros & Hinton 2016, Layer Normalization, §6.6",
          arms={"bn @ large batch": {"norm": "bn", "batch_size": LARGEST},
                "bn @ small batch": {"norm": "bn", "batch_size": SMALLEST},
                "ln @ small batch": {"norm": "ln", "batch_size": SMALLEST},
                "ln @ large batch": {"norm": "ln", "batch_size": LARGEST}},
          parts=(better("BN is worse at the small batch than at the large", "bn @ large batch", "bn @ small batch"),
                 equivalent("LN scores the same at the small and the large batch", "ln @ small batch", "ln @ large batch")),
          also_compare=("steps", "eval_every"),  # equal data ties steps (and evaluations) to the batch
          prepare=equal_data,
          design="Arms: BN and LN, each at the smallest and largest batch both ran, at equal examples seen. "
                 "Supported only when BN degrades and LN is shown equivalent."),
    Claim("postln_needs_warmup",
          "Post-LN Transformers need learning-rate warm-up; Pre-LN ones do not.",
          "Xiong et al. 2020, On Layer Normalization in the Transformer Architecture, §3.2",
          arms={"post, warm-up": {"placement": "post", "warmup_steps": POSITIVE},
                "post, no warm-up": {"placement": "post", "warmup_steps": 0},
                "pre, warm-up": {"placement": "pre", "warmup_steps": POSITIVE},
                "pre, no warm-up": {"placement": "pre", "warmup_steps": 0}},
          parts=(better("Post-LN does better with warm-up than without", "post, warm-up", "post, no warm-up"),
                 not_worse("Pre-LN without warm-up is not worse than with it", "pre, no warm-up", "pre, warm-up")),
          pool=("layers",),
          design="Arms: Post-LN and Pre-LN, each with warm-up (all lengths > 0 together) and without. Supported "
                 "only when Post-LN gains from warm-up and Pre-LN is shown not to need it."),
    Claim("postln_grad_depth",
          "At initialization, Post-LN's last-layer gradient norm does not depend on depth; Pre-LN's shrinks with depth.",
          "Xiong et al. 2020, On Layer Normalization in the Transformer Architecture, Theorem 1",
          arms={"pre": {"placement": "pre"}, "post": {"placement": "post"}},
          parts=(slope("Pre-LN's last-layer gradient shrinks with depth", "pre", "layers", GRAD_AT_INIT, -1),
                 slope("Post-LN's last-layer gradient does not depend on depth", "post", "layers", GRAD_AT_INIT, 0,
                       margin_text=f"δ = {SLOPE_DELTA:g} in log-log units (depth ×10 moves the gradient by at most "
                                   f"{10 ** SLOPE_DELTA:.2f}×), fixed before the data")),
          requires=(Require({"model": named("transformer")}, "model transformer"),),
          also_compare=("layers",), pool=INIT_INVARIANT, statuses=TRAINED_STATUSES,
          prepare=once_per_seed_at_init,
          design="Arms: Pre-LN and Post-LN transformers over depth, the last block's gradient norm at "
                 "initialization (theory: slopes about −0.5 and 0)."),
    Claim("bn_gamma_small_flow",
          "In a BN-LSTM, a BatchNorm gain initialized at 0.1 keeps gradients flowing through time better than "
          "1.0, without costing accuracy.",
          "Cooijmans et al. 2016, Recurrent Batch Normalization, §4 and Fig. 1",
          arms={"bn γ 0.1": {"norm": "bn", "gamma_init": 0.1}, "bn γ 1.0": {"norm": "bn", "gamma_init": 1.0}},
          parts=(better("γ = 0.1 keeps gradients flowing through time better (at init)", "bn γ 0.1", "bn γ 1.0",
                        FLOW_AT_INIT),
                 not_worse("γ = 0.1 is not less accurate than γ = 1.0", "bn γ 0.1", "bn γ 1.0")),
          requires=(RECURRENT,),
          design="Arms: recurrent BatchNorm at γ 0.1 and 1.0. Flow is −|log10(‖∂L/∂h_1‖ / ‖∂L/∂h_T‖)| at "
                 "initialization (diverged runs count); accuracy is non-inferiority at δ."),
    Claim("ln_gamma_insensitive",
          "LayerNorm's accuracy in a recurrent net is insensitive to its gain's initial value (0.1 or 1.0).",
          "Ba, Kiros & Hinton 2016, Layer Normalization, §6.2",
          arms={"ln γ 0.1": {"norm": "ln", "gamma_init": 0.1}, "ln γ 1.0": {"norm": "ln", "gamma_init": 1.0}},
          parts=(equivalent("LN's score is the same at γ 0.1 and 1.0", "ln γ 0.1", "ln γ 1.0"),),
          requires=(RECURRENT,),
          design="Arms: recurrent LayerNorm at γ 0.1 and 1.0; an equivalence at the margin δ."),
    Claim("fp16_small_eps_nonfinite",
          "In fp16, too small an epsilon makes the normalization produce non-finite values.",
          "Practice: fp16's smallest normal is 6.1e-5, so eps below it vanishes next to a tiny variance",
          arms={"smallest eps": {"eps": SMALLEST}, "largest eps": {"eps": LARGEST}},
          parts=(higher_rate("the smaller eps diverges (produces non-finite values) more often",
                             "smallest eps", "largest eps"),),
          requires=(Require({"precision": one_of("fp16", "fp16_pure")}, "precision fp16 or fp16_pure"),
                    Require({"norm_fp32": NOT_TRUE}, "norms computing in fp16 (norm_fp32 false; with "
                            "norm.fp32=true the norm computes in fp32, where no eps vanishes)")),
          design="Arms: runs whose norms compute in the input's dtype, at the smallest and largest eps."),
    Claim("rms_faster_than_ln",
          "RMSNorm is faster than LayerNorm at equal accuracy.",
          "Zhang & Sennrich 2019, Root Mean Square Layer Normalization",
          arms={"rms": {"norm": "rms"}, "ln": {"norm": "ln"}},
          parts=(faster("RMSNorm's training step is faster than LayerNorm's", "rms", "ln"),
                 not_worse("RMSNorm is not less accurate than LayerNorm", "rms", "ln")),
          design="Arms: RMSNorm and LayerNorm. 'Equal accuracy' is read as no accuracy cost (non-inferiority at δ)."),
    Claim("in_cell_most_stable",
          "In a recurrent net, LayerNorm inside the cell stabilizes training more than LayerNorm on the output "
          "only, which beats no normalization.",
          "Practice: gradient std ~1 vs >100 and kurtosis 3.2 vs 8.7 between in-cell and unnormalized cells",
          arms={"in_cell": {"norm": "ln", "placement": "in_cell"}, "post": {"norm": "ln", "placement": "post"},
                "none": {"norm": "none"}},
          parts=(more_stable("LayerNorm in the cell is more stable than on the output", "in_cell", "post"),
                 more_stable("LayerNorm on the output is more stable than no normalization", "post", "none")),
          requires=(RECURRENT,),
          design="Arms: LayerNorm in the cell, on the output, and no normalization. Supported when both steps hold."),
    Claim("ln_larger_stable_lr",
          "LayerNorm allows a larger stable learning rate than no normalization in an RNN/LSTM.",
          "Ba, Kiros & Hinton 2016, Layer Normalization, §6 (LN-LSTMs train at larger step sizes); practice",
          arms={"ln in_cell": {"norm": "ln", "placement": "in_cell"}, "none": {"norm": "none"}},
          parts=(ratio("LN's largest lr that trains is larger than no normalization's", "ln in_cell", "none",
                       largest_training_lr, "largest lr that trains"),),
          requires=(Require({"model": one_of("rnn", "lstm")}, "model rnn or lstm"),),
          also_compare=("lr",), prepare=shared_lr_grid,
          design=f"Arms: in-cell LayerNorm (Ba et al.'s LN-LSTM) and no normalization at the same lrs. An lr is "
                 f"stable for a seed when the run trains there: it did not diverge and reached "
                 f"{TRAINS_SHARE:.0%} of the chance-to-best range, so a noisy seed or a higher peak is not "
                 f"instability. Instability can only show where clipping lets it (the sweep states grad_clip)."),
    Claim("ln_lstm_converges_faster",
          "An LSTM with LayerNorm in the cell converges faster than a plain LSTM.",
          "Ba, Kiros & Hinton 2016, Layer Normalization, §6 (Figs. 2-5: faster convergence)",
          arms={"ln-lstm": {"model": "lstm", "norm": "ln", "placement": "in_cell"},
                "lstm": {"model": "lstm", "norm": "none"}},
          parts=(converges_faster("LN-LSTM's training loss falls faster than LSTM's", "ln-lstm", "lstm"),),
          design="Arms: in-cell LN-LSTM and a plain LSTM on the same task and steps; convergence is the mean "
                 "training loss over the run (train_loss_auc)."),
    Claim("bn_lstm_converges_faster",
          "An LSTM with BatchNorm in the cell converges faster than a plain LSTM.",
          "Cooijmans et al. 2016, Recurrent Batch Normalization, §5 (Figs. 2-3: faster convergence)",
          arms={"bn-lstm": {"model": "lstm", "norm": "bn", "placement": "in_cell"},
                "lstm": {"model": "lstm", "norm": "none"}},
          parts=(converges_faster("BN-LSTM's training loss falls faster than LSTM's", "bn-lstm", "lstm"),),
          design="Arms: in-cell BN-LSTM and a plain LSTM on the same task and steps; convergence is the mean "
                 "training loss over the run (train_loss_auc)."),
    Claim("ln_beats_bn_varlen",
          "On variable-length sequences LayerNorm beats BatchNorm, and BatchNorm's deficit grows with the "
          "variation in length.",
          "Ba, Kiros & Hinton 2016, §1 and §3 (batch statistics over sequences of varying length); practice",
          arms={"ln": {"norm": "ln"}, "bn masked": {"norm": "bn", "norm.bn_mask": TRUE},
                "bn unmasked": {"norm": "bn", "norm.bn_mask": False}},
          parts=(better("LN beats BN with statistics over padding", "ln", "bn unmasked"),
                 better("LN beats BN with statistics over real steps only", "ln", "bn masked"),
                 grows("LN's advantage over unmasked BN grows with length variation", "ln", "bn unmasked",
                       "task.min_length", toward="smallest")),
          pool=("task.min_length",),
          design="Arms: LN, BN masked (norm.bn_mask=true) and BN over padding (false) (sweeps/ln_vs_bn_varlen.yaml); "
                 "each example's length is drawn from [task.min_length, task.length], so a smaller min_length "
                 "is more length variation."),
    Claim("dropout_after_norm",
          "Dropout placed after the norm works better than dropout before it.",
          "Practice: dropout after normalization (in a Transformer block, before the residual add)",
          arms={"after norm": {"model.dropout_at": "after_norm"}, "before norm": {"model.dropout_at": "before_norm"}},
          parts=(better("dropout after the norm scores better than before it", "after norm", "before norm"),),
          design="Arms: model.dropout_at after_norm and before_norm, at the same dropout rate."),
]
