"""Padded batches: how a batch says which steps are real (BatchNorm's statistics over real steps alone are
normbench/norms/masking.py's).

A variable-length example is left-aligned and padded at the end. The padding is marked in the
input itself, so every consumer of a batch (training, evaluation, probes) carries it without a
separate argument: token id ``PAD_TOKEN`` (-1) for token inputs, NaN for feature inputs. The
targets at padded steps are -100 (not scored), so the loss and the metric ignore padding as they
ignore any unscored step. ``SequenceModel`` reads the lengths off the input (or takes them as
``lengths=``) and, while the backbone runs, publishes the (batch, time) mask of real steps
(norms/masking.py: ``real_steps``); BatchNorm reads it to take its batch statistics and running
estimates over real steps alone. Norms that act on one position at a time (LN, RMS, Scale, DyT) need no mask.
"""

from __future__ import annotations

import torch

from normbench.tasks.data import NOT_SCORED, PAD_TOKEN  # noqa: F401 - the tasks write the marks this module reads


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
