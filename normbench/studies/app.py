"""The Hydra application: `python -m normbench [overrides]`, `-m` for a sweep.

Errors a user can make (unknown key, bad value, invalid combination, missing data) end with one
line on stderr and exit status 2; a failed run ends with 1. Hydra's own error printing is
replaced by ours (HYDRA_FULL_ERROR hands us the exception) so that no traceback reaches the user.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import logging
import math
import os
import signal
import sys
import time
import warnings
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.errors import HydraException
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from normbench.checks import require, to_devnull
from normbench.configuration import hydra_files
from normbench.configuration.config import ALLOW_CODE_ENV, ConfigError, config_dir, register, require_own_identity
from normbench.configuration.env_names import IN_RUN_FOLDER, NAME_KEYS, refused_env_name, too_long_name
from normbench.configuration.schema import TASK_CONFIGS
from normbench.configuration.study_info import STUDY_ENV_VAR
from normbench.records import folders, sweep_time
from normbench.records.folders import stale_note
from normbench.records.metrics import other_score, record_score, target_in_range, target_range
from normbench.records.record import RUNNING, SetAside, read_summary
from normbench.report.output import inside
from normbench.studies import children, lean_job, orphans, sweep_end, validation, workers
from normbench.studies.progress import PROGRESS_ENV_VAR
from normbench.training import machine
from normbench.training.tracking import env_secrets, interpolated_secrets, masked

log = logging.getLogger("normbench")
EXIT_STATUS = {"invalid": 2, "failed": 1}

register()
hydra_files.install()  # .hydra/ files never written through a link or into a FIFO (normbench/configuration/hydra_files.py)
validation.install()  # a sweep composes each job once, its up-front check a covering set (studies/validation.py)
lean_job.install()  # Hydra's run_job, two copies of a job's hydra node, not four (studies/lean_job.py)
# At exit CPython's last collections walk every object alive, and torch's optimizers bring in
# torch._dynamo, whose objects take ~2 s to walk on a 2-core CPU: a process that is ending skips
# them, the launcher and each joblib worker alike (the launcher waits for its workers to end).
# Nothing waits on a collection to be written: records and logs are closed explicitly.
atexit.register(gc.freeze)
IMPORTED = time.time()  # this process's start-up ends here; torch comes with its first job (Job.__call__)
_launcher_pid: int | None = None  # the process main() runs in; a joblib worker never calls it
_frozen = False


def _freeze_worker() -> None:
    """After a joblib worker's first job: collect once, and freeze what is left. loky runs a full
    gc.collect() after a worker's jobs (its guard against leaks), which walks every object torch
    and torch._dynamo made, ~0.5-1 s a job on a 2-core CPU; what the first job leaves lives as long
    as the worker, so later collections need walk only what later jobs make."""
    global _frozen
    from normbench.studies import loky_tracker

    loky_tracker.install()  # a relaunch of loky's killed resource tracker stays quiet here too
    gc.collect()
    gc.freeze()
    _frozen = True


def _parallel_jobs(hc) -> int:
    """Jobs side by side with this one: the local launcher's workers as its sweep bounded them (the job's own
    n_jobs is the count as typed: studies/workers.py), 1 for any other launcher."""
    n_jobs = hc.launcher.get("n_jobs") if "n_jobs" in hc.launcher else None
    if n_jobs is None:
        return 1
    return workers.sweep_workers() or workers.joblib_count(n_jobs)


def describe(summary: dict) -> str:
    task, metrics, speed = summary.get("task") or {}, summary.get("metrics") or {}, summary.get("throughput") or {}
    parts = [str(summary.get("status"))]
    primary, secondary = record_score(summary), other_score(record_score(summary))
    if metrics.get(primary) is not None and {"metric", "chance", "target"} <= set(task):
        # the primary score (analysis/rules.py) first; the other validation score labelled beside it
        also = (f", {secondary.replace('_', ' ')} {metrics[secondary]:.4g}" if metrics.get(secondary) is not None else "")
        trivial = task.get("trivial") if isinstance(task.get("trivial"), dict) else {}  # the task's plateaus
        shown = "".join(f", {name} {value:.3g}" for name, value in trivial.items() if isinstance(value, (int, float)))
        parts.append(f"{primary.replace('_', ' ')} {task['metric']} {metrics[primary]:.4g} (chance {task['chance']:.3g}"
                     + shown + also + (f", test {metrics['test']:.4g})" if metrics.get("test") is not None else ")"))
        if metrics.get("steps_to_target") is not None:
            parts.append(f"target {task['target']:g} at step {metrics['steps_to_target']} "
                         f"({metrics['seconds_to_target']:.1f} s)")
        else:
            parts.append(f"target {task['target']:g} not reached")
    if speed.get("step_ms_median") is not None:
        parts.append(f"{speed['step_ms_median']:.2f} ms/step")
    if summary.get("reason"):
        parts.append(summary["reason"])
    return " | ".join(parts)


def check_job(hc, node: DictConfig) -> None:
    """What Hydra accepts but a run must not: a log name that leaves the run folder, a group's option whose
    settings were given to another (``task=adding task.name=copy``, ``model=lstm model.family=transformer``)."""
    refused = refused_env_name(written_names(node))
    if refused:
        raise ConfigError(refused)
    named = hydra_files.job_name_problem(str(hc.job.name))  # also before any folder (hydra_files.CheckHydraFiles)
    if named:
        raise ConfigError(named)
    too_long = too_long_name({key: OmegaConf.select(hc if key.startswith("hydra.") else node, key.removeprefix("hydra.")
                                                    if key.startswith("hydra.") else key, default=None)
                              for key in IN_RUN_FOLDER}, hydra_files.job_folder(hc))
    if too_long:
        raise ConfigError(too_long)
    _check_overrides(_as_typed(hc.overrides.task), node, set(hc.runtime.choices))
    require_own_identity(hc.runtime.choices, node)
    check_target(node)


def check_target(node: DictConfig) -> None:
    """task.target against its task's metric (normbench/records/metrics.py): an accuracy target of -0.5 would be
    reached at the first evaluation of a model at chance, one of 1.5 or an MSE of -1 by no run."""
    task = node.get("task")
    metric = getattr(TASK_CONFIGS.get(task.get("name")), "metric", None) if isinstance(task, DictConfig) else None
    target = task.get("target") if metric else None
    if isinstance(target, (int, float)) and not isinstance(target, bool) and math.isfinite(target):
        require(target_in_range(metric, float(target)),
                f"task.target={target:g} is no target for {metric}, the task's metric: it must be {target_range(metric)}")


def non_finite(value, key: str = "") -> str | None:
    """The first setting of a resolved config that is nan or infinite (``lr: nan`` in a sweep file): JSON
    holds none, so the run's record would say null and be set aside; refused before it is written."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"{key}={value}"
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    return next((found for k, v in items if (found := non_finite(v, f"{key}.{k}" if key else str(k)))), None)


def written_names(node: DictConfig) -> dict:
    """Each name-bearing key (configuration/env_names.py) as written, before resolution: the job's
    config for its own keys, Hydra's for ``hydra.*``."""
    values = {}
    for key in NAME_KEYS:
        source = HydraConfig.instance().cfg if key.startswith("hydra.") else node
        parent, _, leaf = key.rpartition(".")
        try:
            holder = OmegaConf.select(source, parent, default=None) if parent else source
            values[key] = OmegaConf.to_container(holder, resolve=False).get(leaf) if OmegaConf.is_dict(holder) else None
        except OmegaConfBaseException:
            values[key] = None
    return values


_BOOL_WORDS = ("true", "false", "yes", "no", "y", "n", "on", "off")


def _check_overrides(overrides: list[str], node: DictConfig, groups) -> None:
    """What OmegaConf would take silently: ``save_model=2`` (any int is a bool to it) and ``~steps`` (the
    schema puts back the default of a setting deleted, 600 steps where the user asked for none)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    for override in OverridesParser.create().parse_overrides(overrides):
        key = override.key_or_group
        if override.is_delete() and override.package is None and "/" not in key and key not in groups \
                and key.split(".")[0] != "hydra":
            raise ConfigError(f"~{key} cannot delete a setting every run has (its default would run); "
                              f"give {key}=VALUE instead")
        if override.is_delete() or override.is_sweep_override():
            continue
        value = override.value()
        if isinstance(OmegaConf.select(node, key, default=None, throw_on_missing=False), bool) and not (
                isinstance(value, bool) or value in (0, 1) or str(value).lower() in _BOOL_WORDS):
            raise ConfigError(f"{key} must be true or false, got {message_text(repr(value), limit=80)}")


def objective(summary: dict) -> float:
    """A run's score for a sweeper, always to MINIMIZE: the final validation metric, negated when
    higher is better (accuracy), as is when lower is better (mse, bpc). Final, not best: it is the
    model the test metric measures, and what a tuned study selects on (normbench/analysis/tuning.py).
    Any run that did not finish ok (diverged, invalid, skipped, failed) scores +inf, worse than every
    finished run; a finished run without a finite metric too.
    """
    value = (summary.get("metrics") or {}).get(record_score(summary))  # the primary score (records/metrics.py)
    if summary.get("status") != "ok" or not isinstance(value, (int, float)) or not math.isfinite(value):
        return math.inf
    return -float(value) if (summary.get("task") or {}).get("higher_is_better", True) else float(value)


class Unrun(float):
    """The score (+inf) of a job refused before its record, or whose record could not be written, with the line that
    says why (``refused``, ``unwritable``). A joblib worker's Job is a copy: main reads its own, so the launcher
    takes the why from the job's return value (Job.take, called by lost_workers' launch; hostile h19 J2)."""

    refused: str | None = None
    unwritable: str | None = None
    job: int | None = None  # the sweep's job number (hydra.job.num); None for a single run


class Job:
    """Hydra's task function: one job per call, returns objective(summary) so that any Hydra sweeper
    (e.g. Optuna) can minimize it. Hydra does not hand a single run's outcome back to its caller, so
    this object keeps what main needs for the exit status: the first job refused before a record
    was started (``refused``), a record that could not be written (``unwritable``, full disk or
    unwritable folder), and a single run's summary (``single``); a joblib worker's refusals come back in
    its jobs' scores (Unrun, Job.take). A sweep's failed runs reach main from their records (sweep_end.RunsFailed).
    """

    def __init__(self, ends_process: bool = False):
        self.ends_process = ends_process  # a single run's record final: the process only says so and exits
        self.refused: str | None = None
        self.unwritable: str | None = None
        self.single: dict | None = None
        self.secrets: list[str] = []  # the values read from the environment by any job so far (node_secrets)
        self.run_dirs: list[Path] = []  # the folders of the jobs run in this process, each told to execute

    def _refuse(self, message: str, unwritable: bool = False) -> Unrun:
        score = Unrun(math.inf)
        setattr(score, "unwritable" if unwritable else "refused", message)
        hc = HydraConfig.get()
        if hc.mode == RunMode.MULTIRUN:
            score.job = hc.job.num
        self.take(score)
        return score

    def take(self, returned) -> None:
        """A job's return value, from this process or a worker's: the first refusal and unwritable record kept, and
        each refused job's line for the sweep's end screen (sweep_end.REFUSED_JOBS)."""
        if isinstance(returned, Unrun):
            self.refused = self.refused or returned.refused
            self.unwritable = self.unwritable or returned.unwritable
            if returned.refused and returned.job is not None:
                sweep_end.REFUSED_JOBS.setdefault(returned.job, message_text(returned.refused, self.secrets))

    def __call__(self, node: DictConfig) -> float:
        called = time.time()
        hc = HydraConfig.get()
        self.secrets = sorted({*self.secrets, *node_secrets(node)}, key=len, reverse=True)
        try:
            check_job(hc, node)
            unrecordable = non_finite(OmegaConf.to_container(node, resolve=True))  # a failing interpolation is the user's input
            if unrecordable:
                raise ConfigError(f"{unrecordable} must be a finite number: a record cannot hold it")
        except (ConfigError, OmegaConfBaseException) as err:  # before anything is written; one line from main
            return self._refuse(str(err))
        multirun = hc.mode == RunMode.MULTIRUN
        run_dir = hydra_files.job_folder(hc)
        if not str(hc.sweep.dir if multirun else hc.run.dir).strip():
            which = "hydra.sweep.dir" if multirun else "hydra.run.dir"
            return self._refuse(f"{which} is empty: the record would be written into the current folder; name a folder")
        if multirun and os.path.abspath(run_dir) == os.path.abspath(str(hc.sweep.dir)):  # subdir '' or '.' (h13 H03)
            return self._refuse(f"hydra.sweep.subdir={message_text(hc.sweep.subdir, limit=80)!r} puts the job in the "
                                f"sweep directory itself, among the other jobs' files; name a sub-folder (the default "
                                f"is ${{hydra.job.num}})")
        if multirun and not inside(hc.sweep.dir, run_dir):
            _remove_if_empty(run_dir)  # Hydra made it before calling the job
            return self._refuse(f"hydra.sweep.subdir puts the job in {message_text(run_dir)}, outside the sweep "
                                f"directory {message_text(hc.sweep.dir)}")
        if multirun and _stopping(str(hc.sweep.dir)):
            _remove_if_empty(run_dir)  # Hydra made it before calling the job
            return math.inf
        subdir = hc.output_subdir if hc.output_subdir and "/" not in str(hc.output_subdir) else None
        foreign = folders.not_ours(run_dir, f"{hc.job.name}.log", subdir)
        if foreign:  # before the first log line: the job's log is opened then (delay: true)
            return self._refuse(message_text(foreign))
        # Imported here, not with this module: a joblib launcher only hands jobs to its workers and
        # never needs torch, so it starts them a few seconds sooner.
        from normbench.training import environment
        from normbench.training.run import execute

        ready = time.time()
        self.run_dirs.append(run_dir)
        environment.share_in(Path(hc.sweep.dir) if multirun else None)
        try:
            summary = execute(node, run_dir, _as_typed(hc.overrides.task), sweep_dir=Path(hc.sweep.dir) if multirun else None,
                              parallel_jobs=_parallel_jobs(hc) if multirun else 1,
                              job_num=hc.job.num if multirun else 0,
                              own_stop=_worker_alone(str(hc.sweep.dir)) if multirun else None)
        except OSError as err:  # the record itself cannot be written: nothing more this job can do
            return self._refuse(f"cannot write output: {err}{stale_note(run_dir)}", unwritable=True)
        finally:  # whatever runs next in this process (a rerun, a bench) collects its own
            environment.share_in(None)
        if not multirun and self.ends_process:  # its record is final: a stop from here on has nothing to stop
            children.ignore_stops()
        if multirun:
            try:  # where this job's time went, for the sweep's efficiency (normbench/records/sweep_time.py)
                sweep_time.write_job(Path(hc.sweep.dir), hc.job.num,
                                     sweep_time.job_marks(machine.process_started(), IMPORTED, called, ready, summary))
            except OSError as err:  # the sweep's end line then counts this job's time as idle
                log.warning("job timing not written: %s", err)
            if not _frozen and os.getpid() != _launcher_pid and "joblib" in str(hc.launcher.get("_target_", "")):
                _freeze_worker()
        if multirun or summary["status"] not in EXIT_STATUS:  # masked as a single run's error line is
            log.info("%s -> %s", message_text(describe(summary), self.secrets), summary.get("run_dir", run_dir))
        if not multirun:
            self.single = summary
        return objective(summary)


class _KeptOutput:
    """Standard output whose first failed write (``> /dev/full``) is kept in ``error`` and the rest dropped:
    Hydra's own lines (``[HYDRA] Launching 2 jobs``) go there through logging, which would say each failure in
    a traceback, and a sweep's table and report would be lost to it (hostile h13 F07). main raises it once,
    at the end, for the caller's one line (checks.exit_on_full_stdout)."""

    def __init__(self, stream):
        self._stream, self.error = stream, None

    def write(self, text: str) -> int:
        self._put(text)
        return len(text)

    def flush(self) -> None:
        self._put(None)

    def _put(self, text: str | None) -> None:
        if self.error is None:
            try:
                self._stream.write(text) if text is not None else self._stream.flush()
            except OSError as error:
                self.error = error

    def __getattr__(self, name):
        return getattr(self._stream, name)


class _MaskedOutput(_KeptOutput):
    """Standard output with every value read from the environment and any URI password replaced by
    ``***`` (tracking.masked), line by line: where Hydra prints the config (``--cfg job --resolve``)."""

    def __init__(self, stream, secrets: list[str]):
        super().__init__(stream)
        self._secrets, self._line = tuple(secrets), ""

    def write(self, text: str) -> int:
        *lines, self._line = (self._line + text).split("\n")
        for line in lines:
            self._put(masked(line, self._secrets) + "\n")
        return len(text)

    def flush(self) -> None:
        if self._line:
            self._put(masked(self._line, self._secrets))
            self._line = ""
        self._put(None)


def stop_line(signum: int | None, summaries_written: bool) -> str:
    """The line a stopped run or sweep ends with (``signum`` None: Ctrl-C). "summaries written" only where a
    record was (hostile h14 B10: said for a sweep stopped before its first record); else the line of a
    stop during the imports (normbench/__main__.py)."""
    if summaries_written:
        return f"normbench: interrupted{f' by {signal.Signals(signum).name}' if signum else ''}; summaries written"
    return f"normbench: stopped by {signal.Signals(signum or signal.SIGINT).name}"


def written_since(began: float, folders: list[Path | None]) -> bool:
    """Whether a record (summary.json) in one of ``folders`` (None: none) or a job folder right under one was
    written since ``began``: by this command, a run's interrupted record included."""
    for folder in filter(None, folders):
        for summary in [folder / "summary.json", *folder.glob("*/summary.json")]:
            with contextlib.suppress(OSError):
                if summary.is_file() and summary.stat().st_mtime >= began:
                    return True
    return False


def _stop(signum, frame):
    _stop_workers(signum)
    stop = KeyboardInterrupt(f"signal {signum}")
    if signum != signal.SIGINT:
        stop.signum = signum  # main's last line names it (Ctrl-C's line stays "interrupted")
    raise stop


def _stop_workers(signum: int = signal.SIGTERM) -> None:
    """A joblib launcher's workers, when SIGTERM or SIGHUP stops the launcher: the signal reached it alone
    (a Ctrl-C in a terminal reaches them too), and the KeyboardInterrupt it becomes makes joblib kill
    them outright, leaving their records saying ``running`` after the line "summaries written" (G04).
    So each gets SIGTERM first, which ends its run ``interrupted``, and time to write that
    (children.WORKERS_WAIT_S); further stops are held off meanwhile. Nothing to wait for in a single run."""
    started = children.workers(os.getpid())
    if not started:
        return
    children.ignore_stops()
    sweep = hydra_files.SWEEP_DIR
    if sweep is None or not _mark_stopping(sweep):
        children.end_descendants(started)
        return
    # a loky worker outlives the run its SIGTERM interrupts and takes the next queued job: the marker leaves
    # that job unrun (G030), and the wait ends when no record of the sweep says running, not when the
    # workers exit (they do not: joblib ends them once the KeyboardInterrupt reaches it)
    if signum == signal.SIGINT and _records_end(sweep, children.CTRL_C_GRACE_S):
        return  # a Ctrl-C in a terminal reached the workers too: they ended their runs themselves
    # SIGTERM, or a SIGINT sent to the launcher alone (G021/N099: its workers trained on, then were killed)
    children.signal_all(started, signal.SIGTERM)
    _records_end(sweep, children.WORKERS_WAIT_S)


def _records_end(sweep: Path, seconds: float) -> bool:
    """Waits up to ``seconds`` until no record of the sweep says running; whether none does."""
    deadline = time.monotonic() + seconds
    while _running_records(sweep):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    return True


STOPPING = ".normbench-stopping"  # + "-<launcher pid>": in the sweep folder while a stopped launcher ends its workers
_marker: Path | None = None


def _mark_stopping(sweep: Path) -> bool:
    global _marker
    path = sweep / f"{STOPPING}-{os.getpid()}"
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)))
    except OSError:  # a folder that cannot take it: the workers are ended as processes instead
        return False
    _marker = path
    return True


def _running_records(sweep: Path) -> bool:
    """Whether a job folder of the sweep holds a record still saying running (read at most 64 KiB each)."""
    for summary in sweep.glob("*/summary.json"):
        found = read_summary(summary)
        if not isinstance(found, SetAside) and found.status == RUNNING:
            return True
    return False


def _unmark_stopping() -> None:
    global _marker
    if _marker is not None:
        with contextlib.suppress(OSError):
            os.unlink(_marker)
        _marker = None


def _stopping(sweep_dir: str) -> bool:
    """Whether this job's launcher is stopping (its marker in the sweep folder): a queued job it hands to a
    worker meanwhile is not started, so no record is left saying ``running``."""
    launcher = os.environ.get(orphans.LAUNCHER_PID_ENV, "")
    return launcher.isdigit() and int(launcher) != os.getpid() and os.path.lexists(
        Path(sweep_dir) / f"{STOPPING}-{launcher}")


def _worker_alone(sweep_dir: str):
    """execute's ``own_stop`` for a sweep's job: SIGTERM or SIGHUP that reached its worker process alone (a launcher's
    child, the launcher not stopping) fails this job, named, and the worker takes the next one. Raised on, the
    interrupt reached the launcher, which stopped the whole sweep as if it had been stopped itself (hostile h16 N10).
    A Ctrl-C (no signum) is a terminal's, which reaches the launcher too."""
    def reason(stop: KeyboardInterrupt) -> str | None:
        signum = getattr(stop, "signum", None)
        launcher = os.environ.get(orphans.LAUNCHER_PID_ENV, "")
        if signum is None or not launcher.isdigit() or int(launcher) != os.getppid() or _launcher_stops(sweep_dir):
            return None
        return f"its worker process alone was stopped by {signal.Signals(signum).name}; the sweep went on"
    return reason


LAUNCHER_MARKS_S = 3.0  # how long a stopped worker waits for its launcher's marker before it judges the stop its own


def _launcher_stops(sweep_dir: str) -> bool:
    """Whether the launcher is stopping too, its marker awaited up to LAUNCHER_MARKS_S: a signal to the whole process
    group reaches the worker and the launcher at once, and the worker read the launcher's marker before the launcher
    had written it, failing its job "alone" while the sweep was being stopped (hostile h25 a020)."""
    deadline = time.monotonic() + LAUNCHER_MARKS_S
    while not _stopping(sweep_dir):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def _stops_as_interrupts() -> dict:
    """SIGTERM and SIGHUP end the command as Ctrl-C does, with its one line and 128 + the signal, from the start:
    a launcher process (hydra/launcher=local) runs no job itself, so a run's own handler
    (training/run.py) is never in place there and the signal killed it with no line (G04).
    Returns the handlers replaced."""
    previous = {}
    names = ["SIGTERM", "SIGHUP"]
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # Ctrl-C too, unless it is ignored here (a
        names.append("SIGINT")  # job started with `&` by a shell without job control): a joblib launcher's workers
    for signum in (getattr(signal, name) for name in names if hasattr(signal, name)):
        try:
            previous[signum] = signal.signal(signum, _stop)
        except ValueError:  # not the main thread: leave signals alone
            break
    return previous


def _as_typed(overrides) -> list[str]:
    """The job's overrides as typed: ``${oc.env:NAME}`` stays that text (iterating Hydra's list would resolve it)."""
    return [str(o) for o in OmegaConf.to_container(overrides, resolve=False)]


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass


def _secrets(argv: list[str]) -> list[str]:
    """The values of the environment variables the command line reads through ``${oc.env:NAME}``."""
    return env_secrets(argv)


def node_secrets(node: DictConfig) -> list[str]:
    """The values of the environment variables a job's config reads through ``${oc.env:NAME}``, wherever
    it was written: the command line, a sweep file, a group's config (a logger's tracking URI)."""
    try:
        written = list(interpolated_secrets(node))
    except OmegaConfBaseException:
        written = []
    return sorted({*env_secrets(sys.argv[1:]), *written}, key=len, reverse=True)


def message_text(value: object, secrets: list[str] = (), limit: int = 400) -> str:
    """An error line made safe to print: a value read from the environment is replaced by a mark
    (the override as typed names it), characters a terminal would act on are escaped, a long word
    is cut, and the whole line is at most ``limit`` characters."""
    text = str(value)
    for secret in secrets:
        text = text.replace(secret, "<value of ${oc.env:...}>")
    text = "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in " ".join(text.split()))
    text = " ".join(word if len(word) <= 120 else word[:119] + "…" for word in text.split(" "))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _say(message: str, secrets: list[str] = ()) -> None:
    known = sorted({*_secrets(sys.argv[1:]), *secrets}, key=len, reverse=True)
    print(f"normbench: {message_text(message, known)}", file=sys.stderr)


def _bound_hydra_lines(limit: int = 2000) -> None:
    """Hydra's own lines echo each job's overrides as typed (``#0 : lr=...``): a 2 MB value would be a
    2 MB line. Every record of a ``hydra`` logger is cut to ``limit`` characters, ending in "…"."""
    make = logging.getLogRecordFactory()
    if getattr(make, "bounds_hydra", False):
        return

    def factory(*args, **kwargs):
        record = make(*args, **kwargs)
        if record.name.startswith("hydra"):
            text = record.getMessage()
            if len(text) > limit:
                record.msg, record.args = text[: limit - 1] + "…", None
        return record
    factory.bounds_hydra = True
    logging.setLogRecordFactory(factory)


# Hydra's flags that read a file outside conf/ as code or as the primary config; --experimental-rerun
# unpickles the file it names (a planted config.pickle would run its payload).
RERUN_FLAG = "--experimental-rerun"
ALLOW_CODE_FLAG = "--allow-code"


def _names_rerun_flag(arg: str) -> bool:
    """Whether ``arg`` is the pickle flag: spelled out, or any shortening argparse accepts for it (``--exp``,
    ``--experimental=FILE``: no other Hydra flag starts with ``--e``)."""
    flag = arg.split("=", 1)[0]
    return len(flag) >= 3 and flag.startswith("--") and RERUN_FLAG.startswith(flag)


def outside_code(argv: list[str]) -> str | None:
    """One gate for every way code reaches a run from outside conf/ (the reason, or None). Removes
    ``--allow-code`` from ``argv`` (Hydra does not know it) and, when given, says on stderr that the
    files and keys below are used as given: the user's explicit, visible opt-in. Without it: the
    pickle flag is refused, configs from ``--config-dir/--config-name/--config-path`` and
    ``hydra.searchpath`` are read as sweep files are (configuration/config.py: CheckedFileSource),
    and command-line keys that run code (``hydra.callbacks``, ``_target_``, logging) are refused."""
    from normbench.configuration.config import (
        command_line_code,
        command_line_guard,
        command_line_place,
        node_builder,
    )

    guard = command_line_guard(argv[1:])
    if guard:
        return (f"{message_text(guard, limit=120)} would remove a guard normbench puts in place (its Hydra callbacks, "
                "logging, run and sweep folders, paths: they keep a run's files in its folder and its record whole); "
                "set such a key to a value instead of deleting it")
    place = command_line_place(argv[1:])
    if place:
        return (f"{message_text(place, limit=120)}: hydra.output_subdir must name a sub-folder of the run folder, not "
                "the run folder itself ('.'), a folder above it ('..'), an absolute path or an interpolation (Hydra "
                "writes config.yaml, hydra.yaml and overrides.yaml there); give a folder name such as .hydra "
                "(or hydra.output_subdir=null for none)")
    if any(_names_rerun_flag(a) for a in argv[1:]):
        return (f"{RERUN_FLAG} unpickles a file, which can run any code; to run a recorded run again: "
                "normbench rerun RUN_DIR")
    if ALLOW_CODE_FLAG in argv[1:]:
        argv[:] = [a for i, a in enumerate(argv) if i == 0 or a != ALLOW_CODE_FLAG]
        os.environ[ALLOW_CODE_ENV] = "1"  # the jobs' processes (joblib workers) inherit it
    if os.environ.get(ALLOW_CODE_ENV) == "1":
        print(f"normbench: {ALLOW_CODE_FLAG}: configs from outside conf/ and keys that run code "
              "(hydra.callbacks, _target_, logging) are used as given", file=sys.stderr)
        return None
    key = command_line_code(argv[1:])
    builder = key and node_builder(argv[1:], key)
    if builder:
        return (f"{message_text(key, limit=120)} on the command line uses {builder}, which builds settings from text "
                f"(what it builds could hold a _target_ no check sees, and run code); give the value itself "
                f"({message_text(key, limit=40)}=VALUE). To run it anyway, say so: normbench {ALLOW_CODE_FLAG} ...")
    if key:
        return (f"{message_text(key, limit=120)} on the command line would run code (a _target_, Hydra callbacks, "
                f"logging or environment settings); normbench runs only its own. To run it anyway, say so: "
                f"normbench {ALLOW_CODE_FLAG} ...")
    return None


def _lost_note() -> str:
    """What main's failed-runs line adds when a joblib worker was killed (studies/lost_workers.py)."""
    from normbench.studies.lost_workers import LOST

    if not LOST:
        return ""
    unrun = LOST.get("unrun") or []
    return (f" ({LOST['reason']}{'; job(s) ' + ', '.join(f'#{n}' for n in unrun) + ' not run' if unrun else ''}; "
            f"the same command with resume=true runs them again)")


def _claim_folders_readable() -> None:
    """The claim files NORMBENCH_CLAIMS names, read before any job: a sweep's end report reads them, and a file it
    cannot use would drop that report after every run was paid for (hostile h15 Y21). ClaimFileError if one is bad."""
    if os.environ.get("NORMBENCH_CLAIMS", "").strip():  # yaml_claims.CLAIMS_ENV; its import takes ~0.7 s, so only then
        from normbench.analysis.claims import SHIPPED
        from normbench.analysis.claims.yaml_claims import from_environment

        from_environment(SHIPPED)


# What a command puts in os.environ for its jobs: --allow-code's opt-in, and a multirun's study, progress, free cores
# and workers (its callbacks). main puts them back as it found them: a later command in this process (a notebook, a
# script, a test) must not run code it was not allowed, nor give its runs this sweep's study or workers, and a
# sweep that ended in failed runs or a stop never ran the callbacks' own clean-up (Hydra calls on_multirun_end only
# after a sweep that returned, and stops at the first callback that raises a BaseException, as the end of a sweep
# with failed runs does: sweep_end.RunsFailed).
COMMAND_ENVIRONMENT = (ALLOW_CODE_ENV, STUDY_ENV_VAR, PROGRESS_ENV_VAR, machine.SWEEP_FREE_CORES, workers.SWEEP_WORKERS)


def main(from_process_start: bool = False) -> None:
    """``from_process_start``: this process was started for this command (the command line), so
    its start-up counts in a sweep's time (normbench/records/sweep_time.py); else the time starts now.
    A command refused (exit status 2) writes nothing: a sweep refused after Hydra's sweeper wrote its
    multirun.yaml (a sweep file's unknown key, refused as the launcher composes a job) takes it back
    (hydra_files.unmake_sweep; hostile h25 g011)."""
    hydra_files.SWEEP_MADE.clear()  # an earlier sweep of this process (a test, a notebook) is not this command's
    # Again for each command: a joblib sweep that ran its jobs in this process (one worker) had Hydra rebuild its
    # plugins there (Singleton.set_state), and its scan runs basic_launcher's module again, Hydra's run_job with it
    lean_job.install()
    sweep_end.REFUSED_JOBS.clear()
    sweep_end.REFUSALS_SAID.clear()
    found = {name: os.environ.get(name) for name in COMMAND_ENVIRONMENT}
    try:
        _main(from_process_start)
    except SystemExit as end:
        if end.code == 2:
            hydra_files.unmake_sweep()
        raise
    finally:
        for name, value in found.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _main(from_process_start: bool) -> None:
    global _launcher_pid
    _launcher_pid = os.getpid()
    sweep_time.mark_start((machine.process_started() if from_process_start else None) or time.time())
    os.environ["HYDRA_FULL_ERROR"] = "1"  # Hydra re-raises; we print one line instead of its report
    _bound_hydra_lines()
    job = Job(ends_process=from_process_start)
    began = time.time()  # a record written since is this command's (a stop's line says so)
    refused = outside_code(sys.argv) or hydra_files.unstorable_cwd()
    if refused:
        _say(f"error: {refused}")
        sys.exit(2)
    try:  # Hydra's basic sweeper lists every job before the first: a billion would never start (a sweep
        # file's mode may be MULTIRUN without -m, so the command line is counted either way)
        from normbench.configuration.config import require_flat_sweep_params, require_one_option, require_sweep_size

        require_sweep_size([a for a in sys.argv[1:] if "=" in a and not a.startswith("-")], "the command line")
        require_flat_sweep_params(sys.argv[1:])
        require_one_option(sys.argv[1:])
        _claim_folders_readable()
    except ConfigError as err:
        _say(f"error: {err}")
        sys.exit(2)
    printing = any(a in ("-c", "--cfg", "-p", "--package", "-i", "--info") or a.startswith("--cfg=") for a in sys.argv[1:])
    # Hydra prints the config itself (--cfg job --resolve): its lines are masked as ours are
    sys.stdout = _MaskedOutput(sys.stdout, _secrets(sys.argv[1:])) if printing else _KeptOutput(sys.stdout)
    stops = _stops_as_interrupts()
    try:
        with warnings.catch_warnings():  # a search path Hydra cannot read: a raw warning, then a run without it (X24)
            warnings.filterwarnings("error", message=r"provider=hydra\.searchpath", category=UserWarning)
            # no semaphore (a file-size limit, no /dev/shm): the failure it meets next is said in main's one line (h19 R09)
            warnings.filterwarnings("ignore", message=r".*joblib will operate in serial mode", category=UserWarning)
            hydra.main(version_base="1.3", config_path=str(config_dir()), config_name="config")(job)()
    except hydra_files.Refused as refused:  # a job's own refusal first: it says why the sweep ran nothing
        _say(f"error: {job.refused or refused}", job.secrets)
        sys.exit(2)
    except UserWarning as unreadable:  # only the search path's is made an error above
        entry = str(unreadable).partition(", path=")[2].removesuffix(" is not available.") or str(unreadable)
        _say(f"error: hydra.searchpath entry {entry!r} cannot be read (name a folder as file://PATH or an installed "
             "package as pkg://NAME that holds configs)")
        sys.exit(2)
    except sweep_end.RunsFailed as failed:
        _say(f"{len(failed.run_dirs)} run(s) failed: {', '.join(failed.run_dirs)}{_lost_note()}")
        sys.exit(1)
    except sweep_end.NothingRan as refused:  # every job invalid: the sweep's settings are bad input
        _say(f"error: {refused}", job.secrets)
        sys.exit(2)
    except BrokenPipeError:  # `--hydra-help | head`: the reader has gone, which is no error of ours
        to_devnull(sys.stdout)
        sys.exit(0)
    except (HydraException, OmegaConfBaseException, ValueError) as err:
        message = " ".join(str(err).split("Config search path")[0].split()) or type(err).__name__
        cause = err.__cause__
        if cause is not None and str(cause).strip() and str(cause).split("\n")[0] not in message:
            message += f" ({str(cause).splitlines()[0]})"
        _say(f"error: {message}")
        sys.exit(2)
    except OSError as err:  # an output folder that cannot be created or written, a full disk
        _say(f"error: cannot write output: {err}")
        sys.exit(2)
    except RecursionError:  # composition that never ends: a sweep file whose defaults list includes itself
        _say("error: the configuration does not compose: it refers to itself without end (a sweep file whose "
             "defaults list names itself, or a chain of them that comes back round)")
        sys.exit(2)
    except KeyboardInterrupt as stop:  # Ctrl-C, or SIGTERM / SIGHUP turned into one (training/run.py)
        children.ignore_stops()
        children.quiet_half_imported_torch()
        signum = getattr(stop, "signum", None)
        # a study's or tune's round: their line is the one (S19); the end-of-sweep report says its own (V14)
        if not children.runner_says_stops() and not getattr(stop, "said", False):
            written = written_since(began, [*job.run_dirs, hydra_files.SWEEP_DIR])
            print(stop_line(signum, written), file=sys.stderr)
        sys.exit(128 + (signum or signal.SIGINT))  # as every subcommand's stop: 130 Ctrl-C, 143 SIGTERM, 129 SIGHUP
    finally:
        _unmark_stopping()
        if from_process_start:  # the command is over, its outcome decided: nothing is left for a stop to stop
            children.ignore_stops()
        else:  # a caller in this process (a test, a notebook) keeps its own handlers
            for signum, before in stops.items():
                signal.signal(signum, before)
        if isinstance(sys.stdout, _KeptOutput):
            sys.stdout.flush()
            sys.stdout, printed = sys.stdout._stream, sys.stdout
            if isinstance(printed.error, BrokenPipeError):  # `--cfg job | head`: the reader has what it wanted
                to_devnull(sys.stdout)
            elif printed.error is not None:  # `--cfg job > /dev/full`: one line from the caller (exit_on_full_stdout)
                raise printed.error
    for message in (job.refused, job.unwritable):
        if message:
            if message != job.refused or not sweep_end.REFUSALS_SAID:  # said before the end screen, job by job
                _say(f"error: {message}", job.secrets)
            sys.exit(2)
    note = _lost_note()
    if "not run" in note:  # a worker killed before its job's record, twice: no run failed, yet the sweep is not whole
        _say(f"the sweep is incomplete{note}")
        sys.exit(1)
    if job.single is not None and job.single["status"] in EXIT_STATUS:
        _say(f"{job.single['status']}: {job.single['reason']}", job.secrets)
        sys.exit(EXIT_STATUS[job.single["status"]])
