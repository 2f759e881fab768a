"""normbench: which normalization should this sequence model use, where, and with what settings.

Library API (pure PyTorch, no Hydra):
    build_norm(kind, dim, *, eps=1e-5, gamma_init=1.0, affine=True, impl="native") -> nn.Module
    NormSpec, build_model, ModelShape, PlacementConfig, build_recurrent, build_transformer, InvalidCombination
Results as data (never loads torch):
    load_runs(*paths) -> pandas.DataFrame, one row per run, the columns of the report's runs.csv

Names are imported on first use, so `python -m normbench.report` never loads torch.
"""

import importlib

__version__ = "0.1.0"

_EXPORTS = {
    "build_norm": "normbench.norms", "NormSpec": "normbench.norms", "KINDS": "normbench.norms",
    "build_model": "normbench.models", "ModelShape": "normbench.models", "PlacementConfig": "normbench.models",
    "SequenceModel": "normbench.models",
    "build_recurrent": "normbench.models", "build_transformer": "normbench.models",
    "RecurrentShape": "normbench.models", "TransformerShape": "normbench.models",
    "InvalidCombination": "normbench.models", "parameter_groups": "normbench.models",
}
__all__ = [*_EXPORTS, "load_runs"]


def load_runs(*paths):
    """Every run recorded under ``paths`` (sweep or run directories, or summary.json files) as a
    pandas DataFrame: one row per run, with the columns of the report's runs.csv (``status``,
    ``seed``, ``config_hash``, ``group_hash``, ``group``, ``axes.*``, ``metrics.*``,
    ``throughput.*``, ``environment.*``, ...). Copies of one run (a rerun, a resumed or copied
    record) are one row, chosen as the report chooses. Unreadable and foreign records are left
    out (the report's reader, normbench/report/records.py); a path that does not exist raises
    FileNotFoundError.
    """
    from pathlib import Path

    from normbench.report import aggregate
    from normbench.report.records import find_records

    from normbench.report.records import quiet_numerics

    records = find_records(Path(p) for p in paths)
    if records.missing_paths:
        raise FileNotFoundError(f"no such file or directory: {', '.join(map(str, records.missing_paths))}")
    with quiet_numerics():
        runs, _ = aggregate.distinct_runs(aggregate.runs_frame(records.runs))
        return aggregate.label_groups(runs, aggregate.varying_axes(runs)).reset_index(drop=True)


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'normbench' has no attribute {name!r}")
