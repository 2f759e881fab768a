"""The training loop: batches, optimizer, schedule, precision, evaluation, timing and probes."""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import math
import resource
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from statistics import median

import torch

from normbench.training import probes
from normbench.records.convergence import convergence
from normbench.training.hooks import Hook
from normbench.records.metrics import in_record_order
from normbench.configuration.config import Config
from normbench.models import SequenceModel, parameter_groups
from normbench.norms import auto_choices, auto_sites, batch_norms, reestimate_statistics
from normbench.training.muon import build_muon
from normbench.training.precision import PRECISIONS, RunPrecision, norm_input_dtypes
from normbench.records.record import RecordWriter
from normbench.tasks.batching import epoch_order
from normbench.tasks.scoring import Scoring, scoring

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
        progress = (step - cfg.warmup_steps) / max(cfg.steps - cfg.warmup_steps, 1)
        return cfg.lr * 0.5 * (1 + math.cos(math.pi * progress))
    return cfg.lr


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


@torch.no_grad()
def evaluate(model, batches, scoring: Scoring, autocast) -> tuple[float, float]:
    """(metric, loss) of ``model`` over ``batches`` in evaluation mode, under the run's ``autocast`` context
    (RunPrecision.autocast): how training evaluates, and how ``normbench evaluate`` scores kept weights."""
    model.eval()
    total = count = loss_sum = 0.0
    with autocast():
        for x, y in batches:
            out = model(x)
            s, n = scoring.metric_sums(out, y)
            total, count = total + s, count + n
            loss_sum += float(scoring.loss(out, y)) * len(x)
    model.train()
    return total / max(count, 1), loss_sum / sum(len(x) for x, _ in batches)


@dataclass
class Progress:
    """Everything measured so far; a summary can be made from it at any moment (also mid-crash)."""

    step: int = 0
    train_s: float = 0.0
    losses: list = field(default_factory=list)  # every step's training loss, step 1 first
    evals: list = field(default_factory=list)   # (step, val metric) of every evaluation
    grad_norms: list = field(default_factory=list)
    step_ms: list = field(default_factory=list)  # timed steps only
    best_val: float | None = None
    final_val: float | None = None
    test: float | None = None
    steps_to_target: int | None = None
    seconds_to_target: float | None = None
    diverged_at_step: int | None = None
    last_finite_loss: float | None = None
    last_probe: dict = field(default_factory=dict)
    grad_kurtosis_max: float | None = None
    grad_time_init: list | None = None
    grad_time_final: list | None = None
    layer_grad_norm_init: dict = field(default_factory=dict)
    ffn_w2_grad_norm_init: float | None = None  # Transformers: ‖∂L/∂W^{2,L}‖_F of the last block (Xiong et al. Thm. 1)
    bn_train_eval_gap: float | None = None
    bn_train_eval_gap_running: float | None = None
    hidden_var_init: list | None = None  # per block, the residual stream's variance at init (probes.hidden_variance)
    depth_final: dict = field(default_factory=dict)  # the end-of-training depth probes (Trainer._depth_probes)
    skipped_steps: int = 0  # fp16 with a loss scale: steps whose gradients overflowed, not applied


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
    """One run's training: the loop (``fit``), its measurements and the record sections they fill.

    It owns its state: normbench/training/checkpoint.py saves ``state_dict()`` and hands it back through
    ``load_state_dict``. Its precision object (normbench/training/precision.py) holds the half copy and the
    loss scaler; ``timed_step`` is the one step ``bench arms`` times.
    """

    def __init__(self, cfg: Config, task, model: SequenceModel, device: torch.device, record: RecordWriter,
                 logger: Hook | None = None, hooks: Iterable[Hook] = ()):
        self.cfg, self.task, self.device, self.record = cfg, task, device, record
        # normbench/training/loggers.py: the run's logger, then any other hooks (the harness's clocks), each
        # called at the loop's named points: step start and end, log line, probe, evaluation.
        self.logger = logger or Hook()
        self.hooks = [self.logger, *hooks]
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
        self.progress = Progress()
        self.start_step = 0  # steps already done: a run resumed from its checkpoint (normbench/training/checkpoint.py)
        # steps left out of the step-time median: at most all but the last two (the last is a probe
        # step, never timed), so that some step is timed
        self.timing_warmup = min(cfg.timing_warmup, max(cfg.steps - 2, 0))
        if self.timing_warmup < cfg.timing_warmup:
            log.warning("timing_warmup=%d is not below steps=%d: the first %d steps are left out of the step time "
                        "instead", cfg.timing_warmup, cfg.steps, self.timing_warmup)
        self.progress_bar = ProgressBar(cfg, task)
        # Peak memory of this run only: several jobs may share a process (sequential sweeps, joblib).
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        self.rss_peak_mb = 0.0
        self._sample_rss()
        record.summary["precision"] = self.precision.summary()

    # -- measurement ------------------------------------------------------------------------
    def _sample_rss(self):
        """The process's resident memory now (ru_maxrss cannot be reset between jobs, so sample)."""
        try:
            pages = int(open("/proc/self/statm").read().split()[1])
            rss = pages * resource.getpagesize() / 2**20
        except (OSError, ValueError, IndexError):  # no /proc (macOS): the process-wide high-water mark
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (2**20 if sys.platform == "darwin" else 2**10)
        self.rss_peak_mb = max(self.rss_peak_mb, rss)

    def _sync(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def evaluate(self, batches) -> tuple[float, float]:
        return evaluate(self.model, batches, self.scoring, self.autocast)

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

    def _flow_profile(self):
        with self.autocast():
            return probes.gradient_through_time(self.model, *self.probe_batch, self.loss_fn, self.probe_loss_scale)

    def _eval_and_log(self, step: int):
        p = self.progress
        with self._evaluation_statistics():
            val, val_loss = self.evaluate(self.val)
        p.final_val = val
        p.evals.append((step, val))
        if math.isfinite(val) and (p.best_val is None or self.task.better(val, p.best_val)):
            p.best_val = val
        if self.task.reached(val) and p.steps_to_target is None:
            p.steps_to_target, p.seconds_to_target = step, p.train_s
        self.record.log({"kind": "eval", "step": step, "val_metric": val, "val_loss": val_loss, "time_s": p.train_s})
        self.progress_bar.eval(step, p.losses[-1] if p.losses else math.nan, val, p.train_s)
        self._notify("on_eval", step, val_metric=val, val_loss=val_loss)

    def _probe(self, step: int, stats: dict, activations: dict):
        self._notify("on_probe_start", step)
        self.progress.last_probe = {**stats, **activations}
        kurt = stats["grad_kurtosis"]
        if kurt is not None and math.isfinite(kurt):
            self.progress.grad_kurtosis_max = max(kurt, self.progress.grad_kurtosis_max or kurt)
        self.record.log({"kind": "probe", "step": step, **stats, **activations})
        self._notify("on_probe", step, stats, activations)

    def _notify(self, hook: str, step: int, *args, **scalars):
        for target in self.hooks:
            getattr(target, hook)(self, step, *args, **scalars)

    # -- state ------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Everything the rest of the run depends on that the trainer holds, as tensors and plain
        containers: weights (and a pure mode's half copy), optimizer, loss scaler, batch sampler,
        progress, spike detector, and what it has written into its record (the precision section,
        the curves). The process's random generators are not the trainer's (normbench/training/checkpoint.py)."""
        curves = self.record.run_dir / "metrics.jsonl"
        return {
            **self._tensor_state(),
            "progress": dict(vars(self.progress)),
            "spikes": {"window": list(self.spikes.window), "steps": list(self.spikes.steps)},
            "precision": self.record.summary.get("precision"),
            "rss_peak_mb": self.rss_peak_mb,
            "curves": curves.read_text() if curves.is_file() else "",
        }

    def misfit(self, state: dict) -> str | None:
        """Why ``state`` (a ``state_dict()``) does not fit this trainer as built (another model,
        optimizer, precision or task), or None."""
        def shapes(state_dict):
            return {k: (tuple(v.shape), v.dtype) for k, v in state_dict.items()}
        if shapes(state["model"]) != shapes(self.master.state_dict()):
            return "its model is not this run's (other parameters or shapes)"
        half = self.model is not self.master
        if (state["model_half"] is not None) != half or (
                half and shapes(state["model_half"]) != shapes(self.model.state_dict())):
            return "its half-precision model is not this run's"
        if (state["scaler"] is not None) != self.precision.scales_loss:
            return "its loss scaler is not this run's"
        params = [p for group in self.optimizer.param_groups for p in group["params"]]
        saved_ids = [i for group in state["optimizer"]["param_groups"] for i in group["params"]]
        if len(saved_ids) != len(params):
            return "its optimizer is not this run's (another number of parameters)"
        by_id = dict(zip(saved_ids, params))
        for key, entries in state["optimizer"]["state"].items():
            if key not in by_id or not isinstance(entries, dict):
                return "its optimizer state names no parameter of this run"
            for value in entries.values():
                if isinstance(value, torch.Tensor) and value.dim() > 0 and value.shape != by_id[key].shape:
                    return "its optimizer state is not of this run's shapes"
        order = state["batches"]["order"]
        if order.numel() and (int(order.min()) < 0 or int(order.max()) >= self.train_batches.examples):
            return "its batch order indexes examples this task does not have"
        return None

    def load_state_dict(self, state: dict, step: int) -> None:
        """Puts ``state`` (a ``state_dict()`` taken after ``step`` steps) into this freshly built
        trainer, which then continues with step ``step + 1``. All or nothing: one that does not fit
        raises ValueError, and one that fails while being loaded leaves the trainer as built (and raises)."""
        why = self.misfit(state)
        if why is not None:
            raise ValueError(why)
        built = copy.deepcopy(self._tensor_state())
        try:
            self._load_tensor_state(state)
        except Exception:
            self._load_tensor_state(built)
            raise
        for key, value in state["progress"].items():
            setattr(self.progress, key, value)
        self.spikes.window.extend(state["spikes"]["window"])
        self.spikes.steps[:] = state["spikes"]["steps"]
        if state["precision"] is not None:
            self.record.summary["precision"] = state["precision"]
        self.rss_peak_mb = max(self.rss_peak_mb, state["rss_peak_mb"])
        for line in state["curves"].splitlines():  # the curves as they stood at ``step``, then on from there
            self.record.log(json.loads(line))
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
    def fit(self) -> Progress:
        self.model.train()
        if self.start_step == 0:  # a resumed run's initial profiles come back with its progress
            self._initial_grad_profiles()
        for step in range(self.start_step + 1, self.cfg.steps + 1):
            if not self._step(step):
                break
        self.progress_bar.close()
        if self.progress.diverged_at_step is None:
            self._final_grad_profiles()
        self.model.zero_grad(set_to_none=True)
        self.master.zero_grad(set_to_none=True)
        return self.progress

    def _initial_grad_profiles(self):
        p = self.progress
        p.grad_time_init = self._flow_profile()
        with self.autocast():
            p.layer_grad_norm_init, p.ffn_w2_grad_norm_init = probes.layer_gradient_norms(
                self.model, *self.probe_batch, self.loss_fn, self.probe_loss_scale)
            p.hidden_var_init = probes.hidden_variance(self.model, self.probe_batch[0])

    def _depth_probes(self) -> dict:
        """Per block at the end of training, on the probe batch: the residual stream's variance, the gradient
        norm, the largest attention logit, the loss increase when the block is skipped; per DyT/Derf site
        the share of saturated units (normbench/training/probes.py)."""
        x, y = self.probe_batch
        with self.autocast():
            grads, _ = probes.layer_gradient_norms(self.model, x, y, self.loss_fn, self.probe_loss_scale)
            return {"hidden_var_final": probes.hidden_variance(self.model, x), "layer_grad_norm_final": grads,
                    "attn_logit_max_final": probes.attention_logit_max(self.model, x),
                    "saturated_share_final": probes.saturated_share(self.model, x),
                    "layer_skip_loss_increase": probes.layer_skip_losses(self.model, x, y, self.loss_fn)}

    def _final_grad_profiles(self):
        p = self.progress
        p.grad_time_final = self._flow_profile()
        p.depth_final = self._depth_probes()
        if batch_norms(self.model):
            if self.bn_population is not None:  # the gap the running averages would have had, then the
                with self.autocast():           # model keeps population statistics for the gap and the test
                    p.bn_train_eval_gap_running = probes.train_eval_gap(self.model, self.val, self.loss_fn)
                self.reestimate_bn()
            with self.autocast():
                p.bn_train_eval_gap = probes.train_eval_gap(self.model, self.val, self.loss_fn)
        p.test = self.evaluate(fixed_batches(self.task.test, self.device, dtype=self.inputs))[0]

    def _step(self, step: int) -> bool:
        """One training step with its bookkeeping, log line, probe and evaluation; False once it diverged."""
        cfg, p = self.cfg, self.progress
        probing = step == cfg.steps or (cfg.probe_every > 0 and step % cfg.probe_every == 0)
        self._notify("on_step_start", step)
        lr = learning_rate(cfg, step)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        done = self.timed_step(step, probing)
        if done.diverged:
            p.diverged_at_step, p.step = step, step
            self.record.log({"kind": "train", "step": step, "loss": done.loss, "lr": lr,
                             "grad_norm": done.grad_norm, "time_s": p.train_s})
            return False
        self._account(step, done, probing)
        if step % cfg.log_every == 0:
            self._log_train(step, lr, done)
        if probing:
            self._probe(step, done.grad_stats, done.activations)
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
            self.progress.skipped_steps += self.precision.step(self.optimizer)  # True: skipped, an overflow
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
            self.record.summary["precision"]["norm_input_dtypes"] = received
        self.precision.backward(loss, self.optimizer)
        return loss

    def _account(self, step: int, done: StepDone, probing: bool):
        """The step's time, loss and gradient norm into the progress; probe steps are not timed steps."""
        p = self.progress
        p.step, p.train_s = step, p.train_s + done.elapsed_s
        if step > self.timing_warmup and not probing:
            p.step_ms.append(done.elapsed_s * 1e3)
        p.losses.append(done.loss)
        p.last_finite_loss = done.loss
        if math.isfinite(done.grad_norm):
            p.grad_norms.append(done.grad_norm)
        self.spikes.update(step, done.loss)

    def _log_train(self, step: int, lr: float, done: StepDone):
        if self.device.type != "cuda":
            self._sample_rss()
        self.record.log({"kind": "train", "step": step, "loss": done.loss, "lr": lr,
                         "grad_norm": done.grad_norm, "time_s": self.progress.train_s})
        self.progress_bar.train(step, done.loss)
        self._notify("on_log", step, loss=done.loss, lr=lr, grad_norm=done.grad_norm)

    # -- summary ----------------------------------------------------------------------------
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

    def metrics(self) -> dict:
        p = self.progress
        probe = p.last_probe
        acts = probe.get("act_max_abs") or {}
        rms = probe.get("act_rms") or {}
        return in_record_order("metrics", {
            "best_val": p.best_val, "final_val": p.final_val, "test": p.test,
            "final_train_loss": p.losses[-1] if p.losses else None,
            "steps_to_target": p.steps_to_target, "seconds_to_target": p.seconds_to_target,
            "diverged_at_step": p.diverged_at_step, "last_finite_loss": p.last_finite_loss,
            "loss_spikes": len(self.spikes.steps), "loss_spike_steps": self.spikes.steps[:100],
            "grad_norm_median": median(p.grad_norms) if p.grad_norms else None,
            "grad_norm_max": max(p.grad_norms) if p.grad_norms else None,
            "grad_std": probe.get("grad_std"), "grad_kurtosis": probe.get("grad_kurtosis"),
            "grad_kurtosis_max": p.grad_kurtosis_max,
            "act_max_abs": max(acts.values()) if acts else None, "act_rms": max(rms.values()) if rms else None,
            "grad_time_ratio_init": probes.grad_time_ratio(p.grad_time_init),
            "grad_time_ratio": probes.grad_time_ratio(p.grad_time_final),
            "bn_train_eval_gap": p.bn_train_eval_gap, "bn_train_eval_gap_running": p.bn_train_eval_gap_running,
            **self._depth_metrics(),
            **convergence(list(enumerate(p.losses, start=1)), p.evals, self.cfg.steps, p.diverged_at_step is not None),
            "steps_done": p.step,
            "skipped_steps": p.skipped_steps if self.precision.scales_loss else None,
        })

    def _depth_metrics(self) -> dict:
        """One number per depth probe (None where the model or the run has none)."""
        d = self.progress.depth_final
        logits, shares = d.get("attn_logit_max_final") or [], d.get("saturated_share_final") or {}
        return {"hidden_var_log_slope_init": probes.log_slope(self.progress.hidden_var_init),
                "hidden_var_log_slope": probes.log_slope(d.get("hidden_var_final")),
                "layer_grad_log_ratio": probes.depth_grad_log_ratio(d.get("layer_grad_norm_final")),
                "attn_logit_max": max(logits) if logits else None, "saturated_share": shares.get("all"),
                "skip_loss_increase_deep": probes.deep_half_mean(d.get("layer_skip_loss_increase"))}

    def grad_profiles(self) -> dict:
        """The record's ``profiles``: gradient norms per layer and through time (not the analysis's performance profiles)."""
        p = self.progress
        out = {"layer_grad_norm_init": p.layer_grad_norm_init}
        if p.ffn_w2_grad_norm_init is not None:
            out["ffn_w2_grad_norm_init"] = p.ffn_w2_grad_norm_init
        if p.grad_time_init is not None:
            out["grad_time_init"] = p.grad_time_init
        if p.grad_time_final is not None:
            out["grad_time_final"] = p.grad_time_final
        if p.hidden_var_init:
            out["hidden_var_init"] = p.hidden_var_init
        out.update({k: v for k, v in p.depth_final.items() if v})
        return out

    def throughput(self) -> dict:
        p, cfg = self.progress, self.cfg
        timed = sorted(p.step_ms)
        step_ms = median(timed) if timed else None
        batch = self.batch_size
        if self.device.type == "cuda":
            peak, kind = torch.cuda.max_memory_allocated(self.device) / 2**20, "cuda_max_allocated"
        else:
            self._sample_rss()
            peak, kind = self.rss_peak_mb, "process_rss_sampled"
        return in_record_order("throughput", {
            "step_ms_median": step_ms,
            "step_ms_p10": timed[len(timed) // 10] if timed else None,
            "step_ms_p90": timed[(len(timed) * 9) // 10] if timed else None,
            "timed_steps": len(timed), "warmup_steps_excluded": min(self.timing_warmup, p.step),
            "samples_per_s": batch / (step_ms / 1e3) if step_ms else None,
            "tokens_per_s": batch * self.task.seq_len / (step_ms / 1e3) if step_ms else None,
            "peak_memory_mb": peak, "memory_kind": kind,
        })


class ProgressBar:
    """A tqdm bar on a terminal; otherwise one plain log line per evaluation (logs, SLURM, joblib)."""

    def __init__(self, cfg: Config, task):
        self.steps, self.metric = cfg.steps, task.metric
        self.bar = None
        if cfg.progress and sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=cfg.steps, unit="step", leave=False, dynamic_ncols=True)

    def train(self, step: int, loss: float):
        if self.bar is not None:
            self.bar.n = step
            self.bar.set_postfix_str(f"loss {loss:.4g}", refresh=True)

    def eval(self, step: int, loss: float, val: float, train_s: float):
        if self.bar is None:
            log.info("step %d/%d  loss %.4g  val %s %.4g  (%.1f s training)", step, self.steps, loss, self.metric,
                     val, train_s)

    def close(self):
        if self.bar is not None:
            self.bar.close()
