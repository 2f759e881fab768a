"""normbench: which normalization should this sequence model use, where, and with what settings.

Library API (pure PyTorch, no Hydra):
    build_norm(kind, dim, *, eps=1e-5, gamma_init=1.0, affine=True, impl="native") -> nn.Module
    NormSpec, build_model, ModelShape, build_recurrent, build_transformer, InvalidCombination

Names are imported on first use, so `python -m normbench.report` never loads torch.
"""

import importlib

__version__ = "0.1.0"

_EXPORTS = {
    "build_norm": "normbench.norms", "NormSpec": "normbench.norms", "KINDS": "normbench.norms",
    "build_model": "normbench.models", "ModelShape": "normbench.models", "SequenceModel": "normbench.models",
    "build_recurrent": "normbench.models", "build_transformer": "normbench.models",
    "RecurrentShape": "normbench.models", "TransformerShape": "normbench.models",
    "InvalidCombination": "normbench.models", "parameter_groups": "normbench.models",
}
__all__ = list(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'normbench' has no attribute {name!r}")
