"""Speed benchmarks of normbench's parts: ``python -m normbench.bench {kernels,cells,harness,sweep,all,arms}``.

    kernels   norm kernels alone: time, GB/s and fraction of a device copy, per kind x impl x shape x dtype;
              ``fastest_impls`` reduces them to the fastest impl per kind, device and dtype
    cells     the in-cell LN-LSTM training step against nn.LSTM, its fastrnns lower bound, the bare loop;
              ``--grid axes`` at every shape users run, and the masked variable-length batch
    harness   normbench's training loop (probes, logging) against a bare PyTorch loop
    sweep     a multirun on the joblib launcher against the same runs in sequence
    arms      a study's arms rebuilt from their records, timed side by side: SWEEP_DIR/paired-timing.json,
              which the report's throughput reads (normbench.analysis.speed)

``python -m normbench.bench.report_scale --runs 500`` times the report itself (``python -m normbench.report``,
in a child process) over a large synthetic sweep: its wall seconds and peak memory.

Every figure is a ratio of candidates timed side by side in one process (``timing.measure``), so it
holds on a machine that is busy with something else; absolute times are recorded but not relied on.
"""

import importlib

# Imported on first use, so `python -m normbench.bench` puts its stop handling in place (__main__.py)
# before torch loads: a SIGTERM or SIGHUP during those seconds is one line too.
_EXPORTS = {"bytes_moved": "normbench.bench.kernels", "fastest_impls": "normbench.bench.kernels",
            "Timing": "normbench.bench.timing", "measure": "normbench.bench.timing",
            "paired_ratio": "normbench.bench.timing", "time_callable": "normbench.bench.timing"}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'normbench.bench' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)


def as_command(*words: str) -> None:
    """``python -m normbench.bench.NAME ARGS`` is ``normbench bench NAME ARGS``: the one parser refuses what it
    refuses (a size of 0, a negative step count) in one line and exit status 2, where the module alone used to
    import and exit 0 having done nothing (hostile B31, M01, M02)."""
    import sys

    from normbench.__main__ import forward

    forward("bench", [*words, *sys.argv[1:]])
