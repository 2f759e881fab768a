"""Dropout on a sequence of layer outputs, off in evaluation.

It draws from torch's global generator, which a run seeds with its seed (run.prepare), so a run's
masks are reproducible per seed. ``same_over_time``: one mask per sequence, used at every step
(Gal & Ghahramani 2016's variational dropout, on the outputs between layers).
"""

from __future__ import annotations

import torch
from torch import nn


class SequenceDropout(nn.Module):
    def __init__(self, rate: float, same_over_time: bool = False):
        super().__init__()
        self.rate, self.same_over_time = rate, same_over_time

    def forward(self, x):
        """(batch, time, d) -> the same, each kept unit scaled by 1 / (1 - rate) while training."""
        if not self.training or self.rate == 0:
            return x
        shape = (x.shape[0], 1, x.shape[-1]) if self.same_over_time else x.shape
        keep = torch.empty(shape, device=x.device, dtype=x.dtype).bernoulli_(1 - self.rate)
        return x * keep / (1 - self.rate)

    def extra_repr(self) -> str:
        return f"rate={self.rate:g}, same_over_time={self.same_over_time}"


def dropout(rate: float, same_over_time: bool = False) -> nn.Module:
    """A SequenceDropout, or an Identity at rate 0 (so a model without dropout is the model it always was)."""
    return SequenceDropout(rate, same_over_time) if rate > 0 else nn.Identity()
