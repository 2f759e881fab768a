"""The compiled in-cell LayerNorm-LSTM layer for CPUs (``lnlstm.cpp``), behind an autograd Function.

Each thread of torch's pool runs every time step for its own block of batch rows (rows never
meet in the recurrence), so a step costs one matrix product and a few vectorized passes over each
row. The C++ source is compiled on first use for this CPU's capability (``cpu_build``: AVX-512,
AVX2 or plain). Where that fails (no compiler, no ninja) ``KERNEL.load()`` returns None, ``KERNEL.unavailable``
says why in one line, and the layer uses the Python recurrence instead, which computes the same
function.
"""

from __future__ import annotations

from pathlib import Path

import torch

from normbench.native import cpu_build

KERNEL = cpu_build.Kernel(Path(__file__).with_name("lnlstm.cpp"), "compiled LN-LSTM kernel", "the Python recurrence")


class LayerNormLSTMLayer(torch.autograd.Function):
    """h (batch, time, hidden) of the in-cell LN-LSTM, from xw = x W_ih^T (batch, time, 4 hidden).

    ``bias`` is beta_x + beta_h + b_ih + b_hh: the four are added to the same pre-activation, so
    each one's gradient is the sum of da over rows and autograd hands it to all four.
    """

    @staticmethod
    def forward(ctx, xw, w_hh, gamma_x, gamma_h, bias, gamma_c, beta_c, eps: float, cell_norm: bool):
        xw, w_hh, gamma_x, gamma_h, gamma_c = (t.contiguous() for t in (xw, w_hh, gamma_x, gamma_h, gamma_c))
        saved = KERNEL.module.forward(xw, w_hh, gamma_x, gamma_h, bias.contiguous(), gamma_c, beta_c.contiguous(), eps,
                                cell_norm)
        ctx.save_for_backward(xw, w_hh, gamma_x, gamma_h, gamma_c, *saved)
        ctx.cell_norm = cell_norm
        return saved[0][1:].transpose(0, 1)

    @staticmethod
    def backward(ctx, grad_out):
        xw, w_hh, gamma_x, gamma_h, gamma_c, *saved = ctx.saved_tensors
        grads = KERNEL.module.backward(grad_out, xw, w_hh, gamma_x, gamma_h, gamma_c, ctx.cell_norm, saved)
        return (*grads, None, None)
