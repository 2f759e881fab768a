"""The compiled in-cell LayerNorm-LSTM layer for CPUs (``lnlstm.cpp``), behind an autograd Function.

Each thread of torch's pool runs every time step for its own block of batch rows (rows never
meet in the recurrence), so a step costs one matrix product and a few vectorized passes over each
row. The C++ source is compiled on first use for this CPU's capability (``cpu_build``: AVX-512,
AVX2 or plain). Where that fails (no compiler, no ninja) ``load()`` returns None, ``UNAVAILABLE``
says why in one line, and the layer uses the Python recurrence instead, which computes the same
function.
"""

from __future__ import annotations

from pathlib import Path

import torch

from normbench.models import cpu_build

SOURCE = Path(__file__).with_name("lnlstm.cpp")
UNAVAILABLE: str | None = None
VARIANT: str | None = None  # the capability the loaded module was built for: avx512 | avx2 | default
_module = None


def load():
    """The compiled module, or None (then ``UNAVAILABLE`` says why). Compiles at most once per process."""
    global _module, UNAVAILABLE, VARIANT
    if _module is None and UNAVAILABLE is None:
        _module, VARIANT, UNAVAILABLE = cpu_build.load(SOURCE, "compiled LN-LSTM kernel", "the Python recurrence")
    return _module


def kernel_name() -> str:
    """What the run record calls the compiled kernel: cpp-avx512, cpp-avx2 or cpp-default."""
    return cpu_build.kernel_name(VARIANT)


class LayerNormLSTMLayer(torch.autograd.Function):
    """h (batch, time, hidden) of the in-cell LN-LSTM, from xw = x W_ih^T (batch, time, 4 hidden).

    ``bias`` is beta_x + beta_h + b_ih + b_hh: the four are added to the same pre-activation, so
    each one's gradient is the sum of da over rows and autograd hands it to all four.
    """

    @staticmethod
    def forward(ctx, xw, w_hh, gamma_x, gamma_h, bias, gamma_c, beta_c, eps: float, cell_norm: bool):
        xw, w_hh, gamma_x, gamma_h, gamma_c = (t.contiguous() for t in (xw, w_hh, gamma_x, gamma_h, gamma_c))
        saved = _module.forward(xw, w_hh, gamma_x, gamma_h, bias.contiguous(), gamma_c, beta_c.contiguous(), eps,
                                cell_norm)
        ctx.save_for_backward(xw, w_hh, gamma_x, gamma_h, gamma_c, *saved)
        ctx.cell_norm = cell_norm
        return saved[0][1:].transpose(0, 1)

    @staticmethod
    def backward(ctx, grad_out):
        xw, w_hh, gamma_x, gamma_h, gamma_c, *saved = ctx.saved_tensors
        grads = _module.backward(grad_out, xw, w_hh, gamma_x, gamma_h, gamma_c, ctx.cell_norm, saved)
        return (*grads, None, None)
