"""Score a saved model on its task: `python -m normbench evaluate RUN_DIR` (or `normbench evaluate RUN_DIR`).

A run trained with ``save_model=true`` kept its weights (normbench/training/saved_model.py). This rebuilds
the model from the record's config, loads them, and evaluates them as the run did (the same
batches, precision, thread count and eval_positions), so ``final`` on ``test`` reproduces the record's test
metric; the line printed says whether it does. Nothing is written.

Exit status: 0 the score is the recorded one (or the record holds none for these weights and split),
1 it differs (NaN where the record holds a number among it), 2 the input: not a run, no saved model.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

from normbench.checks import OneLineParser, given_path
from normbench.configuration.schema import SAVED_MODELS  # torch-free: --help and a refusal answer before torch loads

SPLITS = ("test", "val")


def score(run_dir: Path, which: str = "final", split: str = "test") -> tuple[dict, float, float]:
    """(record summary, metric, loss) of the kept weights ``which`` on ``split``, evaluated as the run evaluated."""
    from omegaconf import OmegaConf

    from normbench.tasks.scoring import scoring
    from normbench.training.precision import RunPrecision
    from normbench.training.rerun import recorded_config
    from normbench.training.run import prepare
    from normbench.training.saved_model import load_weights, model_file, read_weights, run_record
    from normbench.training.train import evaluate, fixed_batches

    path = model_file(run_dir, which)
    record = run_record(run_dir)
    weights = read_weights(path)
    config = {**recorded_config(record.summary), "progress": False}  # the recorded thread count; no bar
    cfg, task, model, device = prepare(OmegaConf.create(config))
    load_weights(model, weights, path)
    # Evaluated as training evaluated: the run's precision (a pure mode's half copy, autocast), its fixed batches;
    # no Trainer is built and nothing is written.
    precision = RunPrecision(cfg.precision.dtype, model.to(device), device)
    batches = fixed_batches(task.test if split == "test" else task.val, device, dtype=precision.inputs)
    metric, loss = evaluate(precision.model, batches, scoring(task), precision.autocast, cfg.eval_positions)
    return record.summary, metric, loss


def recorded(summary: dict, which: str, split: str) -> float | None:
    """The metric the record holds for these weights on this split, if it holds one."""
    kept = (summary.get("saved_model") or {}).get(which) or {}
    if which == "final":
        return (summary.get("metrics") or {}).get("test" if split == "test" else "final_val")
    return kept.get("val_metric") if split == "val" else None


def same(was: float, now: float) -> bool:
    """Whether a score is the recorded one: equal, or both NaN (a diverged run scored again)."""
    return was == now or (math.isnan(was) and math.isnan(now))


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m normbench evaluate", description=__doc__.splitlines()[0],
                           epilog="exit status: 0 the recorded score, 1 it differs (as rerun's), 2 the input")
    parser.add_argument("run_dir", type=lambda text: given_path(text, "RUN_DIR"),
                        help="a run directory trained with save_model=true")
    parser.add_argument("--which", choices=tuple(SAVED_MODELS), default="final",
                        help="final: the weights the test metric measured; best: those of the best evaluation")
    parser.add_argument("--split", choices=SPLITS, default="test")
    args = parser.parse_args(argv)
    from normbench.__main__ import imported
    from normbench.training.rerun import not_a_run, say

    try:
        problem = not_a_run(args.run_dir)  # not blamed on save_model (hostile V03, V04)
        if problem:
            raise ValueError(problem)
        # torch and the model code, which score() reads, under the command line's stop guard: a stop while torch
        # imports is one line and 128 + the signal, never lost or a C++ abort (hostile h16 N6)
        imported("evaluate", "normbench.training.run")
        summary, metric, loss = score(args.run_dir, args.which, args.split)
    except ValueError as err:  # NoSavedModel, ConfigError: the user's input, one line
        say("normbench evaluate", err)
        return 2
    name = (summary.get("task") or {}).get("metric", "metric")
    was = recorded(summary, args.which, args.split)
    differs = was is not None and not same(was, metric)
    note = "" if was is None else f"  (recorded {was:.6g}: {'DIFFERS' if differs else 'the same'})"
    print(f"{args.split} {name} {metric:.6g}  loss {loss:.6g}  [{args.which}: {args.run_dir}]{note}")
    return 1 if differs else 0  # a script that checks a saved model by the status sees it (hostile h21 B8)


if __name__ == "__main__":
    sys.exit(main())
