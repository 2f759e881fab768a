"""Normalization layers: one descriptor per kind, one factory, the layers and their compiled kernel.

    kinds.py        one NormKind per kind (what it uses, its classes per impl, what is inert): torch-free
    spec.py         NormSpec, the ``norm`` config group (torch-free)
    layers.py       the layer classes, one per (kind, impl), and impl=auto's mixin (AutoImpl)
    factory.py      build_norm, the precision wrappers
    dispatch.py     impl=auto (the default): which kernel of native's arithmetic runs, decided once per process
    rmsnorm_cpu.py  the compiled RMSNorm (rmsnorm.cpp), ``norm.impl=compiled``

Names are imported on first use, so the schema and the record contract, which stand on kinds.py
and spec.py, never load torch.
"""

import importlib

_EXPORTS = {
    **dict.fromkeys(("NormKind", "register", "unregister", "kind_of", "kind_names", "impl_names", "require_eps", "KINDS",
                     "IMPLS", "CORE_IMPLS", "DEFAULT_IMPL", "inert_settings"), "kinds"),
    **dict.fromkeys(("decide", "decisions"), "dispatch"),
    "NormSpec": "spec",
    **dict.fromkeys(("Norm", "Identity", "ZeroCentredGain", "LayerNorm", "LayerNormReference", "RMSNorm",
                     "RMSNormReference", "RMSNormCompiled", "RMSNormAuto", "BatchNorm", "BatchNormReference", "StepBatchNorm",
                     "ScaleNorm", "ScaleNormReference", "DynamicTanh", "DynamicErf", "batch_norms", "reestimate_statistics",
                     "norm_parameters", "AutoImpl", "classes_of"), "layers"),
    **dict.fromkeys(("build_norm", "norm_class", "REGISTRY", "EXTRA_IMPLS", "LOW_PRECISION",
                     "Fp32Norm", "InputDtypeNorm", "auto_sites", "auto_choices", "precision_sites"),
                    "factory"),
}
__all__ = list(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"normbench.norms.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'normbench.norms' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_EXPORTS])
