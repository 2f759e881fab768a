"""A sweep's up-front check that its jobs compose, paid once per pair of overrides instead of once per job.

Hydra's sweepers compose every job of a batch before the launcher runs any (Sweeper.validate_batch_is_legal),
so that a bad override fails the sweep before its first job rather than in its middle; the launcher then
composes each job again to run it. On tiny runs the two compositions were most of a sweep's fixed cost
(issue 48: 64% of a 52-job smoke subset's time under cProfile, about 0.12 s each on the 2-core machine).

Whether a job composes depends on its overrides: a value (an unknown group option, a wrong type) or, where
one setting changes another's schema or defaults, a pair of them. So the check composes each job that
brings a value or a pair of values no job checked before it has brought, and skips the rest: every value
and every pair of values in the batch is still composed before the first job runs. A failure that needs
three settings together is found when that job is composed to run, as a failure of the launcher's.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations


def covering_jobs(batch: Sequence[Sequence[str]]) -> list[int]:
    """The indices of the jobs to compose so that each override, and each pair of overrides that share a
    job, is composed at least once; in batch order, so a sweep's first bad job is still the one named."""
    seen: set = set()
    chosen = []
    for index, overrides in enumerate(batch):
        items = sorted(set(overrides))
        brings = {*((item,) for item in items), *combinations(items, 2)} - seen
        if brings or not chosen:
            chosen.append(index)
            seen |= brings
    return chosen


def validate_covering(sweeper, batch: Sequence[Sequence[str]]) -> None:
    """Sweeper.validate_batch_is_legal on the covering jobs of ``batch`` alone."""
    loader = sweeper.hydra_context.config_loader if getattr(sweeper, "hydra_context", None) else sweeper.config_loader
    for index in covering_jobs(batch):
        loader.load_sweep_config(master_config=sweeper.config, sweep_overrides=list(batch[index]))


def install() -> None:
    """Every sweeper that keeps Hydra's validate_batch_is_legal checks the covering jobs alone (once)."""
    from hydra.plugins.sweeper import Sweeper

    if Sweeper.validate_batch_is_legal is not validate_covering:
        Sweeper.validate_batch_is_legal = validate_covering
