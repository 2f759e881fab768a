"""The terms the figures' captions name, explained once (GLOSSARY), and the order in which the
report takes a study's figures (STUDY_FIGURE_ORDER)."""

from __future__ import annotations

from normbench.records import metrics as metric_table
from normbench.report.figures import drawing
from normbench.report.figures.drawing import MIN_BAND_SEEDS

# Each figure's caption names its terms; their long explanations are written once, here, and the
# report shows them in one legend/glossary section.
GLOSSARY: dict[str, str] = {
    "arm": "One choice a study compares (its settings, e.g. norm=ln, placement=pre); its runs differ only in seed.",
    "interval": (f"A line's band, a bar's whisker or a point's bar: the 95% t-interval of the mean over seeds, "
                 f"drawn only where ≥ {MIN_BAND_SEEDS} seeds stand behind it (fewer seeds make it mostly the t "
                 f"quantile) and clipped to what the metric can be."),
    "rank": ("An arm's place in its study's leaderboard for one task; one-seed arms are not ranked. ★: an arm "
             "the evidence cannot yet tell apart from the best."),
    "Pareto front": "The dashed line through the ranked arms that no other ranked arm beats on both speed and metric.",
    "paired timing": ("Speed from `python -m normbench.bench arms`: every arm's training step rebuilt from its "
                      "record and timed interleaved in one process, round by round, so load falls on all arms "
                      "alike; the only speed the report states as a result."),
    "unpaired per-run throughput": ("Each run's own median step time, taken while the sweep's other runs and "
                                    "other processes shared the machine: it carries the load each run met, so "
                                    "a difference between arms is not a speed result."),
    "noisy timing": (f"Hatched grey bars: the median run's slowest tenth of steps took more than "
                     f"{metric_table.TIMING_NOISY:g}× its fastest tenth (step_ms p90/p10), or the seeds' throughputs "
                     f"differ by more than {metric_table.TIMING_NOISY:g}×: the machine's load changed while it was timed."),
    "small multiples": (f"Beyond {drawing.SINGLE_PANEL_GROUPS} arms, one panel per arm (its title): its line in colour over "
                        "the other arms in grey; every panel of a metric shares one y-range."),
    "peak memory": ("GPU tensor memory on a GPU; on a CPU the whole process's resident memory (interpreter, "
                    "libraries, data), whose differences between norms are small against the shared base. The "
                    "two kinds are not comparable, so the report gives one memory table, not a chart per study."),
    "gradient flow": "‖∂L/∂h_t‖ against t, geometric mean over seeds: flat is perfect flow, falling toward t = 1 vanishing.",
    "steps to target": ("Steps until the validation metric first reached the task's target, counted at "
                        "evaluations (so in steps of eval_every); a run that never reaches it counts as such."),
}

# The report draws at most a handful of figures per study; it takes them in this order, most
# informative first. Curves answer convergence and the metric; the heatmap lays a two-key study
# out; speed comes only after (and means something only with paired timing); memory last, as a
# table (memory_table), not a figure per study.
STUDY_FIGURE_ORDER: tuple[str, ...] = (
    "learning_curves", "heatmaps", "tradeoff", "grad_flow", "loss_curves", "grad_norm_curves",
    "lr_sensitivity", "performance_profile", "throughput", "peak_memory",
)
