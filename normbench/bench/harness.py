"""What normbench's training loop costs over a bare PyTorch loop doing the same arithmetic.

Both train the default run's setup (conf/ composed as ``python -m normbench`` does: digits, LSTM,
pre-LN, AdamW) from the same initial weights on the same batches, with the same param groups,
learning rate and gradient clipping. The bare loop does that and nothing else; ``Trainer.fit``
adds per-step bookkeeping, loss/grad-norm read-back, metric logging and the probes (activations
and gradient statistics every ``probe_every`` steps).

The two run in lockstep: as each step of ``fit`` starts, one bare step runs first and is timed,
so harness and bare steps alternate one for one and load from other processes falls on both
alike. Harness time is honest wall time -- the loop inside ``fit`` from its first step to the end
of its last step, probes and logging included, less the bare steps (the per-step median in a run
record leaves probe steps out). The one-off profiles before the loop and the evaluations after it
are outside the span; evaluation inside the loop is switched off (``eval_every`` > steps), since it
is the run's measurement, not the harness's overhead. Both must end on the same loss, or they did
not do the same work.

Separately, the cost of one probe: a training step with and without the activation probe's hooks
and the gradient statistics, timed interleaved, plus the probe hooks the run calls before the clock's
(``probes.Probes`` keeping the readings, the record's probe line) as timed inside fit. All the timing
inside fit is done by trainer hooks (``Lockstep``, a normbench.training.hooks.Hook): the bare step at each step's start, the span's end at the last
step's end, the probe between ``on_probe_start`` and ``on_probe``.
"""

from __future__ import annotations

import contextlib
import copy
import math
import statistics
import tempfile
import time
from pathlib import Path

import torch
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from normbench.bench.section import RatioLine, Section, bench_environment, markdown_table
from normbench.bench.timing import clock_for, measure, paired_difference
from normbench.configuration.config import config_dir, register
from normbench.records.record import RecordWriter
from normbench.tasks.scoring import scoring
from normbench.training import measures, probes
from normbench.training.hooks import Hook
from normbench.training.recording import ProgressBar, RecordHook
from normbench.training.run import prepare, resolve_device
from normbench.training.train import (
    AUTOCAST_DTYPES,
    Batches,
    Trainer,
    build_optimizer,
    evaluate,
    fixed_batches,
    learning_rate,
)

OVERHEAD_TARGET = 1.10  # harness time per step / bare loop time per step
OVERHEAD_BUDGET = OVERHEAD_TARGET - 1


def compose_config(overrides: list[str]) -> DictConfig:
    """The real conf/ tree composed with ``overrides``, as ``python -m normbench`` would."""
    register()
    with initialize_config_dir(str(config_dir()), version_base="1.3"):
        return compose("config", overrides=list(overrides))


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class BareLoop:
    """The training arithmetic of Trainer.fit -- lr, batch, forward, loss, backward, clip, AdamW -- and nothing else."""

    def __init__(self, cfg, task, model: torch.nn.Module, device: torch.device):
        self.cfg, self.model = cfg, model.to(device).train()
        self.optimizer = build_optimizer(cfg, self.model)
        self.batches = Batches(task.train, cfg.batch_size, device, cfg.seed)
        self.loss_fn = scoring(task).loss
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        dtype = AUTOCAST_DTYPES.get(cfg.precision.dtype)
        self.autocast = (lambda: torch.autocast(device.type, dtype=dtype)) if dtype else contextlib.nullcontext
        self.steps, self.loss = 0, None

    def step(self) -> None:
        self.steps += 1
        for group in self.optimizer.param_groups:
            group["lr"] = learning_rate(self.cfg, self.steps)
        x, y = next(self.batches)
        self.optimizer.zero_grad(set_to_none=True)
        with self.autocast():
            self.loss = self.loss_fn(self.model(x), y)
        self.loss.backward()
        if self.cfg.grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(self.params, self.cfg.grad_clip)
        self.optimizer.step()


class Lockstep(Hook):
    """Trainer hooks: before each harness step, one bare step, timed; the loop's span; the probes' time.

    So harness steps and bare steps alternate one for one, and load from other processes falls on
    both alike; the harness's own time is the loop's wall time less the bare steps'.
    """

    def __init__(self, bare: BareLoop, device: torch.device):
        self.bare, self.device = bare, device
        self.started = self.ended = None
        self.bare_s = self.probe_s = 0.0
        self.probes, self.probe_started = 0, None

    def on_step_start(self, trainer, step):
        _sync(self.device)
        start = time.perf_counter()
        if self.started is None:
            self.started = start
        self.bare.step()
        _sync(self.device)
        self.bare_s += time.perf_counter() - start

    def on_probe_start(self, trainer, step):
        self.probe_started = time.perf_counter()

    def on_probe(self, trainer, step, stats, activations):
        self.probe_s += time.perf_counter() - self.probe_started
        self.probes += 1

    def on_step_end(self, trainer, step):
        if step == trainer.cfg.steps:  # the span ends before the evaluation after the last step
            _sync(self.device)
            self.ended = time.perf_counter()


def timed_fit(trainer: Trainer, bare: BareLoop) -> dict:
    """``trainer.fit()`` in lockstep with ``bare``: both loops' seconds, and the probes' count and seconds."""
    lockstep = Lockstep(bare, trainer.device)
    trainer.hooks.append(lockstep)
    measured = trainer.fit()
    if lockstep.started is None or lockstep.ended is None:
        raise RuntimeError("Trainer.fit did not call on_step_start or the last step's on_step_end; "
                           "normbench.bench.harness must learn where its loop starts and ends")
    return {"harness_s": lockstep.ended - lockstep.started - lockstep.bare_s, "bare_s": lockstep.bare_s,
            "steps": measured.step, "bare_steps": bare.steps, "probe_s": lockstep.probe_s, "probes": lockstep.probes,
            "final_loss": measured.losses[-1], "bare_final_loss": float(bare.loss.detach()),
            "step_ms_median": measures.throughput(trainer)["step_ms_median"]}


def trial(node: DictConfig, work_dir: Path) -> dict:
    """One harness run with a bare loop on a copy of its model (same initial weights) in lockstep."""
    cfg, task, model, device = prepare(node)
    bare = BareLoop(cfg, task, copy.deepcopy(model), device)
    record = RecordWriter(work_dir)
    record.start(config={}, overrides=[], seed=cfg.seed)
    try:
        return timed_fit(Trainer(cfg, task, model, device, [probes.Probes(), RecordHook(record), ProgressBar(cfg, task)]), bare)
    finally:
        record.finish("ok", None)


def probe_costs(node: DictConfig, repeats: int) -> dict:
    """ms a probe adds to a step: activation hooks (a step with and without them) and gradient statistics."""
    cfg, task, model, device = prepare(node)
    model = model.to(device).train()
    loss_fn = scoring(task).loss
    x, y = next(Batches(task.train, cfg.batch_size, device, cfg.seed))

    def step():
        model.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()

    def step_with_activation_probe():
        with probes.activation_probe(model):
            step()

    timings = measure({"step": step, "step+activation_probe": step_with_activation_probe,
                       "gradient_statistics": lambda: probes.gradient_statistics(model)},
                      repeats=repeats, warmup=3, timer=clock_for(device))
    return {"activation_probe_ms": paired_difference(timings["step+activation_probe"], timings["step"]) * 1e3,
            "gradient_statistics_ms": timings["gradient_statistics"].median * 1e3,
            "forward_backward_ms": timings["step"].median * 1e3}


def run(*, steps: int | None = None, trials: int | None = None, probe_every: int | None = None,
        overrides: list[str] | None = None, quick: bool = False, threads: int | None = None,
        command: str = "") -> Section:
    steps = steps or (40 if quick else 200)
    trials = trials or (2 if quick else 3)
    chosen = [f"steps={steps}", f"eval_every={10 * steps}", "progress=false",
              *([f"probe_every={probe_every}"] if probe_every is not None else []),
              *([f"threads={threads}"] if threads else []), *(overrides or [])]
    node = compose_config(chosen)
    results = []
    with tempfile.TemporaryDirectory(prefix="normbench-harness-") as tmp:
        for k in range(trials):
            print(f"harness: trial {k + 1}/{trials} ...", flush=True)
            results.append(trial(node, Path(tmp) / f"trial{k}"))
        costs = probe_costs(node, repeats=5 if quick else 15)
    device = resolve_device(node.device)
    rows = [{"trial": k, "steps": r["steps"], "harness_ms_per_step": r["harness_s"] / r["steps"] * 1e3,
             "bare_ms_per_step": r["bare_s"] / r["bare_steps"] * 1e3, "ratio": r["harness_s"] / r["bare_s"],
             "probes": r["probes"], "trainer_probe_ms": r["probe_s"] / max(r["probes"], 1) * 1e3,
             "harness_step_ms_median": r["step_ms_median"],
             "loss_difference": abs(r["final_loss"] - r["bare_final_loss"])} for k, r in enumerate(results)]
    return summarize(rows, costs, int(node.probe_every), chosen, device, command)


def summarize(rows: list[dict], costs: dict, probe_every: int, overrides: list[str], device: torch.device,
              command: str) -> Section:
    """The section from the trials' rows and the probe costs: ratio, cost per probe, the interval that fits."""
    def med(key):
        return statistics.median(r[key] for r in rows)

    ratio, bare_ms, harness_ms = med("ratio"), med("bare_ms_per_step"), med("harness_ms_per_step")
    # a part measured below zero is noise around a cost too small to see: count it as nothing
    probe_ms = sum(max(v, 0.0) for v in (costs["activation_probe_ms"], costs["gradient_statistics_ms"],
                                         med("trainer_probe_ms")))
    steps = rows[0]["steps"]
    probes_per_step = rows[0]["probes"] / steps
    other_ms = harness_ms - bare_ms - probe_ms * probes_per_step  # bookkeeping and logging, every step
    room_ms = OVERHEAD_BUDGET * bare_ms - max(other_ms, 0.0)
    interval = probe_ms / room_ms if room_ms > 0 else None
    timed_ratio = med("harness_step_ms_median") / bare_ms if all(r["harness_step_ms_median"] for r in rows) else None
    facts = {"ratio": ratio, "bare_ms_per_step": bare_ms, "harness_ms_per_step": harness_ms,
             "probe_every": probe_every, "probe_ms": probe_ms, **costs,
             "trainer_probe_ms": med("trainer_probe_ms"),
             "other_overhead_ms_per_step": other_ms, "min_probe_interval_for_target": interval,
             "timed_step_ratio": timed_ratio, "max_loss_difference": max(r["loss_difference"] for r in rows),
             "overrides": overrides}
    if interval is None:
        interval_text = "no probe interval will do: the per-step bookkeeping alone exceeds the budget"
    elif interval <= 1:
        interval_text = "any probe_every, even 1"
    else:
        interval_text = f"probe_every >= {math.ceil(interval)}"
    ratios = [
        RatioLine(f"normbench step incl. probes every {probe_every} + logging (default run, {steps} steps)", ratio,
                  "bare PyTorch loop", command, target=f"<= {OVERHEAD_TARGET}",
                  note=f"{harness_ms:.2f} vs {bare_ms:.2f} ms/step"),
        RatioLine("one probe", probe_ms / bare_ms, "one bare step", command,
                  note=f"{probe_ms:.2f} ms; within {OVERHEAD_BUDGET:.0%} needs {interval_text}"),
    ]
    env = bench_environment(device)
    table = markdown_table(
        ["trial", "harness ms/step", "bare ms/step", "ratio", "probes", "ms in Trainer._probe",
         "|loss difference|"],
        [[r["trial"], f"{r['harness_ms_per_step']:.2f}", f"{r['bare_ms_per_step']:.2f}",
          f"{r['ratio']:.3f}", r["probes"], f"{r['trainer_probe_ms']:.2f}", f"{r['loss_difference']:.1e}"]
         for r in rows])
    markdown = "\n\n".join([
        f"## Harness overhead: normbench's training step vs a bare loop\n\n`{command}`\n\n{env['device']} "
        f"({env['device_name']}), torch {env['torch']}, {env['threads']} threads. Config: default run with "
        f"`{' '.join(overrides)}`. Harness time = wall time of the training loop inside `Trainer.fit`, "
        "probes and logging included, less the bare steps run in lockstep with it.", table,
        f"Median ratio {ratio:.3f} (target <= {OVERHEAD_TARGET}). One probe costs {probe_ms:.2f} ms "
        f"(activation hooks {costs['activation_probe_ms']:.2f} ms + gradient statistics "
        f"{costs['gradient_statistics_ms']:.2f} ms, both timed alone, + `Trainer._probe` "
        f"{med('trainer_probe_ms'):.2f} ms as timed in fit) against a {bare_ms:.2f} ms bare step; other "
        f"per-step overhead {other_ms:.2f} ms. To stay within {OVERHEAD_BUDGET:.0%}: {interval_text}. "
        + (f"The run record's step median (probe steps excluded) is {timed_ratio:.3f}x the bare step. "
           if timed_ratio else ""),
        "\n".join(f"- {r}" for r in ratios),
    ])
    return Section("harness", command, env, rows, markdown, ratios, {"facts": facts})


FOLD_SEEDS = 8  # issue 48's study: 2 arms x 8 seeds
FOLD_CONFIGS = {  # the two models issue 48 names: its default LSTM run, and the language-modelling Transformer
    "lstm": [],
    "transformer": ["model=transformer", "task=fortunes_lm", "task.length=32"],
}


def fold_ceiling(*, seeds: int = FOLD_SEEDS, configs: dict[str, list[str]] | None = None, repeats: int | None = None,
                 quick: bool = False, threads: int | None = None, command: str = "") -> Section:
    """The most that training ``seeds`` runs of one arm as one process could save by batched products (issue 48's
    "seeds trained together"): the seeds stacked along the batch, a step then costs at least what one step of
    ``seeds`` x batch_size costs (the same products, one call each); alone, ``seeds`` steps of batch_size.
    Both timed interleaved in one process (``measure``) as BareLoop steps, the ratio of ``seeds`` alone to one
    stacked step is the ceiling: a stacked model adds its own work (one product per seed's weights), never less."""
    rows = []
    for name, overrides in (configs or FOLD_CONFIGS).items():
        loops = {}
        for width in (1, seeds):
            node = compose_config([*overrides, "progress=false", *([f"threads={threads}"] if threads else [])])
            node.batch_size = int(node.batch_size) * width
            cfg, task, model, device = prepare(node)
            loops[width] = BareLoop(cfg, task, model, device)
        timings = measure({f"batch x{w}": loop.step for w, loop in loops.items()},
                          repeats=repeats or (3 if quick else 15), warmup=3, timer=clock_for(device))
        alone, stacked = timings["batch x1"].median, timings[f"batch x{seeds}"].median
        rows.append({"model": name, "overrides": " ".join(overrides), "batch_size": loops[1].batches.batch_size,
                     "seeds": seeds, "step_ms": alone * 1e3, "stacked_step_ms": stacked * 1e3,
                     "ceiling": seeds * alone / stacked})
    env = bench_environment(device)
    ratios = [RatioLine(f"{r['seeds']} seeds of {r['model']} as one batch, at best", r["ceiling"],
                        f"{r['seeds']} steps alone", command, target=">= 3",
                        note=f"{r['seeds']} x {r['step_ms']:.2f} ms alone vs {r['stacked_step_ms']:.2f} ms stacked")
              for r in rows]
    table = markdown_table(["model", "batch", "ms a step alone", f"ms a step of {seeds} x batch", "ceiling"],
                           [[r["model"], r["batch_size"], f"{r['step_ms']:.2f}", f"{r['stacked_step_ms']:.2f}",
                             f"{r['ceiling']:.2f}x"] for r in rows])
    markdown = "\n\n".join([
        f"## Seeds trained together: the ceiling of batched products\n\n`{command}`\n\n{env['device']} "
        f"({env['device_name']}), torch {env['torch']}, {env['threads']} threads. A bare training step (forward, "
        f"backward, clip, AdamW) at the config's batch and at {seeds} times it, timed interleaved; the ceiling is {seeds} steps "
        "alone over one stacked step, the most stacking the seeds along the batch could gain before its own costs.",
        table, "\n".join(f"- {r}" for r in ratios)])
    return Section("harness-fold", command, env, rows, markdown, ratios, {"seeds": seeds})


MUON_CONFIG = ["model=transformer", "task=fortunes_lm", "task.length=32", "optim.schedule=cosine", "norm=rms",
               "steps=800"]  # sweeps/derf_muon.yaml's Muon arm (muon_kernels adds optim=muon), RMSNorm


def muon_kernels(*, overrides: list[str] | None = None, repeats: int | None = None, quick: bool = False,
                 threads: int | None = None, command: str = "") -> Section:
    """normbench's Muon (training/muon.py: torch.optim.Muon's step, its Newton-Schulz iteration by float32
    products rounded to bf16) against torch.optim.Muon itself: a bare training step of the derf_muon study's
    Transformer with each, and the Muon half's step alone (the same gradients each time), all four timed
    interleaved in one process. Same model, data and AdamW half on both sides."""
    loops = {}
    for side in ("torch", "normbench"):
        node = compose_config([*(MUON_CONFIG if overrides is None else overrides), "optim=muon", "progress=false",
                               *([f"threads={threads}"] if threads else [])])
        cfg, task, model, device = prepare(node)
        loop = BareLoop(cfg, task, model, device)
        if side == "torch":
            loop.optimizer.parts[0] = torch.optim.Muon(loop.optimizer.parts[0].param_groups)
        loop.step()  # gradients for the Muon half's step alone
        loops[side] = loop
    candidates = {}
    for side, loop in loops.items():
        candidates[f"{side}: training step"] = loop.step
        candidates[f"{side}: Muon's step"] = loop.optimizer.parts[0].step
    env = bench_environment(device)
    timings = measure(candidates, repeats=repeats or (3 if quick else 15), warmup=3, timer=clock_for(device))
    classes = {side: type(loop.optimizer.parts[0]) for side, loop in loops.items()}
    rows = [{"muon": side, "muon_class": f"{classes[side].__module__}.{classes[side].__name__}",
             "step_ms": timings[f"{side}: training step"].median * 1e3,
             "muon_step_ms": timings[f"{side}: Muon's step"].median * 1e3} for side in loops]
    by = {row["muon"]: row for row in rows}
    ratios = [RatioLine("a training step with torch.optim.Muon / with normbench's", by["torch"]["step_ms"] / by["normbench"]["step_ms"],
                        "normbench's Muon", command,
                        note=f"{by['torch']['step_ms']:.2f} vs {by['normbench']['step_ms']:.2f} ms"),
              RatioLine("Muon's step alone, torch.optim.Muon / normbench's", by["torch"]["muon_step_ms"] / by["normbench"]["muon_step_ms"],
                        "normbench's Muon", command,
                        note=f"{by['torch']['muon_step_ms']:.2f} vs {by['normbench']['muon_step_ms']:.2f} ms")]
    table = markdown_table(["Muon", "ms a training step", "ms Muon's step alone"],
                           [[r["muon_class"], f"{r['step_ms']:.2f}", f"{r['muon_step_ms']:.2f}"] for r in rows])
    markdown = "\n\n".join([
        f"## Muon's step: normbench's against torch.optim.Muon\n\n`{command}`\n\n{env['device']} "
        f"({env['device_name']}), torch {env['torch']}, {env['threads']} threads"
        + "".join(f", {name}={value}" for name, value in env["isa_limits"].items())
        + ". A bare training step (forward, backward, clip, "
        "Muon + AdamW) of the derf_muon study's Muon arm, and the Muon half's step alone, with each Muon, all timed "
        "interleaved (medians). Both compute Muon's Newton-Schulz iteration in bf16 arithmetic: torch by bf16 "
        "products (slow on a CPU without bf16 units), normbench by float32 products rounded to bf16.",
        table, "\n".join(f"- {r}" for r in ratios)])
    return Section("harness-muon", command, env, rows, markdown, ratios, {})


EVALUATION_CONFIGS = {  # Transformers whose evaluation batches run in parts on a CPU (train.rows_per_part)
    "d64, fortunes_lm": ["model=transformer", "task=fortunes_lm"],  # issue 48's language model, 1000 x 128 characters
    "d128, fortunes_lm": ["model=transformer", "task=fortunes_lm", "model.hidden=128"],
    "d64, fortunes_topic": ["model=transformer", "task=fortunes_topic"],  # padded documents of up to 256 characters
}


def evaluation_parts(*, configs: dict[str, list[str]] | None = None, repeats: int | None = None, quick: bool = False,
                     threads: int | None = None, command: str = "") -> Section:
    """A run's evaluation of its val split (train.evaluate) with each batch's forward in parts of the config's
    eval_positions, as runs evaluate, against whole batches (eval_positions=0, as records without the key were
    evaluated): both timed interleaved in one process, and whether the two give the same (metric, loss) bit for bit."""
    rows = []
    for name, overrides in (configs or EVALUATION_CONFIGS).items():
        node = compose_config([*overrides, "progress=false", *([f"threads={threads}"] if threads else [])])
        cfg, task, model, device = prepare(node)
        loop = BareLoop(cfg, task, model, device)  # the run's autocast; its model in training mode, as a run's is
        batches, score = fixed_batches(task.val, device), scoring(task)
        sides = {"whole": lambda: evaluate(model, batches, score, loop.autocast, 0),
                 "parts": lambda: evaluate(model, batches, score, loop.autocast, cfg.eval_positions)}
        results = {side: fn() for side, fn in sides.items()}
        timings = measure(sides, repeats=repeats or (2 if quick else 7), warmup=1, timer=clock_for(device))
        rows.append({"model": name, "overrides": " ".join(overrides), "examples": len(task.val.x),
                     "steps": int(task.val.x.shape[1]), "positions": cfg.eval_positions,
                     "whole_s": timings["whole"].median, "parts_s": timings["parts"].median,
                     "identical": results["whole"] == results["parts"]})
    env = bench_environment(device)
    ratios = [RatioLine(f"an evaluation of {r['model']} in parts", r["parts_s"] / r["whole_s"], "whole batches",
                        command, note=f"{r['parts_s']:.3f} vs {r['whole_s']:.3f} s; scores "
                                      + ("identical" if r["identical"] else "differ (rounding: eval_positions)"))
              for r in rows]
    table = markdown_table(["Transformer, task", "val examples x steps", "eval_positions", "s whole", "s in parts",
                            "parts / whole", "same scores"],
                           [[r["model"], f"{r['examples']} x {r['steps']}", str(r["positions"]), f"{r['whole_s']:.3f}",
                             f"{r['parts_s']:.3f}", f"{r['parts_s'] / r['whole_s']:.2f}x",
                             "yes" if r["identical"] else "no"] for r in rows])
    markdown = "\n\n".join([
        f"## Evaluation in parts\n\n`{command}`\n\n{env['device']} ({env['device_name']}), torch {env['torch']}, "
        f"{env['threads']} threads. One evaluation of the val split (batches of 512 examples), each batch's forward "
        "whole (eval_positions=0) or in parts of eval_positions positions as runs compute it by default, timed "
        "interleaved (medians); the model untrained (the time does not depend on its weights).", table,
        "\n".join(f"- {r}" for r in ratios)])
    return Section("harness-evaluation", command, env, rows, markdown, ratios, {})


if __name__ == "__main__":
    from normbench.bench import as_command

    as_command("harness")
