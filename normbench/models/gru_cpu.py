"""The compiled in-cell LayerNorm-GRU layer for CPUs (``gru.cpp``), behind an autograd Function.

Built and threaded as ``lnlstm_cpu`` is: compiled on first use for this CPU's capability
(``cpu_build``), each thread of torch's pool running every time step for its own block of batch
rows. Where it does not build, ``load()`` returns None, ``UNAVAILABLE`` says why in one line, and
the layer runs its autograd loop (``InCellLayer.step``), which computes the same function.
"""

from __future__ import annotations

from pathlib import Path

import torch

from normbench.models import cpu_build

SOURCE = Path(__file__).with_name("gru.cpp")
UNAVAILABLE: str | None = None
VARIANT: str | None = None  # the capability the loaded module was built for: avx512 | avx2 | default
_module = None


def load():
    """The compiled module, or None (then ``UNAVAILABLE`` says why). Compiles at most once per process."""
    global _module, UNAVAILABLE, VARIANT
    if _module is None and UNAVAILABLE is None:
        _module, VARIANT, UNAVAILABLE = cpu_build.load(SOURCE, "compiled LN-GRU kernel", "the autograd loop")
    return _module


def kernel_name() -> str:
    """What the run record calls the compiled kernel: cpp-avx512, cpp-avx2 or cpp-default."""
    return cpu_build.kernel_name(VARIANT)


class LayerNormGRULayer(torch.autograd.Function):
    """h (batch, time, hidden) of the in-cell LN-GRU, from xw = x W_ih^T (batch, time, 3 hidden).

    ``bias_x`` is beta_x + b_ih and ``bias_h`` is beta_h + b_hh: each pair is added to the same
    term, so autograd hands both of a pair the kernel's one gradient. The pairs stay apart because
    the reset gate multiplies the h side's candidate term, its biases included.
    """

    @staticmethod
    def forward(ctx, xw, w_hh, gamma_x, gamma_h, bias_x, bias_h, eps: float):
        xw, w_hh, gamma_x, gamma_h, bias_h = (t.contiguous() for t in (xw, w_hh, gamma_x, gamma_h, bias_h))
        saved = _module.forward(xw, w_hh, gamma_x, gamma_h, bias_x.contiguous(), bias_h, eps)
        ctx.save_for_backward(xw, w_hh, gamma_x, gamma_h, bias_h, *saved)
        return saved[0][1:].transpose(0, 1)

    @staticmethod
    def backward(ctx, grad_out):
        xw, w_hh, gamma_x, gamma_h, bias_h, *saved = ctx.saved_tensors
        grads = _module.backward(grad_out, xw, w_hh, gamma_x, gamma_h, bias_h, saved)
        return (*grads, None)
