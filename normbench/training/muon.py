"""``optim=muon``: Muon (torch.optim.Muon's) on the hidden weight matrices, AdamW on every other parameter.

Muon (Jordan et al. 2024; torch.optim.Muon) orthogonalizes the momentum of a 2-D weight by Newton-Schulz
iterations, which has a meaning only for a matrix that maps hidden features to hidden features: the
embeddings (or the input projection), the positional table and the head are not such maps, and gains,
biases and DyT's alpha are not matrices, so they stay on AdamW, as in Jordan et al.'s and Moonshot's
setups. One learning rate drives both: Muon's update is rescaled to AdamW's RMS
(``adjust_lr_fn="match_rms_adamw"``, Liu et al. 2025, "Muon is scalable for LLM training"), so the lr a
sweep varies means the same step size to both halves, and the weight decay is decoupled in both.

Muon's Newton-Schulz iteration is ``orthogonalize`` below: torch.optim.Muon's bf16 arithmetic (every operation's
result rounded to bfloat16), on a CPU computed by float32 products, one batched product per shape. A CPU without
bf16 matrix units (AVX2, or AVX-512 without BF16) computes torch's bf16 products slowly: on the AMD EPYC the
example ran on, a Muon step of the 2-layer Transformer took 38 ms more than an AdamW one (medians, 57 against 19).

The pair is one optimizer to the trainer: ``param_groups`` (the schedule sets each group's lr),
``step``, ``zero_grad``, and a ``state_dict`` in torch.optim's own form (groups and per-parameter state
numbered over both halves, Muon's first), so checkpoints and resume treat it as any other.
"""

from __future__ import annotations

import math
from collections import defaultdict

import torch
from torch import Tensor, nn

from normbench.norms import norm_parameters

ALGORITHM = "algorithm"  # the key each param group carries: muon | adamw


def muon_parameters(model: nn.Module) -> set[int]:
    """ids of the parameters Muon steps: the 2-D weights inside the backbone (attention, feed-forward,
    recurrent and gate matrices), not its positional table, not a norm's, not the encoder's or the head's."""
    norms = {id(p) for _, p in norm_parameters(model)}
    return {id(p) for name, p in model.named_parameters()
            if p.dim() == 2 and name.startswith("backbone.") and name != "backbone.pos" and id(p) not in norms}


def product_dtype(device: torch.device) -> torch.dtype:
    """The dtype ``orthogonalize`` computes its products in on ``device``: float32 on a CPU (whose bf16 products are
    slow without bf16 matrix units), bfloat16 itself elsewhere, as torch does."""
    return torch.float32 if device.type == "cpu" else torch.bfloat16


def _in_bf16(x: Tensor, work: torch.dtype) -> Tensor:
    """``x`` rounded to bfloat16, held in ``work``: a bf16 operation's result, kept where ``work``'s products are fast."""
    return x.to(torch.bfloat16).to(work)


def orthogonalize(matrices: list[Tensor], coefficients: tuple[float, float, float], steps: int,
                  eps: float) -> list[Tensor]:
    """torch.optim.Muon's Newton-Schulz iteration of each matrix (Jordan et al. 2024: X = G / ||G||_F on the wide
    side, then ``steps`` times X <- aX + (bA + cA^2)X with A = XX^T), in its bf16 arithmetic: the input and every
    operation's result rounded to bfloat16. On a CPU each operation is computed in float32 and then rounded (bf16
    products accumulate in float32 too); elsewhere in bfloat16 itself, as torch does. The matrices of one shape
    are iterated together, one batched product each. Returns matrices holding bf16 values (float32 on a CPU), in
    ``matrices``' order and shapes. torch's own bf16 products round differently on each CPU (its AMX, AVX-512 and
    AVX2 kernels disagreed in 14-30% of the entries, by up to 0.006, on Gaussian matrices of the Transformer's
    shapes, in a check of 2026-12-06 that is not committed); this is one more such kernel (tests/training/test_muon.py
    bounds its distance to torch's and to bf16 arithmetic)."""
    a, b, c = coefficients
    out: list[Tensor] = [torch.empty(0)] * len(matrices)
    by_shape: dict[tuple, list[int]] = defaultdict(list)
    for i, matrix in enumerate(matrices):
        by_shape[(tuple(matrix.shape), matrix.device)].append(i)
    for ((rows, cols), device), where in by_shape.items():
        work = product_dtype(device)
        x = _in_bf16(torch.stack([matrices[i] for i in where]), work)
        if rows > cols:  # iterate on the wide side, where the Gram matrix is the smaller one
            x = x.mT
        norm = _in_bf16(torch.linalg.vector_norm(x, dim=(1, 2), keepdim=True), work)
        x = _in_bf16(x / _in_bf16(norm.clamp(min=eps), work), work)
        for _ in range(steps):
            gram = _in_bf16(x @ x.mT, work)
            polynomial = _in_bf16(torch.baddbmm(gram, gram, gram, beta=b, alpha=c), work)
            x = _in_bf16(torch.baddbmm(x, polynomial, x, beta=a), work)
        if rows > cols:
            x = x.mT
        for k, i in enumerate(where):
            out[i] = x[k]
    return out


# What a record's environment.muon_iteration says ran, by ``product_dtype``: ``orthogonalize`` on a CPU, and off one
ITERATIONS = {torch.float32: "bf16 arithmetic, float32 products", torch.bfloat16: "bf16 products"}


def adjusted_lr(lr: float, adjust_lr_fn: str | None, shape: torch.Size) -> float:
    """torch.optim.Muon's per-matrix lr: ``match_rms_adamw`` scales to AdamW's update RMS (0.2 sqrt(max(A, B)),
    Liu et al. 2025), ``original`` (or None) by sqrt(max(1, A / B)) (Jordan et al.), any other name by 1."""
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return lr * math.sqrt(max(1.0, rows / cols))
    if adjust_lr_fn == "match_rms_adamw":
        return lr * 0.2 * math.sqrt(max(rows, cols))
    return lr


class Muon(torch.optim.Muon):
    """torch.optim.Muon's step written out with ``orthogonalize`` in place of torch's iteration: the same momentum,
    Nesterov update, lr adjustment, decoupled decay and state (``momentum_buffer``), so its state_dict is torch's
    and either resumes the other's. One deliberate difference: with bf16 parameters and ``nesterov=False``, torch's
    iteration divides the momentum buffer itself in place (``grad.bfloat16()`` is the buffer then), every step;
    here the buffer is only ever the momentum (no normbench run has bf16 parameters: the master weights are float32)."""

    @torch.no_grad()
    def step(self, closure=None):
        loss = None if closure is None else torch.enable_grad()(closure)()
        for group in self.param_groups:
            if group["ns_steps"] >= 100 or len(group["ns_coefficients"]) != 3:
                raise ValueError("Muon needs fewer than 100 Newton-Schulz steps and 3 coefficients, got "
                                 f"{group['ns_steps']} and {group['ns_coefficients']}")
            params = [p for p in group["params"] if p.grad is not None]
            momentum, updates = group["momentum"], []
            for p in params:
                if p.grad.is_sparse or torch.is_complex(p) or p.grad.ndim != 2:
                    raise RuntimeError(f"Muon steps dense real 2-D matrices only, got a {tuple(p.grad.shape)} "
                                       f"{'sparse ' if p.grad.is_sparse else ''}{p.grad.dtype} gradient")
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = torch.zeros_like(p.grad, memory_format=torch.preserve_format)
                buffer = state["momentum_buffer"]
                buffer.lerp_(p.grad, 1 - momentum)
                updates.append(p.grad.lerp(buffer, momentum) if group["nesterov"] else buffer)
            orthogonal = orthogonalize(updates, group["ns_coefficients"], group["ns_steps"], group["eps"])
            for p, update in zip(params, orthogonal):
                p.mul_(1 - group["lr"] * group["weight_decay"])
                p.add_(update, alpha=-adjusted_lr(group["lr"], group["adjust_lr_fn"], p.shape))
        return loss


class MuonAdamW:
    """Muon on ``muon_groups``, AdamW on ``adamw_groups`` (each a list of torch.optim param-group dicts)."""

    def __init__(self, muon_groups: list[dict], adamw_groups: list[dict], *, lr: float, betas: tuple[float, float],
                 momentum: float):
        for group in muon_groups:
            group[ALGORITHM] = "muon"
        for group in adamw_groups:
            group[ALGORITHM] = "adamw"
        self.parts = []
        if muon_groups:
            self.parts.append(Muon(muon_groups, lr=lr, momentum=momentum, nesterov=True,
                                   adjust_lr_fn="match_rms_adamw"))
        if adamw_groups:
            self.parts.append(torch.optim.AdamW(adamw_groups, lr=lr, betas=betas))

    def iteration(self) -> str | None:
        """How ``orthogonalize`` computes for the matrices Muon steps (ITERATIONS); None without any."""
        labels = {ITERATIONS[product_dtype(p.device)] for part in self.parts if isinstance(part, Muon)
                  for group in part.param_groups for p in group["params"]}
        return "|".join(sorted(labels)) or None

    @property
    def param_groups(self) -> list[dict]:
        """Every group of both halves, the dicts themselves (setting a group's lr sets the half's)."""
        return [group for part in self.parts for group in part.param_groups]

    @property
    def state(self):
        return {p: s for part in self.parts for p, s in part.state.items()}

    def zero_grad(self, set_to_none: bool = True) -> None:
        for part in self.parts:
            part.zero_grad(set_to_none=set_to_none)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None if closure is None else torch.enable_grad()(closure)()
        for part in self.parts:
            part.step()
        return loss

    def state_dict(self) -> dict:
        """torch.optim's form over both halves: parameters numbered on, Muon's first."""
        groups, state, offset = [], {}, 0
        for part in self.parts:
            own = part.state_dict()
            for group in own["param_groups"]:
                groups.append({**group, "params": [i + offset for i in group["params"]]})
            state.update({i + offset: s for i, s in own["state"].items()})
            offset += sum(len(g["params"]) for g in part.param_groups)
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        groups = state_dict["param_groups"]
        if [g.get(ALGORITHM) for g in groups] != [g[ALGORITHM] for g in self.param_groups]:
            raise ValueError("the optimizer state is not this run's (its Muon and AdamW groups differ)")
        start = 0
        for part in self.parts:
            own = groups[start : start + len(part.param_groups)]
            start += len(part.param_groups)
            ids = [i for g in own for i in g["params"]]
            offset = min(ids, default=0)
            part.load_state_dict({
                "param_groups": [{**g, "params": [i - offset for i in g["params"]]} for g in own],
                "state": {i - offset: s for i, s in state_dict["state"].items() if i in set(ids)}})


def build_muon(model: nn.Module, groups: list[dict], *, lr: float, betas: tuple[float, float],
               momentum: float) -> MuonAdamW:
    """Split ``groups`` (parameter_groups' decay / no_decay / norm) into Muon's (the hidden matrices, which
    are all in ``decay``) and AdamW's (the rest, each group's weight decay kept)."""
    hidden = muon_parameters(model)
    muon, adamw = [], []
    for group in groups:
        mine = [p for p in group["params"] if id(p) in hidden]
        rest = [p for p in group["params"] if id(p) not in hidden]
        if mine:
            muon.append({**group, "params": mine, "name": f"{group.get('name', 'group')}_muon"})
        if rest:
            adamw.append({**group, "params": rest})
    return MuonAdamW(muon, adamw, lr=lr, betas=betas, momentum=momentum)
