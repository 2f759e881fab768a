"""Buy the answer: run a study's sweep, then add seeds in rounds until its questions are decided.

    python -m normbench.study [OVERRIDES ...] [--budget 30m] [--pilot 3] [--step 2] [--max-seeds 11]
                              [--alpha 0.05] [--jobs 2] [--out DIR]

1. **Pilot**: ``python -m normbench -m OVERRIDES seed=0..pilot-1`` into DIR/round-1 (the sweep
   file's own seed list is replaced by the runner's).
2. **Look**: the study's questions are its claims (analysis/claims, each part) and its ranking
   (each arm against the first-ranked arm of its comparison). At look k the runner tests them at
   the level α_k that the sequential plan spends there (analysis/sequential.py: Lan–DeMets spending of
   O'Brien–Fleming type over the planned looks pilot, pilot+step, ..., max-seeds; at most α false
   verdicts per direction over all looks). A claim is decided when it is supported, contradicted
   or not applicable; an arm when it is shown worse or better than the first, or equivalent to it
   within the claims' margin.
3. **Round**: while something is undecided, every arm gets `step` more seeds (balanced rounds keep
   the arms paired by seed and every pooling rule valid), unless the next round would overrun the
   budget or the maximum seed count is reached.
4. **Report** into DIR over every round, with the claims evaluated at the last look's level, and
   DIR/sequential.json: the plan, each look's level and what was undecided at each.

Resume by identity makes a repeated command free: runs already finished in DIR are not run again.
Bad arguments: one line, exit 2.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import numpy as np

from normbench.record import RESULT_STATUSES

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)([smh]?)$")


class StudyArgumentError(ValueError):
    """A bad command-line argument; the message is one line."""


def budget_seconds(text: str) -> float:
    """ "30m", "90s", "1.5h" or a plain number of seconds."""
    match = _DURATION.match(text.strip())
    if not match or float(match.group(1)) <= 0:
        raise StudyArgumentError(f"--budget must be a positive duration such as 30m, 90s or 1h, got {text!r}")
    return float(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[match.group(2)]


def _parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(prog="python -m normbench.study", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget", default="30m", help="wall-clock budget for all rounds (default 30m)")
    parser.add_argument("--pilot", type=int, default=3, help="seeds per arm in the first round (default 3)")
    parser.add_argument("--step", type=int, default=2, help="seeds per arm added each round (default 2)")
    parser.add_argument("--max-seeds", type=int, default=11, help="most seeds per arm (default 11)")
    parser.add_argument("--alpha", type=float, default=0.05, help="error per direction over all looks (default 0.05)")
    parser.add_argument("--jobs", type=int, default=2, help="parallel jobs, one torch thread each (default 2)")
    parser.add_argument("--out", type=Path, default=None, help="the study folder (default studies/DATE/TIME)")
    args, overrides = parser.parse_known_args(argv)
    unknown = [o for o in overrides if o.startswith("--")]
    if unknown:
        raise StudyArgumentError(f"unknown option {unknown[0]!r} (overrides are key=value)")
    if any(o.split("=", 1)[0].lstrip("+~") == "seed" for o in overrides):
        raise StudyArgumentError("the study runner chooses the seeds: leave seed=... out")
    if args.pilot < 2 or args.step < 1 or args.max_seeds < args.pilot:
        raise StudyArgumentError(f"need --pilot >= 2, --step >= 1 and --max-seeds >= --pilot, got "
                                 f"{args.pilot}, {args.step}, {args.max_seeds}")
    if not 0 < args.alpha < 0.5:
        raise StudyArgumentError(f"--alpha must be in (0, 0.5), got {args.alpha}")
    if args.jobs < 1:
        raise StudyArgumentError(f"--jobs must be at least 1, got {args.jobs}")
    if args.out is not None and args.out.exists() and not args.out.is_dir():
        raise StudyArgumentError(f"--out {args.out} exists and is not a folder")
    args.budget_s = budget_seconds(args.budget)
    return args, overrides


def _normbench(overrides: list[str], seeds: range, folder: Path, jobs: int) -> int:
    launcher = ["hydra/launcher=local", f"hydra.launcher.n_jobs={jobs}", "threads=1"] if jobs > 1 else ["threads=1"]
    args = ["-m", *overrides, f"seed={','.join(str(s) for s in seeds)}", *launcher, "resume=true", "report=false",
            "progress=false", f"hydra.sweep.dir={folder}"]
    print("+ python -m normbench " + " ".join(args), flush=True)
    return subprocess.run([sys.executable, "-m", "normbench", *args], env={**os.environ}).returncode


def _margin(runs) -> float:
    """The margin for "equivalent": the task metric's smallest effect of interest (analysis/rules.py,
    on the compared scale: log for MSE), the same one every claim part uses."""
    from normbench.analysis import rules

    return rules.margin(runs.iloc[0].get("task.metric"))[0]


def undecided(runs, level: float) -> list[str]:
    """What is still undecided at this look's level: claim ids and "arm vs arm" comparisons."""
    from normbench.analysis.claims import evaluate_claims
    from normbench.analysis.ranking import best_set, comparisons
    from normbench.analysis import rules
    from normbench.analysis.sequential import decide

    open_items = []
    for claim, verdict in evaluate_claims(runs, alpha=level):
        if verdict.status == "inconclusive":
            open_items.append(f"claim {claim.id}")
    score = rules.primary_column(runs)
    for study, task, mine in comparisons(runs[runs["status"].isin(RESULT_STATUSES)]):
        higher = bool(mine["task.higher_is_better"].iloc[0])
        ranked = best_set(mine, higher, score=score, alpha=level)
        if ranked.best is None:
            continue
        sign = 1.0 if higher else -1.0
        finished = mine[(mine["status"] == "ok") & ~rules.not_trained(mine)]
        name = mine["task.metric"].iloc[0] if "task.metric" in mine else None
        scores = {g: sign * rules.to_scale(finished.loc[finished["group"] == g, score], name) for g in ranked.order}
        delta = _margin(mine)
        for other in ranked.order[1:]:
            if other not in ranked.members:  # shown worse by the best-set rule (failures count): decided
                continue
            a, b = scores[ranked.best], scores[other]
            if len(a) < 2 or len(b) < 2 or decide(a, b, level, delta) is None:
                open_items.append(f"{task}: {ranked.best} vs {other}")
    return open_items


def _runs(folder: Path):
    from normbench.analysis import aggregate
    from normbench.report.records import find_records

    runs, _ = aggregate.distinct_runs(aggregate.runs_frame(find_records([folder]).runs))
    return aggregate.label_groups(runs, aggregate.varying_axes(runs))


def run_study(overrides: list[str], args: argparse.Namespace) -> int:
    from normbench.report import ReportError, build_report
    from normbench.analysis.sequential import Plan

    out = args.out or Path("studies") / datetime.now().strftime("%Y-%m-%d/%H-%M-%S")
    out.mkdir(parents=True, exist_ok=True)
    plan = Plan.rounds(args.pilot, args.step, args.max_seeds, args.alpha)
    log = {"schema": "normbench.sequential/1", "overrides": overrides, "alpha": args.alpha,
           "looks": list(plan.looks), "levels": plan.levels(), "budget_s": args.budget_s,
           "spending": "Lan-DeMets O'Brien-Fleming type, Bonferroni over looks", "rounds": []}
    started, done, status = time.monotonic(), 0, 0
    for look, (seeds, level) in enumerate(zip(plan.looks, plan.levels()), start=1):
        round_started = time.monotonic()
        code = _normbench(overrides, range(done, seeds), out / f"round-{look}", args.jobs)
        status = max(status, code)
        if code not in (0, 1):  # 2: the overrides were refused; nothing more to run
            print(f"normbench.study: round {look} did not run (exit {code})", file=sys.stderr)
            return code
        done = seeds
        still = undecided(_runs(out), level)
        spent = time.monotonic() - round_started
        log["rounds"].append({"look": look, "seeds_per_arm": seeds, "level": level, "seconds": round(spent, 1),
                              "undecided": still})
        print(f"normbench.study: look {look} at {seeds} seeds per arm, level {level:.4g}: "
              f"{len(still)} undecided" + (f" ({'; '.join(still[:4])}{' ...' if len(still) > 4 else ''})"
                                           if still else ""), flush=True)
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
    log["seconds"] = round(time.monotonic() - started, 1)
    log["final_level"] = log["rounds"][-1]["level"]
    (out / "sequential.json").write_text(json.dumps(log, indent=2, allow_nan=False))
    try:
        print(f"report: {build_report([out], out, alpha=log['final_level'])}")
    except ReportError as error:
        print(f"normbench.study: no report: {error}", file=sys.stderr)
    return status


def main(argv: list[str] | None = None) -> int:
    try:
        args, overrides = _parse(sys.argv[1:] if argv is None else argv)
    except StudyArgumentError as error:
        print(f"normbench.study: {error}", file=sys.stderr)
        return 2
    return run_study(overrides, args)


if __name__ == "__main__":
    np.seterr(all="ignore")
    sys.exit(main())
