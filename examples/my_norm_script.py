"""Your own norm from a script: register it, then hand over to normbench's command line.

    python examples/my_norm_script.py norm=halfscale task=adding steps=50 threads=1

The kind exists in this process only: a single run, a sweep on the basic launcher, a report run
from here. For joblib workers, studies, rerun and evaluate, install it as a package that declares
the entry point group ``normbench.norms`` (examples/mynorm_package, docs/extending.md).
"""

import sys

import torch
from torch import nn

import normbench


class HalfScaleNorm(nn.Module):
    """x / (2·RMS(x)) with a learned gain: built as cls(dim)."""

    def __init__(self, dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return self.weight * x * torch.rsqrt(4 * x.square().mean(dim=-1, keepdim=True) + 1e-6)


if __name__ == "__main__":
    normbench.register_norm("halfscale", HalfScaleNorm)
    sys.exit(normbench.main(sys.argv[1:]))
