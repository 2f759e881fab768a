"""What `normbench bench` takes: its parser, the choices and defaults it offers, and the command line that gives
a parsed invocation again. Without torch, so that a mistyped option or `--help` is answered at once, before
the benchmarks' imports (about 4 s of torch here); the benchmarks take their names and defaults from here."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import OverrideParseException

from normbench.checks import OneLineParser, given_path, runs_folder, whole_number
from normbench.configuration.config import command_line_code, command_line_place
from normbench.configuration.schema import KINDS, RECURRENT
from normbench.norms.kinds import kind_names, kind_of

PREFIXES = {"kernels": "kernel-", "cells": "cell-", "harness": "harness-", "sweep": "sweep-"}

# bench kernels (normbench/bench/kernels.py)
KERNEL_KINDS = tuple(k for k in kind_names() if kind_of(k).timed)  # each kind's descriptor says (norms/kinds.py)
KERNEL_DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}  # precision name -> torch's name of its dtype
DEFAULT_HIDDEN = (64, 256, 1024, 4096, 16384)
HEADLINE_SHAPE = (8192, 4096)  # the size at which kernels.py's CPU findings were first seen

# bench cells (normbench/bench/cells.py)
TARGET_FAMILIES = ("lstm", "gru")  # the families with a target (cells.TARGETS)
CANDIDATES = ("fused", "fused+norm_calls", "loop", "in_cell", "in_cell_python", "in_cell_torch_compile")
EARLIER_CANDIDATES = {"in_cell_compile": "in_cell_torch_compile"}  # a candidate's name before issue 47's rename
MASKED = "in_cell_masked"  # not in CANDIDATES: asked for with --masked, and at the grid's masked point
GRID_HIDDEN = (64, 128, 256)  # the shape grid, at batch 32, T 64, input 32
GRID_CANDIDATES = ("fused", "fused+norm_calls", "in_cell")  # the ratio, and the lower bound beside a miss
CLOCKS = ("wall", "cpu")  # how a cell's step is timed on a CPU (timing.clock_for says what each is)

# bench sweep --profile (normbench/bench/sweep_profile.py): 52 jobs, two families x two placements x the smoke
# sweep's 13 cases (norms, precisions, tasks)
SUBSET = ["+sweep=smoke", "model=lstm,transformer", "placement=pre,post"]


MAX_SIZE = 1 << 16  # a hidden size or length past this is a typo, not a benchmark: its tensors would not fit (B005)


def _at_least(minimum: int):
    return whole_number(minimum, MAX_SIZE)


_positive = _at_least(1)


def _csv(kind, valid: tuple = ()):
    """A comma list of ``kind`` (int: each >= 1), each one of ``valid`` when given, at least one."""
    def parse(text):
        try:
            values = tuple((_positive if kind is int else kind)(v) for v in text.split(",") if v)
        except argparse.ArgumentTypeError as err:
            raise argparse.ArgumentTypeError(f"{text[:40]!r}: {err}") from None
        unknown = [v for v in values if valid and v not in valid]
        if unknown or not values:
            raise argparse.ArgumentTypeError(f"{(','.join(map(str, unknown)) or text)[:40]!r}: "
                                             + (f"valid: {', '.join(valid)}" if valid else "needs at least one value"))
        return values
    return parse


def _candidates(text: str) -> tuple[str, ...]:
    """bench cells' --candidates, a candidate named before issue 47's rename (in_cell_compile) by its present name."""
    named = _csv(str, (*CANDIDATES, MASKED, *EARLIER_CANDIDATES))(text)
    return tuple(dict.fromkeys(EARLIER_CANDIDATES.get(name, name) for name in named))


def _folder(text: str) -> Path:
    if not text.strip():  # Path('') is the working folder (checks.out_path)
        raise argparse.ArgumentTypeError("is empty; name a folder (an unset shell variable?)")
    path = given_path(text, "--out")  # a name too long for the filesystem: one line, before any stat
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text[:200]} exists and is not a folder")
    return path


def _overrides(text: str) -> list[str]:
    """--subset: a sweep's overrides, refused here as `normbench` itself would refuse them (code, a folder
    outside the run's), rather than as a failed sweep's traceback after the other sweeps ran."""
    try:
        words = shlex.split(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"{text[:80]!r}: {err}") from None
    refused = command_line_code(words) or command_line_place(words)
    if refused:
        raise argparse.ArgumentTypeError(f"{refused[:80]!r} would run code or write outside the sweep's folder; "
                                         f"normbench refuses it (normbench --allow-code ... runs it as given)")
    for word in words:  # Hydra's grammar, here; an unknown option or a value no run takes, from the first sweep
        try:
            OverridesParser.create().parse_overrides([word])
        except OverrideParseException as err:
            raise argparse.ArgumentTypeError(f"{word[:80]!r}: {str(err).splitlines()[0][:200]}") from None
    return words


def _families(text):
    names = _csv(str)(text)
    unknown = [n for n in names if n not in RECURRENT]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"{','.join(unknown) or text!r}: valid families are {', '.join(RECURRENT)}")
    return names


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=_folder, help="write NAME.json, NAME.csv and NAME.md into this folder")
    p.add_argument("--quick", action="store_true", help="tiny sizes, few repeats: checks the path, not the speed")
    p.add_argument("--threads", type=_positive, help="torch threads (default: torch's, all cores; --quick: 1, since "
                   "tiny kernels on a busy machine mostly measure thread wake-up)")
    p.add_argument("--repeats", type=_positive, help="timed rounds per candidate (default per subcommand)")


# In `all`, an option name two subcommands share gets the subcommand's name as prefix (--cell-hidden).
def _kernel_options(p: argparse.ArgumentParser, prefix: str = "") -> None:
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"), help="cpu | cuda (default cpu)")
    p.add_argument("--compile", action="store_true", help="also time torch.compile of the reference modules")
    p.add_argument("--dtypes", type=_csv(str, tuple(KERNEL_DTYPES)), help="comma list of fp32,bf16,fp16 (default fp32,bf16; CUDA adds fp16)")
    p.add_argument(f"--{prefix}hidden", type=_csv(int), dest="kernel_hidden",
                   help=f"comma list of hidden sizes (default {','.join(map(str, DEFAULT_HIDDEN))}; "
                        "rows sized to ~32 MiB in fp32)")
    p.add_argument("--kinds", type=_csv(str, KERNEL_KINDS), default=KERNEL_KINDS, help="comma list of norm kinds")
    p.add_argument("--no-headline", dest="headline", action="store_false", default=None,
                   help=f"skip the fp32 {HEADLINE_SHAPE[0]}x{HEADLINE_SHAPE[1]} forward comparison")
    p.add_argument("--default-malloc", action="store_true",
                   help="CPU: leave glibc's allocator as it is (by default freed memory is kept in the heap, so "
                        "large temporaries are not page-faulted in afresh on every call)")


def _cell_options(p: argparse.ArgumentParser, prefix: str = "") -> None:
    p.add_argument("--family", type=_families, default=TARGET_FAMILIES,
                   help=f"comma list of {','.join(RECURRENT)} (default {','.join(TARGET_FAMILIES)})")
    p.add_argument(f"--{prefix}device", dest="cell_device", default="cpu", choices=("cpu", "cuda"), help="cpu | cuda (default cpu)")
    p.add_argument(f"--{prefix}hidden", dest="cell_hidden", type=_csv(int), default=GRID_HIDDEN,
                   help=f"comma list of hidden sizes, each timed on its own (default {','.join(map(str, GRID_HIDDEN))})")
    p.add_argument("--length", type=_positive, default=64)
    p.add_argument("--batch", type=_positive, default=32)
    p.add_argument("--input-size", type=_positive, default=32)
    p.add_argument("--norm", default="ln", choices=KINDS, help="norm kind inside the cell (default ln)")
    p.add_argument("--candidates", type=_candidates,
                   help=f"comma list from {','.join(CANDIDATES)},{MASKED} (fused is always timed: every "
                        f"ratio is to it; default all but {MASKED}, with --grid {','.join(GRID_CANDIDATES)})")
    p.add_argument("--grid", choices=("axes",), help="axes: walk each axis from (batch 32, T 64, hidden 128) -- "
                   "hidden 64..1024, batch 1..128, T 64 and 512 -- plus a masked variable-length point, each "
                   "ratio beside its target (--hidden/--batch/--length are then the grid's)")
    p.add_argument("--clock", choices=CLOCKS, default="wall",
                   help="wall (default) | cpu: time each step by the process's CPU time, which a busy machine's "
                        "other processes inflate far less (with --threads 1, each step's own; CPU only)")
    p.add_argument("--masked", action="store_true",
                   help=f"also time {MASKED}: the in-cell layer on a variable-length batch (skipped, with the "
                        "reason, where the layer takes no lengths)")


def _harness_options(p: argparse.ArgumentParser, prefix: str = "") -> None:
    p.add_argument(f"--{prefix}steps", type=_positive, dest="harness_steps", help="training steps per trial (default 200)")
    p.add_argument("--trials", type=_positive, help="lockstep harness+bare runs (default 3)")
    p.add_argument("--probe-every", type=_at_least(0), help="override the config's probe_every")
    p.add_argument("--fold", type=_at_least(2), metavar="SEEDS",
                   help="instead: the most that training SEEDS seeds of a run as one batch could save (a step at "
                        "SEEDS x batch against SEEDS steps, interleaved; the default LSTM run and the Transformer "
                        "language model)")
    p.add_argument("--muon", action="store_true",
                   help="instead: normbench's Muon against torch.optim.Muon, in the derf_muon study's training step")
    p.add_argument("--evaluation", action="store_true",
                   help="instead: a Transformer's evaluation with its batches' forwards in parts (as runs evaluate on "
                        "a CPU) against whole batches")


def _sweep_options(p: argparse.ArgumentParser, prefix: str = "") -> None:
    p.add_argument("--runs", type=_positive, default=4)
    p.add_argument("--jobs", type=_positive, default=2, help="joblib workers")
    p.add_argument(f"--{prefix}steps", type=_positive, dest="sweep_steps",
                   help="steps of each run (default 800: ~7 s a run on one idle core)")
    p.add_argument("--profile", action="store_true",
                   help="instead: where a tiny run's time goes in a sweep (a smoke subset; normbench/bench/sweep_profile.py)")
    p.add_argument("--against", type=_folder, metavar="DIR",
                   help="with --profile: the fixed cost per run against the checkout at DIR, side by side")
    p.add_argument("--rounds", type=_positive, help="with --against: alternating rounds (default 2)")
    p.add_argument("--subset", type=_overrides, metavar="OVERRIDES",
                   help="with --profile: the sweep's overrides, one string (default: " + " ".join(SUBSET) + ")")
    p.add_argument("--keep", type=runs_folder, metavar="DIR", help="with --profile: keep the sweeps under DIR")
    p.add_argument("--no-parts", action="store_true",
                   help="with --against: the side-by-side rounds only, without the extra sweep under cProfile")


def parser() -> argparse.ArgumentParser:
    top = OneLineParser(prog="python -m normbench.bench",
                                  description="Speed benchmarks of normbench's parts; every figure a ratio "
                                              "measured side by side in one process.")
    sub = top.add_subparsers(dest="command", required=True)
    helps = {"kernels": "norm kernels: time, GB/s, fraction of a copy", "cells": "in-cell LN-LSTM (LN-GRU) step vs nn.LSTM (nn.GRU), over hidden sizes",
             "harness": "normbench training step vs a bare loop", "sweep": "joblib launcher vs sequential sweep"}
    adders = {"kernels": _kernel_options, "cells": _cell_options, "harness": _harness_options, "sweep": _sweep_options}
    for name, add in adders.items():
        p = sub.add_parser(name, help=helps[name], description=helps[name])
        _common(p)
        add(p)
    paired = sub.add_parser("arms", help="a study's arms, rebuilt from their records, timed side by side",
                            description="Time each arm's training step interleaved in one process; writes "
                                        "SWEEP_DIR/paired-timing.json and .md, which the report reads.")
    paired.add_argument("sweep_dir", type=lambda text: given_path(text, "SWEEP_DIR"), metavar="SWEEP_DIR",
                        help="a folder of run records (a multirun)")
    paired.add_argument("--rounds", type=int, default=20, help="timed rounds, each one loop of every arm (default 20)")
    paired.add_argument("--warmup", type=int, default=5, help="untimed steps of each arm first (default 5)")
    paired.add_argument("--steps-per-round", type=int, default=10, help="steps of an arm per round (default 10)")
    paired.add_argument("--reference", help="the arm ratios are to, e.g. norm=ln (default: the fastest of each "
                                            "study and task)")
    paired.add_argument("--threads", type=int, help="torch threads for every arm (default: the records' own, else 1)")
    paired.add_argument("--device", choices=("cpu", "cuda", "auto"), help="override the records' device")
    everything = sub.add_parser("all", help="every subcommand, then one summary of the ratios")
    _common(everything)
    for name, add in adders.items():
        add(everything.add_argument_group(name), prefix=PREFIXES[name])
    return top


def command_line(name: str, args: argparse.Namespace) -> str:
    """The command line that reproduces one subcommand of this invocation."""
    words = ["python", "-m", "normbench.bench", name]
    if args.quick:
        words.append("--quick")
    if args.threads:
        words += ["--threads", str(args.threads)]
    if args.repeats:
        words += ["--repeats", str(args.repeats)]
    if name == "kernels":
        words += ["--device", args.device] if args.device != "cpu" else []
        words += ["--compile"] if args.compile else []
        words += ["--dtypes", ",".join(args.dtypes)] if args.dtypes else []
        words += ["--hidden", ",".join(map(str, args.kernel_hidden))] if args.kernel_hidden else []
        words += ["--kinds", ",".join(args.kinds)] if tuple(args.kinds) != KERNEL_KINDS else []
        words += ["--no-headline"] if args.headline is False else []
        words += ["--default-malloc"] if args.default_malloc else []
    elif name == "cells":
        defaults = {"family": TARGET_FAMILIES, "cell_hidden": GRID_HIDDEN, "length": 64, "batch": 32,
                    "input_size": 32, "norm": "ln", "cell_device": "cpu"}
        for key, default in defaults.items():
            value = getattr(args, key)
            if tuple(value) != default if isinstance(default, tuple) else value != default:
                text = ",".join(map(str, value)) if isinstance(default, tuple) else str(value)
                words += [f"--{key.replace('cell_', '').replace('_', '-')}", text]
        if args.candidates:
            words += ["--candidates", ",".join(args.candidates)]
        words += ["--grid", args.grid] if args.grid else []
        words += ["--masked"] if args.masked else []
        words += ["--clock", args.clock] if args.clock != "wall" else []
    elif name == "harness":
        for flag, key in (("--steps", "harness_steps"), ("--trials", "trials"), ("--probe-every", "probe_every"),
                          ("--fold", "fold")):
            words += [flag, str(getattr(args, key))] if getattr(args, key, None) is not None else []
        words += ["--muon"] if getattr(args, "muon", False) else []
        words += ["--evaluation"] if getattr(args, "evaluation", False) else []
    elif name == "sweep" and args.profile:
        against = ["--against", str(args.against), "--rounds", str(args.rounds or 2)] if args.against else []
        words += ["--profile", *against]
        words += ["--subset", " ".join(args.subset)] if args.subset else []
        words += ["--no-parts"] if args.no_parts else []
    elif name == "sweep":
        words += ["--runs", str(args.runs)] if args.runs != 4 else []
        words += ["--jobs", str(args.jobs)] if args.jobs != 2 else []
        words += ["--steps", str(args.sweep_steps)] if args.sweep_steps else []
    return shlex.join(words)


# An option that acts only beside another: (option, its dest, the option it needs, that one's dest).
NEEDS = (("--against", "against", "--profile", "profile"), ("--subset", "subset", "--profile", "profile"),
         ("--keep", "keep", "--profile", "profile"), ("--rounds", "rounds", "--against", "against"),
         ("--no-parts", "no_parts", "--against", "against"))


def _needs_another(args: argparse.Namespace) -> str | None:
    """One line on an option given without the one it acts with, which would be ignored in silence (hostile
    B14, B15: --subset without --profile, --rounds without --against, ran the plain sweep benchmark)."""
    for option, dest, needed, needed_dest in NEEDS:
        if getattr(args, dest, None) not in (None, False) and not getattr(args, needed_dest, None):
            return f"{option} acts only with {needed}: give it with {needed}, or leave {option} out"
    return None


def refusal(args: argparse.Namespace) -> str | None:
    """Why a parsed invocation is refused before any benchmark is imported, or None: an option without the one it
    acts with, --against that is not a checkout, --keep that is not an empty folder. (arms takes none of them;
    its --rounds is its own.)"""
    if args.command == "arms":
        return None
    needs = _needs_another(args)
    if needs:
        return needs
    if getattr(args, "against", None) is not None and not (args.against / "normbench" / "__init__.py").is_file():
        return f"--against {args.against}: not a checkout of normbench (no normbench/__init__.py in it)"
    if getattr(args, "keep", None) is not None and args.keep.exists() and (not args.keep.is_dir()
                                                                          or any(args.keep.iterdir())):
        return (f"--keep {args.keep}: not empty, or not a folder (a sweep folder that holds records resumes them "
                "instead of running)")
    return None
