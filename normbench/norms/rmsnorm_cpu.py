"""normbench's compiled RMSNorm for CPUs (``rmsnorm.cpp``), behind an autograd Function: the
``compiled`` impl of the ``rms`` norm.

Built on first use for this CPU's capability (``cpu_build``). Where it does not build, ``KERNEL.load()``
returns None, ``KERNEL.unavailable`` says why, and the norm runs PyTorch's native ``F.rms_norm``.
"""

from __future__ import annotations

from pathlib import Path

import torch

from normbench.native import cpu_build

# what the kernel takes: bf16 and fp16 are computed in fp32 and rounded once when stored
TORCH_DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.float16)
KERNEL = cpu_build.Kernel(Path(__file__).with_name("rmsnorm.cpp"), "compiled RMSNorm", "the native one")


def runs_on(device_type: str, dtype: torch.dtype) -> bool:
    """Whether the kernel computes inputs of this device and dtype (builds it on first use)."""
    return device_type == "cpu" and dtype in TORCH_DTYPES and KERNEL.load() is not None


def usable(x: torch.Tensor, weight: torch.Tensor | None = None) -> bool:
    """Whether the kernel runs for this input (and weight: of the input's dtype, as it requires)."""
    return (weight is None or weight.dtype == x.dtype) and runs_on(x.device.type, x.dtype)


class RMSNormFunction(torch.autograd.Function):
    """y = x / sqrt(mean(x^2, last dim) + eps) * weight; ``weight`` may be None."""

    @staticmethod
    def forward(ctx, x, weight, eps: float):
        flat = x.reshape(-1, x.shape[-1]).contiguous()
        w = None if weight is None else weight.contiguous()
        y, rstd = KERNEL.module.forward(flat, w, eps)
        ctx.save_for_backward(flat, w, rstd)
        ctx.shape = x.shape
        return y.view(x.shape)

    @staticmethod
    def backward(ctx, grad_y):
        flat, w, rstd = ctx.saved_tensors
        dx, dw = KERNEL.module.backward(grad_y.reshape(flat.shape), flat, w, rstd)
        return dx.view(ctx.shape), (dw if w is not None else None), None
