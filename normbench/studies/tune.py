"""A tuned comparison in one command (DeepOBS / AlgoPerf protocol):

    python -m normbench tune [--out DIR] [--evaluation-seeds 100,101,102] [overrides ...]

1. **Selection**: ``python -m normbench -m +sweep=tuned OVERRIDES`` into DIR/selection: every arm
   (the cartesian product of the overrides) over the sweep file's lr grid and selection seeds,
   ``role=selection``.
2. **Choice**: each arm's lr is chosen from those records alone (normbench/analysis/tuning.py:
   the best lr group of the arm under the report's ranking rule, on the final validation metric).
3. **Evaluation**: every arm once more at its chosen lr on the evaluation seeds, disjoint from the
   selection seeds, ``role=evaluation``, into DIR/evaluation. Arms may choose different lrs, which
   no cartesian sweep can express, so each arm becomes a config file (DIR/arms/tuned_arm/*.yaml)
   holding its recorded config with the chosen lr, and one multirun sweeps ``+tuned_arm=arm000,arm001,...``
   (each by name) over the seeds: one launcher, so ``hydra/launcher=local`` runs the jobs in parallel.
4. **Report** over both stages into DIR.

Both stages run with ``resume=true``: the same command into the same DIR continues where it
stopped, and two jobs of one run (norm=none at several placements is one model) train once.
Overrides under ``hydra`` (``hydra.sweep.dir`` aside: the stages go into DIR, children.into_folder) and the
harness keys (device, threads, progress) reach both stages; the
other overrides define the arms and reach the evaluation through the arm files. So a launcher chosen as
for any sweep (``hydra/launcher=slurm|submitit_local|joblib|local``) runs both: each stage one launch.
SIGTERM or Ctrl-C: passed to the stage running, one line, exit 128 + the signal's number; a tune
killed outright takes its stage along (normbench/studies/children.py, as normbench.studies.study).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import sys
from dataclasses import fields, is_dataclass
from datetime import datetime
from pathlib import Path

import yaml

from normbench.checks import ConfigError, OneLineParser, one_line, out_path, require_positive
from normbench.configuration import hydra_files, study_info
from normbench.configuration.contract import HARNESS
from normbench.records.record import folder_inside, interpolation_in, write_inside
from normbench.studies import children
from normbench.studies.children import hydra_quoted
from normbench.studies.composed import check_jobs

EVALUATION_SEEDS = (100, 101, 102)  # far from the sweep file's selection seeds (0, 1)
MIN_GRID = 3  # lrs to tune on: two cannot tell an arm's best lr from an edge of its range
MAX_SEEDS = 1_000  # as normbench.studies.study's --max-seeds: beyond it a seed list is a typo, not a plan
GROUPS = {"task": "name", "model": "family", "norm": "kind", "placement": "name", "precision": "dtype",
          "optim": "name"}  # config group -> the field naming the option that was chosen


LAYOUT = ("selection", "evaluation", "arms", "arms/tuned_arm")  # the folders tune makes in DIR


def planted_in(out: Path, layout: tuple[str, ...]) -> str | None:
    """``PATH is WHAT`` for the first folder of ``layout`` (relative to ``out``) that is there and is not a
    real folder (a link, a file, a FIFO); None when each is a folder or absent. Asked before any run, so
    that a link planted where a later stage writes is not found after the stages before it have run."""
    for rel in layout:
        path = out / rel
        if os.path.lexists(path) and (path.is_symlink() or not path.is_dir()):
            return f"{str(path)[-200:]} is {hydra_files.what_is(path, folder_ok=True) or 'a file'}"
    return None


def passthrough(overrides: list[str]) -> list[str]:
    """Overrides that say how jobs run, not what they train: Hydra's own and the harness keys."""
    kept = []
    for override in overrides:
        key = override.lstrip("+~").split("=", 1)[0]
        if key == "hydra" or key.startswith(("hydra.", "hydra/")) or key in HARNESS:
            kept.append(override)
    return kept


def _normbench(args: list[str]) -> int:
    env = {**os.environ}
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    print("+ python -m normbench " + " ".join(args), flush=True)
    # SIGTERM or Ctrl-C stops the child before tune ends; a killed tune takes it along (normbench/studies/children.py)
    return children.run([sys.executable, "-m", "normbench", *args], env=env)


_OPTION = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$")  # a config group's option: a file name, no path


class ArmRefused(ValueError):
    """A selection record that cannot become an arm file; the message is one phrase."""


def _recognised(values: dict, schema: type) -> dict:
    """The settings of ``values`` that ``schema`` knows, nested groups by their own schema: a record's
    other keys (a planted ``defaults`` list, a ``hydra`` block) never reach Hydra."""
    from normbench.configuration.schema import TASK_CONFIGS

    kept = {}
    for item in fields(schema):
        if item.name not in values:
            continue
        value = values[item.name]
        group = TASK_CONFIGS.get(str(value.get("name"))) if item.name == "task" and isinstance(value, dict) else (
            item.default_factory if is_dataclass(item.default_factory) else None)
        kept[item.name] = _recognised(value, group) if group is not None and isinstance(value, dict) else value
    return kept


def arm_file(config: dict, lr: float) -> str:
    """A config (package _global_) that reproduces a recorded run's config at ``lr``, seed and role aside.

    Built from the record's recognised settings only (the config schema's fields; each group's
    option by its plain name): record values are data, so one holding ``${...}``, which Hydra would
    resolve, or an option that is not a plain name is refused (ArmRefused), never passed on.
    """
    from normbench.configuration.schema import Config

    # the harness keys (logger, device, ...) never enter the arm: tune passes the user's own on
    found = interpolation_in({k: v for k, v in config.items() if k not in HARNESS})
    if found:
        raise ArmRefused(f"{found[:200]} holds an interpolation (${{...}}) or ???")
    settings = _recognised(config, Config)
    values = {k: v for k, v in settings.items() if k not in HARNESS and k not in ("hydra", "seed", "role", "lr")}
    defaults = []
    for group, field in GROUPS.items():
        option = settings[group].get(field) if isinstance(settings.get(group), dict) else None
        if option is None:
            continue
        if not isinstance(option, str) or not _OPTION.fullmatch(option) or ".." in option:
            raise ArmRefused(f"{group}.{field} {str(option)[:60]!r} is not the name of a {group} option")
        defaults.append({f"override /{group}": option})
    body = {"defaults": defaults, **values, "lr": float(lr)}
    return "# @package _global_\n# written by normbench.tune: a selected arm at its chosen lr\n" + yaml.safe_dump(
        body, sort_keys=False)


def write_arms(selection_dir: Path, arms_dir: Path) -> list[tuple[str, str, float]]:
    """One file per arm with a chosen lr; returns (file name, label, lr) of each. Reads the selection records only."""
    import pandas as pd

    from normbench.analysis import aggregate
    from normbench.analysis.tuning import chosen_lrs, with_arms
    from normbench.records.reading import find_records

    records = find_records([selection_dir])
    configs = {str(r.run_dir): r.summary.get("config") for r in records.runs}
    runs, _ = aggregate.distinct_runs(aggregate.runs_frame(records.runs))
    choice = chosen_lrs(runs)
    selection = with_arms(runs[runs.get("axes.role") == "selection"]) if "axes.role" in runs else runs.iloc[0:0]
    # inside DIR, every part a real folder: a planted link never turns the clean-up or the writes outside
    folder = folder_inside(arms_dir.parent, Path(arms_dir.name) / "tuned_arm")
    for old in folder.glob("*.yaml"):
        old.unlink()  # a link among them goes, never what it points to
    written = []
    for index, row in enumerate(choice.itertuples(index=False)):
        if row.chosen_lr is None or pd.isna(row.chosen_lr):  # a column of lrs holds NaN for an arm without one
            print(f"normbench.tune: {row.task}, {row.arm_label}: no lr chosen ({row.why}); not evaluated",
                  file=sys.stderr)
            continue
        at_lr = selection[(selection["task.name"] == row.task) & (selection["arm_label"] == row.arm_label)
                          & (selection["axes.lr"].astype(float) == row.chosen_lr)]
        config = configs[at_lr["run_dir"].iloc[0]]
        try:
            text = arm_file(config, row.chosen_lr)
        except ArmRefused as why:
            print(f"normbench.tune: {row.task}, {row.arm_label}: its record cannot become an arm ({why}); "
                  f"not evaluated", file=sys.stderr)
            continue
        write_inside(folder, f"arm{index:03d}.yaml", text)
        written.append((f"arm{index:03d}", f"{row.task}: {row.arm_label}", row.chosen_lr))
    return written


def tuned_params() -> dict[str, str]:
    """The selection stage's sweep file's ``hydra.sweeper.params``, as text (empty when it cannot be read)."""
    try:
        params = yaml.safe_load(study_info.sweep_file("tuned").read_text())["hydra"]["sweeper"]["params"]
    except (OSError, AttributeError, KeyError, TypeError, yaml.YAMLError):
        return {}
    return {str(k): str(v) for k, v in params.items()} if isinstance(params, dict) else {}


def lr_values(overrides: list[str], params: dict[str, str] | None) -> tuple[float, ...]:
    """The lrs a study's jobs run: the command line's ``lr=...``, else the sweep file's params' (a single
    value too); empty when neither gives one (the config's default lr, shared)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    texts = [f"lr={params['lr']}"] if params and "lr" in params else []
    texts += [o.lstrip("+~") for o in overrides if o.lstrip("+~").split("=", 1)[0] == "lr"]
    if not texts:
        return ()
    try:
        parsed = OverridesParser.create().parse_override(texts[-1])
        values = list(itertools.islice(parsed.sweep_iterator(), 1000)) if parsed.is_sweep_override() else [parsed.value()]
        return tuple(sorted({float(v) for v in values}))
    except Exception:  # a grammar error or an interpolation: check_config and the round report it
        return ()


def runnable_lrs(overrides: list[str], params: dict[str, str] | None) -> tuple[float, ...]:
    """lr_values, each a finite number > 0 (in float32 too); ConfigError naming the first that is not
    (lr=0, -1, nan in a grid), for tune and the study runner to refuse before any run: otherwise its jobs
    end invalid one by one, or the whole child refuses it after the runner has started."""
    grid = lr_values(overrides, params)
    for lr in grid:
        require_positive("lr", lr)
    return grid


def small_grid(grid: tuple[float, ...], overrides: list[str] = ()) -> str | None:
    """The one line refusing a grid of fewer than MIN_GRID lrs to tune on (tune, and a study's tuned protocol
    in normbench/studies/lr_protocol.py), or None when it has enough. An ``lr=`` of ``overrides`` that gives
    no grid (an interval, a glob, a list value) is named as typed (hostile h15 B12: it said "got none")."""
    if len(grid) >= MIN_GRID:
        return None
    typed = [o for o in overrides if o.lstrip("+~").split("=", 1)[0] == "lr"]  # ~lr as typed, not lr (h16 N19, I19)
    got = f"lr={','.join(f'{lr:g}' for lr in grid)}" if grid else one_line(typed[-1], 120) if typed else "none"
    return (f"tuning each arm's lr needs an explicit comma-separated lr grid of at least {MIN_GRID} values "
            f"(lr=a,b,c), got {got}")


def planned_selection_seeds(overrides: list[str], limit: int = 100_000) -> set[int]:
    """The seeds the selection stage will run, known before it runs: a ``seed=...`` the user gave, else
    the tuned sweep file's (its first ``limit`` values), so that an evaluation seed among them is refused
    up front rather than after minutes of selection. Empty when they cannot be told here."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    given = [o for o in overrides if o.lstrip("+~").split("=", 1)[0] == "seed"]
    text = given[-1].lstrip("+~") if given else None
    if text is None:
        params = tuned_params()
        if "seed" not in params:
            return set()
        text = f"seed={params['seed']}"
    try:
        parsed = OverridesParser.create().parse_override(text)
        values = parsed.sweep_iterator() if parsed.is_sweep_override() else [parsed.value()]
        return {v for v in itertools.islice(values, limit) if isinstance(v, int) and not isinstance(v, bool)}
    except Exception:  # the runner itself refuses what Hydra cannot parse, in one line
        return set()


def _selection_seeds(selection_dir: Path) -> set[int]:
    from normbench.records.reading import find_records

    return {int(r.summary["seed"]) for r in find_records([selection_dir]).runs
            if isinstance(r.summary.get("seed"), int)}


def _seeds(text: str) -> list[int]:
    """--evaluation-seeds: a comma-separated list of distinct seeds, at most MAX_SEEDS, each in [0, 2**63)
    (a seed twice would be one run counted twice: resume by identity trains it once)."""
    words = [w.strip() for w in text.split(",") if w.strip()]
    try:
        seeds = [int(w) for w in words]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:80]!r} is not a comma-separated list of integers") from None
    if not seeds or not all(0 <= s < 2**63 for s in seeds):
        raise argparse.ArgumentTypeError("needs at least one seed, each in [0, 2**63)")
    if len(set(seeds)) != len(seeds):
        twice = sorted({s for s in seeds if seeds.count(s) > 1})[:5] if len(seeds) <= MAX_SEEDS else "some"
        raise argparse.ArgumentTypeError(f"seeds must be distinct; given more than once: {twice}")
    if len(seeds) > MAX_SEEDS:
        raise argparse.ArgumentTypeError(f"at most {MAX_SEEDS} seeds, got {len(seeds)}")
    return seeds


def main(argv: list[str] | None = None) -> int:
    """The two stages and the report; SIGTERM or Ctrl-C at any point: the stage running is stopped
    too, one line, exit 128 + the signal's number (the same command resumes). The study it names in
    the environment for its children is taken out again at the end, so a caller in this process (a
    test, a notebook) keeps its own environment."""
    before = os.environ.get(study_info.STUDY_ENV_VAR)
    try:
        with children.handling():
            return _tune(argv)
    except (children.Stopped, KeyboardInterrupt) as stop:
        line, code = children.stop_line("normbench.tune", stop, "the stage running")
        print(line, file=sys.stderr)
        return code
    finally:
        if before is None:
            os.environ.pop(study_info.STUDY_ENV_VAR, None)
        else:
            os.environ[study_info.STUDY_ENV_VAR] = before


def _tune(argv: list[str] | None) -> int:
    parser = OneLineParser(prog="python -m normbench tune", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=out_path, default=None, help="study folder (default multirun/tuned/DATE_TIME)")
    parser.add_argument("--evaluation-seeds", type=_seeds, default=list(EVALUATION_SEEDS),
                        help="comma-separated seeds of the evaluation runs; must not be selection seeds")
    parser.add_argument("overrides", nargs="*", help="normbench overrides, e.g. norm=none,ln model=lstm")
    args = parser.parse_args(argv)
    if args.out is not None and args.out.is_symlink():  # a planted link would carry the study elsewhere
        parser.error(f"--out {str(args.out)[:200]} is a symbolic link; give the folder it points to if the study "
                     f"belongs there")
    problem = children.out_problem(args.out) if args.out is not None else None
    if problem:
        parser.error(problem)
    out = (args.out or Path("multirun/tuned") / datetime.now().strftime("%Y-%m-%d_%H-%M-%S")).resolve()
    seeds = args.evaluation_seeds
    if out.exists() and not out.is_dir():
        parser.error(f"--out {str(out)[:200]} exists and is not a folder")
    try:
        selection_dir, evaluation_dir = hydra_quoted(out / "selection"), hydra_quoted(out / "evaluation")
        arms_path = hydra_quoted(f"file://{out / 'arms'}")
    except ValueError as err:
        if any(c == "\\" or not c.isprintable() for c in str(args.out or "")):
            parser.error(f"--out: {err}")
        # the user's --out is plain: the current folder's path is what holds it (hostile h16 N19, X04)
        given = f"--out {str(args.out)[:200]}" if args.out is not None else "the default --out"
        parser.error(f"{given}: its full path, {str(out)[-200:]!r}, holds a backslash or a control character that --out "
                     f"does not (from the current folder's path, or a link's target), which the runs' Hydra overrides "
                     f"cannot carry; run tune from a folder whose path has none")
    found = planted_in(out, LAYOUT)  # before any run: a link there would take a stage's files elsewhere (T025, N067)
    if found is not None:
        parser.error(f"{found}; tune writes only into folders it makes: move it away or choose another --out")
    try:  # every lr of the grid runnable, and some job's config, before any run (N022, P116, P117, T18)
        grid = runnable_lrs(args.overrides, tuned_params())
        check_jobs(["+sweep=tuned", *args.overrides], tuned_params())
    except ConfigError as error:
        parser.error(str(error))
    harness = passthrough(args.overrides)
    clash = planned_selection_seeds(args.overrides) & set(seeds)
    if clash:
        parser.error(f"--evaluation-seeds {sorted(clash)[:5]} are selection seeds too; choose others (the default is "
                     f"{','.join(map(str, EVALUATION_SEEDS))})")
    # Selection and evaluation answer one question: their runs form one study (normbench/configuration/study_info.py).
    try:
        study = study_info.describe("tuned", args.overrides, None, "Each arm at its own tuned lr: chosen on selection "
                                    "seeds, compared on fresh evaluation seeds (DeepOBS / AlgoPerf protocol).")
    except Exception as error:  # Hydra's override grammar refused one (hostile T06, T12): the user's input
        parser.error(f"an override cannot be parsed: {' '.join(str(error).split())[:300]}")
    too_few = small_grid(grid, args.overrides)  # after the overrides parse: an lr Hydra cannot read gives no grid
    if too_few:  # its selection stage ran for nothing, then "no lr chosen", exit 1 (hostile h14 E36)
        parser.error(too_few)
    children.say_sweep_dir_ignored("normbench.tune", args.overrides, out)  # every refusal above is its one line
    os.environ[study_info.STUDY_ENV_VAR] = json.dumps(study)
    code = _normbench(children.into_folder(["-m", "+sweep=tuned", *args.overrides, "role=selection", "resume=true",
                                            "report=false"], selection_dir))
    if code == 2:  # the user's input: nothing ran
        return 2
    selection_seeds = _selection_seeds(out / "selection")
    if selection_seeds & set(seeds):
        print(f"normbench.tune: evaluation seeds {sorted(selection_seeds & set(seeds))} were selection seeds; "
              f"choose others with --evaluation-seeds", file=sys.stderr)
        return 2
    try:
        written = write_arms(out / "selection", out / "arms")
    except OSError as err:  # a link or a file planted where the arms' folder goes
        print(f"normbench.tune: cannot write the arm files: {' '.join(str(err).split())[:300]}", file=sys.stderr)
        return 2
    if not written:
        print("normbench.tune: no arm has a chosen lr (an lr is chosen from selection runs that trained: one seed, "
              "its best such run; 2 or more, 2 runs with one that trained)", file=sys.stderr)
        return 1
    for name, label, lr in written:
        print(f"chosen lr {lr:g}: {label} ({name})", flush=True)
    # the arms by name: a glob would be expanded before Hydra adds the arms' folder to its search path
    code_eval = _normbench(children.into_folder(
        ["-m", f"+tuned_arm={','.join(name for name, _, _ in written)}", f"seed={','.join(map(str, seeds))}",
         "role=evaluation", f"hydra.searchpath=[{arms_path}]", "resume=true", "report=false", *harness],
        evaluation_dir))
    from normbench.report import ReportError, build_report

    try:
        print(f"report: {build_report([out / 'selection', out / 'evaluation'], out)}")
    except ReportError as err:
        print(f"normbench.tune: no report: {err}", file=sys.stderr)
        return 1
    return 1 if 1 in (code, code_eval) or code_eval == 2 else 0


if __name__ == "__main__":
    sys.exit(main())
