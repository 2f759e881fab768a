"""BatchNorm over the real steps of a padded batch: the mask a model publishes while its backbone runs, and
the masked statistics.

``SequenceModel`` reads a padded batch's lengths (normbench/tasks/padding.py: the marks a task writes) and,
while the backbone runs, publishes the (batch, time) mask of real steps here (``real_steps``); BatchNorm
(layers.py) reads it (``real_rows``) to take its batch statistics and running estimates over real steps
alone (``masked_batch_norm``). Norms that act on one position at a time (LN, RMS, Scale, DyT) need no mask.
"""

from __future__ import annotations

import contextlib
import contextvars

import torch

_REAL = contextvars.ContextVar("real_steps", default=None)


@contextlib.contextmanager
def real_steps(mask: torch.Tensor | None):
    """While the block runs, ``mask`` (batch, time) names the real steps for BatchNorm (None: all are)."""
    token = _REAL.set(mask)
    try:
        yield
    finally:
        _REAL.reset(token)


def real_rows(x: torch.Tensor, step: int | None) -> torch.Tensor | None:
    """The mask of real steps matched to ``x``: (batch, time) for (batch, time, d), (batch,) for a
    recurrence's (batch, d) at ``step``, (batch, heads, time) for attention's per-head queries and keys."""
    if torch.compiler.is_compiling():
        return None  # a step through torch.compile (model.cell_kernel=torch_compile) only ever runs unpadded batches
    mask = _REAL.get()
    if mask is None:
        return None
    if x.dim() == 2 and step is not None and x.shape[0] == mask.shape[0]:
        return mask[:, step]
    if tuple(x.shape[:-1]) == tuple(mask.shape):
        return mask
    if x.dim() == 4 and (x.shape[0], x.shape[2]) == tuple(mask.shape):
        return mask[:, None].expand(x.shape[:-1])
    raise ValueError(f"a padded batch's mask of shape {tuple(mask.shape)} does not match a norm input "
                     f"of shape {tuple(x.shape)}")


def masked_batch_norm(x: torch.Tensor, real: torch.Tensor, running_mean: torch.Tensor, running_var: torch.Tensor,
                      weight: torch.Tensor | None, bias: torch.Tensor | None, momentum: float, eps: float):
    """Training-mode BatchNorm of x (n, groups, d) with statistics per (group, feature) over the rows
    where ``real`` (n, groups) holds; ``running_*`` (groups, d) are views of the buffers, updated in
    place (PyTorch's convention: unbiased variance into the running estimate, biased to normalize).
    A group without a real row (a step past every example's end) is normalized with mean 0, var 1
    and leaves its running estimates alone."""
    keep = real.unsqueeze(-1)
    count = keep.sum(0, dtype=x.dtype)  # (groups, 1)
    n = count.clamp_min(1)
    mean = torch.where(keep, x, 0).sum(0) / n
    var = torch.where(keep, (x - mean) ** 2, 0).sum(0) / n
    empty = count == 0
    mean, var = mean.masked_fill(empty, 0), var.masked_fill(empty, 1)
    with torch.no_grad():
        unbiased = var * (n / (n - 1).clamp_min(1))
        running_mean.copy_(torch.where(empty, running_mean, running_mean.lerp(mean.to(running_mean.dtype), momentum)))
        running_var.copy_(torch.where(empty, running_var, running_var.lerp(unbiased.to(running_var.dtype), momentum)))
    y = (x - mean) * torch.rsqrt(var + eps)
    return y if weight is None else y * weight + bias
