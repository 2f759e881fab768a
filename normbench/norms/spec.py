"""NormSpec: the ``norm`` config group, and what the library's models take to build their norms.

Torch-free (the schema stands on it); the kinds and impls it accepts, and the eps rule, are the
descriptors' (normbench/norms/kinds.py).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from normbench.checks import ConfigError, one_of as _one_of
from normbench.norms.kinds import DEFAULT_IMPL, impl_names, kind_names, kind_of, require_eps


@dataclass
class NormSpec:
    """Everything needed to build one kind of norm at any width: the ``norm`` config group, and what
    the library's models take (``NormSpec("rms").build(dim)``)."""

    kind: str = "ln"
    eps: float = 1e-5
    gamma_init: float = 1.0
    affine: bool = True
    impl: str = DEFAULT_IMPL   # auto: native's arithmetic by the fastest kernel of it here (norms/dispatch.py)
    fp32: bool = True          # compute the norm in fp32 under bf16/fp16 autocast
    alpha_init: float = 0.5    # DyT only
    gain_offset: bool = False  # store gamma - 1 (Gemma's RMSNorm): weight decay pulls the gain toward 1
    # bn only: before every evaluation, population statistics from the current weights (a pass over
    # bn_reestimate_batches batches of 512 training examples, cumulative average) replace the running ones
    bn_reestimate: bool = False
    bn_reestimate_batches: int = 8
    bn_mask: bool = True       # BatchNorm: statistics over the real steps of a padded batch; false: over padding too

    def __post_init__(self):
        _one_of("norm.kind", self.kind, kind_names())
        _one_of("norm.impl", self.impl, impl_names())
        require_eps(self.kind, self.eps)
        for key in ("gamma_init", "alpha_init"):
            if not math.isfinite(getattr(self, key)):
                raise ConfigError(f"norm.{key} must be finite, got {getattr(self, key)}")
        if self.bn_reestimate_batches < 1:
            raise ConfigError(f"norm.bn_reestimate_batches must be >= 1, got {self.bn_reestimate_batches}")

    def build(self, dim: int, per_step: bool = False):
        from normbench.norms.factory import build_norm  # torch only when a layer is built: the config stays torch-free

        layer = {k: v for k, v in asdict(self).items() if not k.startswith("bn_reestimate")}  # the trainer's
        return build_norm(dim=dim, per_step=per_step, **layer)

    @property
    def active(self) -> bool:
        return kind_of(self.kind).active
