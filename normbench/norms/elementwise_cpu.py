"""normbench's compiled elementwise norms for CPUs (``elementwise.cpp``, with its autograd Function in
C++): the ``compiled`` impl of ``dyt`` (y = w tanh(alpha x) + b) and ``derf`` (y = w erf(alpha x + s) + b).

Built on first use for this CPU's capability (``cpu_build``). Where it does not build, ``KERNEL.load()``
returns None, ``KERNEL.unavailable`` says why, and the norm runs its PyTorch formula.
"""

from __future__ import annotations

from pathlib import Path

import torch

from normbench.native import cpu_build

# what the kernel takes: bf16 and fp16 are computed in fp32 and rounded once when stored
TORCH_DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.float16)
KERNEL = cpu_build.Kernel(Path(__file__).with_name("elementwise.cpp"), "compiled DyT/Derf", "the PyTorch formula")
FUNCTIONS = {"tanh": 0, "erf": 1}  # the kernel's kind argument


def runs_on(device_type: str, dtype: torch.dtype) -> bool:
    """Whether the kernel computes inputs of this device and dtype (builds it on first use)."""
    return device_type == "cpu" and dtype in TORCH_DTYPES and KERNEL.load() is not None


def usable(x: torch.Tensor, *params: torch.Tensor | None) -> bool:
    """Whether the kernel runs for this input and these parameters (each of the input's dtype, or None;
    alpha and s may be of any floating dtype: the kernel reads them as numbers)."""
    return all(p is None or p.dtype == x.dtype for p in params) and runs_on(x.device.type, x.dtype)


def elementwise(function: str, x: torch.Tensor, alpha: torch.Tensor, shift: torch.Tensor | None,
                weight: torch.Tensor | None, bias: torch.Tensor | None) -> torch.Tensor:
    """y = weight f(alpha x + shift) + bias over the last dimension (f: ``tanh`` or ``erf``; shift None:
    no shift, as DyT), with its backward: the kernel's own autograd Function, in C++."""
    return KERNEL.module.elementwise(x, alpha, shift, weight, bias, FUNCTIONS[function])
