"""Paired timing of a study's arms: each arm's training step, rebuilt from its record, timed side by side.

A run records its own step time, taken while other runs of the sweep and other processes share the
machine; two arms' per-run times differ by the load they met as much as by their code. Here every
arm (a report group: one study's runs that differ only in seed) is rebuilt from one of its records
as the runner builds it (``run.prepare``: config -> task -> model, then the ``Trainer``, whose timed
step is the one a run times) and stepped in one process, on the same threads, interleaved:
round by round one loop of ``steps_per_round`` steps of every arm, in an order shuffled each round
(``timing.measure``), after ``warmup`` steps of each that are not timed. Load that comes and goes
falls on every arm of a round alike, so the ratio of two arms is taken round by round: the ratio
to the reference arm is the geometric mean of the per-round ratios with a t-interval over rounds
on their logarithms.

Results go beside the records, SWEEP_DIR/paired-timing.json (and .md), which the report reads
(normbench/analysis/speed.py). The arms are timed with the learning rate their runs start with;
a step whose loss turned non-finite skips the optimizer step (as a run's last step would), and
is counted in ``diverged_steps``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
from omegaconf import OmegaConf

from normbench.analysis import aggregate
from normbench.analysis.speed import LEVEL, log_ratio_interval
from normbench.bench.section import (
    OtherLoad,
    bench_environment,
    bench_files,
    condition_line,
    finite_json,
    markdown_table,
)
from normbench.bench.timing import Timing, clock_for, measure
from normbench.checks import cores
from normbench.records.reading import find_records
from normbench.records.record import interpolation_in, now_iso
from normbench.training import machine
from normbench.training.run import prepare
from normbench.training.train import Trainer

FILE = "paired-timing.json"
OUTPUTS = (FILE, "paired-timing.md")  # what `bench arms` writes into the sweep's folder
from normbench.analysis.speed import PAIRED_TIMING_FORMAT as SCHEMA  # noqa: E402 - the format analysis/speed reads

# Upper bounds checked before any arm is built: 10,000 rounds is hours of timing and far past where
# the interval stops narrowing; beyond them a number is a typo, and would time until the machine dies.
MAX_ROUNDS = 10_000
MAX_STEPS = 10_000  # --warmup and --steps-per-round, each


class ArmsError(ValueError):
    """The sweep folder cannot be timed (no records, an unknown reference arm); one line for the user."""


@dataclass
class Arm:
    """One group of a study, as the report names it, and the record it is rebuilt from."""

    study: str
    task: str
    group: str
    arm: str
    group_hash: str
    record: Path
    config: dict
    step: Callable[[], object] | None = None
    batch_size: int = 0
    seq_len: int = 0
    threads: int | None = None  # what its run trained with (environment.threads)
    device: str = "cpu"
    diverged_steps: int = 0

    @property
    def key(self) -> str:
        return f"{self.study}/{self.group_hash}"


TIMED = ("ok", "diverged")  # a group is timed when one of its runs trained to the end (or to its divergence)


def arms_of(sweep_dir: Path) -> list[Arm]:
    """One arm per (study, group) with a run that trained (ok, else diverged), labelled as the report
    labels them, each with that run's record to rebuild it from. Groups whose runs were invalid,
    skipped or failed are not arms: their step cannot be taken as their runs took it."""
    if not Path(sweep_dir).is_dir():
        raise ArmsError(f"{sweep_dir}: no such folder")
    records = find_records([Path(sweep_dir)])
    if records.set_aside:  # a record no run wrote as it reads (a value of the wrong type, ??? for lr): bad input,
        # not an arm to leave out without a word (R75/R76)
        first = records.set_aside[0]
        raise ArmsError(f"{len(records.set_aside)} record(s) under {sweep_dir} cannot be read as a run's, e.g. "
                        f"{first.path}: {first.why}; move them away (bench arms times every arm or none)")
    usable = [r for r in records.runs if isinstance(r.summary.get("config"), dict)]
    if not any(r.summary.get("status") in TIMED for r in usable):
        raise ArmsError(f"{sweep_dir}: no finished run records (summary.json, status ok or diverged) to rebuild arms from")
    runs, _ = aggregate.distinct_runs(aggregate.runs_frame(usable))
    runs = aggregate.label_groups(runs, aggregate.varying_axes(runs))
    summaries = {str(r.run_dir): r.summary for r in usable}
    runs = runs[runs["status"].isin(TIMED)]
    runs = runs.assign(_pick=runs["status"].map({s: i for i, s in enumerate(TIMED)}),
                       _hash=(runs["group_hash"] if "group_hash" in runs else runs["run_dir"]).fillna(runs["run_dir"]))
    arms = []
    for _, mine in runs.groupby(["study", "_hash"], sort=False):
        first = mine.sort_values("_pick", kind="stable").iloc[0]
        summary = summaries[str(first["run_dir"])]
        threads = (summary.get("environment") or {}).get("threads")
        arms.append(Arm(str(first["study"]), str(first["task.name"]), str(first["group"]), str(first["arm"]),
                        str(first["_hash"]), Path(first["run_dir"]), summary["config"],
                        threads=threads if isinstance(threads, int) else None))
    return arms


def build(arm: Arm, threads: int | None = None, device: str | None = None) -> Arm:
    """The arm's training step, as its run took it: ``run.prepare`` on the recorded config, then
    ``Trainer.timed_step`` (forward, backward, clip, optimizer step, CUDA synchronized)."""
    found = interpolation_in(arm.config)
    if found:  # a record's values are data: never resolved here, nor printed; a record no run wrote (R75/R76)
        raise ArmsError(f"{arm.record / 'summary.json'}: {found[:120]} holds an interpolation (${{...}}) or ???, "
                        f"which no run records; not rebuilt from it (move the record away)")
    config = dict(arm.config, progress=False, resume=False)
    if threads:
        config["threads"] = threads
    if device:
        config["device"] = device
    cfg, task, model, where = prepare(OmegaConf.create(config))
    trainer = Trainer(cfg, task, model, where)  # no hooks: nothing written
    counter = iter(range(1, 2**62))

    def step():
        done = trainer.timed_step(next(counter))
        if done.diverged:
            arm.diverged_steps += 1

    arm.step, arm.batch_size, arm.seq_len = step, trainer.batch_size, max(task.seq_len, 1)
    arm.device = str(where)
    return arm


def _settings(label: str) -> dict[str, str]:
    """"norm=ln, placement=pre" -> {"norm": "ln", "placement": "pre"}."""
    return dict(part.strip().split("=", 1) for part in label.split(",") if "=" in part)


def references(arms: list[Arm], reference: str | None, timings: dict[str, Timing] | None = None) -> dict[str, Arm]:
    """Each arm's reference, by arm key. ``reference`` ("norm=ln", or an arm's whole label) names one
    arm of a comparison (study, task), or, where it fits several, each arm's counterpart: the arm
    with the same other settings (model=lstm, norm=rms -> model=lstm, norm=ln). None: the fastest of
    the comparison by ``timings``. Checked before anything is timed: a name that fits no arm fails."""
    chosen: dict[str, Arm] = {}
    wanted = _settings(reference) if reference else {}
    for key in dict.fromkeys((a.study, a.task) for a in arms):
        mine = [a for a in arms if (a.study, a.task) == key]
        if reference:
            named = [a for a in mine if reference in (a.arm, a.group)
                     or (wanted and wanted.items() <= _settings(a.arm).items())]
            if not named:
                raise ArmsError(f"--reference {reference!r} names no arm of study {key[0]}, task {key[1]} "
                                f"(arms: {'; '.join(a.arm for a in mine)})")
            for arm in mine:
                counterpart = {**_settings(arm.arm), **wanted}
                fits = named if len(named) == 1 else [a for a in named if _settings(a.arm) == counterpart]
                if len(fits) != 1:
                    raise ArmsError(f"--reference {reference!r} fits {len(named)} arms of study {key[0]}, task "
                                    f"{key[1]} and none is the counterpart of {arm.arm}")
                chosen[arm.key] = fits[0]
        elif timings is not None:
            fastest = min(mine, key=lambda a: timings[a.key].median)
            chosen.update({a.key: fastest for a in mine})
    return chosen


def time_arms(arms: list[Arm], *, rounds: int, warmup: int, steps_per_round: int, timer=None) -> dict[str, Timing]:
    """Each arm's step, interleaved (``timing.measure``): ``warmup`` untimed steps of each, then per
    round one loop of ``steps_per_round`` steps of every arm, in an order shuffled each round."""
    return measure({a.key: a.step for a in arms}, repeats=rounds, warmup=warmup, loop=steps_per_round, timer=timer)


def rows_of(arms: list[Arm], timings: dict[str, Timing], chosen: dict[tuple, Arm]) -> list[dict]:
    rows = []
    for arm in arms:
        timing, ref = timings[arm.key], chosen[arm.key]
        ratio, low, high = log_ratio_interval(timing.samples, timings[ref.key].samples)
        q1, q3 = timing.quartiles
        rows.append({"study": arm.study, "task": arm.task, "group": arm.group, "arm": arm.arm,
                     "group_hash": arm.group_hash, "record": str(arm.record), "batch_size": arm.batch_size,
                     "seq_len": arm.seq_len, "step_ms_median": timing.median * 1e3, "step_ms_q1": q1 * 1e3,
                     "step_ms_q3": q3 * 1e3, "iqr_ms": timing.iqr * 1e3,
                     "samples_per_s": arm.batch_size / timing.median if timing.median > 0 else None,
                     "reference": ref.arm, "ratio": ratio, "ratio_low": low, "ratio_high": high,
                     "diverged_steps": arm.diverged_steps, "rounds_ms": [s * 1e3 for s in timing.samples]})
    return rows


def render(result: dict) -> str:
    env = result["environment"]

    def num(value, digits=2):
        return "n/a" if value is None or (isinstance(value, float) and not math.isfinite(value)) else f"{value:.{digits}f}"

    lines = [f"# Paired timing of the arms\n\n`{result['command']}`\n",
             f"{env['device']} ({env['device_name']}), torch {env['torch']}, {result['threads']} threads, "
             f"{env.get('cpu_count')} cores. {condition_line(env)} "
             f"{result['rounds']} rounds of {result['steps_per_round']} steps of every arm, interleaved in a "
             f"shuffled order, after {result['warmup']} untimed steps of each. Ratio: median of the per-round "
             f"ratios to the reference arm, {LEVEL:.0%} sign-test (order-statistic) interval over rounds."]
    by: dict[tuple, list[dict]] = {}
    for row in result["arms"]:
        by.setdefault((row["study"], row["task"]), []).append(row)
    for (study, task), rows in by.items():
        refs = ", ".join(dict.fromkeys(r["reference"] for r in rows))
        lines.append(f"\n## study {study}, task {task}: reference {refs}\n")
        lines.append(markdown_table(
            ["arm", "ms / step (median)", "IQR ms", "samples/s", "reference", "x reference", f"{LEVEL:.0%} interval",
             "diverged steps"],
            [[r["arm"], num(r["step_ms_median"], 3), num(r["iqr_ms"], 3), num(r["samples_per_s"], 0), r["reference"],
              num(r["ratio"], 3), f"{num(r['ratio_low'], 3)}-{num(r['ratio_high'], 3)}", r["diverged_steps"]]
             for r in sorted(rows, key=lambda r: r["step_ms_median"])]))
    if result.get("skipped"):
        lines.append("\nNot timed (the runner refused to rebuild them here): "
                     + "; ".join(f"{r['arm']}: {r['reason']}" for r in result["skipped"]))
    return "\n".join(lines) + "\n"


def run(sweep_dir: Path, *, rounds: int = 20, warmup: int = 5, steps_per_round: int = 10,
        reference: str | None = None, threads: int | None = None, device: str | None = None,
        command: str = "", timer=None) -> dict:
    """Time every arm under ``sweep_dir`` side by side; write paired-timing.json and .md there; return the result."""
    if not (1 <= rounds <= MAX_ROUNDS and 0 <= warmup <= MAX_STEPS and 1 <= steps_per_round <= MAX_STEPS):
        raise ArmsError(f"need 1 <= rounds <= {MAX_ROUNDS}, 0 <= warmup <= {MAX_STEPS} and 1 <= steps-per-round "
                        f"<= {MAX_STEPS} (got {rounds}, {warmup}, {steps_per_round})")
    if threads is not None and threads < 1:  # 0 would otherwise read as "not given"
        raise ArmsError(f"--threads must be >= 1, got {threads}")
    sweep_dir = Path(sweep_dir)
    arms = arms_of(sweep_dir)
    # N076/N077, issue 50: a link, folder or FIFO there, or a file a benchmark did not write (or that was
    # changed since), fails now, not after the timing; the writer checks each file again as it writes
    files = bench_files(sweep_dir)
    refused = files.refusal(OUTPUTS)
    if refused:
        raise ArmsError(f"{refused}; a benchmark never writes through a link or over files it did not write")
    references(arms, reference)  # a --reference that names no arm fails now, not after the timing
    recorded = {a.threads for a in arms}
    threads = threads or (recorded.pop() if len(recorded) == 1 and None not in recorded else None) or 1
    built, skipped = [], []
    for arm in arms:
        print(f"arms: building {arm.group} (from {arm.record}) ...", flush=True)
        try:
            built.append(build(arm, threads=threads, device=device))
        except ArmsError:  # a record that is bad input stops the command (one line, exit 2)
            raise
        except ValueError as err:  # the runner refuses this config here (a device, a precision): not timed
            skipped.append({"group": arm.group, "arm": arm.arm, "study": arm.study, "task": arm.task,
                            "reason": " ".join(str(err).split())[:300]})
    if not built:
        raise ArmsError(f"{sweep_dir}: no arm could be rebuilt ({skipped[0]['arm']}: {skipped[0]['reason']})")
    arms = built
    torch.set_num_threads(threads)
    where = torch.device(arms[0].device)
    env = bench_environment(where)
    others, condition = OtherLoad(), machine.Condition()
    timings = time_arms(arms, rounds=rounds, warmup=warmup, steps_per_round=steps_per_round,
                        timer=timer or clock_for(where))
    env.update(condition.finish(), cpu_count=cores(), other_processes_cpu_share=others.fraction())
    chosen = references(arms, reference, timings)
    result = {"schema": SCHEMA, "created": now_iso(), "command": command, "sweep_dir": str(sweep_dir),
              "rounds": rounds, "warmup": warmup, "steps_per_round": steps_per_round, "threads": threads,
              "device": where.type, "environment": env, "arms": rows_of(arms, timings, chosen), "skipped": skipped}
    result = finite_json(result)
    # the one writer (section.bench_files): atomic, never through a planted link, never a cut file on a full disk
    files.write(FILE, json.dumps(result, indent=1) + "\n")
    files.write(OUTPUTS[1], render(result))
    return result


if __name__ == "__main__":
    from normbench.bench import as_command

    as_command("arms")
