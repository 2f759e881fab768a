"""The training loop: batches, optimizer, schedule, precision, evaluation, timing and probes."""

from __future__ import annotations

import contextlib
import copy
import logging
import math
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

import torch

from normbench.configuration.config import Config
from normbench.models import SequenceModel, parameter_groups
from normbench.norms import auto_choices, auto_sites, batch_norms, reestimate_statistics
from normbench.norms.layers import UserNorm
from normbench.tasks.batching import epoch_order
from normbench.tasks.scoring import Scoring, scoring
from normbench.training import probes
from normbench.training.hooks import Hook
from normbench.training.measures import PeakMemory
from normbench.training.muon import build_muon
from normbench.training.precision import PRECISIONS, RunPrecision, norm_input_dtypes
from normbench.training.state import Measured, misfit

log = logging.getLogger("normbench")
# The half dtype of every precision that computes in half, pure modes included: run.unsupported_precision
# tries each under autocast at that dtype, which on CPU needs the same half kernels a pure run calls.
AUTOCAST_DTYPES = {name: p.dtype for name, p in PRECISIONS.items() if p.dtype is not None}
EVAL_BATCH = 512


def learning_rate(cfg: Config, step: int) -> float:
    """Linear warm-up over ``warmup_steps``, then constant or cosine decay to 0 at ``steps``."""
    if step <= cfg.warmup_steps:
        return cfg.lr * step / cfg.warmup_steps
    if cfg.optim.schedule == "cosine":
        fraction = (step - cfg.warmup_steps) / max(cfg.steps - cfg.warmup_steps, 1)  # of the decay done
        return cfg.lr * 0.5 * (1 + math.cos(math.pi * fraction))
    return cfg.lr


def note_long_warmup(cfg: Config) -> None:
    """A warm-up longer than the run: allowed (a short sweep may want it), said as timing_warmup's cut is (K08)."""
    if cfg.warmup_steps > cfg.steps:
        log.warning("warmup_steps=%d is above steps=%d: the learning rate rises to %.3g, %d%% of lr=%g, and never "
                    "reaches it", cfg.warmup_steps, cfg.steps, learning_rate(cfg, cfg.steps),
                    100 * cfg.steps // cfg.warmup_steps, cfg.lr)


def evaluation_overflowed(measured: Measured) -> bool:
    """The divergence rule (a non-finite loss) read on the final evaluation too: a training loss can stay
    finite while the validation or test metric overflows (lr=1e10: 1e22 trains, inf evaluates; K84)."""
    return any(value is not None and not math.isfinite(value) for value in (measured.final_val, measured.test))


def build_optimizer(cfg: Config, model) -> torch.optim.Optimizer:
    groups = parameter_groups(model, cfg.optim.weight_decay, cfg.optim.norm_weight_decay)
    if cfg.optim.name == "sgd":
        return torch.optim.SGD(groups, lr=cfg.lr, momentum=cfg.optim.momentum)
    if cfg.optim.name == "muon":  # Muon on the hidden matrices, AdamW on the rest (normbench/training/muon.py)
        return build_muon(model, groups, lr=cfg.lr, betas=(cfg.optim.beta1, cfg.optim.beta2),
                          momentum=cfg.optim.momentum)
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.optim.beta1, cfg.optim.beta2))


class Batches:
    """Shuffled epochs over a split, drawn from a generator seeded by the run's seed; with ``bucket``,
    batches of examples of about one length (tasks/batching.py)."""

    def __init__(self, split, batch_size: int, device, seed: int, dtype: torch.dtype | None = None,
                 bucket: bool = False):
        self.x, self.y = _inputs(split.x, device, dtype), split.y.to(device)
        self.examples = len(self.x)
        self.lengths = split.lengths if bucket else None
        self.batch_size = min(batch_size, len(self.x))
        self.generator = torch.Generator().manual_seed(seed)
        self.order, self.pos = torch.empty(0, dtype=torch.long), 0

    def __next__(self):
        if self.pos + self.batch_size > len(self.order):
            self.order, self.pos = epoch_order(len(self.x), self.batch_size, self.generator, self.lengths), 0
        idx = self.order[self.pos : self.pos + self.batch_size].to(self.x.device)
        self.pos += self.batch_size
        return self.x[idx], self.y[idx]

    def state_dict(self) -> dict:
        """The generator and the place in the current epoch: the batches still to come."""
        return {"generator": self.generator.get_state(), "order": self.order, "pos": self.pos}

    def load_state_dict(self, state: dict) -> None:
        self.generator.set_state(state["generator"])
        self.order, self.pos = state["order"], state["pos"]


def _inputs(x, device, dtype: torch.dtype | None):
    """Inputs on ``device``; float features in ``dtype`` when the model computes in it (token ids stay ids)."""
    x = x.to(device)
    return x.to(dtype) if dtype is not None and x.is_floating_point() else x


def fixed_batches(split, device, size: int = EVAL_BATCH, dtype: torch.dtype | None = None):
    return [(_inputs(split.x[i : i + size], device, dtype), split.y[i : i + size].to(device))
            for i in range(0, len(split.x), size)]


def rows_per_part(model: torch.nn.Module, x: torch.Tensor, positions: int) -> int:
    """How many examples of ``x`` one forward of ``model`` takes in evaluation (forward_in_parts): ``positions``
    (the config's eval_positions) worth for a SequenceModel with attention on a CPU; all of them where
    ``positions`` is 0, on a GPU, where a large batch is what it is fast at, for a recurrent model (no gain
    measured, or a loss), and where an example's output may depend on the others (a user's norm, which could
    keep batch statistics in evaluation mode too, or a hook, which sees each forward)."""
    if not positions or not isinstance(model, SequenceModel) or model.recurrent or x.device.type != "cpu" \
            or x.dim() < 2 or any(isinstance(m, UserNorm) or m._forward_hooks or m._forward_pre_hooks
                                  for m in model.modules()):
        return len(x)
    return max(1, positions // x.shape[1])


def forward_in_parts(model: torch.nn.Module, x: torch.Tensor, rows: int) -> torch.Tensor:
    """``model(x)``, computed ``rows`` examples at a time and put together. Each example's output is the function
    of that example that the whole batch's forward computes (evaluation mode: BatchNorm reads its running
    statistics, dropout is off; a padded example's steps past its end are not scored), so the batch's scores
    are the same up to the rounding of products over fewer rows (bounded in tests/training/test_train.py)."""
    if rows >= len(x):
        return model(x)
    return torch.cat([model(x[i : i + rows]) for i in range(0, len(x), rows)])


@torch.no_grad()
def evaluate(model, batches, scoring: Scoring, autocast, positions: int = 0) -> tuple[float, float]:
    """(metric, loss) of ``model`` over ``batches`` in evaluation mode, under the run's ``autocast`` context
    (RunPrecision.autocast): how training evaluates, and how ``normbench evaluate`` scores kept weights.
    ``positions`` (the run's eval_positions): a batch's forward in parts where rows_per_part says so, 0 whole;
    the batch is scored whole, as one forward's output would be."""
    model.eval()
    total = count = loss_sum = 0.0
    with autocast():
        for x, y in batches:
            out = forward_in_parts(model, x, rows_per_part(model, x, positions))
            s, n = scoring.metric_sums(out, y)
            total, count = total + s, count + n
            loss_sum += float(scoring.loss(out, y)) * len(x)
    model.train()
    return total / max(count, 1), loss_sum / sum(len(x) for x, _ in batches)


@dataclass
class StepDone:
    """What one training step measured: loss and gradient norm read back, the probes' readings, its time."""

    loss: float
    grad_norm: float
    grad_stats: dict | None = None
    activations: dict = field(default_factory=dict)
    elapsed_s: float = 0.0
    diverged: bool = False


class Trainer:
    """One run's training: the loop (``fit``) and its state, nothing written.

    What it measured goes to its hooks (normbench/training/hooks.py), called at the loop's named points:
    the record writer and the progress bar (recording.py), the loggers (loggers.py), the checkpointer,
    the model saver, the harness's clocks. The record's sections are read off its state
    (measures.py). It owns its state: normbench/training/checkpoint.py saves ``state_dict()`` and hands it
    back through ``load_state_dict``. Its precision object (precision.py) holds the half copy and the
    loss scaler; ``timed_step`` is the one step ``bench arms`` times, on a Trainer with no hooks.
    """

    def __init__(self, cfg: Config, task, model: SequenceModel, device: torch.device, hooks: Iterable[Hook] = ()):
        self.cfg, self.task, self.device = cfg, task, device
        self.hooks = list(hooks)
        self.scoring = scoring(task)  # the task's loss and metric (normbench/tasks/scoring.py)
        self.loss_fn = self.scoring.loss
        # The optimizer steps ``master`` (float32); ``model`` computes forward and backward. They are
        # one module except in a pure mode, where ``model`` is the half copy (normbench/training/precision.py).
        self.precision = RunPrecision(cfg.precision.dtype, model.to(device), device)
        self.master, self.model = self.precision.master, self.precision.model
        self.auto_norms = [auto for _, auto in auto_sites(self.model)]
        self.optimizer = build_optimizer(cfg, self.master)
        self.params = [q for q in self.master.parameters() if q.requires_grad]
        self.clip = cfg.grad_clip if cfg.grad_clip is not None else math.inf
        self.autocast = self.precision.autocast
        self.probe_loss_scale = self.precision.probe_loss_scale
        inputs = self.inputs = self.precision.inputs
        self.train_batches = Batches(task.train, cfg.batch_size, device, cfg.seed, inputs, task.bucket)
        self.val = fixed_batches(task.val, device, dtype=inputs)
        self.probe_batch = self.val[0]
        # norm.bn_reestimate: the training inputs that population statistics are estimated from, fixed
        self.bn_population = None
        if cfg.norm.bn_reestimate and batch_norms(self.model):
            x = task.train.x[: cfg.norm.bn_reestimate_batches * EVAL_BATCH]
            self.bn_population = [_inputs(x[i : i + EVAL_BATCH], device, inputs) for i in range(0, len(x), EVAL_BATCH)]
        self.spikes = probes.SpikeDetector()
        self.measured = Measured()
        self.start_step = 0  # steps already done: a run resumed from its checkpoint (normbench/training/checkpoint.py)
        # steps left out of the step-time median: at most all but the last two (the last is a probe
        # step, never timed), so that some step is timed
        self.timing_warmup = min(cfg.timing_warmup, max(cfg.steps - 2, 0))
        if self.timing_warmup < cfg.timing_warmup:
            log.warning("timing_warmup=%d is not below steps=%d: the first %d steps are left out of the step time "
                        "instead", cfg.timing_warmup, cfg.steps, self.timing_warmup)
        note_long_warmup(cfg)
        self.memory = PeakMemory(device)  # this run's peak only: several jobs may share a process
        self.precision_summary = self.precision.summary()  # the record's ``precision`` (recording.RecordHook)

    # -- measurement ------------------------------------------------------------------------
    def _sync(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def evaluate(self, batches) -> tuple[float, float]:
        return evaluate(self.model, batches, self.scoring, self.autocast, self.cfg.eval_positions)

    def reestimate_bn(self) -> None:
        """norm.bn_reestimate: every BatchNorm's statistics from the current weights (norms.reestimate_statistics)."""
        with self.autocast():
            reestimate_statistics(self.model, self.bn_population)

    @contextlib.contextmanager
    def _evaluation_statistics(self):
        """The statistics an evaluation during training uses: with norm.bn_reestimate population ones,
        and the running averages back afterwards, so training goes on exactly as without the option."""
        if self.bn_population is None:
            yield
            return
        with probes.buffers_preserved(self.model):
            self.reestimate_bn()
            yield

    def _eval_and_log(self, step: int):
        p = self.measured
        with self._evaluation_statistics():
            val, val_loss = self.evaluate(self.val)
        p.final_val = val
        p.evals.append((step, val))
        if math.isfinite(val) and (p.best_val is None or self.task.better(val, p.best_val)):
            p.best_val = val
        if self.task.reached(val) and p.steps_to_target is None:
            p.steps_to_target, p.seconds_to_target = step, p.train_s
        self._notify("on_eval", step, val_metric=val, val_loss=val_loss)

    def _notify(self, hook: str, *args, **scalars):
        for target in self.hooks:
            getattr(target, hook)(self, *args, **scalars)

    # -- state ------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Everything the rest of the run depends on that the trainer holds, as tensors and plain
        containers: weights (and a pure mode's half copy), optimizer, loss scaler, batch sampler,
        what it measured so far (``measured``), spike detector, precision summary, memory peak, and its hooks' state (the record's
        curves). The process's random generators are not the trainer's (normbench/training/checkpoint.py)."""
        return {
            **self._tensor_state(),
            "measured": dict(vars(self.measured)),
            "spikes": {"window": list(self.spikes.window), "steps": list(self.spikes.steps)},
            "precision": self.precision_summary,
            "rss_peak_mb": self.memory.rss_mb,
            **{key: value for hook in self.hooks for key, value in hook.state_dict().items()},
        }

    def load_state_dict(self, state: dict, step: int) -> None:
        """Puts ``state`` (a ``state_dict()`` taken after ``step`` steps) into this freshly built
        trainer, which then continues with step ``step + 1``. All or nothing: one that does not fit
        raises ValueError, and one that fails while being loaded leaves the trainer as built (and raises)."""
        why = misfit(state, self)  # normbench/training/state.py
        if why is not None:
            raise ValueError(why)
        built = copy.deepcopy(self._tensor_state())
        try:
            self._load_tensor_state(state)
        except Exception:
            self._load_tensor_state(built)
            raise
        for key, value in state["measured"].items():
            setattr(self.measured, key, value)
        self.spikes.window.extend(state["spikes"]["window"])
        self.spikes.steps[:] = state["spikes"]["steps"]
        if state["precision"] is not None:
            self.precision_summary = state["precision"]
        self.memory.rss_mb = max(self.memory.rss_mb, state["rss_peak_mb"])
        for hook in self.hooks:
            hook.load_state_dict(state)
        self.start_step = step

    def _tensor_state(self) -> dict:
        """The part of the state loaded into objects, which loading can fail in."""
        return {"model": self.master.state_dict(),
                "model_half": self.model.state_dict() if self.model is not self.master else None,
                "optimizer": self.optimizer.state_dict(), "scaler": self.precision.state_dict(),
                "batches": self.train_batches.state_dict()}

    def _load_tensor_state(self, state: dict) -> None:
        self.master.load_state_dict(state["model"])
        if state["model_half"] is not None:
            self.model.load_state_dict(state["model_half"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.precision.load_state_dict(state["scaler"])
        self.train_batches.load_state_dict(state["batches"])

    # -- the loop ---------------------------------------------------------------------------
    def fit(self) -> Measured:
        self.model.train()
        self._notify("on_fit_start")  # probes.Probes: a fresh run's initial gradient profiles
        for step in range(self.start_step + 1, self.cfg.steps + 1):
            if not self._step(step):
                break
        self._notify("on_fit_end")  # probes.Probes: the final profiles, BN's population statistics
        if self.measured.diverged_at_step is None:
            self.measured.test = self.evaluate(fixed_batches(self.task.test, self.device, dtype=self.inputs))[0]
            if evaluation_overflowed(self.measured):  # the run diverged at its last step (run.py's reason)
                self.measured.diverged_at_step = self.measured.step
        self.model.zero_grad(set_to_none=True)
        self.master.zero_grad(set_to_none=True)
        return self.measured

    def _step(self, step: int) -> bool:
        """One training step with its bookkeeping, log line, probe and evaluation; False once it diverged."""
        cfg, p = self.cfg, self.measured
        probing = step == cfg.steps or (cfg.probe_every > 0 and step % cfg.probe_every == 0)
        self._notify("on_step_start", step)
        lr = learning_rate(cfg, step)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        done = self.timed_step(step, probing)
        if done.diverged:
            p.diverged_at_step, p.step = step, step
            self._notify("on_diverge", step, loss=done.loss, lr=lr, grad_norm=done.grad_norm)
            return False
        self._account(step, done, probing)
        if step % cfg.log_every == 0:
            self._log_train(step, lr, done)
        if probing:  # probes.Probes keeps the readings
            self._notify("on_probe_start", step)
            self._notify("on_probe", step, done.grad_stats, done.activations)
        self._notify("on_step_end", step)
        if step % cfg.eval_every == 0 or step == cfg.steps:
            self._eval_and_log(step)
        return True

    def timed_step(self, step: int, probing: bool = False) -> StepDone:
        """Forward, backward, clip and optimizer step, timed without the probes and impl=auto's measuring
        (CUDA synchronized); what ``normbench bench arms`` times. Of the bookkeeping only a step the loss
        scaler skipped is counted here; the rest is ``_step``'s."""
        x, y = next(self.train_batches)
        acts = probes.activation_probe(self.model) if probing else contextlib.nullcontext({})
        self._sync()
        dispatch_s = self.autotune_s()  # impl=auto measures on a first call: not training time
        start = time.perf_counter()
        with acts as activations:
            loss = self._forward_backward(step, x, y)
            # Gradients as computed, before clipping rescales them in place (the norm alone would
            # otherwise read as max_norm at every clipped step).
            probe_start = time.perf_counter()
            grad_stats = probes.gradient_statistics(self.master) if probing else None
            probe_s = time.perf_counter() - probe_start
            grad_norm = torch.nn.utils.clip_grad_norm_(self.params, self.clip)
            loss_value, grad_value = torch.stack([loss.detach().float(), grad_norm.float()]).tolist()
            if not math.isfinite(loss_value) or (not self.precision.scales_loss and not math.isfinite(grad_value)):
                return StepDone(loss_value, grad_value, diverged=True)
            self.measured.skipped_steps += self.precision.step(self.optimizer)  # True: skipped, an overflow
        self._sync()
        elapsed = time.perf_counter() - start - probe_s - (self.autotune_s() - dispatch_s)
        return StepDone(loss_value, grad_value, grad_stats, activations, elapsed)

    def _forward_backward(self, step: int, x, y) -> torch.Tensor:
        """The loss of one batch, its gradients on the master weights, unscaled."""
        dtypes = norm_input_dtypes(self.model) if step == 1 else contextlib.nullcontext({})
        self.optimizer.zero_grad(set_to_none=True)
        with self.autocast(), dtypes as received:
            loss = self.loss_fn(self.model(x), y)
        if step == 1:
            self.precision_summary["norm_input_dtypes"] = received
        self.precision.backward(loss, self.optimizer)
        return loss

    def _account(self, step: int, done: StepDone, probing: bool):
        """The step's time, loss and gradient norm into what is measured; probe steps are not timed steps."""
        p = self.measured
        p.step, p.train_s = step, p.train_s + done.elapsed_s
        if step > self.timing_warmup and not probing:
            p.step_ms.append(done.elapsed_s * 1e3)
        p.losses.append(done.loss)
        p.last_finite_loss = done.loss
        if math.isfinite(done.grad_norm):
            p.grad_norms.append(done.grad_norm)
        self.spikes.update(step, done.loss)

    def _log_train(self, step: int, lr: float, done: StepDone):
        self.memory.sample()
        self._notify("on_log", step, loss=done.loss, lr=lr, grad_norm=done.grad_norm)

    # -- what the record reads (normbench/training/measures.py) ---------------------------------
    @property
    def batch_size(self) -> int:
        """Examples per training step: ``batch_size``, or the whole split where it is smaller."""
        return self.train_batches.batch_size

    def autotune_s(self) -> float:
        """Seconds the model's impl="auto" norms have spent measuring so far."""
        return sum(auto.measured_s for auto in self.auto_norms)

    def norm_impls(self) -> dict[str, str | None]:
        """{norm site: the impl impl="auto" chose there}; empty when no norm is built with auto."""
        return auto_choices(self.model)
