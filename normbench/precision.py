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
