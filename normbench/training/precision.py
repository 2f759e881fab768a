"""What a run computes in: the ``precision`` setting.

    fp32                 everything in float32.
    bf16, fp16           autocast, as most people train: matmuls in half, weights, optimizer and the
                         Transformer's residual stream in float32 (a half sublayer output added to the
                         float32 position table promotes), so a norm on that stream receives float32
                         whatever ``norm.fp32`` says.
    bf16_pure, fp16_pure weights and activations in half (apex O2, pure-bf16 training): every norm
                         receives half, and ``norm.fp32`` decides whether it computes in it. The
                         optimizer steps float32 master weights, copied into the half model after each
                         step; fp16 scales its loss dynamically (torch.amp.GradScaler, on CPU as on
                         CUDA): half gradients below ~6e-8 would otherwise flush to 0.

In the half model the norm layers keep float32 parameters and buffers (apex O2 keeps BatchNorm in
float32 too): the fp32 policy then computes entirely in float32, and the input-dtype policy casts
the parameters to the input's dtype itself (normbench/norms/factory.py).
"""

from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass

import torch
from torch import nn

from normbench.norms import precision_sites


@dataclass(frozen=True)
class Precision:
    name: str
    dtype: torch.dtype | None  # the half dtype; None for fp32
    pure: bool                 # weights and activations in ``dtype``; else autocast

    @property
    def mode(self) -> str:
        return "fp32" if self.dtype is None else "pure" if self.pure else "autocast"


PRECISIONS = {p.name: p for p in (
    Precision("fp32", None, False),
    Precision("bf16", torch.bfloat16, False),
    Precision("fp16", torch.float16, False),
    Precision("bf16_pure", torch.bfloat16, True),
    Precision("fp16_pure", torch.float16, True),
)}


def half_model(model: nn.Module, dtype: torch.dtype) -> nn.Module:
    """A copy of ``model`` with parameters and floating buffers in ``dtype``, norm layers left float32."""
    half = copy.deepcopy(model)
    kept = {id(t) for _, site in precision_sites(half) for t in (*site.parameters(), *site.buffers())}
    for module in half.modules():
        for name, p in module.named_parameters(recurse=False):
            if id(p) not in kept and p.is_floating_point():
                p.data = p.data.to(dtype)
        for name, b in module.named_buffers(recurse=False):
            if id(b) not in kept and b.is_floating_point():
                setattr(module, name, b.to(dtype))
    return half


class MasterWeights:
    """The float32 model the optimizer steps, and the half model that computes forward and backward."""

    def __init__(self, master: nn.Module, model: nn.Module):
        pairs = list(zip(master.parameters(), model.parameters()))
        self.pairs = [(m, h) for m, h in pairs if h.requires_grad]

    def grads_to_master(self) -> None:
        for m, h in self.pairs:
            m.grad = None if h.grad is None else h.grad.to(m.dtype)
            h.grad = None

    @torch.no_grad()
    def master_to_model(self) -> None:
        for m, h in self.pairs:
            h.copy_(m)


class RunPrecision:
    """One run's precision: its entry in PRECISIONS, the model that computes (the float32 master
    itself, or its half copy in a pure mode), autocast, and the loss scaler. The scaler is always
    there, enabled where fp16 needs one (a pure mode on any device, autocast on CUDA): a disabled
    GradScaler passes the loss, the gradients and the optimizer step through unchanged."""

    def __init__(self, name: str, master: nn.Module, device: torch.device):
        self.spec = spec = PRECISIONS[name]
        self.master = master
        self.model = half_model(master, spec.dtype) if spec.pure else master
        self.master_weights = MasterWeights(master, self.model) if spec.pure else None
        fp16 = spec.dtype == torch.float16
        self.scaler = torch.amp.GradScaler(device.type, enabled=fp16 and (spec.pure or device.type == "cuda"))
        self._autocast = (lambda: torch.autocast(device.type, dtype=spec.dtype)) if spec.mode == "autocast" \
            else contextlib.nullcontext
        # fp16 gradients below ~6e-8 flush to 0: the gradient probes scale their loss like a GradScaler.
        self.probe_loss_scale = 2.0**16 if fp16 else 1.0
        self.inputs = spec.dtype if spec.pure else None  # the dtype float inputs are given in (None: as they are)

    @property
    def scales_loss(self) -> bool:
        """Whether steps scale their loss: an overflow then skips the step instead of diverging the run."""
        return self.scaler.is_enabled()

    def autocast(self):
        return self._autocast()

    def summary(self) -> dict:
        """The record's ``precision``; what each norm received is filled in by the first training step."""
        return {"mode": self.spec.mode, "dtype": str(self.spec.dtype or torch.float32).removeprefix("torch."),
                "master_weights": "float32" if self.spec.pure else None,
                "loss_scale": "dynamic" if self.scales_loss else None, "norm_input_dtypes": {}}

    def backward(self, loss: torch.Tensor, optimizer: torch.optim.Optimizer) -> None:
        """The gradients of ``loss`` on the master weights, unscaled."""
        self.scaler.scale(loss).backward()
        if self.master_weights is not None:
            self.master_weights.grads_to_master()
        self.scaler.unscale_(optimizer)

    def step(self, optimizer: torch.optim.Optimizer) -> bool:
        """The optimizer's step, then the half model made its copy again; True when the scaler skipped
        it (an overflow: the step not applied, the scale lowered)."""
        scale = self.scaler.get_scale()
        self.scaler.step(optimizer)
        self.scaler.update()
        if self.master_weights is not None:
            self.master_weights.master_to_model()
        return self.scaler.get_scale() < scale

    def state_dict(self) -> dict | None:
        """The loss scaler's state; None where it is disabled (what checkpoints have always held)."""
        return self.scaler.state_dict() if self.scales_loss else None

    def load_state_dict(self, state: dict | None) -> None:
        if (state is not None) != self.scales_loss:
            raise ValueError("its loss scaler is not this run's")
        if state is not None:
            self.scaler.load_state_dict(state)


@contextlib.contextmanager
def norm_input_dtypes(model: nn.Module):
    """{norm site: dtype its normalization received} during the forward passes inside the block.

    A site is a precision-policy wrapper (its name in ``model``); the dtype is that of the input the
    wrapped norm itself computes on, after the policy's cast: ``float32`` under the fp32 policy
    whatever arrives. Several dtypes at one site are joined with ``|``; a site not called (e.g. the
    compiled LN-LSTM kernel, which computes its norms inside) stays None.
    """
    seen: dict[str, set] = {name: set() for name, _ in precision_sites(model)}
    found: dict[str, str | None] = {}

    def hook(name):
        def record(module, args):
            if args and isinstance(args[0], torch.Tensor):
                seen[name].add(str(args[0].dtype).removeprefix("torch."))
        return record

    handles = [site.norm.register_forward_pre_hook(hook(name)) for name, site in precision_sites(model)]
    try:
        yield found
    finally:
        for handle in handles:
            handle.remove()
        found.update({name: "|".join(sorted(dtypes)) or None for name, dtypes in seen.items()})
