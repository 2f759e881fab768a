"""``impl="auto"``: the faster of native and reference, measured on this machine, once per shape.

On a layer's first forward for a (device, dtype, shape) the two implementations run forward +
backward on a copy of the input, interleaved A/B so a busy machine slows both alike, and the
faster one (median) is used by that layer from then on. The layer keeps its choices and the time
it spent measuring (``AutoNorm.choices``, ``AutoNorm.measured_s``): the trainer keeps that time
out of train_s and the record names each choice. Each reference class subclasses its native
class, so both run on the same parameters and buffers.
"""

from __future__ import annotations

import time
from statistics import median

import torch

REPEATS, WARMUP = 5, 1
CLEAR_WIN = 1.5  # after 3 repeats, a gap this large is not noise: stop measuring


def _fwd_bwd(cls, module, x, step):
    """Forward and the whole backward (input and parameter gradients), accumulating nothing.

    The upstream gradient is a dense tensor, as training gives. Not ``out.sum()``: its gradient is
    a stride-0 expansion, which sends native BatchNorm's fp32 backward down a path 8x slower on a
    CPU, so auto measured it slower than the reference and chose wrong.
    """
    x = x.detach().requires_grad_()
    wrt = [x, *(p for p in module.parameters() if p.requires_grad)]
    out = cls.forward(module, x, step)
    torch.autograd.grad(out, wrt, torch.ones_like(out))


def _sync(x):
    if x.device.type == "cuda":
        torch.cuda.synchronize(x.device)


def measure(module, x: torch.Tensor, step, candidates: dict[str, type]) -> dict[str, float]:
    """The median forward+backward time of each candidate on ``x``, in ms; ``module`` is left as it was."""
    buffers = {n: b.clone() for n, b in module.named_buffers()}
    times = {name: [] for name in candidates}
    with torch.enable_grad():  # the first call for a shape may come from evaluation, under no_grad
        _measure(candidates, module, x, step, times)
    with torch.no_grad():  # measuring must not train: BatchNorm's running statistics come back
        for n, b in module.named_buffers():
            b.copy_(buffers[n])
    return {name: median(t) * 1e3 for name, t in times.items()}


def _measure(candidates, module, x, step, times):
    """Forward+backward of each candidate, interleaved; stops early once one is clearly faster."""
    for rep in range(WARMUP + REPEATS):
        for name, cls in candidates.items():
            _sync(x)
            start = time.perf_counter()
            _fwd_bwd(cls, module, x, step)
            _sync(x)
            if rep >= WARMUP:
                times[name].append(time.perf_counter() - start)
        medians = [median(t) for t in times.values() if t]
        if rep - WARMUP >= 2 and max(medians) > CLEAR_WIN * min(medians):
            break
