"""A small causal Transformer stack with the norm at one of three places.

    pre   x = x + f(norm(x))          ... final norm before the head (Xiong et al. 2020)
    post  x = norm(x + f(x))          (Vaswani et al. 2017)
    peri  x = x + norm_out(f(norm_in(x)))  ... final norm before the head (Sandwich/Peri-LN)

``qk_norm`` adds the run's norm on each head's queries and keys before the dot product
(Henry et al. 2020; Dehghani et al. 2023; OLMo 2 and Gemma 3 use it), with any placement.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from normbench.models.validity import InvalidCombination, check_combination
from normbench.norms import NormSpec


@dataclass(frozen=True)
class TransformerShape:
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    ff_mult: int = 4
    max_len: int = 1024
    causal: bool = True
    qk_norm: bool = False


class SelfAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int, causal: bool, qk_norm: NormSpec | None = None):
        super().__init__()
        if d_model % n_heads:
            raise InvalidCombination(f"transformer d_model {d_model} must be divisible by n_heads {n_heads}")
        self.n_heads, self.causal = n_heads, causal
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        # One norm over head_dim, its gain shared by the heads (as in Gemma 3 and Qwen 3).
        self.qk_norm = qk_norm is not None
        if self.qk_norm:
            self.q_norm, self.k_norm = qk_norm.build(d_model // n_heads), qk_norm.build(d_model // n_heads)

    def forward(self, x):
        batch, steps, d = x.shape
        q, k, v = self.qkv(x).view(batch, steps, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)
        if self.qk_norm:
            q, k = self.q_norm(q), self.k_norm(k)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        return self.proj(y.transpose(1, 2).reshape(batch, steps, d))


class FeedForward(nn.Sequential):
    def __init__(self, d_model: int, ff_mult: int):
        super().__init__(nn.Linear(d_model, ff_mult * d_model), nn.GELU(), nn.Linear(ff_mult * d_model, d_model))


class _Block(nn.Module):
    def __init__(self, shape: TransformerShape, norm: NormSpec):
        super().__init__()
        self.attn = SelfAttention(shape.d_model, shape.n_heads, shape.causal, norm if shape.qk_norm else None)
        self.mlp = FeedForward(shape.d_model, shape.ff_mult)
        self.norm1 = norm.build(shape.d_model)
        self.norm2 = norm.build(shape.d_model)


class PreNormBlock(_Block):
    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class PostNormBlock(_Block):
    def forward(self, x):
        x = self.norm1(x + self.attn(x))
        return self.norm2(x + self.mlp(x))


class PeriNormBlock(_Block):
    def __init__(self, shape, norm):
        super().__init__(shape, norm)
        self.norm1_out = norm.build(shape.d_model)
        self.norm2_out = norm.build(shape.d_model)

    def forward(self, x):
        x = x + self.norm1_out(self.attn(self.norm1(x)))
        return x + self.norm2_out(self.mlp(self.norm2(x)))


BLOCKS = {"pre": PreNormBlock, "post": PostNormBlock, "peri": PeriNormBlock}


class TransformerStack(nn.Module):
    def __init__(self, shape: TransformerShape, norm: NormSpec, placement: str):
        super().__init__()
        self.pos = nn.Parameter(torch.zeros(shape.max_len, shape.d_model))
        nn.init.normal_(self.pos, std=0.02)
        self.layers = nn.ModuleList(BLOCKS[placement](shape, norm) for _ in range(shape.n_layers))
        # Pre- and Peri-LN leave the residual stream un-normalized: normalize it once before the head.
        self.final_norm = norm.build(shape.d_model) if placement in ("pre", "peri") else NormSpec("none").build(shape.d_model)

    def forward(self, x, trace=None):
        """(batch, time, d_model) -> (batch, time, d_model). ``trace`` is unused (no recurrence)."""
        if x.shape[1] > self.pos.shape[0]:
            raise ValueError(f"sequence length {x.shape[1]} exceeds the transformer's max_len {self.pos.shape[0]}")
        x = x + self.pos[: x.shape[1]]
        for block in self.layers:
            x = block(x)
        return self.final_norm(x)


def build_transformer(shape: TransformerShape, norm: NormSpec, placement: str) -> TransformerStack:
    check_combination("transformer", norm.kind, placement)
    if shape.qk_norm and not norm.active:
        raise InvalidCombination("model.qk_norm=true needs a norm to apply to queries and keys; "
                                 "valid with norm=none: qk_norm=false")
    if not norm.active:
        return TransformerStack(shape, norm, "pre")  # identity norms: x + f(x), no final norm
    return TransformerStack(shape, norm, placement)
