"""The order in which an epoch visits a split's examples: shuffled, or bucketed by length."""

from __future__ import annotations

import torch


def epoch_order(n: int, batch_size: int, generator: torch.Generator, lengths: torch.Tensor | None = None):
    """A permutation of range(n) whose consecutive ``batch_size`` blocks are the epoch's batches.

    With ``lengths`` (bucketing): a random remainder of n mod batch_size is set aside (the batcher
    never reaches it), the rest sorted by length (ties in random order) and cut into batches, and the
    batches shuffled. So every batch holds examples of about one length, and every example is as
    likely as any other to sit out an epoch. Without, a plain shuffle (the same draws as ever)."""
    order = torch.randperm(n, generator=generator)
    if lengths is None:
        return order
    used = n - n % batch_size
    kept, rest = order[:used], order[used:]
    ties = torch.rand(used, generator=generator, dtype=torch.float64)
    by_length = kept[torch.argsort(lengths[kept].double() + ties)]
    batches = by_length.view(-1, batch_size)[torch.randperm(used // batch_size, generator=generator)]
    return torch.cat([batches.reshape(-1), rest])
