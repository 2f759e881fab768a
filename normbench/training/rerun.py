"""Run a recorded run again and say whether it reproduced: `python -m normbench rerun RUN_DIR`.

The record's resolved config is the whole truth (docs/run-record.md), so it is executed as it
stands, with no Hydra composition in between; the overrides are kept for reference only. It runs
with the thread count the record says was used (CPU results depend on it), writes a new record
outside the original's sweep (``outputs/reruns/...`` by default, or ``--out``), never over an
existing record, and marks it ``rerun_of`` the original: the report counts a run once, however
many times it was rerun.

A record is data and cannot steer a rerun: what makes it the same run (its settings, thread count,
``deterministic``) comes from the record, but where its copies go does not. The recorded loggers
are never started (an edited ``summary.json`` could name a tracking server, or W&B online): the
rerun has the loggers ``--logger`` names, each with its default settings (local files in the new
run folder, W&B offline), and none unless given. ``--out`` must be a new or an empty folder.

Exit status: 0 reproduced, 1 differs (the table says where), 2 the input: a record that cannot be
read, or settings that cannot run (the new run is ``invalid``; one line says why, no table).
"""

from __future__ import annotations

import os
import sys
from datetime import datetime
from pathlib import Path

from omegaconf import OmegaConf

from normbench.checks import OneLineParser, given_path, one_line, out_folder_problem, out_path, shown
from normbench.configuration.contract import config_hash
from normbench.configuration.schema import LOGGER_KINDS
from normbench.records.folders import foreign_entry, stale_note
from normbench.records.metrics import viewed
from normbench.records.record import SetAside, git_commit, read_summary

COMPARED = viewed("rerun")


def _interpolations(node, path: str = "config") -> str | None:
    """The first value that OmegaConf would resolve (``${...}``): records are data, never evaluated."""
    if isinstance(node, dict):
        for key, value in node.items():
            found = _interpolations(value, f"{path}.{key}")
            if found:
                return found
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found = _interpolations(value, f"{path}[{i}]")
            if found:
                return found
    elif isinstance(node, str) and "${" in node:
        return path
    return None


def recorded_config(old: dict, loggers: tuple[str, ...] = ()) -> dict:
    """The config to run again: as recorded, with the recorded thread count, resume off, and the
    loggers ``loggers`` names (default settings) instead of the recorded ones; a record without
    eval_positions is evaluated as it was, whole batches (0)."""
    threads = (old.get("environment") or {}).get("threads")
    # a recorded resume=true would find the original and train nothing; the recorded loggers are the record's word
    config = {**old["config"], "resume": False, "logger": {kind: {"enabled": True} for kind in loggers}}
    if isinstance(threads, int) and threads > 0:
        config["threads"] = threads
    config.setdefault("eval_positions", 0)  # a record from before the key: its evaluations ran whole batches
    return config


def not_a_run(run_dir: Path) -> str | None:
    """Why ``run_dir`` is no run's folder, said before any file in it is looked for (hostile V03, V04: a folder
    that does not exist, or a sweep's, was blamed on save_model), or None.

    A sweep's runs are its direct subfolders, and a study's sweeps are its (each holding multirun.yaml): an
    example run is looked for there only, never deeper (hostile X12, X13: ``evaluate /`` searched the whole
    filesystem's second level for 10 s and offered another user's run)."""
    if not os.path.lexists(run_dir):
        return f"{shown(str(run_dir), 200)} does not exist"
    if not run_dir.is_dir():
        return f"{shown(str(run_dir), 200)} is not a folder"
    if os.path.lexists(run_dir / "summary.json"):
        return None
    runs = sorted(run_dir.glob("*/summary.json"))[:1] or sorted(
        run for sweep in sorted(run_dir.glob("*/multirun.yaml")) for run in sweep.parent.glob("*/summary.json"))[:1]
    if runs or (run_dir / "multirun.yaml").exists():
        example = f", e.g. {shown(str(runs[0].parent), 200)}" if runs else ""
        return f"{shown(str(run_dir), 200)} is a sweep's folder, not a run's: give one of its runs{example}"
    return f"{shown(str(run_dir), 200)} holds no summary.json: not a run's folder"


def say(tool: str, message: object) -> None:
    """``message`` as one line on stderr: a path it echoes may hold a newline or a terminal escape (hostile R27)."""
    print(f"{tool}: {one_line(message)}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m normbench rerun", description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=lambda text: given_path(text, "RUN_DIR"),
                        help="a run directory holding summary.json")
    parser.add_argument("--out", type=out_path, help="where the new record goes, a new or empty folder "
                                                 "(default: outputs/reruns/DATE/TIME-HASH)")
    parser.add_argument("--logger", action="append", default=[], choices=tuple(LOGGER_KINDS),
                        help="a logger for the new run, with its default settings (repeat for several); "
                             "the recorded ones are never used")
    args = parser.parse_args(argv)
    loggers = tuple(dict.fromkeys(args.logger))
    problem = not_a_run(args.run_dir)
    if problem:
        say("normbench.rerun", problem)
        return 2
    found = read_summary(args.run_dir / "summary.json")
    if isinstance(found, SetAside) or found.config is None:
        why = found.why if isinstance(found, SetAside) else "no config"
        say("normbench.rerun", f"no readable normbench record in {str(args.run_dir)[:300]} ({why})")
        return 2
    old = found.summary
    where = _interpolations(old["config"])
    if where:
        say("normbench.rerun", f"{args.run_dir}: {where} holds an interpolation (${{...}}); a record is data "
                                   f"and is never evaluated")
        return 2
    digest = config_hash(old["config"])
    if args.out is not None and args.out.is_symlink():  # a planted link would carry the record elsewhere
        say("normbench.rerun", f"--out {str(args.out)[:200]} is a symbolic link; give the folder it points to if "
                                   f"the record belongs there")
        return 2
    if args.out is not None and out_folder_problem(args.out):  # the rule of every --out folder (hostile R15)
        say("normbench.rerun", out_folder_problem(args.out))
        return 2
    if args.out is not None and foreign_entry(args.out) is not None:  # someone's files would be overwritten
        say("normbench.rerun", f"--out {str(args.out)[:200]} is not a new or empty folder; choose another --out")
        return 2
    # the default folder is new; should a second rerun start in the same second, it takes the next free name
    now = datetime.now()
    out = args.out or Path("outputs", "reruns", f"{now:%Y-%m-%d}", f"{now:%H-%M-%S}-{digest[:8]}")
    from omegaconf.errors import OmegaConfBaseException

    from normbench.configuration.config import to_config
    from normbench.training.run import execute  # torch is loaded only once there is something to run

    try:
        to_config(OmegaConf.create(recorded_config(old, loggers)))
    except (ValueError, TypeError, KeyError, AttributeError, OmegaConfBaseException) as err:
        say("normbench.rerun", f"{args.run_dir}: the recorded config is not valid: {' '.join(str(err).split())[:300]}")
        return 2

    try:
        new = execute(OmegaConf.create(recorded_config(old, loggers)), out, old.get("overrides", []),
                      extra={"rerun_of": {"run_dir": str(args.run_dir.resolve()), "config_hash": digest},
                             "study": old.get("study") if isinstance(old.get("study"), dict) else None})
    except OSError as err:
        # the same words as a run's: a record left saying "running" is stale (records/folders.py)
        say("normbench.rerun", f"cannot write the new record: {err}{stale_note(out)}")
        return 2
    if new["status"] == "invalid":  # the recorded settings cannot run (X011, P176): the input, not a result to compare
        reason = " ".join(str(new.get("reason") or "no reason recorded").split())[:300]
        say("normbench.rerun", f"{str(args.run_dir)[:300]}: the recorded settings cannot run (the new run is invalid, "
                                   f"the recorded one {old['status']}): {reason}")
        return 2
    recorded_commit = (old.get("environment") or {}).get("git_commit")
    if recorded_commit and recorded_commit != git_commit():  # what the comparison below is between
        print(f"note: recorded with normbench {recorded_commit}, ran {git_commit()}", file=sys.stderr)
    stored = old.get("config_hash")
    if isinstance(stored, str) and stored != digest:  # as compare flags it: the metrics are not this config's (R01)
        print(f"note: the record's stored config_hash {shown(stored, 20)} is not its config's ({digest[:12]}): the "
              f"record was edited after it ran, and this reran its config as it stands", file=sys.stderr)
    differs = [k for k in COMPARED if (old.get("metrics") or {}).get(k) != (new.get("metrics") or {}).get(k)]
    if old["status"] != new["status"]:
        differs.insert(0, "status")
    for key in ("status", *COMPARED):
        was = old.get(key) if key == "status" else (old.get("metrics") or {}).get(key)
        now = new.get(key) if key == "status" else (new.get("metrics") or {}).get(key)
        print(f"{key:18s} {was!s:>24s} {now!s:>24s}  {'' if was == now else 'DIFFERS'}")
    print(f"new record: {new['run_dir']}")
    print("reproduced exactly" if not differs else f"differs in: {', '.join(differs)}")
    if "status" in differs:  # why the new run ended otherwise, on stderr where a failure is read (X011)
        reason = " ".join(str(new.get("reason") or "no reason recorded").split())[:300]
        say("normbench.rerun", f"the new run is {new['status']} (the recorded one {old['status']}): {reason}")
    return 0 if not differs else 1


if __name__ == "__main__":
    sys.exit(main())
