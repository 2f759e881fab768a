"""The compiled in-cell LayerNorm-LSTM layer for CPUs (``lnlstm.cpp``), behind an autograd Function; with
``centred`` false the same layer with RMSNorm in place of each LayerNorm.

Each thread of torch's pool runs every time step for its own block of batch rows (rows never
meet in the recurrence), so a step costs one matrix product and a few vectorized passes over each
row. The C++ source is compiled on first use for this CPU's capability (``cpu_build``: AVX-512,
AVX2 or plain). Where that fails (no compiler, no ninja) ``KERNEL.load()`` returns None, ``KERNEL.unavailable``
says why in one line, and the layer uses the Python recurrence instead (LayerNorm; RMSNorm has none, so
the autograd loop of its step), which computes the same function.
"""

from __future__ import annotations

import functools
from pathlib import Path

import torch

from normbench.native import cpu_build

KERNEL = cpu_build.Kernel(Path(__file__).with_name("lnlstm.cpp"), "compiled LN-LSTM kernel",
                          "the Python recurrence (LayerNorm) or the autograd loop (RMSNorm)")
PHASES = ("input_products", "forward_products", "forward_cell", "backward_products", "backward_cell")


def onednn_products(dtype: torch.dtype) -> bool:
    """Whether the kernel's larger matrix products run on oneDNN (gemm.h says why): float32, where
    torch has oneDNN, this CPU runs its float32 matmul, and at full precision (not
    torch.backends.mkldnn's bf16 or tf32)."""
    if dtype != torch.float32 or not torch.backends.mkldnn.is_available():
        return False
    precision = getattr(getattr(torch.backends.mkldnn, "matmul", None), "fp32_precision", "ieee")
    return precision in ("ieee", "none") and _onednn_runs(KERNEL.module)


@functools.cache
def _onednn_runs(module) -> bool:
    return module.onednn_runs()


def phases(on: bool = False) -> dict[str, float]:
    """CPU seconds per phase of the kernel (PHASES) since the last call, summed over calls and threads;
    the kernel's clocks then run until a call with ``on`` false (off, they cost nothing)."""
    return dict(zip(PHASES, KERNEL.module.phases(on)))


class LayerNormLSTMLayer(torch.autograd.Function):
    """h (batch, time, hidden) of the in-cell LN-LSTM on x (batch, time, input); xw = x W_ih^T is one
    product over all time steps.

    ``bias`` is beta_x + beta_h + b_ih + b_hh: the four are added to the same pre-activation, so
    each one's gradient is the sum of da over rows and autograd hands it to all four. ``centred`` false:
    RMSNorm's statistics (no mean subtracted); RMSNorm has no shift, so ``bias`` is b_ih + b_hh and beta_c zeros.
    """

    @staticmethod
    def forward(ctx, x, w_ih, w_hh, gamma_x, gamma_h, bias, gamma_c, beta_c, eps: float, cell_norm: bool,
                centred: bool = True):
        w_ih, w_hh, gamma_x, gamma_h, gamma_c = (t.contiguous() for t in (w_ih, w_hh, gamma_x, gamma_h, gamma_c))
        x_steps = x.transpose(0, 1).contiguous()  # time-major, as the kernel reads it (lnlstm.cpp says why)
        onednn = onednn_products(x.dtype)
        xw = KERNEL.module.project(x_steps, w_ih, onednn)
        saved = KERNEL.module.forward(xw, w_hh, gamma_x, gamma_h, bias.contiguous(), gamma_c, beta_c.contiguous(), eps,
                                      cell_norm, onednn, centred)
        ctx.save_for_backward(x_steps, w_ih, xw, w_hh, gamma_x, gamma_h, gamma_c, *saved)
        ctx.cell_norm, ctx.onednn, ctx.centred = cell_norm, onednn, centred
        return saved[0][1:].transpose(0, 1)

    @staticmethod
    def backward(ctx, grad_out):
        x_steps, w_ih, xw, w_hh, gamma_x, gamma_h, gamma_c, *saved = ctx.saved_tensors
        grad_xw, *grads = KERNEL.module.backward(grad_out, xw, w_hh, gamma_x, gamma_h, gamma_c, ctx.cell_norm, saved,
                                                 ctx.onednn, ctx.centred)
        grad_x, grad_w_ih = KERNEL.module.project_backward(grad_xw, x_steps, w_ih, ctx.needs_input_grad[0],
                                                           ctx.needs_input_grad[1], ctx.onednn)
        return (None if grad_x is None else grad_x.transpose(0, 1), grad_w_ih, *grads, None, None, None)
