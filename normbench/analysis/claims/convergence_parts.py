"""The parts judged on training curves: converges faster (steps to target, the areas under the
validation and training-loss curves) and grows (a measure that rises over training)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from normbench.analysis import rules
from normbench.analysis.aggregate import format_value
from normbench.analysis.claims.comparison import (
    Context,
    as_effect,
    better_word,
    decided_by_first,
    divergence_test,
    lean_of,
    learned,
    learning_strata,
    measure_values,
    number_text,
    pairing_text,
    pct,
    per_stratum_text,
    seed_count,
    side_of,
    strata,
    stratified_difference,
    task_direction,
    undecided,
)
from normbench.analysis.claims.vocabulary import (
    CONTRADICTED,
    INCONCLUSIVE,
    NOT_APPLICABLE,
    SCORE,
    SUPPORTED,
    Effect,
    Measure,
    Part,
    PartSpec,
    axis,
    column,
    metric,
    recorded,
    values_text,
)
from normbench.analysis.intervals import combine, decision_level, mean_estimate
from normbench.records.metrics import path

TARGET_SHARE = 0.5  # steps to target: the first evaluation this share of the way from chance to the setting's best


def curve_summaries(runs: pd.DataFrame, curves: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per run (index of ``runs``), from its metrics.jsonl: train_loss_auc and val_auc (the means of
    the training loss and of the validation metric over the run, as the runner records them) and
    steps_to_target (the first evaluation at least TARGET_SHARE of the way from chance to the best
    evaluation of any run here; NaN when never reached or diverged). Empty when no curves can be read.
    ``curves``: read_curves' frame when the caller has it (a published report's, records/published.load)."""
    from pathlib import Path

    from normbench.records.reading import read_curves

    dirs = runs["run_dir"].dropna().astype(str) if "run_dir" in runs else pd.Series(dtype=str)
    if curves is None:
        if dirs.empty or not any((Path(d) / "metrics.jsonl").is_file() for d in dirs):
            return pd.DataFrame(index=runs.index)
        curves = read_curves(dirs.unique())
    train, evals = curves[curves["kind"] == "train"], curves[curves["kind"] == "eval"]
    loss = train.groupby("run_dir")["loss"].mean()
    val = evals.groupby("run_dir")["val_metric"].mean()
    # a metric spanning decades (MSE) averaged on the log scale: the raw mean is its first evaluations' (who leaves
    # a plateau first), while a log curve weighs every evaluation by the factor it improved (a run with a
    # non-positive evaluation has none)
    positive = evals["val_metric"].where(evals["val_metric"] > 0)
    val_log = np.log(positive).groupby(evals["run_dir"]).mean().where(positive.notna().groupby(evals["run_dir"]).all())
    sign, _, chance = task_direction(runs)
    ok_dirs = set(runs.loc[runs["status"] == "ok", "run_dir"].astype(str))
    finished = evals[evals["run_dir"].isin(ok_dirs)]["val_metric"]
    reached = pd.Series(dtype=float)
    if chance is not None and finished.notna().any():
        best = float(finished.max() if sign > 0 else finished.min())
        target = chance + TARGET_SHARE * (best - chance)
        hits = evals[evals["run_dir"].isin(ok_dirs) & (sign * (evals["val_metric"] - target) >= 0)]
        reached = hits.groupby("run_dir")["step"].min()
    by_dir = runs["run_dir"].astype(str)
    return pd.DataFrame({"train_loss_auc": by_dir.map(loss), "val_auc": by_dir.map(val),
                         "val_log_auc": by_dir.map(val_log), "steps_to_target": by_dir.map(reached)}, index=runs.index)


def _with_curves(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs with metrics.train_loss_auc / val_auc filled from their curves where the record
    lacks them, and curves.steps_to_target (curve_summaries) when curves exist."""
    summaries = curve_summaries(runs)
    if summaries.columns.empty:
        return runs
    runs = runs.copy()
    for name in ("train_loss_auc", "val_auc"):
        stored = metric(runs, path(name))
        runs[path(name)] = stored.where(stored.notna(), summaries[name])
    runs["curves.steps_to_target"] = summaries["steps_to_target"]
    runs["curves.val_log_auc"] = summaries["val_log_auc"]
    return runs


TRAIN_LOSS_AUC, VAL_AUC = recorded("train_loss_auc"), recorded("val_auc")
# a ratio metric's validation curve on the log scale: the mean of ln(metric) over the evaluations (curve_summaries)
VAL_LOG_AUC = Measure("val_auc on the log scale (the mean of ln of the metric over the evaluations)",
                      column("curves.val_log_auc"))


def convergence_part(spec: PartSpec, ctx: Context) -> Part:
    """"a converges faster than b", as the papers' figures show it: on the validation curve (Ba et al.
    2016 Figs. 2, 5; Cooijmans et al. 2016 Figs. 2-4). The area under the validation curve (val_auc, the
    mean evaluation over the run) decides; the steps to a target on that curve and the divergence rate
    may contradict it (a diverged run counts as slower than every finished one). The training-loss area
    is shown beside it and never decides: a BatchNorm arm's training loss is under batch statistics,
    its evaluations under running ones, so the two curves are not the same model's."""
    runs = _with_curves(ctx.runs)
    a, b, alpha = runs.loc[ctx.arms[spec.a].index], runs.loc[ctx.arms[spec.b].index], ctx.alpha
    arms = (spec.a, spec.b)
    level = decision_level(alpha)
    steps_of, target = _target_steps(runs)
    test = (f"{spec.a} vs {spec.b}: t at α = {alpha:g} each way ({pct(level)} interval) on val_auc, the area "
            f"under the validation curve, of finished runs (decides), on the steps to {target or 'a target'} "
            f"(log, runs that reached it), and Newcombe interval on the divergence rate (a diverged run counts "
            f"as slowest); supported when val_auc is better and neither other measure is shown worse, "
            f"not reproduced when val_auc or the divergence rate is shown worse and no measure better; the steps to "
            f"target can hold a verdict back, never make one. train_loss_auc is shown, not deciding.")
    if metric(pd.concat([a, b]), path("val_auc")).isna().all():
        return Part(spec.assertion, NOT_APPLICABLE, test, (), arms,
                    note="The records carry no metrics.val_auc and no readable validation curve (metrics.jsonl).")
    triples, design = strata(a, b, ctx.compare)
    dropped = ""
    if triples:
        triples, dropped = learning_strata(triples, runs, arms)
    test += design + (dropped if triples else "")
    if not triples:
        return Part(spec.assertion, NOT_APPLICABLE, test, (), arms, note=(dropped or design).strip())

    # a loss spans decades (rules.ratio_record_metric): its area is compared as a ratio (log scale), and
    # so is the validation curve's area of a ratio metric (MSE) (analysis/rules.py)
    def logged(measure):
        return lambda f: np.log(measure_values(measure, f).where(lambda v: v > 0))

    sign, task_name, _ = task_direction(runs)
    val_ratio = rules.ratio_scale(task_name)
    on_log = val_ratio and "curves.val_log_auc" in runs and runs["curves.val_log_auc"].notna().any()
    if on_log:  # the curve on the log scale: a geometric mean per run, compared as a ratio
        val_values = lambda f: measure_values(VAL_LOG_AUC, f)  # noqa: E731
    else:
        val_values = logged(VAL_AUC) if val_ratio else (lambda f: measure_values(VAL_AUC, f))
    val = stratified_difference(triples, val_values)
    test += pairing_text(triples, val_values, "val_auc") + per_stratum_text(triples, val_values, alpha)
    how = ("; the log curve's area, a ratio of geometric means over the evaluations, decides" if on_log else
           "; the validation curve's area decides")
    effects = [as_effect(f"val_auc: {spec.a} {'/' if val_ratio else '−'} {spec.b} ({better_word(sign)}{how})", val,
                         alpha, exp=val_ratio)]
    # no val_auc where an arm has no finished run (all diverged): then the divergence rate decides
    found = [side_of(effects[0], sign) if np.isfinite(effects[0].estimate) else None]
    steps_side = None
    if steps_of is not None:
        steps, reached = _steps_effect(steps_of, target, triples, arms, alpha)
        effects.append(steps)
        if steps.interval is not None:  # an arm with fewer than 2 runs that reached it decides nothing
            steps_side = side_of(steps, -1)
            test += pairing_text(triples, reached, "steps to target")
    loss = metric(pd.concat([a, b]), path("train_loss_auc"))
    if loss.notna().any():
        effects.append(as_effect(f"train_loss_auc: {spec.a} / {spec.b} (ratio of geometric means; < 1 = lower training "
                                 f"loss; shown, not deciding)", stratified_difference(triples, logged(TRAIN_LOSS_AUC)), alpha, exp=True))
    rate, diverged, _ = divergence_test(triples, spec.a, spec.b, alpha)
    if diverged:
        effects.append(rate)
        found.append(side_of(rate, -1))
    status, disagree = decided_by_first(found, "convergence")
    # the steps to target, read at the evaluations only (every 25 of 200 steps in ln_vs_bn_varlen), may hold a
    # verdict back but never make one: it contradicted ln_beats_bn_varlen while the deciding area was inconclusive
    if steps_side is not None and status in (SUPPORTED, CONTRADICTED) and steps_side not in (status, INCONCLUSIVE):
        status, disagree = INCONCLUSIVE, " The convergence measures disagree (the steps to target against the rest)."
    note, lean, needed, mde = disagree, None, None, None
    if status == INCONCLUSIVE:
        seeds = seed_count(*[f[f["status"] == "ok"] for _, f1, f2 in triples for f in (f1, f2)])
        lean, needed, mde = undecided(val, seeds, abs(val.value), sign * val.value, alpha)
    return Part(spec.assertion, status, test, tuple(effects), arms, "", lean, needed, mde, note)


def _target_steps(runs: pd.DataFrame) -> tuple[pd.Series | None, str]:
    """Each run's steps to target (NaN: not reached; a run that did not finish never reached it) and what the
    target is. The runner's record (metrics.steps_to_target, the first evaluation at the task's own target:
    what "steps to target" means everywhere in the report) wherever the task states a target; else the
    study-relative one read from the curves (curve_summaries). (None, "") when neither exists."""
    targets = metric(runs, "task.target").dropna().unique()
    if len(targets) and path("steps_to_target") in runs:
        sign, name, _ = task_direction(runs)
        shown = "/".join(number_text(t) for t in sorted(targets))
        steps, what = metric(runs, path("steps_to_target")), f"the task's target ({name} {'≥' if sign > 0 else '≤'} {shown})"
    elif "curves.steps_to_target" in runs and runs["curves.steps_to_target"].notna().any():
        steps = runs["curves.steps_to_target"]
        what = f"the study's target ({TARGET_SHARE:.0%} of the way from chance to the best evaluation here)"
    else:
        return None, ""
    return steps.where((runs["status"] == "ok") & (steps > 0)), what


def _steps_effect(steps: pd.Series, target: str, triples, names: tuple[str, str], alpha: float):
    """(the steps-to-target effect a / b, the log-steps reader). Its interval (runs that reached it, log
    scale) only where every stratum's arms each have 2 or more such runs; else the ratio of the geometric
    means of the runs that reached it, no interval, or n/a when an arm has none. The label says how many
    runs of each arm reached the target, so "not reached" is never read as a number of steps."""
    reached = lambda f: np.log(steps.reindex(f.index))  # noqa: E731
    frames = [pd.concat([t[i] for t in triples]) for i in (1, 2)]
    counts = [(int(steps.reindex(f.index).notna().sum()), len(f)) for f in frames]
    shown = []
    for name, frame, (k, n) in zip(names, frames, counts):
        values = steps.reindex(frame.index).dropna()
        shown.append(f"{name} {k} of {n}" + (f" (median {number_text(float(values.median()))} steps)" if k else ""))
    label = (f"steps to {target} on the validation curve: {names[0]} / {names[1]} (ratio of geometric means over the "
             f"runs that reached it; runs that reached it: {', '.join(shown)}, a run that did not finish counts as "
             f"not reached; < 1 = {names[0]} faster")
    if all(reached(f).notna().sum() >= 2 for _, f1, f2 in triples for f in (f1, f2)):
        return as_effect(label + ")", stratified_difference(triples, reached), alpha, exp=True), reached
    if all(k for k, _ in counts):
        means = [float(np.exp(reached(f).mean())) for f in frames]
        return Effect(label + "; no interval: an arm has fewer than 2 runs that reached it)", means[0] / means[1],
                      None, 1.0, decision_level(alpha)), reached
    nobody = " or ".join(name for name, (k, _) in zip(names, counts) if not k)
    return Effect(label + f"; not reached by any run of {nobody})", float("nan"), None, 1.0, decision_level(alpha)), reached


def grows_part(spec: PartSpec, ctx: Context) -> Part:
    """(a − b at the largest x) − (a − b at the smallest x), oriented + = a's advantage grows (toward the
    smallest x with claimed −1). Paired by seed when at least 2 seeds finished in all four cells (the
    per-seed contrasts' t interval), else Welch–Satterthwaite over the four cells. A ratio metric (MSE)
    is compared on the log scale, so the contrast is a log-ratio of ratios."""
    a, b, runs, alpha = ctx.arms[spec.a], ctx.arms[spec.b], ctx.runs, ctx.alpha
    arms = (spec.a, spec.b)
    on_curve = spec.kind == "converges_grows"  # the validation curve's area, not the final score
    if on_curve:
        runs = _with_curves(runs)
        a, b = runs.loc[a.index], runs.loc[b.index]
    measure = VAL_AUC if on_curve else SCORE
    xa, xb = pd.to_numeric(axis(a, spec.x), errors="coerce"), pd.to_numeric(axis(b, spec.x), errors="coerce")
    shared = sorted(set(xa.dropna()) & set(xb.dropna()))
    sign, name = task_direction(runs)[0], task_direction(runs)[1]
    shown = f"val_auc, the validation curve's area ({name})" if on_curve else name
    level = decision_level(alpha)
    toward = "smallest" if spec.claimed < 0 else "largest"
    # the difference as computed: a's advantage is b − a on a lower-is-better metric (the weights below)
    advantage = f"{spec.a} − {spec.b}" if sign > 0 else f"{spec.b} − {spec.a} ({spec.a}'s advantage: lower is better)"
    test = (f"{advantage} at the {toward} {spec.x} minus at the other end (a difference of differences, paired "
            f"by seed where the seeds finished in all four cells, else Welch–Satterthwaite df), {shown} of finished runs"
            f"{' on the log scale' if rules.ratio_scale(name) else ''}, one-sided at α = {alpha:g} each way "
            f"({pct(level)} interval).")
    if len(shared) < 2:
        return Part(spec.assertion, NOT_APPLICABLE, test, (), arms,
                    note=f"Needs at least 2 values of {spec.x} in both {spec.a} and {spec.b}; shared: {values_text(pd.Series(shared, dtype=float))}.")
    low, high = (shared[0], shared[-1]) if spec.claimed > 0 else (shared[-1], shared[0])  # from → toward
    cells = {(arm, where): frame[np.isclose(x, where)] for arm, frame, x in ((spec.a, a, xa), (spec.b, b, xb))
             for where in (low, high)}
    if not any(learned(f, runs)[0] is not False for f in cells.values()):
        return Part(spec.assertion, NOT_APPLICABLE, test, (), arms, note="No arm learned at either end of the axis.")
    logged = rules.ratio_scale(name)
    score = lambda f: np.log(measure_values(measure, f).where(lambda v: v > 0)) if logged else measure_values(measure, f)  # noqa: E731
    weights = {(spec.a, high): sign, (spec.b, high): -sign, (spec.a, low): -sign, (spec.b, low): sign}
    by_seed = {cell: score(frame).groupby(frame["seed"]).mean().dropna() for cell, frame in cells.items()}
    paired = sorted(set.intersection(*[set(v.index) for v in by_seed.values()]))
    how = ""
    if len(paired) >= 2:
        per_seed = sum(w * by_seed[cell].loc[paired] for cell, w in weights.items())
        contrast = mean_estimate(per_seed)
        left = sum(len(f) for f in cells.values()) - 4 * len(paired)
        how = f"paired by seed over {len(paired)} seeds" + (f", {left} run(s) without a partner left out" if left else "")
    else:
        contrast = combine([(w, mean_estimate(score(cells[cell]))) for cell, w in weights.items()])
        how = "unpaired (Welch)"
    effect = as_effect(f"growth of {spec.a}'s advantage over {spec.b} from {spec.x} = {format_value(low)} to "
                       f"{format_value(high)} ({shown}{', log scale' if logged else ''}, + = grows; {how})", contrast, alpha)
    status, note = side_of(effect, +1), ""
    if len(paired) >= 2 and not contrast.var > 0 and status != INCONCLUSIVE:
        # every seed's contrast equal: no spread, so the t interval says nothing; the exact sign test does
        sign_p = stats.binomtest(len(paired), len(paired), 0.5, alternative="greater").pvalue
        if sign_p > alpha:
            return Part(spec.assertion, INCONCLUSIVE, test, (effect,), arms, "", lean_of(contrast.value, 1), None, None,
                        f" Every seed's contrast is the same, so the interval has no width; by an exact sign test "
                        f"{len(paired)} agreeing seeds give p = {sign_p:.3g} > α.")
    lean, needed, mde = (undecided(contrast, seed_count(*cells.values()), abs(contrast.value), contrast.value, alpha)
                         if status == INCONCLUSIVE else (None, None, None))
    return Part(spec.assertion, status, test, (effect,), arms, "", lean, needed, mde, note)
