"""What `normbench bench` does once its arguments are parsed (normbench/bench/options.py): the checks that need
the machine or the files, then each benchmark, its section printed and written, and `all`'s summary."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time

import torch

from normbench.bench import arms, cells, harness, kernels, sweep, sweep_profile
from normbench.bench.options import CANDIDATES, GRID_CANDIDATES, MASKED, command_line
from normbench.bench.section import OtherLoad, Section, bench_files, condition_line, finite_json, section_files
from normbench.checks import out_folder_problem
from normbench.report.output import OutputError
from normbench.training import machine

# `all` runs kernels last: it changes glibc's allocator for the rest of the process (see
# timing.keep_freed_memory), and the training-step benchmarks should see the default one.
SUBCOMMANDS = ("cells", "harness", "sweep", "kernels")
BUSY = 0.10  # share of the CPUs used by other processes above which a section's absolute figures are suspect
SUMMARY_FILES = ("bench.md", "summary.json")  # what `all` writes beside the sections' files


def run(top: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """The invocation ``args`` parsed by ``top`` (whose error() is a refusal's one line and exit status 2)."""
    if "cuda" in (getattr(args, "device", None), getattr(args, "cell_device", None)) and not torch.cuda.is_available():
        top.error("--device cuda: no CUDA device is available here")
    if getattr(args, "clock", "wall") == "cpu" and getattr(args, "cell_device", "cpu") == "cuda":
        top.error("--clock cpu times a CPU's work; on --device cuda steps are timed on the GPU's own timeline")
    if args.command == "arms":
        return run_arms(args)
    names = SUBCOMMANDS if args.command == "all" else (args.command,)
    # Before any work: a link as --out, a file where a folder should be, or a file in the way that a benchmark
    # did not write (or that was changed since) stops it; the writer checks each file again as it writes.
    if args.out is not None and out_folder_problem(args.out):
        top.error(out_folder_problem(args.out))
    refused = bench_files(args.out).refusal(_outputs(names, args)) if args.out is not None else None
    if refused:
        top.error(f"--out {args.out}: {refused}; a benchmark never writes through a link or over files it did "
                  f"not write")
    try:
        return _run(names, args)
    except OutputError as err:  # a file put in the way while the benchmark ran
        print(f"normbench.bench: {err}", file=sys.stderr)
        return 2
    except sweep_profile.Refused as err:  # the sweep's own one line: an unknown option, a value no run takes
        top.error(f"--subset: {err}" if args.subset else str(err))


def run_one(name: str, args: argparse.Namespace) -> Section:
    started, others, condition = time.perf_counter(), OtherLoad(), machine.Condition()
    threads = args.threads or (1 if args.quick else None)
    if threads:
        torch.set_num_threads(threads)
    command = command_line(name, args)
    if name == "kernels":
        section = kernels.run(device=args.device, quick=args.quick, compile_=args.compile, dtypes=args.dtypes,
                              hidden=args.kernel_hidden, kinds=args.kinds, repeats=args.repeats,
                              headline=args.headline, figure=args.out is not None, command=command,
                              default_malloc=args.default_malloc)
    elif name == "cells" and args.grid:
        section = cells.run_grid(family=args.family, input_size=args.input_size, norm=args.norm, quick=args.quick,
                                 repeats=args.repeats, candidates=tuple(args.candidates or GRID_CANDIDATES),
                                 device=args.cell_device, clock=args.clock, command=command)
    elif name == "cells":
        candidates = tuple(args.candidates or CANDIDATES) + ((MASKED,) if args.masked else ())
        section = cells.run(family=args.family, hidden=args.cell_hidden, length=args.length, batch=args.batch,
                            input_size=args.input_size, norm=args.norm, quick=args.quick, repeats=args.repeats,
                            candidates=tuple(dict.fromkeys(candidates)), device=args.cell_device, clock=args.clock,
                            command=command)
    elif name == "harness" and getattr(args, "fold", None):
        section = harness.fold_ceiling(seeds=args.fold, repeats=args.repeats, quick=args.quick, threads=threads,
                                       command=command)
    elif name == "harness" and getattr(args, "muon", False):
        section = harness.muon_kernels(repeats=args.repeats, quick=args.quick, threads=threads, command=command)
    elif name == "harness" and getattr(args, "evaluation", False):
        section = harness.evaluation_parts(repeats=args.repeats, quick=args.quick, threads=threads, command=command)
    elif name == "harness":
        section = harness.run(steps=args.harness_steps, trials=args.trials, probe_every=args.probe_every,
                              quick=args.quick, threads=threads, command=command)
    elif args.profile:
        section = sweep_profile.run(against=args.against, rounds=args.rounds or 2, overrides=args.subset,
                                    profile=not args.no_parts, command=command, keep=args.keep)
    else:
        section = sweep.run(runs=args.runs, jobs=args.jobs, steps=args.sweep_steps, quick=args.quick,
                            command=command)
    section.extra["elapsed_s"] = time.perf_counter() - started
    section.environment["other_processes_cpu_share"] = others.fraction()
    section.environment.update(condition.finish())  # load_1m and cpu_pressure at start and end
    section.markdown += "\n\n" + condition_line(section.environment)
    print(section.markdown, flush=True)
    if args.out is not None:
        written = section.write(args.out)
        print("wrote " + ", ".join(str(p) for p in written), flush=True)
    return section


def summary_block(sections: list[Section]) -> str:
    lines = ["## Summary: measured ratios"]
    busy = []
    for section in sections:
        share = section.environment.get("other_processes_cpu_share")
        where = "" if share is None else f", other processes used {share:.0%} of the CPUs meanwhile"
        lines.append(f"\n{section.name} ({section.extra.get('elapsed_s', 0):.0f} s{where})")
        lines += [f"- {ratio}\n  `{ratio.command}`" for ratio in section.ratios]
        if share is not None and share > BUSY:
            busy.append(section.name)
    if busy:
        lines.append(f"\nOther processes took more than {BUSY:.0%} of the CPUs during {', '.join(busy)}: ratios of "
                     "candidates timed side by side hold up; absolute times and the parallel speed-up do not.")
    return "\n".join(lines)


def run_arms(args: argparse.Namespace) -> int:
    command = shlex.join(["python", "-m", "normbench.bench", "arms", str(args.sweep_dir)]
                         + [w for flag, value in (("--rounds", args.rounds), ("--warmup", args.warmup),
                                                  ("--steps-per-round", args.steps_per_round),
                                                  ("--reference", args.reference), ("--threads", args.threads),
                                                  ("--device", args.device)) if value is not None
                            for w in (flag, str(value))])
    try:
        result = arms.run(args.sweep_dir, rounds=args.rounds, warmup=args.warmup, steps_per_round=args.steps_per_round,
                          reference=args.reference, threads=args.threads, device=args.device, command=command)
    except (ValueError, OSError, OutputError) as err:  # ArmsError, a config the runner refuses, a file in the way
        if isinstance(err, OSError) and getattr(sys.stdout, "failed", False):
            raise  # standard output full or gone: the command's one line says so (hostile F13)
        print(f"normbench.bench arms: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
    print(arms.render(result), flush=True)
    print(f"wrote {args.sweep_dir / arms.FILE} and {(args.sweep_dir / arms.FILE).with_suffix('.md')}")
    return 0


def _section_name(name: str, args: argparse.Namespace) -> str:
    """The section (so the files) subcommand ``name`` writes: its own name, or its variant's."""
    if name == "cells" and args.grid:
        return "cells-grid"
    if name == "sweep" and args.profile:
        return "sweep-profile"
    return name


def _outputs(names, args: argparse.Namespace) -> list[str]:
    """Every file this invocation writes into --out."""
    files = [f for name in names for f in section_files(_section_name(name, args),
                                                         (kernels.FIGURE,) if name == "kernels" else ())]
    return files + (list(SUMMARY_FILES) if args.command == "all" else [])


def _run(names, args: argparse.Namespace) -> int:
    sections, failures = [], {}
    started = time.perf_counter()
    for name in names:
        print(f"\n==== {name} ====", flush=True)
        try:
            sections.append(run_one(name, args))
        except OutputError:
            raise
        except Exception as err:  # one broken benchmark must not hide the others' figures
            if args.command != "all":
                raise
            failures[name] = f"{type(err).__name__}: {err}"
            print(f"normbench.bench: {name} failed: {failures[name]}", file=sys.stderr, flush=True)
    block = summary_block(sections)
    if failures:
        block += "\n" + "\n".join(f"- {name}: FAILED ({why.splitlines()[0]})" for name, why in failures.items())
    print("\n" + block + f"\n\n({time.perf_counter() - started:.0f} s)", flush=True)
    if args.out is not None and args.command == "all":
        text = "# normbench speed benchmarks\n\n" + "\n\n".join(s.markdown for s in sections) + "\n\n" + block + "\n"
        summary = {"ratios": [r.to_dict() for s in sections for r in s.ratios], "failures": failures,
                   "environment": sections[0].environment if sections else {}}
        files = bench_files(args.out)
        written = [files.write("bench.md", text), files.write("summary.json",
                                                              json.dumps(finite_json(summary), indent=2) + "\n")]
        print("wrote " + ", ".join(map(str, written)))
    return 1 if failures else 0

