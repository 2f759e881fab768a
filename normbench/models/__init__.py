"""Sequence models: encoder -> backbone (recurrent or Transformer, norm at ``placement``) -> head.

A family's backbone is built by the function its descriptor names (normbench/configuration/families.py):
recurrent.py's for rnn, lstm and gru, transformer.py's for the Transformer.

A padded batch (variable lengths, normbench/tasks/padding.py) is read off its padding marks, or given as
``lengths=``: the backbone honours the lengths, a "last" readout takes each example's last real step.
"""

from __future__ import annotations

import importlib

import torch
from torch import nn

from normbench.configuration.families import family_of
from normbench.configuration.placements import INPUT_PREACTIVATION, placement_of
from normbench.configuration.schema import CELL_KERNELS, FAMILIES, ModelShape, PlacementConfig
from normbench.models.recurrent import RecurrentShape, build_recurrent, cell_kernel_in_use
from normbench.models.transformer import TransformerShape, TransformerStack, build_transformer
from normbench.models.validity import InvalidCombination, check_combination, placements_of
from normbench.norms import NormSpec, norm_parameters
from normbench.norms.kinds import kind_of
from normbench.tasks.padding import last_real, lengths_from_input, unmarked

# family -> the built-in placements valid for it (placements_of also sees one registered later)
VALID_PLACEMENTS = {family: placements_of(family) for family in FAMILIES}

__all__ = ["CELL_KERNELS", "FAMILIES", "cell_kernel_in_use", "VALID_PLACEMENTS", "InvalidCombination", "ModelShape", "PlacementConfig", "SequenceModel", "build_model",
           "check_combination", "parameter_groups", "layer_of",
           "RecurrentShape", "TransformerShape", "build_recurrent", "build_transformer"]


class SequenceModel(nn.Module):
    def __init__(self, encoder: nn.Module, backbone: nn.Module, head: nn.Module, readout: str, recurrent: bool):
        super().__init__()
        self.encoder, self.backbone, self.head, self.readout = encoder, backbone, head, readout
        self.recurrent = recurrent  # its family's descriptor says (a trace then holds h_t of layer 0)

    def forward(self, x, trace: list | None = None, lengths: torch.Tensor | None = None):
        """x: (batch, time[, features]); ``lengths`` (batch,) real steps per example, read off the
        padding marks of ``x`` when not given (None: none padded)."""
        steps = x.shape[1]
        if lengths is None:
            lengths = lengths_from_input(x)
        if lengths is not None:
            longest = int(lengths.max())
            x = x[:, :longest]  # steps no example reaches change nothing: not run (bucketed batches gain)
            if bool((lengths >= longest).all()):
                lengths = None  # nothing padded: the model every fixed-length task runs
        h = self.backbone(self.encoder(unmarked(x)), trace, lengths)
        if self.readout != "last":
            out = self.head(h)  # every step: the steps cut off come back as zeros (their targets are not scored)
            return out if out.shape[1] == steps else nn.functional.pad(out, (0, 0, 0, steps - out.shape[1]))
        if getattr(self.backbone, "bidirectional", False):  # forward direction at L, backward at step 1
            ahead, back = h.chunk(2, -1)
            return self.head(torch.cat([last_real(ahead, lengths), back[:, 0]], -1))
        return self.head(last_real(h, lengths))


def batch_normalizes_input(family: str, norm: NormSpec, placement: str) -> bool:
    """Whether the first recurrent layer batch-normalizes W·x_t with per-step statistics (a norm in a wx or
    gates slot: in_cell, gate):
    then a feature encoder's bias b is redundant, and harmful, so the encoder has none.

    Per-step BatchNorm subtracts the constant W·b exactly, so the loss cannot see b; its float32
    gradient is rounding noise, amplified by 1/sqrt(eps) at steps whose input is the same for the whole
    batch (a digit's blank pixels), and Adam turns noise into lr-sized steps. W·b random-walks, the
    running means trail it by ~1/momentum steps, and with one pixel per step the trail is many per-step
    deviations: evaluation with running statistics collapsed to near chance while training looked fine.
    """
    return family_of(family).recurrent and kind_of(norm.kind).per_step is not None \
        and bool(set(placement_of(placement).slots_in(family)) & set(INPUT_PREACTIVATION))


def build_model(shape: ModelShape, norm: NormSpec, placement: PlacementConfig | str, *, input_kind: str,
                input_dim: int, n_outputs: int, readout: str, max_len: int = 1024) -> SequenceModel:
    """input_kind "features": (batch, time, input_dim) floats; "tokens": (batch, time) ids < input_dim.
    ``placement`` is a PlacementConfig, or its name alone (the other placement settings at their defaults).
    An impossible combination raises InvalidCombination (validity.check_combination, from the descriptors)."""
    placement = PlacementConfig(placement) if isinstance(placement, str) else placement
    check_combination(shape.family, norm.kind, placement, bidirectional=shape.bidirectional)  # every family's
    family = family_of(shape.family)
    width_in = getattr(shape, family.input_width)
    if input_kind == "tokens":
        encoder = nn.Embedding(input_dim, width_in)
    else:
        encoder = nn.Linear(input_dim, width_in, bias=not batch_normalizes_input(shape.family, norm, placement.name))
    module, function = family.builder.split(":")
    backbone = getattr(importlib.import_module(module), function)(shape, norm, placement, max_len)
    width_out = shape.hidden * (2 if shape.bidirectional else 1)
    return SequenceModel(encoder, backbone, nn.Linear(width_out, n_outputs), readout, family.recurrent)


def layer_of(param_name: str) -> str:
    """Layer label of a parameter of a SequenceModel: encoder, layers.<i>, final_norm or head."""
    parts = param_name.split(".")
    if parts[0] == "backbone":
        if parts[1] == "layers":
            return f"layers.{parts[2]}"
        return "encoder" if parts[1] == "pos" else parts[1]
    return parts[0]


def parameter_groups(model: nn.Module, weight_decay: float, norm_weight_decay: float = 0.0) -> list[dict]:
    """Optimizer groups: >=2-D weights decay; biases do not; norm gains/biases get ``norm_weight_decay``.

    Decaying gamma toward 0 would measure the optimizer, not the norm, hence the default of 0.
    """
    norm_ids = {id(p) for _, p in norm_parameters(model)}
    decay, no_decay, norms = [], [], []
    for _, p in model.named_parameters():
        if id(p) in norm_ids:
            norms.append(p)
        elif p.dim() >= 2:
            decay.append(p)
        else:
            no_decay.append(p)
    groups = [{"name": "decay", "params": decay, "weight_decay": weight_decay},
              {"name": "no_decay", "params": no_decay, "weight_decay": 0.0},
              {"name": "norm", "params": norms, "weight_decay": norm_weight_decay}]
    return [g for g in groups if g["params"]]
