"""Progress on long work: "job k of N", elapsed and ETA for a sweep's jobs; the study runner's rounds.

A sweep: ``SweepProgress`` (a Hydra callback, conf/config.yaml) counts the multirun's jobs when it
starts (the basic sweeper's cartesian product of the sweep file's params and the command line, an
Optuna sweeper's ``n_trials``) and puts the count, the start time and the launcher's parallelism
in the environment (``NORMBENCH_SWEEP_PROGRESS``), where every job finds it, in this process (the
basic launcher) or in a launcher's worker (joblib, submitit). As each job starts, after Hydra's
``#k : overrides`` line, it prints one line on stderr:

    normbench sweep: job 3 of 8 (#2), 1m04s elapsed, about 2m08s left

The estimate assumes the jobs done so far took as long as those to come: with P jobs side by side,
about k - P jobs have ended when job k starts. Quiet when stderr is not a terminal (a log, a SLURM
job, a pipe) and with ``progress=false``.

Torch-free: the callback runs in the launcher's process.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time

from hydra.errors import HydraException
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

PROGRESS_ENV_VAR = "NORMBENCH_SWEEP_PROGRESS"
# Hydra's basic sweeper composes every job's config of a batch (all jobs, by default) before the first job of
# it starts, some 20 ms each: from this many on, a line says so first (5000 jobs were 90 s of silence: h16 N13)
COMPOSING_SAID_FROM = 100


def duration(seconds: float) -> str:
    """42s, 3m05s, 1h02m."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def job_count(overrides: list[str], sweeper: DictConfig | dict) -> int | None:
    """How many jobs the multirun launches, or None where that is not known in advance (a glob sweep,
    a sweeper that decides as it goes without a trial count)."""
    sweeper = OmegaConf.to_container(sweeper) if isinstance(sweeper, DictConfig) else dict(sweeper or {})
    if isinstance(sweeper.get("n_trials"), int):  # Optuna and other trial-budget sweepers
        return sweeper["n_trials"]
    if not str(sweeper.get("_target_", "")).endswith("BasicSweeper"):
        return None
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    params = [f"{k}={v}" for k, v in (sweeper.get("params") or {}).items()]
    try:
        parsed = OverridesParser.create().parse_overrides([*params, *overrides])
        return sum(len(batch) for batch in BasicSweeper.split_arguments(parsed, None))
    except Exception:  # noqa: BLE001 - e.g. glob(*), which needs the config loader: then no count
        return None


def parallel_jobs(launcher: DictConfig | dict) -> int:
    """How many jobs the launcher runs side by side: joblib's n_jobs, submitit's array_parallelism, else 1."""
    from normbench.studies.workers import joblib_count

    launcher = OmegaConf.to_container(launcher) if isinstance(launcher, DictConfig) else dict(launcher or {})
    for key in ("n_jobs", "array_parallelism"):
        value = launcher.get(key)
        if isinstance(value, int) and value != 0:
            return joblib_count(value)
    return 1


def job_line(index: int, total: int | None, elapsed: float, parallel: int = 1) -> str:
    """The line for the job with Hydra's number ``index`` (0-based) as it starts."""
    k = index + 1
    line = f"normbench sweep: job {k} of {total} (#{index})" if total else f"normbench sweep: job {k} (#{index})"
    line += f", {duration(elapsed)} elapsed"
    ended = k - max(parallel, 1)  # at least this many jobs have ended when job k starts
    if total and ended > 0 and elapsed > 0:
        line += f", about {duration(elapsed / ended * (total - ended))} left"
    return line


def composing_line(jobs: int | None, batch: int | None) -> str | None:
    """The line before a long silence: the basic sweeper composing ``jobs`` configs (``batch`` at a time when
    hydra.sweeper.max_batch_size is set) before any job runs; None for a short one, or an unknown count."""
    first = min(jobs, batch) if jobs and isinstance(batch, int) and batch > 0 else jobs
    if not first or first < COMPOSING_SAID_FROM:
        return None
    line = f"normbench sweep: {jobs} jobs; composing the configs of {first} before the first starts"
    if first == jobs:
        line += " (hydra.sweeper.max_batch_size=N starts the first jobs after N)"
    return line


class SweepProgress(Callback):
    """Counts the jobs when the multirun starts; one line as each job starts (on a terminal)."""

    def __init__(self, stream=None) -> None:
        self.stream = stream
        self._mine = False

    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        try:
            state = {"start": time.time(), "jobs": job_count([str(o) for o in config.hydra.overrides.task],
                                                              config.hydra.sweeper),
                     "parallel": parallel_jobs(config.hydra.launcher)}
        except (HydraException, OmegaConfBaseException, ValueError):
            # a sweep value that cannot be evaluated (an unset ${oc.env:...}): Hydra would say it in a warning
            # of its own before the sweeper fails on the same value in main's one line (hostile h19 T06)
            return
        os.environ[PROGRESS_ENV_VAR] = json.dumps(state)
        basic = str(config.hydra.sweeper.get("_target_", "")).endswith("BasicSweeper")  # Optuna's composes as it goes
        line = composing_line(state["jobs"], config.hydra.sweeper.get("max_batch_size")) if basic else None
        if line and config.get("progress", True):
            print(line, file=self.stream or sys.stderr, flush=True)
        from normbench.training import machine  # torch-free

        free = machine.free_cores()  # once, before any job: every job of the sweep runs on the same threads
        if free is not None:
            os.environ[machine.SWEEP_FREE_CORES] = str(free)
        self._mine = True

    def on_job_start(self, config: DictConfig, **kwargs) -> None:
        stream = self.stream or sys.stderr
        if not config.get("progress", True) or not stream.isatty():
            return
        try:
            state = json.loads(os.environ.get(PROGRESS_ENV_VAR, ""))
            index = int(config.hydra.job.num)
        except (ValueError, TypeError, KeyError, AttributeError):  # not a job of a multirun
            return
        elapsed = time.time() - float(state["start"])
        if math.isfinite(elapsed):
            print(job_line(index, state.get("jobs"), elapsed, state.get("parallel", 1)), file=stream, flush=True)

    def on_multirun_end(self, config: DictConfig, **kwargs) -> None:
        if self._mine:
            from normbench.training import machine

            os.environ.pop(PROGRESS_ENV_VAR, None)
            os.environ.pop(machine.SWEEP_FREE_CORES, None)
            self._mine = False


def study_round(look: int, looks: int, seeds: int, level: float, undecided: list[str], elapsed: float) -> str:
    """The study runner's line after each look."""
    line = (f"normbench.study: round {look} of at most {looks}: {seeds} seeds per arm, level {level:.4g}, "
            f"{duration(elapsed)} elapsed: {len(undecided)} undecided")
    if undecided:
        line += f" ({'; '.join(undecided[:4])}{' ...' if len(undecided) > 4 else ''})"
    return line


def study_answer(log: dict, runs, undecided: list[str]) -> list[str]:
    """The study runner's last lines: when and why it stopped, each claim's verdict and each
    comparison's answer at the last look's level, in the report's words (analysis/decisions.py: a
    comparison the report calls not testable here says so, never "ranked first"), and what is
    still undecided. Read from the result the report renders (analysis/result.py)."""
    from normbench.analysis.result import NOT_APPLICABLE, of_runs
    from normbench.report.tables import verdict_words

    last = log["rounds"][-1]
    stopped = {"decided": "every question decided",
               "decided or not testable": "every testable question decided, the rest not testable here",
               "nothing compared": "nothing compared (one arm, and no claim applies): a study needs two arms",
               "budget": "stopped by the budget",
               "maximum seeds": "stopped at the maximum seed count"}.get(log.get("stopped"), str(log.get("stopped")))
    lines = [f"normbench.study: answer after {len(log['rounds'])} round(s), {last['seeds_per_arm']} seeds per arm, "
             f"{duration(log['seconds'])}: {stopped} (level {last['level']:.4g})"]
    result = of_runs(runs, alpha=last["level"])
    verdicts = [(c.claim.id, c.verdict.status) for c in result.claims]
    lines += [f"  claim {name}: {verdict_words(status)}" for name, status in verdicts if status != NOT_APPLICABLE]
    lines += [f"  {decision.line()}" for decision in result.decisions]
    lines += [f"  undecided: {item}" for item in undecided[:20]]
    if len(undecided) > 20:
        lines.append(f"  ... and {len(undecided) - 20} more")
    return lines
