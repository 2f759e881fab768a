"""CentredRMSNorm: subtract the mean, divide by the root mean square, one gain per feature.

A norm for normbench is any nn.Module built as ``cls(dim)`` that maps (..., dim) to (..., dim).
Its settings are its constructor's defaults: a variant with other settings is another class and
another entry point name (a run's identity holds the name).
"""

import torch
from torch import nn


class CentredRMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        centred = x - x.mean(dim=-1, keepdim=True)
        return self.weight * centred * torch.rsqrt(centred.square().mean(dim=-1, keepdim=True) + self.eps)
