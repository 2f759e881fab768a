"""Stability probes: what the gradients and activations look like, and how far gradients flow in time.

Each probe reads the model without changing what training does next: probes that run a forward
pass in training mode restore BatchNorm's running statistics afterwards. ``Probes`` is the hook by
which the training loop runs them (normbench/training/train.py).
"""

from __future__ import annotations

import contextlib
import math
from collections import deque
from statistics import median

import torch

from normbench.models import SequenceModel, TransformerStack, layer_of
from normbench.norms import batch_norms
from normbench.training.hooks import Hook


@contextlib.contextmanager
def buffers_preserved(model: torch.nn.Module):
    """Running statistics (and any buffer) come back exactly as they were."""
    saved = {name: buf.clone() for name, buf in model.named_buffers()}
    try:
        yield
    finally:
        with torch.no_grad():
            for name, buf in model.named_buffers():
                if name in saved and buf.shape == saved[name].shape:
                    buf.copy_(saved[name])
                elif name in saved:  # a per-step BatchNorm grew: put the old buffer back
                    module_name, _, attr = name.rpartition(".")
                    setattr(model.get_submodule(module_name) if module_name else model, attr, saved[name])


def gradient_statistics(model: torch.nn.Module) -> dict:
    """Per-layer gradient L2 norms, and std and Pearson kurtosis (normal = 3) pooled over all gradients.

    Everything is accumulated in float64: squares of float32 gradients below ~1e-19 underflow in
    float32, so a vanishing layer's norm would read 0 well above the smallest float32 gradient."""
    per_layer: dict[str, float] = {}
    grads = []
    for name, p in model.named_parameters():
        if p.grad is None:
            continue
        g = p.grad.detach().double().flatten()
        grads.append(g)
        label = layer_of(name)
        per_layer[label] = per_layer.get(label, 0.0) + float(g.square().sum())
    if not grads:
        return {"grad_std": None, "grad_kurtosis": None, "layer_grad_norm": {}}
    pooled = torch.cat(grads)
    centred = pooled - pooled.mean()
    var = centred.square().mean()
    kurtosis = float(centred.pow(4).mean() / var.square()) if var > 0 else None
    return {"grad_std": float(var.sqrt()), "grad_kurtosis": kurtosis,
            "layer_grad_norm": {k: math.sqrt(v) for k, v in per_layer.items()}}


@contextlib.contextmanager
def activation_probe(model: SequenceModel):
    """Max |activation| and RMS of every backbone layer's output during one forward pass."""
    stats: dict[str, dict[str, float]] = {"act_max_abs": {}, "act_rms": {}}

    def hook(name):
        def record(module, inputs, output):
            out = output.detach().double()  # float64 for the sum of squares (see gradient_through_time)
            stats["act_max_abs"][name] = float(out.abs().max())
            stats["act_rms"][name] = float(out.square().mean().sqrt())
        return record

    handles = [layer.register_forward_hook(hook(f"layers.{i}")) for i, layer in enumerate(model.backbone.layers)]
    try:
        yield stats
    finally:
        for h in handles:
            h.remove()


def _loss_scaled(measure, loss_scale: float):
    """Run ``measure(scale)`` with the loss multiplied by ``scale``, as a GradScaler would, so small fp16
    gradients do not flush to zero; back off 256x at a time while anything overflows."""
    scale = loss_scale
    while True:
        values = measure(scale)
        if scale <= 1 or all(math.isfinite(v) for v in values):
            return values
        scale = max(scale / 256, 1.0)


def gradient_through_time(model: SequenceModel, x, y, loss_fn, loss_scale: float = 1.0) -> list[float] | None:
    """‖∂L/∂h_t‖ for t = 1..T on recurrent layer 0 (batch-mean of per-sequence norms), training mode."""
    if not model.recurrent:
        return None

    def measure(scale):
        model.zero_grad(set_to_none=True)
        trace: list[torch.Tensor] = []
        with buffers_preserved(model):
            loss = loss_fn(model(x, trace=trace), y)
            grads = torch.autograd.grad(loss * scale, trace, allow_unused=True)
        # Norms are accumulated in float64: in float32 the squares of a ~1e-23 gradient underflow,
        # and a vanishing gradient would read as exactly 0 long before it is.
        return [float(g.double().norm(dim=-1).mean()) / scale if g is not None else 0.0 for g in grads]
    return _loss_scaled(measure, loss_scale)


def grad_time_ratio(profile: list[float] | None) -> float | None:
    """log10(‖∂L/∂h_1‖ / ‖∂L/∂h_T‖): 0 = no decay through time, -k = k decades lost."""
    if not profile or profile[-1] <= 0 or profile[0] <= 0:
        return None
    return math.log10(profile[0] / profile[-1])


def last_ffn_w2(model: SequenceModel) -> torch.nn.Parameter | None:
    """W^{2,L}: the second weight of the last block's feed-forward net (Xiong et al. 2020, Thm. 1);
    None for a model that is no Transformer."""
    if not isinstance(model.backbone, TransformerStack) or not len(model.backbone.layers):
        return None
    return model.backbone.layers[-1].mlp[-1].weight


def layer_gradient_norms(model: SequenceModel, x, y, loss_fn, loss_scale: float = 1.0) -> tuple[dict[str, float], float | None]:
    """Per-layer gradient norm of one batch (used at initialization), and from the same backward pass
    ‖∂L/∂W^{2,L}‖_F, the norm Xiong et al. 2020 Theorem 1 bounds: O(d·sqrt(ln d)) for Post-LN and
    O(d·sqrt(ln d / L)) for Pre-LN (None for a model that is no Transformer)."""
    w2 = last_ffn_w2(model)

    def measure(scale):
        model.zero_grad(set_to_none=True)
        with buffers_preserved(model):
            (loss_fn(model(x), y) * scale).backward()
        norms = {k: v / scale for k, v in gradient_statistics(model)["layer_grad_norm"].items()}
        last = float(w2.grad.detach().double().norm()) / scale if w2 is not None and w2.grad is not None else None
        measure.result = norms, last
        return list(norms.values()) + ([last] if last is not None else [])
    _loss_scaled(measure, loss_scale)
    model.zero_grad(set_to_none=True)
    return measure.result


@torch.no_grad()
def train_eval_gap(model: SequenceModel, batches, loss_fn) -> float:
    """Loss with batch statistics (train mode) minus loss with running statistics (eval mode)."""
    was_training = model.training
    losses = {}
    for mode in (True, False):
        model.train(mode)
        with buffers_preserved(model):
            losses[mode] = sum(float(loss_fn(model(x), y)) for x, y in batches) / max(len(batches), 1)
    model.train(was_training)
    return losses[True] - losses[False]


class SpikeDetector:
    """A loss spike: loss above ``factor`` x the median of the previous ``window`` losses."""

    def __init__(self, window: int = 50, factor: float = 3.0):
        self.window, self.factor = deque(maxlen=window), factor
        self.steps: list[int] = []

    def update(self, step: int, loss: float) -> bool:
        spike = len(self.window) == self.window.maxlen and loss > self.factor * median(self.window)
        if spike:
            self.steps.append(step)
        self.window.append(loss)
        return spike


class Probes(Hook):
    """The probes as the loop's hook: the gradient profiles at the start of a fresh run and at the end of
    one that did not diverge (with BatchNorm's train/eval gaps, after which the model keeps population
    statistics for the test when norm.bn_reestimate is on), and each probe step's readings kept. What they
    find goes into the trainer's ``progress``, so that checkpoints and the record's sections carry it."""

    def on_fit_start(self, trainer):
        if trainer.start_step:  # a resumed run's initial profiles come back with its progress
            return
        p = trainer.progress
        p.grad_time_init = self._flow(trainer)
        with trainer.autocast():
            p.layer_grad_norm_init, p.ffn_w2_grad_norm_init = layer_gradient_norms(
                trainer.model, *trainer.probe_batch, trainer.loss_fn, trainer.probe_loss_scale)

    def on_probe(self, trainer, step, stats, activations):
        p = trainer.progress
        p.last_probe = {**stats, **activations}
        kurt = stats["grad_kurtosis"]
        if kurt is not None and math.isfinite(kurt):
            p.grad_kurtosis_max = max(kurt, p.grad_kurtosis_max or kurt)

    def on_fit_end(self, trainer):
        p, model = trainer.progress, trainer.model
        if p.diverged_at_step is not None:
            return
        p.grad_time_final = self._flow(trainer)
        if batch_norms(model):
            if trainer.bn_population is not None:  # the gap the running averages would have had, then the
                with trainer.autocast():           # model keeps population statistics for the gap and the test
                    p.bn_train_eval_gap_running = train_eval_gap(model, trainer.val, trainer.loss_fn)
                trainer.reestimate_bn()
            with trainer.autocast():
                p.bn_train_eval_gap = train_eval_gap(model, trainer.val, trainer.loss_fn)

    @staticmethod
    def _flow(trainer):
        with trainer.autocast():
            return gradient_through_time(trainer.model, *trainer.probe_batch, trainer.loss_fn, trainer.probe_loss_scale)
