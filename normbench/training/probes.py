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


# --- depth, attention and saturation probes (the 2026 claims: Peri-LN, Mix-LN, LayerNorm Scaling,
# QK-norm, DyT's data regime). Each reads one batch once, at the end of training (and the hidden variance
# at initialization too); none changes what training does next. Tested against float64 re-implementations
# written from the papers' equations (tests/training/test_depth_probes.py).

SATURATION_LIMIT = 2.0  # |argument| > 2: tanh within 3.6% of ±1 (Verma 2026's saturation threshold), erf within 0.5%
# class name -> the argument of the bounded function (its saturation is |argument| > SATURATION_LIMIT);
# a subclass finds its own entry first, then its parent's
SATURATING = {
    "DynamicErf": lambda m, x: m.alpha * x + m.shift,   # Chen et al. 2025: erf(αx + s)
    "DynamicTanh": lambda m, x: m.alpha * x,            # Zhu et al. 2025: tanh(αx)
}


def _saturating_argument(module):
    for cls in type(module).__mro__:
        if cls.__name__ in SATURATING:
            return SATURATING[cls.__name__]
    return None


def _blocks(model: SequenceModel):
    return list(getattr(model.backbone, "layers", []))


@contextlib.contextmanager
def _probe_mode(model: SequenceModel):
    """Eval mode (no dropout), except where the model has batch statistics: those have no running statistics
    before training, so it reads them from the batch, as training does, and the buffers come back as they were.
    The model's mode comes back as it was."""
    from normbench.norms import batch_norms

    was = model.training
    model.train(bool(batch_norms(model)))
    try:
        with buffers_preserved(model):
            yield
    finally:
        model.train(was)


@contextlib.contextmanager
def _hooked(modules, hook):
    handles = [m.register_forward_hook(hook(name)) for name, m in modules]
    try:
        yield
    finally:
        for h in handles:
            h.remove()


class _Reader:
    """What one probe reads off a forward pass: the (name, module) pairs it hooks, ``hook(name)`` the forward hook
    for one of them, and ``result()`` once the pass is done. Several readers can share one pass (end_readings)."""

    def __init__(self, modules, hook, result):
        self.modules, self.hook, self.result = modules, hook, result


@contextlib.contextmanager
def _reading(readers):
    with contextlib.ExitStack() as stack:
        for reader in readers:
            stack.enter_context(_hooked(reader.modules, reader.hook))
        yield


@torch.no_grad()
def _read_alone(model: SequenceModel, x, reader: _Reader):
    with _reading([reader]), _probe_mode(model):
        model(x)
    return reader.result()


def _hidden_variance_reader(model: SequenceModel) -> _Reader:
    out: dict[int, float] = {}

    def hook(i):
        def record(module, inputs, output):
            h = output.detach().double()
            out[i] = float(h.var(dim=-1, unbiased=False).mean())
        return record
    return _Reader(list(enumerate(_blocks(model))), hook, lambda: [out[i] for i in sorted(out)])


def hidden_variance(model: SequenceModel, x) -> list[float]:
    """Var of each block's output over its features, per token, averaged over the tokens (the residual
    stream's variance after block ℓ, the quantity Sun et al. 2025 and Kim et al. 2025 plot against depth).
    One forward (_probe_mode)."""
    return _read_alone(model, x, _hidden_variance_reader(model))


def log_slope(values: list[float] | None) -> float | None:
    """OLS slope of ln(value) against the index (0, 1, ...): an exponential growth rate per layer (0 = flat).
    None with fewer than 2 positive finite values."""
    if not values or len(values) < 2 or not all(isinstance(v, float) and math.isfinite(v) and v > 0 for v in values):
        return None
    n = len(values)
    xs = [float(i) for i in range(n)]
    ys = [math.log(v) for v in values]
    mx, my = sum(xs) / n, sum(ys) / n
    return sum((a - mx) * (b - my) for a, b in zip(xs, ys)) / sum((a - mx) ** 2 for a in xs)


LOGIT_PART = 1 << 19  # float64 logits (4 MiB) in each part of the batch attention_logit_max reads at a time


def _causal_mask(module, steps: int, keys_real, device):
    allowed = torch.ones(steps, steps, dtype=torch.bool, device=device)
    if getattr(module, "causal", False):
        allowed = allowed.tril()
    allowed = allowed[None, None]
    if keys_real is not None:
        allowed = allowed & keys_real[:, None, None, :]
    return allowed


def _attention_logit_reader(model: SequenceModel) -> _Reader:
    found: dict[int, float] = {}

    def hook(i):
        def record(module, inputs, output):
            h = inputs[0]
            keys_real = inputs[1] if len(inputs) > 1 else None
            batch, steps, d = h.shape
            heads = module.n_heads
            q, k, _ = module.qkv(h).view(batch, steps, 3, heads, d // heads).permute(2, 0, 3, 1, 4)
            if getattr(module, "qk_norm", False):
                q, k = module.q_norm(q), module.k_norm(k)
            allowed = _causal_mask(module, steps, keys_real, h.device)
            # A few examples at a time: (examples, heads, T, T) float64 logits of the whole probe batch are 268 MB
            # at 512 x 128 and 4 heads, several times slower to fill than in cache-sized parts; a max is the same
            # number whichever parts it is taken over, NaN included (amax propagates it).
            examples = max(1, LOGIT_PART // (heads * steps * steps))
            largest = []
            for first in range(0, batch, examples):
                part = slice(first, first + examples)
                z = (q[part].double() @ k[part].double().transpose(-1, -2)) / math.sqrt(d // heads)
                largest.append(z.abs().masked_fill(~allowed[part if len(allowed) > 1 else slice(None)], 0.0).amax())
            found[i] = float(torch.stack(largest).amax())
        return record
    attentions = [(i, block.attn) for i, block in enumerate(_blocks(model)) if hasattr(block, "attn")]
    return _Reader(attentions, hook, lambda: [found[i] for i in sorted(found)])


def attention_logit_max(model: SequenceModel, x) -> list[float]:
    """Per block, the largest |z_ij| = |⟨q_i, k_j⟩| / sqrt(d_h) over heads, the batch and the pairs the
    attention may use (causal, real keys): the attention logit whose growth Dehghani et al. 2023 and
    Wortsman et al. 2023 (§3.1.1) tie to instability, after QK-norm where the model has it. Empty for a
    model without attention."""
    reader = _attention_logit_reader(model)
    return _read_alone(model, x, reader) if reader.modules else []


def _saturation_reader(model: SequenceModel) -> _Reader:
    counts: dict[str, tuple[int, int]] = {}

    def hook(name):
        def record(module, inputs, output):
            argument = _saturating_argument(module)(module, inputs[0].detach().double())
            saturated, total = counts.get(name, (0, 0))
            counts[name] = (saturated + int((argument.abs() > SATURATION_LIMIT).sum()), total + argument.numel())
        return record

    def result():
        shares = {name: s / t for name, (s, t) in counts.items() if t}
        pooled = [sum(v[0] for v in counts.values()), sum(v[1] for v in counts.values())]
        if pooled[1]:
            shares["all"] = pooled[0] / pooled[1]
        return shares
    sites = [(name, m) for name, m in model.named_modules() if _saturating_argument(m) is not None]
    return _Reader(sites, hook, result)


def saturated_share(model: SequenceModel, x) -> dict[str, float]:
    """{norm site: share of its elements whose bounded function's argument exceeds SATURATION_LIMIT in
    magnitude}, for every DyT / Derf layer (SATURATING), on one forward (_probe_mode); ``all`` pools every
    element of every site. Empty when the model has no such norm."""
    reader = _saturation_reader(model)
    return _read_alone(model, x, reader) if reader.modules else {}


class _BlockIO:
    """Each block's input and output on one forward, and how often it ran; ``replaying(i)`` then runs the forward
    without block i while computing only the blocks after it. The tensors are kept and handed back as copies, so
    that nothing a later pass does to what it is handed can reach the next skipped forward."""

    def __init__(self, blocks, keep: bool):
        self.blocks, self.keep = blocks, keep
        self.inputs, self.outputs, self.calls, self.same = {}, {}, dict.fromkeys(range(len(blocks)), 0), {}

    def reader(self) -> _Reader:
        def hook(i):
            def record(module, inputs, output):
                self.calls[i] += 1
                self.same[i] = isinstance(output, torch.Tensor) and output.shape == inputs[0].shape
                if self.keep and isinstance(output, torch.Tensor):
                    self.outputs[i] = output.clone()
                    if self.same[i]:
                        self.inputs[i] = inputs[0].clone()
            return record
        return _Reader(list(enumerate(self.blocks)), hook, lambda: None)

    def identity(self, i: int) -> bool:
        """Whether block i has an identity to be replaced by: its output a tensor of its input's shape."""
        return bool(self.same.get(i))

    def replayable(self) -> bool:
        """Whether the recorded forward can be replayed: every block ran once and handed on a tensor (a block
        called at every step, or returning a tuple, is not replayed)."""
        return self.keep and all(self.calls[i] == 1 and i in self.outputs for i in range(len(self.blocks)))

    @contextlib.contextmanager
    def replaying(self, skip: int):
        """The blocks before ``skip`` hand back what they returned on the recorded forward, and block ``skip`` its
        input, without computing: from the same input, in a probe mode without randomness (_replayable), they
        would compute exactly that again. An instance ``forward`` shadows the class's while nn.Module calls it."""
        given = {j: self.outputs[j] for j in range(skip)} | {skip: self.inputs[skip]}
        for j, value in given.items():
            self.blocks[j].forward = lambda *args, _value=value, **kwargs: _value.clone()
        try:
            yield
        finally:
            for j in given:
                del self.blocks[j].forward


def _replayable(model: SequenceModel, blocks) -> bool:
    """Whether a probe's forward is a function of its input alone, which replaying blocks assumes: the probe mode is
    eval mode (the model has no batch statistics, so _probe_mode draws no dropout masks), no norm is a user's (which
    could draw or keep state in eval mode too), and every block is its own module with no hooks and no instance
    ``forward`` of its own (a hook would run again around the replayed forward)."""
    from normbench.norms.layers import UserNorm

    return (not batch_norms(model) and not any(isinstance(m, UserNorm) for m in model.modules())
            and len({id(b) for b in blocks}) == len(blocks)
            and not any(b._forward_hooks or b._forward_pre_hooks or "forward" in vars(b) for b in blocks))


@torch.no_grad()
def layer_skip_losses(model: SequenceModel, x, y, loss_fn, readers: tuple[_Reader, ...] = ()) -> list[float | None]:
    """Per block ℓ, loss with block ℓ replaced by the identity minus the full model's loss (_probe_mode, one
    batch): how much the model relies on that layer (Li et al. 2025, Mix-LN, and Sun et al. 2025 drop
    one layer at a time). None for a block whose output width differs from its input's (no identity).

    ``readers`` read the full forward too; they may hook the blocks and what is in them, except a block's norms
    (an in-cell layer compiled by torch.compile runs its step eagerly while they are hooked: recurrent.py). Where
    the probe mode is deterministic (_replayable) each skipped forward replays the blocks before ℓ from the full
    one instead of computing them again: the same numbers, about half the blocks' work. Elsewhere every skipped
    forward runs whole, as it always did (a model with BatchNorm draws its dropout masks in training mode)."""
    blocks = _blocks(model)
    with _probe_mode(model):  # one mode and one set of buffers for the full model and every skip
        seen = _BlockIO(blocks, keep=_replayable(model, blocks))
        with _reading([*readers, seen.reader()]):
            full = float(loss_fn(model(x), y))
        if seen.replayable():  # no randomness: a block without an identity needs no forward to read None
            out: list[float | None] = []
            for i in range(len(blocks)):
                if not seen.identity(i):
                    out.append(None)
                    continue
                with seen.replaying(i):
                    out.append(float(loss_fn(model(x), y)) - full)
            return out
        return [_skipped_whole(model, x, y, loss_fn, block, full) for block in blocks]


def _skipped_whole(model, x, y, loss_fn, block, full: float) -> float | None:
    """The loss with ``block`` replaced by the identity minus ``full``, every block computed: a forward hook hands
    on the block's input where it is a tensor of the output's shape (None: the block has no identity)."""
    shapes = {}

    def skip(module, inputs, output):
        shapes["same"] = isinstance(output, torch.Tensor) and output.shape == inputs[0].shape
        return inputs[0] if shapes["same"] else output
    handle = block.register_forward_hook(skip)
    try:
        skipped = float(loss_fn(model(x), y))
    finally:
        handle.remove()
    return skipped - full if shapes.get("same") else None


def end_readings(model: SequenceModel, x, y, loss_fn) -> dict:
    """The end-of-training readings of one batch that need no gradient: hidden_variance, attention_logit_max,
    saturated_share and layer_skip_losses, each as it reads alone. Where the probe mode is deterministic
    (_replayable) the first two read the skip probe's full forward instead of a forward each. The saturation
    share always reads its own: its hooks sit on the norms, whose hooks change how a compiled in-cell layer runs."""
    if not _replayable(model, _blocks(model)):
        return {"hidden_var": hidden_variance(model, x), "attn_logit_max": attention_logit_max(model, x),
                "saturated_share": saturated_share(model, x), "layer_skip": layer_skip_losses(model, x, y, loss_fn)}
    readers = {"hidden_var": _hidden_variance_reader(model), "attn_logit_max": _attention_logit_reader(model)}
    shares = saturated_share(model, x)  # read before the skip probe, as _depth read it before the shared forward
    skips = layer_skip_losses(model, x, y, loss_fn, tuple(readers.values()))
    return {**{key: reader.result() for key, reader in readers.items()}, "saturated_share": shares,
            "layer_skip": skips}


def deep_half_mean(values: list[float | None] | None) -> float | None:
    """Mean over the deeper half of the blocks (the last ⌈L/2⌉), where every one has a value."""
    if not values:
        return None
    deep = values[len(values) // 2:]
    if any(v is None or not math.isfinite(v) for v in deep):
        return None
    return sum(deep) / len(deep)


def depth_grad_log_ratio(layer_norms: dict[str, float] | None) -> float | None:
    """log10(‖∂L/∂θ_last block‖ / ‖∂L/∂θ_first block‖) from a per-layer gradient profile
    (``layers.<i>`` entries): negative when the deeper blocks get smaller gradients
    (Pre-LN, as Li et al. 2025 report)."""
    if not layer_norms:
        return None
    blocks = {int(k.split(".")[1]): v for k, v in layer_norms.items()
              if k.startswith("layers.") and k.split(".")[1].isdigit() and k.count(".") == 1}
    if len(blocks) < 2:
        return None
    first, last = blocks[min(blocks)], blocks[max(blocks)]
    if not (first > 0 and last > 0):
        return None
    return math.log10(last / first)
class Probes(Hook):
    """The probes as the loop's hook: the gradient profiles at the start of a fresh run and at the end of
    one that did not diverge (with BatchNorm's train/eval gaps, after which the model keeps population
    statistics for the test when norm.bn_reestimate is on), and each probe step's readings kept. What they
    find goes into the trainer's ``measured``, so that checkpoints and the record's sections carry it."""

    def on_fit_start(self, trainer):
        if trainer.start_step:  # a resumed run's initial profiles come back with what it measured
            return
        p = trainer.measured
        p.grad_time_init = self._flow(trainer)
        with trainer.autocast():
            p.layer_grad_norm_init, p.ffn_w2_grad_norm_init = layer_gradient_norms(
                trainer.model, *trainer.probe_batch, trainer.loss_fn, trainer.probe_loss_scale)
            p.hidden_var_init = hidden_variance(trainer.model, trainer.probe_batch[0])

    def on_probe(self, trainer, step, stats, activations):
        p = trainer.measured
        p.last_probe = {**stats, **activations}
        kurt = stats["grad_kurtosis"]
        if kurt is not None and math.isfinite(kurt):
            p.grad_kurtosis_max = max(kurt, p.grad_kurtosis_max or kurt)

    def on_fit_end(self, trainer):
        p, model = trainer.measured, trainer.model
        if p.diverged_at_step is not None:
            return
        p.grad_time_final = self._flow(trainer)
        p.depth_final = self._depth(trainer)
        if batch_norms(model):
            if trainer.bn_population is not None:  # the gap the running averages would have had, then the
                with trainer.autocast():           # model keeps population statistics for the gap and the test
                    p.bn_train_eval_gap_running = train_eval_gap(model, trainer.val, trainer.loss_fn)
                trainer.reestimate_bn()
            with trainer.autocast():
                p.bn_train_eval_gap = train_eval_gap(model, trainer.val, trainer.loss_fn)

    @staticmethod
    def _depth(trainer) -> dict:
        """Per block at the end of training, on the probe batch: the residual stream's variance, the gradient
        norm, the largest attention logit, the loss increase when the block is skipped; per DyT/Derf site
        the share of saturated units."""
        x, y = trainer.probe_batch
        with trainer.autocast():
            grads, _ = layer_gradient_norms(trainer.model, x, y, trainer.loss_fn, trainer.probe_loss_scale)
            read = end_readings(trainer.model, x, y, trainer.loss_fn)
        return {"hidden_var_final": read["hidden_var"], "layer_grad_norm_final": grads,
                "attn_logit_max_final": read["attn_logit_max"], "saturated_share_final": read["saturated_share"],
                "layer_skip_loss_increase": read["layer_skip"]}

    @staticmethod
    def _flow(trainer):
        with trainer.autocast():
            return gradient_through_time(trainer.model, *trainer.probe_batch, trainer.loss_fn, trainer.probe_loss_scale)
