"""``optim=muon``: torch.optim.Muon on the hidden weight matrices, AdamW on every other parameter.

Muon (Jordan et al. 2024; torch.optim.Muon) orthogonalizes the momentum of a 2-D weight by Newton-Schulz
iterations, which has a meaning only for a matrix that maps hidden features to hidden features: the
embeddings (or the input projection), the positional table and the head are not such maps, and gains,
biases and DyT's alpha are not matrices, so they stay on AdamW, as in Jordan et al.'s and Moonshot's
setups. One learning rate drives both: Muon's update is rescaled to AdamW's RMS
(``adjust_lr_fn="match_rms_adamw"``, Liu et al. 2025, "Muon is scalable for LLM training"), so the lr a
sweep varies means the same step size to both halves, and the weight decay is decoupled in both.

The pair is one optimizer to the trainer: ``param_groups`` (the schedule sets each group's lr),
``step``, ``zero_grad``, and a ``state_dict`` in torch.optim's own form (groups and per-parameter state
numbered over both halves, Muon's first), so checkpoints and resume treat it as any other.
"""

from __future__ import annotations

import torch
from torch import nn

from normbench.norms import norm_parameters

ALGORITHM = "algorithm"  # the key each param group carries: muon | adamw


def muon_parameters(model: nn.Module) -> set[int]:
    """ids of the parameters Muon steps: the 2-D weights inside the backbone (attention, feed-forward,
    recurrent and gate matrices), not its positional table, not a norm's, not the encoder's or the head's."""
    norms = {id(p) for _, p in norm_parameters(model)}
    return {id(p) for name, p in model.named_parameters()
            if p.dim() == 2 and name.startswith("backbone.") and name != "backbone.pos" and id(p) not in norms}


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
            self.parts.append(torch.optim.Muon(muon_groups, lr=lr, momentum=momentum, nesterov=True,
                                               adjust_lr_fn="match_rms_adamw"))
        if adamw_groups:
            self.parts.append(torch.optim.AdamW(adamw_groups, lr=lr, betas=betas))

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
