"""The compiled in-cell LayerNorm-GRU layer for CPUs (``gru.cpp``), behind an autograd Function; with
``centred`` false the same layer with RMSNorm in place of each LayerNorm.

Built and threaded as ``lnlstm_cpu`` is: compiled on first use for this CPU's capability
(``cpu_build``), each thread of torch's pool running every time step for its own block of batch
rows. Where it does not build, ``KERNEL.load()`` returns None, ``KERNEL.unavailable`` says why in one line, and
the layer runs its autograd loop (``InCellLayer.step``), which computes the same function.
"""

from __future__ import annotations

from pathlib import Path

import torch

from normbench.native import cpu_build

KERNEL = cpu_build.Kernel(Path(__file__).with_name("gru.cpp"), "compiled LN/RMSNorm-GRU kernel",
                          "the autograd loop")


class LayerNormGRULayer(torch.autograd.Function):
    """h (batch, time, hidden) of the in-cell LN-GRU, from xw = x W_ih^T (batch, time, 3 hidden).

    ``bias_x`` is beta_x + b_ih and ``bias_h`` is beta_h + b_hh: each pair is added to the same
    term, so autograd hands both of a pair the kernel's one gradient. The pairs stay apart because
    the reset gate multiplies the h side's candidate term, its biases included. ``centred`` false: RMSNorm's
    statistics (no mean subtracted); RMSNorm has no shift, so ``bias_x`` is b_ih and ``bias_h`` b_hh.
    """

    @staticmethod
    def forward(ctx, xw, w_hh, gamma_x, gamma_h, bias_x, bias_h, eps: float, centred: bool = True):
        xw, w_hh, gamma_x, gamma_h, bias_h = (t.contiguous() for t in (xw, w_hh, gamma_x, gamma_h, bias_h))
        saved = KERNEL.module.forward(xw, w_hh, gamma_x, gamma_h, bias_x.contiguous(), bias_h, eps, centred)
        ctx.save_for_backward(xw, w_hh, gamma_x, gamma_h, bias_h, *saved)
        ctx.centred = centred
        return saved[0][1:].transpose(0, 1)

    @staticmethod
    def backward(ctx, grad_out):
        xw, w_hh, gamma_x, gamma_h, bias_h, *saved = ctx.saved_tensors
        grads = KERNEL.module.backward(grad_out, xw, w_hh, gamma_x, gamma_h, bias_h, saved, ctx.centred)
        return (*grads, None, None)
