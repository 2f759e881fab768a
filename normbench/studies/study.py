"""Buy the answer: run a study's sweep, then add seeds in rounds until its questions are decided.

    python -m normbench study [OVERRIDES ...] [--budget 30m] [--pilot 3] [--step 2] [--max-seeds 11]
                              [--alpha 0.05] [--jobs 2] [--out DIR]

0. **Learning rates** (normbench/studies/lr_protocol.py): a study whose sweep gives ``lr`` a grid is
   tuned per arm: each arm runs the grid on selection seeds (DIR/selection), its lr is chosen there, and
   every round below runs each arm at its own lr (``role=evaluation``); the looks read those runs only.
1. **Pilot**: ``python -m normbench -m OVERRIDES seed=0..pilot-1`` into DIR/round-1 (the sweep
   file's own seed list is replaced by the runner's).
2. **Look**: the study's questions are its claims (analysis/claims, each part) and its ranking
   (each arm against the first-ranked arm of its comparison). At look k the runner tests them at
   the level α_k that the sequential plan spends there (analysis/sequential.py: Lan–DeMets spending of
   O'Brien–Fleming type over the planned looks pilot, pilot+step, ..., max-seeds; at most α false
   verdicts per direction over all looks). A claim is decided when it is supported, contradicted,
   not applicable or not testable here; an arm when it is shown worse or better than the first, or
   equivalent to it within the claims' margin; a comparison whose arms are at chance, at ceiling or
   still improving (analysis/regime.py) is not testable here, and no round is run for it.
3. **Round**: while something is undecided, every arm gets `step` more seeds (balanced rounds keep
   the arms paired by seed and every pooling rule valid), unless the next round would overrun the
   budget or the maximum seed count is reached.
4. **Report** into DIR over every round, with the claims evaluated at the last look's level, and
   DIR/sequential.json: the plan, each look's level and what was undecided at each.

Each round is one launch of the sweep's launcher: the local pool of --jobs workers by default, or the
launcher named as for any sweep (``hydra/launcher=slurm|submitit_local|joblib|local``; LAUNCHERS below).

Resume by identity makes a repeated command free: runs already finished in DIR are not run again.
The study's runs carry its id (normbench/configuration/study_info.py: the question, not the seeds or the folder),
and the looks count those only: a second study run into the same DIR neither spends its budget on
the first one's records nor overwrites its sequential.json (it writes sequential-<id>.json).
Bad arguments (numbers out of their bounds, an --out that cannot take the study, a config no job
could run once resolved, check_config): one line, exit 2, before any round.
SIGTERM or Ctrl-C: passed to the round running, one line, exit 128 + the signal's number; a runner
killed outright takes its round along (normbench/studies/children.py: the parent-death signal, Linux).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import shlex
import signal
import stat
import sys
import time
from datetime import datetime
from pathlib import Path

import numpy as np

from normbench.checks import claims_path, out_path
from normbench.configuration import hydra_files, study_info
from normbench.configuration.contract import HARNESS
from normbench.records import study_plan
from normbench.records.record import MAX_STRING, Unreadable, read_json_file, read_run_file
from normbench.studies import children, progress

_DURATION = re.compile(r"(\d{1,12}(?:\.\d{1,12})?)([smh]?)", re.ASCII)
# Bounds checked before anything runs: beyond them a study is a typo, not a plan (a thousand seeds
# per arm is past any budget here, and the plan's looks are built up front).
MAX_SEEDS = 1_000
MAX_JOBS = 256
MAX_BUDGET_S = 30 * 24 * 3600


class StudyArgumentError(ValueError):
    """A bad command-line argument; the message is one line."""


class ChildRefused(Exception):
    """A round's (or the selection's) ``normbench -m`` refused its input, exit status 2, having said why
    in its own one line: the study ends with that status and adds no second line (N017, N065, P105)."""


class _Parser(argparse.ArgumentParser):
    """argparse's own errors (a word where a number goes) as one line, like the runner's."""

    def error(self, message: str):
        raise StudyArgumentError(message)


def budget_seconds(text: str) -> float:
    """ "30m", "90s", "1.5h" or a plain number of seconds, up to 30 days."""
    match = _DURATION.fullmatch(text.strip())
    if not match or float(match.group(1)) <= 0:
        raise StudyArgumentError(f"--budget must be a positive duration such as 30m, 90s or 1h, got {text[:80]!r}")
    seconds = float(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[match.group(2)]
    if seconds > MAX_BUDGET_S:
        raise StudyArgumentError(f"--budget must be at most 30 days, got {text[:80]!r}")
    return seconds


def _parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    parser = _Parser(prog="python -m normbench study", description=__doc__.split("\n\n")[0],
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget", default="30m", help="wall-clock budget for all rounds (default 30m)")
    parser.add_argument("--pilot", type=int, default=3, help="seeds per arm in the first round (default 3)")
    parser.add_argument("--step", type=int, default=2, help="seeds per arm added each round (default 2)")
    parser.add_argument("--max-seeds", type=int, default=11, help="most seeds per arm (default 11)")
    parser.add_argument("--alpha", type=float, default=0.05, help="error per direction over all looks (default 0.05)")
    parser.add_argument("--jobs", type=int, default=2, help="parallel jobs, one torch thread each (default 2); with "
                        "hydra/launcher=NAME, that launcher's parallelism where it has one here")
    parser.add_argument("--selection-seeds", type=int, default=2, help="a tuned study's selection seeds per arm and "
                        "lr, 1 or 2 (default 2; 1 halves the selection stage: each lr is then one run, its choice the "
                        "best of them, untested)")
    parser.add_argument("--out", type=out_path, default=None, help="the study folder (default studies/DATE/TIME)")
    parser.add_argument("--claims", type=claims_path, action="append", default=[], metavar="DIR",
                        help="a folder of your own claims as YAML files (docs/claims.md), judged at every look")
    parser.add_argument("--no-report", dest="report", action="store_false",
                        help="end with the plan and the answer, without the study's own report (for a script that "
                        "reports on several studies at its end: `python -m normbench.report OUT` writes it later)")
    args, overrides = parser.parse_known_args(argv)
    unknown = [o for o in overrides if o.startswith("--")]
    if unknown:
        raise StudyArgumentError(f"unknown option {unknown[0]!r} (overrides are key=value)")
    if any(o.split("=", 1)[0].lstrip("+~") == "seed" for o in overrides):
        raise StudyArgumentError("the study runner chooses the seeds: leave seed=... out")
    if args.pilot < 2 or args.step < 1 or args.max_seeds < args.pilot:
        raise StudyArgumentError(f"need --pilot >= 2, --step >= 1 and --max-seeds >= --pilot, got "
                                 f"{args.pilot}, {args.step}, {args.max_seeds}")
    if args.max_seeds > MAX_SEEDS:
        raise StudyArgumentError(f"--max-seeds must be at most {MAX_SEEDS}, got {args.max_seeds}")
    if not 0 < args.alpha < 0.5:  # NaN fails this too
        raise StudyArgumentError(f"--alpha must be in (0, 0.5), got {args.alpha}")
    if args.selection_seeds not in (1, 2):
        raise StudyArgumentError(f"--selection-seeds must be 1 or 2, got {args.selection_seeds}")
    if not 1 <= args.jobs <= MAX_JOBS:
        raise StudyArgumentError(f"--jobs must be from 1 to {MAX_JOBS}, got {args.jobs}")
    args.budget_s = budget_seconds(args.budget)
    from normbench.analysis.claims.yaml_claims import ClaimFileError, use_folders

    try:  # checked before any round is paid for; the folders reach the rounds and the report in NORMBENCH_CLAIMS
        use_folders(args.claims)
    except ClaimFileError as error:
        raise StudyArgumentError(str(error)) from None
    if args.out is not None:
        _check_out(args.out)
    return args, overrides


def _check_out(out: Path) -> None:
    """--out must be a folder this process can write (or make), and its sequential.json (if any) a regular file:
    a folder or FIFO there would stop the study at its end, after every round was paid for. Nothing is made here:
    a study refused afterwards leaves no folder (hostile h25 a013, a025; _make_out makes it)."""
    text = str(out)[:200]
    problem = children.out_problem(out)
    if problem:
        raise StudyArgumentError(problem)
    if out.is_symlink():  # a planted link would carry the study elsewhere (report and rerun refuse it too)
        raise StudyArgumentError(f"--out {text} is a symbolic link; give the folder it points to if the study "
                                 f"belongs there")
    if os.path.lexists(out) and not out.is_dir():
        raise StudyArgumentError(f"--out {text} exists and is not a folder")
    try:  # the rounds' hydra.sweep.dir: refused here, before a folder is made, not by a child (hostile L06)
        children.hydra_quoted(out)
    except ValueError as error:
        raise StudyArgumentError(f"--out: {error}") from None
    missing = hydra_files.folders_to_make(out)
    there = missing[-1].parent if missing else out  # the folder it is made in, or itself
    if not there.is_dir():
        raise StudyArgumentError(f"--out {text} cannot be made: {str(there)[:200]} is not a folder")
    if not os.access(there, os.W_OK | os.X_OK):  # EROFS included: a read-only mount
        raise StudyArgumentError(f"--out {text} is not writable" if there == out else
                                 f"--out {text} cannot be made: {str(there)[:200]} is not writable")
    plan = out / study_plan.FILE
    try:
        mode = os.lstat(plan).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):  # a link included: a planted name is refused before any round is paid for
        raise StudyArgumentError(f"--out {text}: {study_plan.FILE} there is not a regular file; move it away")
    try:  # another study's plan (any schema of this project) is kept: this study writes its own beside it
        planned = read_json_file(plan, study_plan.MAX_BYTES)
    except Unreadable as why:
        planned, reason = None, str(why)
    else:
        reason = "no schema of normbench.sequential"
    if not (isinstance(planned, dict) and str(planned.get("schema", "")).startswith("normbench.sequential/")
            and isinstance(planned.get("study"), str)):
        raise StudyArgumentError(f"--out {text}: {study_plan.FILE} there is not a study's plan ({reason}); move it away")


def _make_out(out: Path) -> list[Path]:
    """Makes --out (checked by _check_out); the folders made, deepest first, for a refusal to take back."""
    made = hydra_files.folders_to_make(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise StudyArgumentError(f"--out {str(out)[:200]} cannot be made: {error.strerror or error}") from None
    return made


def check_sweep_named(overrides: list[str]) -> None:
    """The sweep file ``+sweep=NAME`` names must exist: without it the overrides give one arm, and the study's
    refusal said to name a sweep file although one was named (hostile h25 a014, as016). Said as the plain
    command says it, with where it looked. A sweep over sweep files (``+sweep=a,b``) is left to the rounds."""
    from normbench.configuration.config import SWEEPS_ENV, ConfigError, sweep_dirs

    name = next((o.split("=", 1)[1] for o in overrides if "=" in o and o.split("=", 1)[0].lstrip("+~") == "sweep"),
                None)
    if not name or not re.fullmatch(r"[\w./-]+", name):
        return
    try:
        folders = sweep_dirs()
    except ConfigError as error:  # a NORMBENCH_SWEEPS folder that is not there
        raise StudyArgumentError(str(error)) from None
    if study_info.sweep_file(name) is None:
        named = "" if not os.environ.get(SWEEPS_ENV, "").strip() else f"{SWEEPS_ENV}'s folders and "
        raise StudyArgumentError(f"Could not find sweep/{name[:100]}: no {name[:100]}.yaml in {named}the shipped "
                                 f"sweeps ({', '.join(str(f)[:200] for f in folders)})")


def _sweep_params(overrides: list[str]) -> tuple[str | None, dict[str, str] | None, Path | None]:
    """The sweep file an override names (+sweep=NAME), its hydra.sweeper.params as text, and its path.

    Read as data (yaml.safe_load of at most 1 MiB, through the hardened reader); only plain keys and
    scalar values are taken, so an alias bomb in the file is never expanded here.
    """
    import yaml

    name = next((o.split("=", 1)[1] for o in overrides if "=" in o and o.split("=", 1)[0].lstrip("+~") == "sweep"),
                None)
    path = study_info.sweep_file(name) if name else None
    if path is None:
        return name, None, None
    try:
        node = yaml.safe_load(read_run_file(path, 1 << 20).decode("utf-8"))
        params = node["hydra"]["sweeper"]["params"]
    except (Unreadable, UnicodeDecodeError, yaml.YAMLError, KeyError, TypeError, RecursionError):
        return name, None, path
    if not isinstance(params, dict):
        return name, None, path
    return name, {str(k): str(v) for k, v in params.items()
                  if isinstance(k, str) and isinstance(v, (str, int, float, bool))}, path


def study_of(overrides: list[str]) -> dict:
    """The study these rounds are: described as a multirun of the same overrides describes itself
    (study_info.describe), so its id is the one its records carry; every round is put in it."""
    name, params, path = _sweep_params(overrides)
    try:
        return study_info.describe(name, overrides, params, study_info.purpose_of(path))
    except Exception as error:  # Hydra's override grammar refused one: the user's input
        raise StudyArgumentError(f"an override cannot be parsed: {' '.join(str(error).split())[:300]}") from None


def arm_count(overrides: list[str], not_arms: tuple[str, ...] = ()) -> int | None:
    """The arms one comparison of these rounds holds: the product of the swept value lists (the sweep
    file's and the command line's comma lists), tasks and seeds left out (a comparison is one task;
    seeds are the rounds), and the keys ``not_arms`` (a tuned study's lr: each arm's is chosen). None when
    a swept value is not a plain comma list (range(), glob())."""
    _, params, _ = _sweep_params(overrides)
    swept = dict(params or {})
    swept.update(o.lstrip("+~").split("=", 1) for o in overrides if "=" in o and "," in o.split("=", 1)[1])
    count = 1
    for key, value in swept.items():
        if key in ("seed", "task", *not_arms) or key.startswith(("task.", "hydra")) or key.split(".")[0] in HARNESS:
            continue  # a harness key (tags, logger, paths) labels or places runs: it never makes another arm
        if "(" in value:
            return None
        count *= distinct_values(key, value)
    return count


def distinct_values(key: str, value: str) -> int:
    """How many different runs ``key=value`` sweeps: ``ln,ln`` is one, a list value ``[a,b]`` one, as Hydra
    parses it (hostile h15 B7: the comma-separated texts were counted), and each value as the config takes it
    (hostile h16 N8: ``"ln",'ln'`` is one text, ``64,064`` one number in model.hidden)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        parsed = OverridesParser.create().parse_override(f"{key}={value}")
        if not parsed.is_sweep_override():
            return 1
        values = list(itertools.islice(parsed.sweep_iterator(), 10_000))
    except Exception:  # noqa: BLE001 - a grammar error: the round reports it; count the texts meanwhile
        return len({v.strip() for v in value.split(",") if v.strip()})
    from omegaconf import OmegaConf

    from normbench.configuration.schema import Config

    typed = OmegaConf.structured(Config)  # the schema's types, which each value is merged into in turn
    return len({repr(_as_config_takes(typed, key, v)) for v in values})


def _as_config_takes(typed, key: str, value):
    """One parsed sweep value as the run's config holds it: a quoted string's text, and a text in a typed
    setting converted as OmegaConf merges it into ``typed`` (Hydra parses 064 as the text '064'; model.hidden
    holds 64). A group's option (norm=ln) or a key the schema does not type stays as parsed."""
    from hydra.core.override_parser.types import QuotedString
    from omegaconf import OmegaConf

    value = value.text if isinstance(value, QuotedString) else value
    try:
        OmegaConf.update(typed, key, value, merge=True)
        return OmegaConf.select(typed, key)
    except Exception:  # noqa: BLE001 - no typed setting takes it (a group's option): the parsed value is the value
        return value


def check_config(overrides: list[str]) -> None:
    """Before any round: StudyArgumentError when no job of the rounds could run its config, composed from
    the overrides and the sweep file's params and checked as a run does (normbench/studies/composed.py). A
    value no job could run, such as ``lr=${oc.env:NAME}`` whose variable holds a word, is then refused in one
    line with the value masked, rather than each job of the first round failing on it; and so an arm no run of
    could build (``model=rnn placement=gate,pre``: a round, then nothing compared; hostile h18 H3). Hydra's own
    refusals (an unknown option) are left to the round, which reports them as exit 2."""
    from normbench.configuration.config import require_one_option
    from normbench.studies.composed import check_every_job, check_jobs

    try:
        require_one_option(overrides, sweep_flag="")  # norm=[ln,rms]: one merged run per round (hostile h16 N11)
        params = _sweep_params(overrides)[1]
        check_jobs(overrides, params)
        check_every_job(overrides, params)
    except ValueError as error:  # ConfigError
        raise StudyArgumentError(str(error)) from None


Stopped = children.Stopped  # SIGTERM or SIGINT reached the study runner (normbench/studies/children.py)


# A launcher the user names (hydra/launcher=NAME, as for any sweep): the key --jobs sets on it, and whether
# its jobs share this machine's cores (then one torch thread each, as the local pool's). A cluster's
# launcher keeps its own parallelism and threads (its config: cpus_per_task, array_parallelism).
LAUNCHERS = {"local": ("hydra.launcher.n_jobs", True), "joblib": ("hydra.launcher.n_jobs", True),
             "basic": (None, True), "submitit_local": (None, True),  # submitit's local queue runs every job at once
             "slurm": (None, False), "submitit_slurm": (None, False)}


def launch_overrides(overrides: list[str], jobs: int) -> list[str]:
    """What the runner adds to each round's multirun: with no launcher named, the local pool of
    ``jobs`` workers (one job at a time when 1); with one named, that launcher as the user set it
    (each round one launch of it: one SLURM array, one set of submitit jobs), --jobs as its parallelism
    where it has one here. threads=1 where the jobs share these cores, unless the overrides set it."""
    named = [o.split("=", 1)[1] for o in overrides if o.lstrip("+~").split("=", 1)[0] == "hydra/launcher" and "=" in o]
    threads = [] if any(o.lstrip("+~").split("=", 1)[0] == "threads" for o in overrides) else ["threads=1"]
    if not named:
        return ["hydra/launcher=local", f"hydra.launcher.n_jobs={jobs}", *threads] if jobs > 1 else threads
    key, shared = LAUNCHERS.get(named[-1], (None, False))
    typed = {o.lstrip("+~").split("=", 1)[0] for o in overrides}
    return [*([f"{key}={jobs}"] if key and key not in typed else []), *(threads if shared else [])]


def _normbench(overrides: list[str], seeds: range, folder: Path, jobs: int, study: dict | None = None,
               timeout_s: float | None = None) -> int:
    found = hydra_files.what_is(folder, folder_ok=True)  # a link there would take the round's records elsewhere (T024)
    if found is not None:
        raise StudyArgumentError(f"{str(folder)[-200:]} is {found}; the study writes only into folders it makes: "
                                 f"move it away or choose another --out")
    launcher = launch_overrides(overrides, jobs)
    args = children.into_folder(["-m", *overrides, f"seed={','.join(str(s) for s in seeds)}", *launcher,
                                 "resume=true", "report=false", "progress=false"], str(folder))
    print("+ python -m normbench " + " ".join(args), flush=True)
    env = {**os.environ, **({study_info.STUDY_ENV_VAR: json.dumps(study)} if study else {})}
    # the signal passed on, the round stopped before the runner ends; a killed runner takes it along
    try:
        return children.run([sys.executable, "-m", "normbench", *args], env=env, timeout_s=timeout_s)
    except (children.Stopped, children.OutOfTime, KeyboardInterrupt) as stop:  # the round's processes have ended
        from normbench.studies.lost_workers import mark_stopped_round

        signum = getattr(stop, "signum", None)
        mark_stopped_round(folder, "at the budget's end" if isinstance(stop, children.OutOfTime) else
                           f"by {signal.Signals(signum).name}" if signum else "by Ctrl-C")
        raise


def _ended(code: int) -> str:
    """How a round's process ended, in words: a signal that stopped it named (exit 129 is SIGHUP's; -9 a kill by
    SIGKILL), else its exit status. "did not run (exit 129)" was said of a round that ran 6 s (hostile h16 N19, G14)."""
    number = -code if code < 0 else code - 128 if code > 128 else 0
    try:
        return f"was stopped by {signal.Signals(number).name} (exit {code})"
    except ValueError:  # no signal's number: an exit status of its own
        return f"ended with exit {code}"


def undecided(runs, level: float) -> list[str]:
    """What is still undecided at this look's level: claim ids and "arm vs arm" comparisons. A
    comparison that is not testable here (analysis/decisions.py, the report's own gate) is not
    listed: more seeds would decide nothing there. Read from the result the report renders (analysis/result.py)."""
    from normbench.analysis.result import of_runs

    result = of_runs(runs, alpha=level)
    open_items = [f"claim {c.claim.id}" for c in result.claims if c.verdict.status == "inconclusive"]
    return open_items + [f"{d.task}: {pair}" for d in result.decisions for pair in d.open]


GATED_STOP = "decided or not testable"  # sequential.json's stop reason when a gate, not the data, ended it
NOTHING_COMPARED = "nothing compared"   # and when there was nothing to decide: one arm, no claim that applies


def compared_anything(runs, level: float) -> bool:
    """Whether ``runs`` hold a question at all: a comparison of two arms or more, or a claim that
    applies. A study of one arm leaves nothing undecided because it asked nothing."""
    from normbench.analysis.claims import evaluate_claims
    from normbench.analysis.ranking import comparisons
    from normbench.records.record import RESULT_STATUSES

    done = runs[runs["status"].isin(RESULT_STATUSES)]  # as decisions() counts them
    return (any(mine["group"].nunique() >= 2 for _, _, mine in comparisons(done))
            or any(verdict.status != "not applicable" for _, verdict in evaluate_claims(runs, alpha=level)))


def gated_comparisons(runs, level: float) -> list:
    """The comparisons the report calls not testable here (analysis/decisions.py, through analysis/result.py)."""
    from normbench.analysis.decisions import GATED
    from normbench.analysis.result import of_runs

    return [d for d in of_runs(runs, alpha=level).decisions if d.status == GATED]


def own_records(folder: Path, study: str) -> list:
    """The records under ``folder`` of study ``study``: what its looks count (another study's records
    in the same folder are not its question's)."""
    from normbench.records.reading import find_records

    return [r for r in find_records([folder]).runs
            if isinstance(r.summary.get("study"), dict) and r.summary["study"].get("id") == study]


def _runs(folder: Path, study: str):
    from normbench.analysis import aggregate
    from normbench.analysis.lr_protocol import compared_runs

    runs, _ = aggregate.distinct_runs(aggregate.runs_frame(own_records(folder, study)))
    runs = compared_runs(runs)  # a study tuned per arm: its evaluation runs answer, its selection runs chose
    return aggregate.label_groups(runs, aggregate.varying_axes(runs))


def lr_plan(overrides: list[str]):
    """The study's lr protocol (normbench/studies/lr_protocol.py); a declaration the sweep contradicts is
    the user's input, refused before any run."""
    from normbench.studies.lr_protocol import ProtocolError, resolve

    _, params, path = _sweep_params(overrides)
    try:
        return resolve(overrides, params, path)
    except ProtocolError as error:
        raise StudyArgumentError(str(error)) from None


def _select_lrs(overrides: list[str], out: Path, args: argparse.Namespace, study: dict, started: float) -> list[str] | None:
    """A tuned study's selection stage (normbench/studies/lr_protocol.py) inside the budget: the rounds'
    overrides (each arm at its chosen lr), or None when it could not choose (its line printed)."""
    from normbench.studies import lr_protocol

    left = args.budget_s - (time.monotonic() - started)
    try:
        seeds = lr_protocol.SELECTION_SEEDS[:args.selection_seeds]
        code = _normbench(overrides + ["role=selection"], seeds, out / lr_protocol.SELECTION,
                          args.jobs, study, timeout_s=max(left, 0.0))
    except children.OutOfTime:
        print(f"normbench.study: the budget ({args.budget_s:g} s) ran out while selecting the lrs; its jobs were "
              f"stopped (interrupted: a larger --budget resumes them)", file=sys.stderr, flush=True)
        return None
    if code == 2:
        raise ChildRefused()
    if code not in (0, 1):
        print(f"normbench.study: the lr selection {_ended(code)}", file=sys.stderr)
        return None
    try:
        arms = lr_protocol.choose(out)
    except OSError as error:  # a link or a file planted where the arms' folder goes
        print(f"normbench.study: cannot write the arm files: {' '.join(str(error).split())[:300]}", file=sys.stderr)
        return None
    if not arms:
        print("normbench.study: no arm has a selected lr (each needs a finished selection run at some lr)",
              file=sys.stderr)
        return None
    return lr_protocol.evaluation_overrides(overrides, out, arms)


def run_study(overrides: list[str], args: argparse.Namespace) -> int:
    from normbench.analysis.sequential import Plan

    out = args.out or Path("studies") / datetime.now().strftime("%Y-%m-%d/%H-%M-%S")
    _check_out(out)
    plan = Plan.rounds(args.pilot, args.step, args.max_seeds, args.alpha)
    asked = [o for o in overrides if not o.lstrip("+~").split("=", 1)[0].startswith(("hydra/", "hydra."))]
    check_sweep_named(asked)
    lr = lr_plan(asked)
    study = lr.stamp(study_of(asked))  # where its jobs run is not the question: a launcher changes no study id
    check_config(asked)
    arms = arm_count(asked, ("lr",) if lr.kind == "tuned" else ())
    if arms == 1:  # its rounds would run, then answer "nothing compared" (hostile h14 P37)
        raise StudyArgumentError("a study needs two arms or more to compare, and these overrides give one: sweep a "
                                 "setting (e.g. norm=ln,rms) or name a sweep file (+sweep=NAME)")
    made = _make_out(out)  # checked and refused above with nothing made; a refusal from here on takes it back
    try:
        return _run_rounds(out, overrides, args, plan, lr, study, arms)
    except (StudyArgumentError, ChildRefused):  # the first round's refusal included: its child took back its folder
        hydra_files.remove_made(made)
        raise


def _run_rounds(out: Path, overrides: list[str], args: argparse.Namespace, plan, lr, study: dict,
                arms: int | None) -> int:
    children.say_sweep_dir_ignored("normbench.study", overrides, out)
    if arms is not None:  # before any run: what the planned seeds can show about an arm with a failed run
        from normbench.analysis.ranking import plan_line

        print(plan_line(plan.looks[-1], arms, args.alpha), flush=True)
    log = {"study_name": study["name"], "overrides": overrides, "alpha": args.alpha,
           "looks": list(plan.looks), "levels": plan.levels(), "budget_s": args.budget_s,
           "spending": "Lan-DeMets O'Brien-Fleming type, Bonferroni over looks", "rounds": []}
    started, done, status = time.monotonic(), 0, 0
    rounds = overrides
    if lr.kind == "tuned":  # each arm at its own lr: chosen on selection seeds, the rounds at the chosen lrs
        from normbench.studies import lr_protocol, tune

        found = tune.planted_in(out, lr_protocol.LAYOUT)  # before any run, not once the selection has run (N067)
        if found is not None:
            raise StudyArgumentError(f"{found}; the study writes only into folders it makes: move it away or "
                                     f"choose another --out")
        log["lr_grid"] = list(lr.grid)
        rounds = _select_lrs(overrides, out, args, study, started)
        if rounds is None:
            return 1
    for look, (seeds, level) in enumerate(zip(plan.looks, plan.levels()), start=1):
        round_started = time.monotonic()
        left = args.budget_s - (round_started - started)
        try:  # the budget bounds every round, the pilot's too: past it the round is stopped (its runs resume)
            code = _normbench(rounds, range(done, seeds), out / f"round-{look}", args.jobs, study,
                              timeout_s=max(left, 0.0))
        except children.OutOfTime:
            print(f"normbench.study: the budget ({args.budget_s:g} s) ran out during round {look}; its jobs were "
                  f"stopped (interrupted: a larger --budget resumes them)", file=sys.stderr, flush=True)
            if look == 1:
                return 1
            log["stopped"] = "budget"
            break
        status = max(status, code)
        if code == 2:  # the overrides were refused, in the round's own line; nothing more to run
            raise ChildRefused()
        if code not in (0, 1):
            print(f"normbench.study: round {look} {_ended(code)}", file=sys.stderr)
            return code
        done = seeds
        runs = _runs(out, study["id"])
        if runs.empty:
            print(f"normbench.study: round {look} left no record of this study in {str(out)[:200]}", file=sys.stderr)
            return max(status, 1)
        still = undecided(runs, level)
        spent = time.monotonic() - round_started
        log["rounds"].append({"look": look, "seeds_per_arm": seeds, "level": level, "seconds": round(spent, 1),
                              "undecided": still})
        print(progress.study_round(look, len(plan.looks), seeds, level, still, time.monotonic() - started), flush=True)
        if not still:
            break
        elapsed = time.monotonic() - started
        next_round = spent * args.step / max(1, seeds if look == 1 else args.step)
        if look < len(plan.looks) and elapsed + next_round > args.budget_s:
            print(f"normbench.study: stopping: the next round (about {next_round:.0f} s) would overrun the "
                  f"budget ({args.budget_s:.0f} s, {elapsed:.0f} s spent)", flush=True)
            log["stopped"] = "budget"
            break
    else:
        log["stopped"] = "maximum seeds"
    log.setdefault("stopped", "decided")
    if log["stopped"] == "decided" and gated_comparisons(runs, log["rounds"][-1]["level"]):
        log["stopped"] = GATED_STOP  # not "every question decided": the report says not testable here
    elif log["stopped"] == "decided" and not compared_anything(runs, log["rounds"][-1]["level"]):
        log["stopped"] = NOTHING_COMPARED  # not "every question decided": there was none
    log["seconds"] = round(time.monotonic() - started, 1)
    log["final_level"] = log["rounds"][-1]["level"]
    return _finish(out, study["id"], log, runs, still, status, report=args.report, claims=args.claims)


def report_command(out: Path, claims: list[Path]) -> str:
    """The command that writes the report a study with --no-report left out: its folder and its own claims
    (--claims; the study judged them in its process, a later report process must be given them again)."""
    def word(path: Path) -> str:  # quoted for a shell; "./" before a relative name an option parser would take
        text = str(path)
        return shlex.quote(f"./{text}" if text.startswith("-") else text)
    return " ".join(["python -m normbench.report", word(out), *(f"--claims {word(folder)}" for folder in claims)])


def _finish(out: Path, study_id: str, log: dict, runs, still, status: int, report: bool = True,
            claims: list[Path] = ()) -> int:
    """The study's end: its plan file, its report (unless ``report`` is false: --no-report, and the command
    that writes it is printed) and its answer; the exit status (``status``, or 1 when the plan could not be written)."""
    try:
        written = study_plan.write(out, study_id, log)
    except OSError as error:
        print(f"normbench.study: cannot write the plan into {str(out)[:200]}: {error.strerror or error}",
              file=sys.stderr)
        return max(status, 1)
    print(f"plan: {written}", flush=True)
    if not report:
        print(f"report: not written (--no-report); {report_command(out, list(claims))} writes it")
    else:
        from normbench.report import ReportError, build_report  # its plotting imports only when it is written

        try:  # the report reads the plan: this study's claims at its last look's level, any other study's at α
            print(f"report: {build_report([out], out)}")
        except ReportError as error:
            print(f"normbench.study: no report: {error}", file=sys.stderr)
    print("\n".join(progress.study_answer(log, runs, still)), flush=True)
    return status


def main(argv: list[str] | None = None) -> int:
    try:
        args, overrides = _parse(sys.argv[1:] if argv is None else argv)
    except StudyArgumentError as error:
        print(f"normbench.study: {' '.join(str(error).split())[:MAX_STRING]}", file=sys.stderr)
        return 2
    refused = hydra_files.unstorable_cwd()  # before --out is made: Hydra composes every round from this folder
    if refused:
        print(f"normbench.study: {refused}", file=sys.stderr)
        return 2
    try:
        with children.handling():
            return run_study(overrides, args)
    except StudyArgumentError as error:  # the default --out, or a config the runs would refuse
        print(f"normbench.study: {error}", file=sys.stderr)
        return 2
    except ChildRefused:  # its round said why
        return 2
    except (Stopped, KeyboardInterrupt) as stop:
        line, code = children.stop_line("normbench.study", stop, "the round running")
        print(line, file=sys.stderr)
        return code

if __name__ == "__main__":
    np.seterr(all="ignore")
    sys.exit(main())
