"""Padded batches: how a batch says which steps are real, and BatchNorm over real steps only.

A variable-length example is left-aligned and padded at the end. The padding is marked in the
input itself, so every consumer of a batch (training, evaluation, probes) carries it without a
separate argument: token id ``PAD_TOKEN`` (-1) for token inputs, NaN for feature inputs. The
targets at padded steps are -100 (not scored), so the loss and the metric ignore padding as they
ignore any unscored step. ``SequenceModel`` reads the lengths off the input (or takes them as
``lengths=``) and, while the backbone runs, publishes the (batch, time) mask of real steps here
(``real_steps``); BatchNorm reads it to take its batch statistics and running estimates over
real steps alone. Norms that act on one position at a time (LN, RMS, Scale, DyT) need no mask.
"""

from __future__ import annotations

import contextlib
import contextvars

import torch

from normbench.tasks.data import NOT_SCORED, PAD_TOKEN  # noqa: F401 - the tasks write the marks this module reads

_REAL = contextvars.ContextVar("real_steps", default=None)


def lengths_from_input(x: torch.Tensor) -> torch.Tensor | None:
    """Per-example lengths read off the padding marks of a (batch, time[, features]) input; None if none is padded."""
    pad = x.isnan().any(-1) if x.is_floating_point() else x == PAD_TOKEN
    if not bool(pad.any()):
        return None
    return (~pad).sum(1)


def unmarked(x: torch.Tensor) -> torch.Tensor:
    """The input with its padding marks replaced by 0 (a valid token id, a zero feature): padded steps
    still flow through the layers, but the mask keeps them from every real step's output."""
    return torch.where(x.isnan(), 0.0, x) if x.is_floating_point() else x.clamp_min(0)


def step_mask(lengths: torch.Tensor, steps: int) -> torch.Tensor:
    """(batch, steps) bool: step t of example b is real iff t < lengths[b]."""
    return torch.arange(steps, device=lengths.device) < lengths[:, None]


def reverse_real(x: torch.Tensor, lengths: torch.Tensor | None) -> torch.Tensor:
    """Each example's real steps in reverse order, padding left at the end (the backward direction's input)."""
    if lengths is None:
        return x.flip(1)
    steps = x.shape[1]
    t = torch.arange(steps, device=x.device)
    lengths = lengths.to(x.device)[:, None]
    index = torch.where(t < lengths, lengths - 1 - t, t)  # (batch, steps)
    return x.gather(1, index.view(*index.shape, *([1] * (x.dim() - 2))).expand_as(x))


def held_past_end(h: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """(batch, time, d): each example's output past its last real step replaced by the one at that step."""
    steps = h.shape[1]
    t = torch.arange(steps, device=h.device)
    index = torch.minimum(t, lengths.to(h.device)[:, None] - 1)  # (batch, time)
    return h.gather(1, index.unsqueeze(-1).expand_as(h))


def last_real(h: torch.Tensor, lengths: torch.Tensor | None) -> torch.Tensor:
    """(batch, time, d) -> (batch, d): each example's output at its last real step."""
    if lengths is None:
        return h[:, -1]
    index = (lengths.to(h.device) - 1).view(-1, 1, 1).expand(-1, 1, h.shape[-1])
    return h.gather(1, index)[:, 0]


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
        return None  # a compiled step (model.cell_kernel=compile) only ever runs unpadded batches
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
