"""normbench: which normalization should this sequence model use, where, and with what settings.

Library API (pure PyTorch, no Hydra):
    build_norm(kind, dim, *, eps=1e-5, gamma_init=1.0, affine=True, impl="native") -> nn.Module
    NormSpec, build_model, ModelShape, build_recurrent, build_transformer, InvalidCombination
"""

from normbench.models import (InvalidCombination, ModelShape, RecurrentShape, SequenceModel, TransformerShape,
                              build_model, build_recurrent, build_transformer, parameter_groups)
from normbench.norms import KINDS, NormSpec, build_norm

__version__ = "0.1.0"
__all__ = ["build_norm", "NormSpec", "KINDS", "build_model", "ModelShape", "SequenceModel", "build_recurrent",
           "build_transformer", "RecurrentShape", "TransformerShape", "InvalidCombination", "parameter_groups"]
