"""A small causal Transformer stack with the norm at one of its placements (normbench/configuration/placements.py).

    pre   x = x + f(norm(x))          ... final norm before the head (Xiong et al. 2020)
    post  x = norm(x + f(x))          (Vaswani et al. 2017)
    peri  x = x + norm_out(f(norm_in(x)))  ... final norm before the head (Sandwich/Peri-LN; ``sandwich`` too)
    lns   x = x + f(norm(x) / sqrt(l))  in block l  ... final norm (LayerNorm Scaling, Sun et al. 2025)
    mix   post in the first floor(post_fraction * L) blocks, pre after  ... final norm (Mix-LN, Li et al. 2025)
    deepnorm  x = norm(alpha * x + f(x)), alpha = (2L)^(1/4), branch init gain (8L)^(-1/4) (Wang et al. 2022)

``qk_norm`` adds the run's norm on each head's queries and keys before the dot product
(Henry et al. 2020; Dehghani et al. 2023; OLMo 2 and Gemma 3 use it), with any placement.

``dropout``: on each residual branch before the add (D below), and on the attention weights
(Vaswani et al. 2017, §5.4); in peri, ``dropout_at`` puts D before or after the branch's out-norm.
    pre   x = x + D(f(norm(x)))       post  x = norm(x + D(f(x)))
    peri  x = x + norm_out(D(f(norm_in(x))))  or  x + D(norm_out(f(norm_in(x))))
With ``lengths`` (a padded batch) attention also masks each example's padded keys.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from normbench.configuration.placements import TRANSFORMER_SLOTS, Depth, Placement, depth_of, placement_of, post_layers
from normbench.configuration.schema import ModelShape, PlacementConfig
from normbench.models.validity import InvalidCombination, check_combination
from normbench.norms import NormSpec
from normbench.norms.masking import real_steps
from normbench.tasks.padding import step_mask


@dataclass(frozen=True)
class TransformerShape:
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    ff_mult: int = 4
    max_len: int = 1024
    causal: bool = True
    qk_norm: bool = False
    dropout: float = 0.0
    dropout_at: str = "after_norm"  # peri only: before_norm | after_norm of the branch's out-norm


class SelfAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int, causal: bool, qk_norm: NormSpec | None = None,
                 dropout: float = 0.0):
        super().__init__()
        if d_model % n_heads:
            raise InvalidCombination(f"transformer d_model {d_model} must be divisible by n_heads {n_heads}")
        self.n_heads, self.causal, self.dropout = n_heads, causal, dropout
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        # One norm over head_dim, its gain shared by the heads (as in Gemma 3 and Qwen 3).
        self.qk_norm = qk_norm is not None
        if self.qk_norm:
            self.q_norm, self.k_norm = qk_norm.build(d_model // n_heads), qk_norm.build(d_model // n_heads)

    def forward(self, x, keys_real: torch.Tensor | None = None):
        """``keys_real`` (batch, time) bool: attend only to those keys (a padded batch's real steps)."""
        batch, steps, d = x.shape
        q, k, v = self.qkv(x).view(batch, steps, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)
        if self.qk_norm:
            q, k = self.q_norm(q), self.k_norm(k)
        p = self.dropout if self.training else 0.0
        if keys_real is None:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal, dropout_p=p)
        else:
            allowed = keys_real[:, None, None, :]  # (batch, 1, query, key)
            if self.causal:
                allowed = allowed & torch.ones(steps, steps, dtype=torch.bool, device=x.device).tril()
            # a padded query of a non-causal model still has its example's real keys: no row is empty
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, dropout_p=p)
        return self.proj(y.transpose(1, 2).reshape(batch, steps, d))


class FeedForward(nn.Sequential):
    def __init__(self, d_model: int, ff_mult: int):
        super().__init__(nn.Linear(d_model, ff_mult * d_model), nn.GELU(), nn.Linear(ff_mult * d_model, d_model))


# slot -> the attribute holding its norm in sublayer i (1: attention, 2: feed-forward): the parameter names
# (``layers.0.norm1.weight``) every record's gradient profile and every checkpoint carries
SLOT_ATTRIBUTES = {"branch_in": "norm{}", "branch_out": "norm{}_out", "main": "norm{}"}


def _unnormalized(x):
    return x


class Block(nn.Module):
    """One residual block for every placement: each sublayer f (attention, then feed-forward) is

        x = main(residual * x + D(branch_out(f(branch_in(x) * branch_in_scale))))

    with the run's norm in the slots the placement fills (normbench/configuration/placements.py) and the identity in
    the others, D the residual dropout; ``dropout_at`` puts D before or after a ``branch_out`` norm. ``depth``:
    what the placement's depth rule sets for this block (residual 1, scale 1, PyTorch's init without one).
    With norm.alpha_rule=width, the attention sublayer's norms take the attention alpha_0, the others the other."""

    def __init__(self, shape: TransformerShape, norm: NormSpec, placement: Placement, depth: Depth = Depth()):
        super().__init__()
        self.placement = placement.name
        self.attn = SelfAttention(shape.d_model, shape.n_heads, shape.causal,
                                  norm.at("attention", shape.d_model) if shape.qk_norm else None, shape.dropout)
        self.mlp = FeedForward(shape.d_model, shape.ff_mult)
        slots = placement.slots_in("transformer")
        sites = {1: norm.at("attention", shape.d_model), 2: norm.at("other", shape.d_model)}
        for slot in slots:  # slot-major, as the parameters were always registered: norm1, norm2, norm1_out, ...
            for i in (1, 2):
                setattr(self, SLOT_ATTRIBUTES[slot].format(i), sites[i].build(shape.d_model))
        self.drop = nn.Dropout(shape.dropout)  # residual dropout: each branch's output before the add
        before = shape.dropout_at == "before_norm"  # D commutes with an empty branch_out slot: either is the same
        self._drop_before, self._drop_after = (self.drop, _unnormalized) if before else (_unnormalized, self.drop)
        # per sublayer, the attribute in each slot (branch_in, branch_out, main), "" for an empty one
        self._filled = {i: tuple(SLOT_ATTRIBUTES[s].format(i) if s in slots else "" for s in TRANSFORMER_SLOTS)
                        for i in (1, 2)}
        self.residual, self.branch_in_scale = depth.residual, depth.branch_in_scale
        if depth.branch_init_gain is not None:
            self._branch_init(depth.branch_init_gain)

    @torch.no_grad()
    def _branch_init(self, gain: float) -> None:
        """DeepNet's init (Wang et al. 2022, Fig. 2): Xavier-normal, gain beta on the FFN, the value and
        output projections, gain 1 on the queries and keys; biases as built."""
        d = self.attn.proj.weight.shape[0]
        q, k, v = self.attn.qkv.weight.split(d)
        for w, g in ((q, 1.0), (k, 1.0), (v, gain), (self.attn.proj.weight, gain),
                     (self.mlp[0].weight, gain), (self.mlp[2].weight, gain)):
            nn.init.xavier_normal_(w, gain=g)

    def _norms(self, i: int):
        return tuple(getattr(self, name) if name else _unnormalized for name in self._filled[i])

    def _sublayer(self, x, i: int, f):
        branch_in, branch_out, main = self._norms(i)
        h = branch_in(x)
        if self.branch_in_scale != 1.0:  # a float multiply only where a depth rule scales: the others' arithmetic as ever
            h = h * self.branch_in_scale
        if self.residual != 1.0:
            x = self.residual * x
        return main(x + self._drop_after(branch_out(self._drop_before(f(h)))))

    def forward(self, x, keys_real=None):
        x = self._sublayer(x, 1, lambda h: self.attn(h, keys_real))
        return self._sublayer(x, 2, self.mlp)


def block_placements(placement: Placement, layers: int, post_fraction: float = 0.25) -> list[Placement]:
    """The placement each of ``layers`` blocks is built with: its own, or with ``first_layers`` (Mix-LN) that
    placement's in the first floor(post_fraction * layers) blocks."""
    early = post_layers(post_fraction, layers) if placement.first_layers else 0
    return [placement_of(placement.first_layers) if i < early else placement for i in range(layers)]


class TransformerStack(nn.Module):
    def __init__(self, shape: TransformerShape, norm: NormSpec, placement: Placement, post_fraction: float = 0.25):
        super().__init__()
        self.pos = nn.Parameter(torch.zeros(shape.max_len, shape.d_model))
        nn.init.normal_(self.pos, std=0.02)
        self.layers = nn.ModuleList(Block(shape, norm, each, depth_of(placement, i + 1, shape.n_layers))
                                    for i, each in enumerate(block_placements(placement, shape.n_layers, post_fraction)))
        # a placement that leaves the residual stream un-normalized (pre, peri) normalizes it once before the head
        self.final_norm = (norm.at("other", shape.d_model) if placement.final_norm else NormSpec("none")).build(shape.d_model)

    def forward(self, x, trace=None, lengths=None):
        """(batch, time, d_model) -> (batch, time, d_model). ``trace`` is unused (no recurrence);
        ``lengths``: a padded batch, whose padded keys attention ignores and BatchNorm's statistics skip."""
        if x.shape[1] > self.pos.shape[0]:
            raise ValueError(f"sequence length {x.shape[1]} exceeds the transformer's max_len {self.pos.shape[0]}")
        real = None if lengths is None else step_mask(lengths.to(x.device), x.shape[1])
        x = x + self.pos[: x.shape[1]]
        with real_steps(real):
            for block in self.layers:
                x = block(x, real)
            return self.final_norm(x)


def build_transformer(shape: TransformerShape, norm: NormSpec, placement: PlacementConfig | str) -> TransformerStack:
    """``placement``: a PlacementConfig or its name (a block has no other placement settings)."""
    placement = PlacementConfig(placement) if isinstance(placement, str) else placement
    check_combination("transformer", norm.kind, placement)
    if shape.qk_norm and not norm.active:
        raise InvalidCombination("model.qk_norm=true needs a norm to apply to queries and keys; "
                                 "valid with norm=none: qk_norm=false")
    if not norm.active:
        return TransformerStack(shape, norm, placement_of("pre"))  # identity norms: x + f(x), no final norm
    return TransformerStack(shape, norm, placement_of(placement.name), placement.post_fraction)


def build(shape: ModelShape, norm: NormSpec, placement: PlacementConfig, max_len: int) -> TransformerStack:
    """The Transformer family's backbone (its descriptor names this builder)."""
    return build_transformer(TransformerShape(shape.hidden, shape.layers, shape.heads, shape.ff_mult, max_len=max_len,
                                              qk_norm=shape.qk_norm, dropout=shape.dropout,
                                              dropout_at=shape.dropout_at), norm, placement)
