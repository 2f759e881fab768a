"""NormSpec: the ``norm`` config group, and what the library's models take to build their norms.

Torch-free (the schema stands on it); the kinds and impls it accepts, and the eps rule, are the
descriptors' (normbench/norms/kinds.py).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

from normbench.checks import ConfigError, require_positive
from normbench.checks import one_of as _one_of
from normbench.norms.kinds import DEFAULT_IMPL, impl_names, kind_names, kind_of, require_eps

# norm.alpha_rule=width: DyT's (and Derf's) alpha_0 per site as Zhu et al. 2025 set it for LLaMA (the table of
# alpha_0 by model, its attention column and its other one: FFN and final norm): (widest d_model of the row,
# attention alpha_0, other alpha_0), wider models smaller. 7B and 13B are widths 4096 and 5120, 34B and 70B
# both 8192. A width below the table's takes its first row (no extrapolation toward larger alpha_0).
ALPHA_BY_WIDTH = ((4096, 0.8, 0.2), (5120, 0.6, 0.15), (8192, 0.2, 0.05))
ALPHA_RULES = ("single", "width")   # single: norm.alpha_init at every site (how every earlier record ran)
ALPHA_SITES = ("attention", "other")


def alpha_by_width(site: str, width: int) -> float:
    """alpha_0 of ``site`` (attention: the norm that feeds attention; other: every other) at model width ``width``."""
    _one_of("alpha site", site, ALPHA_SITES)
    row = next((r for r in ALPHA_BY_WIDTH if width <= r[0]), ALPHA_BY_WIDTH[-1])
    return row[1] if site == "attention" else row[2]


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
    groups: int = 1            # ln, rms: statistics per group of dim/groups channels (head-wise, xLSTM / Mamba-2)
    alpha_rule: str = "single"  # dyt, derf: single (alpha_init everywhere) | width (per site, Zhu et al. 2025)
    shift_init: float = 0.0    # derf: s's initial value (Chen et al. 2025's code: 0)

    def __post_init__(self):
        try:
            _one_of("norm.kind", self.kind, kind_names())
        except ConfigError as error:  # a script's register_norm reaches only its own process (docs/extending.md)
            raise ConfigError(f"{error} (your own norm in every process: an entry point, docs/extending.md)") from None
        _one_of("norm.impl", self.impl, impl_names())
        require_eps(self.kind, self.eps)
        _one_of("norm.alpha_rule", self.alpha_rule, ALPHA_RULES)
        if isinstance(self.groups, bool) or not isinstance(self.groups, int) or self.groups < 1:
            raise ConfigError(f"norm.groups must be an integer >= 1, got {self.groups}")
        for key in ("gamma_init", "alpha_init", "shift_init"):
            if not math.isfinite(getattr(self, key)):
                raise ConfigError(f"norm.{key} must be finite, got {getattr(self, key)}")
        # DyT's tanh(alpha x) and Derf's erf(alpha x + s): alpha 0 maps every input to the same value, and a
        # negative one flips the sign the norm passes on (K37, K38)
        require_positive("norm.alpha_init", self.alpha_init)
        if self.bn_reestimate_batches < 1:
            raise ConfigError(f"norm.bn_reestimate_batches must be >= 1, got {self.bn_reestimate_batches}")

    def at(self, site: str, width: int) -> "NormSpec":
        """The spec of the norm at ``site`` (attention | other) of a model of width ``width``: with
        alpha_rule=width its alpha_init is the table's (ALPHA_BY_WIDTH), else this spec itself."""
        if self.alpha_rule != "width" or "alpha_init" not in kind_of(self.kind).params:
            return self
        return replace(self, alpha_init=alpha_by_width(site, width), alpha_rule="single")

    def build(self, dim: int, per_step: bool = False):
        """The norm over ``dim`` features; with alpha_rule=width and no site named (``at``), an "other" site of width dim."""
        from normbench.norms.factory import build_norm  # torch only when a layer is built: the config stays torch-free

        spec = self.at("other", dim)
        layer = {k: v for k, v in asdict(spec).items()
                 if not k.startswith("bn_reestimate") and k != "alpha_rule"}  # the trainer's; at() resolved the rule
        return build_norm(dim=dim, per_step=per_step, **layer)

    @property
    def active(self) -> bool:
        return kind_of(self.kind).active
