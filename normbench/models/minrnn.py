"""minGRU and minLSTM (Feng et al. 2024, "Were RNNs All We Needed?"), parallel in training by a log-space scan.

Their gates read the input alone, never h_{t-1}, so the recurrence is linear in h:

    minGRU   z_t = sigmoid(W_z x_t),  h~_t = g(W_h x_t),   h_t = (1 - z_t) * h_{t-1} + z_t * h~_t
    minLSTM  f_t = sigmoid(W_f x_t),  i_t = sigmoid(W_i x_t),  h~_t = g(W_h x_t)
             f'_t = f_t / (f_t + i_t),  i'_t = i_t / (f_t + i_t)   (the paper's gate normalization)
             h_t = f'_t * h_{t-1} + i'_t * h~_t

with g(x) = x + 1/2 for x >= 0, sigmoid(x) below (the paper's log-space version: h~ > 0, so every term has
a logarithm), h_0 = 0. h_t = a_t h_{t-1} + b_t is then computed for every t at once (Heinsen 2023):
log h_t = a*_t + logcumsumexp_t(log b_t - a*_t), a*_t = cumsum_t log a_t. ``sequential`` is the same
recurrence as a loop, what tests hold the scan equal to (1e-10 in float64).

Where the norm sits (the placement's slots for these families, normbench/configuration/placements.py):

    layer_input   pre            h = minRNN(N(x))
    layer_output  post           y = N(h)
    before_gate   gated_before   y = N(h) * silu(W_o x)   (Mamba-2's gated RMSNorm, norm_before_gate=True)
    after_gate    gated_after    y = N(h * silu(W_o x))   (Mamba-2's default, norm_before_gate=False)

The gated placements add Mamba-2's output gate W_o with their norm (Feng et al.'s cells have none): the
comparison between them and pre/post is of a norm with its gate. A model stacks ``layers`` such layers;
padded steps never reach real ones (the scan is causal) and BatchNorm's statistics skip them.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from normbench.norms import NormSpec
from normbench.tasks.padding import real_steps, step_mask

# family -> the input projections its gates need besides h~ (each hidden wide)
GATES = {"mingru": ("z",), "minlstm": ("f", "i")}
GATED_SLOTS = ("before_gate", "after_gate")


def log_g(x: torch.Tensor) -> torch.Tensor:
    """log g(x): log(x + 1/2) for x >= 0, log sigmoid(x) below (Feng et al.'s g, positive everywhere)."""
    return torch.where(x >= 0, torch.log(F.relu(x) + 0.5), -F.softplus(-x))


def g(x: torch.Tensor) -> torch.Tensor:
    return torch.where(x >= 0, x + 0.5, torch.sigmoid(x))


def scan_log(log_a: torch.Tensor, log_b: torch.Tensor) -> torch.Tensor:
    """h_t = a_t h_{t-1} + b_t from h_0 = 0 over dim 1, for all t at once, from log a and log b."""
    a_star = torch.cumsum(log_a, dim=1)
    return torch.exp(a_star + torch.logcumsumexp(log_b - a_star, dim=1))


def coefficients_log(family: str, pre: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """(log a_t, log b_t) of the family's recurrence from its pre-activations ``pre`` (name -> (B, T, H))."""
    log_h = log_g(pre["h"])
    if family == "mingru":  # log(1 - z) = -softplus(k), log z = -softplus(-k)
        return -F.softplus(pre["z"]), -F.softplus(-pre["z"]) + log_h
    # minLSTM: log f' = -softplus(log i - log f), log i' = -softplus(log f - log i)
    diff = F.softplus(-pre["f"]) - F.softplus(-pre["i"])
    return -F.softplus(diff), -F.softplus(-diff) + log_h


def sequential(family: str, pre: dict[str, torch.Tensor]) -> torch.Tensor:
    """The same recurrence step by step, in the paper's plain form (the scan's reference)."""
    h_tilde = g(pre["h"])
    if family == "mingru":
        z = torch.sigmoid(pre["z"])
        keep, take = 1 - z, z
    else:
        f, i = torch.sigmoid(pre["f"]), torch.sigmoid(pre["i"])
        keep, take = f / (f + i), i / (f + i)
    h = torch.zeros_like(h_tilde[:, 0])
    out = []
    for t in range(h_tilde.shape[1]):
        h = keep[:, t] * h + take[:, t] * h_tilde[:, t]
        out.append(h)
    return torch.stack(out, 1)


class _Unnormalized(nn.Module):
    def forward(self, x, step=None):
        return x


class MinRNNLayer(nn.Module):
    """One minGRU or minLSTM layer, (batch, time, input) -> (batch, time, hidden), its norm in ``slots``."""

    def __init__(self, family: str, input_size: int, hidden_size: int, norm: NormSpec, slots: tuple[str, ...]):
        super().__init__()
        if family not in GATES:
            raise ValueError(f"unknown minimal RNN {family!r}; valid: {', '.join(GATES)}")
        self.family, self.hidden_size = family, hidden_size
        gated = bool(set(slots) & set(GATED_SLOTS))
        self.names = (*GATES[family], "h", *(("o",) if gated else ()))
        self.proj = nn.Linear(input_size, len(self.names) * hidden_size)  # one matmul for every gate
        built = {slot: norm.build(input_size if slot == "layer_input" else hidden_size) for slot in slots}
        unnormalized = _Unnormalized()
        self.norm_in = built.get("layer_input", unnormalized)
        self.norm_out = built.get("layer_output", built.get("before_gate", built.get("after_gate", unnormalized)))
        self.gate_after = "after_gate" in slots  # the gate multiplies h before the norm (else after it, or no gate)

    def preactivations(self, x) -> dict[str, torch.Tensor]:
        return dict(zip(self.names, self.proj(self.norm_in(x)).chunk(len(self.names), -1)))

    def forward(self, x, trace=None, lengths=None, parallel: bool = True):
        pre = self.preactivations(x)
        h = scan_log(*coefficients_log(self.family, pre)) if parallel else sequential(self.family, pre)
        if "o" not in pre:
            return self.norm_out(h)
        gate = F.silu(pre["o"])
        return self.norm_out(h * gate) if self.gate_after else self.norm_out(h) * gate


class MinRNNStack(nn.Module):
    """``layers`` minimal-RNN layers; ``trace`` stays empty (no step-by-step state: the scan makes every h_t at once)."""

    def __init__(self, layers: list[MinRNNLayer]):
        super().__init__()
        self.layers = nn.ModuleList(layers)

    def forward(self, x, trace=None, lengths=None):
        with real_steps(None if lengths is None else step_mask(lengths.to(x.device), x.shape[1])):
            for layer in self.layers:
                x = layer(x, None, lengths)
        return x


def build_stack(family: str, input_size: int, hidden_size: int, layers: int, norm: NormSpec,
                slots: tuple[str, ...]) -> MinRNNStack:
    return MinRNNStack([MinRNNLayer(family, input_size if i == 0 else hidden_size, hidden_size, norm, slots)
                        for i in range(layers)])
