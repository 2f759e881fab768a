"""At the end of a multirun: one screen of results (in run-number order), the arms' paired timing
when sweep_timing=paired, the report, which runs failed, when no arm can be ranked, why and
the command that ranks them, and last the arms' means and ranks with the report's answer
(normbench/studies/sweep_answer.py)."""

from __future__ import annotations

import logging
import os
import shlex
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from normbench.configuration.contract import identity
from normbench.configuration.hydra_files import Refused
from normbench.records import sweep_time
from normbench.records.metrics import (
    PRIMARY_SCORE,
    TIMING_NOISY,  # step_ms p90/p10 above this: the load changed while the run was timed
    other_score,
    record_score,
)
from normbench.records.reading import find_records
from normbench.records.record import RUNNING, SUMMARY, running_now
from normbench.studies import children, lost_workers
from normbench.studies.workers import joblib_count

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger("normbench")


class RunsFailed(BaseException):
    """The sweep's failed runs (their folders), raised at the very end of the multirun for
    normbench.studies.app.main's exit status. A BaseException because Hydra turns any Exception a callback
    raises into a warning; this one must reach main."""

    def __init__(self, run_dirs: list[str]):
        super().__init__(f"{len(run_dirs)} run(s) failed")
        self.run_dirs = run_dirs


class NothingRan(BaseException):
    """Every run of the sweep was refused as ``invalid``: its settings are bad input, as a single run's
    (exit 2 from normbench.studies.app.main, the message its one line), and more seeds would not help (M02).
    A BaseException for RunsFailed's reason: Hydra turns a callback's Exception into a warning."""


def _run_order(path: Path) -> tuple:
    """Hydra's job numbers in numeric order (0, 1, 2, ..., 10), other folder names after them."""
    name = path.parent.name
    return (0, int(name), "") if name.isdigit() else (1, 0, name)


def _plain(value):
    """A table cell: a number or a short text (a record's strings are bounded, its types not trusted)."""
    if value is None or isinstance(value, (int, float)):
        return value
    return str(value)[:60]




def _scores(summary: dict) -> tuple[str, str]:
    """(primary, secondary) score keys of a record: its optimized_metric (analysis/rules.py), final_val by default."""
    return record_score(summary), other_score(record_score(summary))


def sweep_table(summaries: dict[Path, dict]) -> pd.DataFrame:
    """One row per run; the primary score first, the other validation score as the labelled secondary."""
    import pandas as pd  # here, at the sweep's end: a run's process (a worker's, a single run's) needs none
    rows = []
    keys = {_scores(s) for s in summaries.values()}
    primary, secondary = keys.pop() if len(keys) == 1 else (PRIMARY_SCORE, other_score(PRIMARY_SCORE))
    second = f"{secondary} (secondary)"
    for path, s in sorted(summaries.items(), key=lambda item: _run_order(item[0])):
        metrics, speed = s.get("metrics") or {}, s.get("throughput") or {}
        reached = _plain(metrics.get("steps_to_target"))
        p10, p90 = speed.get("step_ms_p10"), speed.get("step_ms_p90")
        noisy = isinstance(p10, (int, float)) and isinstance(p90, (int, float)) and p10 > 0 and p90 / p10 > TIMING_NOISY
        ms = speed.get("step_ms_median")
        rows.append({"run": path.parent.name, **{str(k): _plain(v) for k, v in _axes(s).items()},
                     "seed": _plain(s.get("seed")), "status": s["status"], primary: _plain(metrics.get(primary)),
                     second: _plain(metrics.get(secondary)),
                     "to_target": "—" if reached is None else reached,
                     "ms/step": "—" if not isinstance(ms, (int, float)) else f"{ms:.4g}" + (" noisy" if noisy else "")})
    table = pd.DataFrame(rows)
    varying = [c for c in table.columns if c not in ("run", "status", primary, second, "to_target", "ms/step")
               and table[c].astype(str).nunique() > 1]
    return table[["run", *varying, "status", primary, second, "to_target", "ms/step"]]


def _axes(summary: dict) -> dict:
    """A record's settings as the identity reads them today, recomputed from its config (contract.identity), as the
    report reads them: a record of an earlier version may store other axes for the same run (an in-cell RMSNorm
    LSTM's model.cell_kernel, absent before 2026-12-06). The stored axes where it has no config."""
    config = summary.get("config")
    try:
        return identity(config).settings if isinstance(config, dict) else (summary.get("axes") or {})
    except (TypeError, KeyError, AttributeError, ValueError):  # a config the identity cannot read: as stored
        return summary.get("axes") or {}


RANK_SEEDS = 2  # finished seeds an arm needs before it is ranked (analysis/ranking.py)
RANK_WITH = "seed=0,1,2"  # what the end line suggests: enough seeds to rank, the pilot's three
MAX_OVERRIDE = 200  # characters of one override the suggested command shows


def refused_everywhere(summaries: dict[Path, dict]) -> str | None:
    """``no run ran: every setting was refused (2 invalid, 1 skipped)`` when no run of the sweep started
    training (each record invalid or skipped); None when one did."""
    statuses = [s.get("status") for s in summaries.values()]
    if not statuses or any(status not in ("invalid", "skipped") for status in statuses):
        return None
    counts = ", ".join(f"{statuses.count(status)} {status}" for status in ("invalid", "skipped") if status in statuses)
    return f"no run ran: every setting was refused ({counts})"


def unranked_line(config: DictConfig, summaries: dict[Path, dict], unrun: list[str] = ()) -> str | None:
    """The sweep's last line when no arm can be ranked: why (too few seeds per arm) and the command
    that ranks the same arms; when no run ran at all (every setting refused), that, and no command: seeds
    would not help. None when some arm has RANK_SEEDS finished seeds."""
    refused = refused_everywhere(summaries)
    if refused:
        return f"normbench sweep: no arm is ranked: {refused}; each job's line above says why"
    seeds: dict[tuple, set] = {}
    for s in summaries.values():
        if s.get("status") in ("ok", "diverged"):
            arm = tuple(sorted((str(k), str(v)) for k, v in _axes(s).items() if k != "seed"))
            seeds.setdefault(arm, set()).add(s.get("seed"))
    if any(len(v) >= RANK_SEEDS for v in seeds.values()):
        return None
    try:  # as typed: ${oc.env:...} stays that text (iterating Hydra's list would resolve it)
        typed = OmegaConf.to_container(config.hydra.overrides.get("task") or [], resolve=False)
        overrides = [str(o) for o in typed if not str(o).startswith(("seed=", "hydra.sweep.dir=", "hydra.run.dir="))]
    except Exception:  # a config without Hydra's overrides (a test's): the command without them
        overrides = []
    # a huge value is named, not printed whole: the line stays readable
    overrides = [o if len(o) <= MAX_OVERRIDE else f"{o[:MAX_OVERRIDE]}…" for o in overrides]
    command = shlex.join(["python", "-m", "normbench", "-m", *overrides, RANK_WITH])
    why = (f"every arm has fewer than {RANK_SEEDS} finished seeds" if seeds else "no run finished")
    if unrun:  # a job refused as bad input (lr=nan): more seeds of the same command would be refused too (h15 B17)
        return (f"normbench sweep: no arm is ranked: {why}, and a rank needs {RANK_SEEDS}; job(s) {', '.join(unrun)} "
                f"ran nothing (the line that says why is above): correct the settings before running more seeds")
    return f"normbench sweep: no arm is ranked: {why}, and a rank needs {RANK_SEEDS}. To rank these arms: {command}"


def unrun_jobs(sweep_dir: Path) -> list[str]:
    """The sweep's job folders (Hydra's numbered ones) that hold no record: a job refused before its record
    (bad input), or one whose worker was lost before it started."""
    return sorted((p.name for p in _entries(sweep_dir) if p.name.isdigit() and p.is_dir()
                   and not _may_hold_record(p)), key=int)


def _may_hold_record(job_dir: Path) -> bool:
    """Whether a job folder holds a summary.json, or cannot be looked in (find_records set it aside and
    the report named it: not a job that never ran, and no exception out of Hydra's callback, hostile C67)."""
    try:
        os.lstat(job_dir / SUMMARY)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return True


def time_arms(config: DictConfig, sweep_dir: Path) -> float:
    """sweep_timing=paired: the sweep's arms timed side by side (normbench/bench/arms.py) into
    SWEEP_DIR/paired-timing.json, before the report, which reads it. Returns its seconds, which the
    efficiency line reports apart (a pass after the sweep, not the sweep's own time)."""
    mode = str(config.get("sweep_timing", "none") or "none")
    if mode != "paired":
        return 0.0
    from normbench.bench import arms

    started = time.time()
    command = f"python -m normbench.bench arms {shlex.quote(str(sweep_dir))}"
    try:
        result = arms.run(sweep_dir, command=command + "  # sweep_timing=paired")
    except (ValueError, OSError) as err:  # no arm to time, a config the timer refuses: the sweep's results stand
        print(f"normbench: no paired timing: {' '.join(str(err).split())[:300]}", file=sys.stderr)
        return time.time() - started
    except Exception as err:  # a courtesy like the table: the report and the exit status still follow
        print(f"normbench: no paired timing: {type(err).__name__}: {str(err)[:200]}", file=sys.stderr)
        return time.time() - started
    spent = time.time() - started
    print(f"normbench sweep: paired timing of {len(result['arms'])} arm(s) in {spent:.1f} s "
          f"(not part of the sweep's efficiency) -> {sweep_dir / arms.FILE}", file=sys.stdout)
    return spent


def efficiency(config: DictConfig, sweep_dir: Path, end_s: float, apart: dict | None = None) -> dict | None:
    """The sweep's efficiency line on stdout and its efficiency.json (normbench/records/sweep_time.py): wall
    time from this process's start to now, ``end_s`` of it this callback's table and report;
    ``apart``: seconds of passes after the sweep (the paired timing), taken off the wall and named."""
    try:
        launcher = config.hydra.get("launcher") or {}
        n_jobs = launcher.get("n_jobs")
        if n_jobs is not None:  # joblib: its workers, as studies/workers.py bounded them when the sweep started
            workers = joblib_count(n_jobs or 1)
        else:  # the basic launcher (one job at a time), submitit: the jobs' own spans tell
            workers = None
        started = sweep_time.start_mark()
        jobs = sweep_time.read_jobs(sweep_dir, since=started)
        if not jobs:
            return None
        apart = {k: v for k, v in (apart or {}).items() if v > 0}
        result = sweep_time.account(jobs, started or min(j["called"] for j in jobs),
                                    time.time() - sum(apart.values()), workers, end_s, apart)
        path = sweep_time.record(sweep_dir, result)
    except Exception as err:  # a courtesy like the table: the exit status still follows
        print(f"normbench: no efficiency line: {type(err).__name__}: {str(err)[:200]}", file=sys.stderr)
        return None
    print(f"normbench sweep: {sweep_time.line(result)} -> {path}", file=sys.stdout)
    return result


def _print_answer(sweep_dir: Path, advise: bool = True) -> None:
    """The sweep's answer block (normbench/studies/sweep_answer.py); a courtesy like the table. Without
    ``advise`` (a job ran nothing: bad input), the commands it suggests are left out."""
    try:
        from normbench.studies.sweep_answer import answer_lines

        lines = answer_lines(sweep_dir)
        lines = lines if advise else [line for line in lines if "python -m normbench" not in line]
    except Exception as err:  # the report and the exit status stand without it
        print(f"normbench: no answer lines: {type(err).__name__}: {str(err)[:200]}", file=sys.stderr)
        return
    if lines:
        print("\n" + "\n".join(lines), file=sys.stdout, flush=True)


def _entries(folder: Path) -> list[Path]:
    try:
        return list(folder.iterdir())
    except OSError:
        return []


def failed_runs(summaries: dict[Path, dict]) -> list[str]:
    """The sweep's failed runs' folders, in run order, with each record still saying running once every job has
    ended and no live process holds its folder: one its job could not finish (a full disk, hostile h19 J3), named
    as such."""
    return [str(p.parent) + (" (its record still says running: not finished)" if s["status"] == RUNNING else "")
            for p, s in sorted(summaries.items(), key=lambda item: _run_order(item[0]))
            if s["status"] == "failed" or (s["status"] == RUNNING and not running_now(p.parent))]


# The jobs refused before their record (a config that cannot resolve, lr=nan), job number -> the line that says
# why (app.Job.take): nothing can be recorded for them (no resolved config, no identity), so the end screen's
# "ran nothing (the line that says why is above)" needs the line above it (hostile h26 w29, w31).
REFUSED_JOBS: dict[int, str] = {}
REFUSALS_SAID: list[int] = []  # the jobs whose line the end screen put above it: main does not say it again


def say_refused_jobs() -> None:
    """One line per job refused before its record, naming the job, before the end screen."""
    for num, why in sorted(REFUSED_JOBS.items()):
        print(f"normbench: job #{num} ran nothing: {why}", file=sys.stderr, flush=True)
        REFUSALS_SAID.append(num)


class SweepSummary(Callback):
    """The table, the report, then the failed runs. Nothing a record holds can stop it: a record
    the reader sets aside is named in one line, and the exit status comes from the records read
    (a failed run exits 1 even when the table or the report could not be made)."""

    def on_multirun_end(self, config: DictConfig, **kwargs) -> None:
        end_started = time.time()
        sweep_dir = Path(config.hydra.sweep.dir)
        records = find_records([sweep_dir])
        summaries = {r.path: r.summary for r in records.runs}
        if records.set_aside and not config.get("report", True):  # else the report's warning names them
            aside = "; ".join(f"{r.path} ({r.why})" for r in records.set_aside[:10])
            more = f" and {len(records.set_aside) - 10} more" if len(records.set_aside) > 10 else ""
            print(f"normbench: set aside {len(records.set_aside)} record(s): {aside}{more}", file=sys.stderr)
        if not summaries:
            if not any(p.is_dir() and not p.name.startswith(".") for p in _entries(sweep_dir)) \
                    and not lost_workers.LOST.get("unrun"):  # jobs launched and lost (a timeout): main says so
                # Hydra makes each job's folder before calling it: none, so no job was launched
                raise Refused(f"the sweep launched no job (a sweep over an empty list, or a glob that matches "
                              f"nothing): nothing was run in {sweep_dir}")
            return
        say_refused_jobs()
        failed = failed_runs(summaries)
        try:
            import pandas as pd

            with pd.option_context("display.width", 160, "display.max_rows", 60,
                                   "display.float_format", "{:.4g}".format):
                print(f"\nnormbench sweep: {len(summaries)} runs in {sweep_dir}\n"
                      f"{sweep_table(summaries).to_string(index=False)}", file=sys.stdout)
        except Exception as err:  # the table is a courtesy; the report and the exit status still follow
            print(f"normbench: no sweep table: {type(err).__name__}: {str(err)[:200]}", file=sys.stderr)
        timed = time_arms(config, sweep_dir)
        if config.get("report", True):
            from normbench.report import ReportError, build_report

            try:
                with children.handling():  # SIGTERM mid-report: the staging folder is removed on the way out
                    print(f"report: {build_report([sweep_dir], sweep_dir)}", file=sys.stdout)
            except children.Stopped as stopped:  # SIGTERM or SIGHUP (children.handling), named; main exits 128 + it
                print(f"normbench: stopped by {stopped} during the report; no report written", file=sys.stderr)
                stop = KeyboardInterrupt()
                stop.signum = stopped.signum
                stop.said = True  # this line is the stop's one line: main adds none (hostile V14)
                raise stop from None
            except ReportError as err:
                print(f"normbench: no report: {err}", file=sys.stderr)
            except Exception as err:  # a report bug must not turn a sweep's failed runs into exit 0
                print(f"normbench: no report: {type(err).__name__}: {str(err)[:200]}", file=sys.stderr)
        efficiency(config, sweep_dir, time.time() - end_started - timed, {"paired timing": timed})
        if all(s.get("status") == "invalid" for s in summaries.values()):  # bad input: main's one line, exit 2
            raise NothingRan(f"{refused_everywhere(summaries)}: {next(iter(summaries.values())).get('reason')}")
        unrun = unrun_jobs(sweep_dir)
        last = unranked_line(config, summaries, unrun)
        if last:
            print(last, file=sys.stdout)
        if config.get("report", True):  # last: the arms' means and ranks, and the answer the report gives
            _print_answer(sweep_dir, advise=not unrun)
        if failed:  # last: the report is written first, and this callback is the last Hydra notifies
            raise RunsFailed(failed)
