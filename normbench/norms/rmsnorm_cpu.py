"""normbench's compiled RMSNorm for CPUs (``rmsnorm.cpp``, with its autograd Function in C++): the
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


def rms_norm(x: torch.Tensor, weight: torch.Tensor | None, eps: float) -> torch.Tensor:
    """y = x / sqrt(mean(x^2, last dim) + eps) * weight (``weight`` may be None), with its backward:
    the kernel's own autograd Function, in C++ (rmsnorm.cpp says why)."""
    return KERNEL.module.rmsnorm(x, weight, eps)
