"""``impl="auto"`` (the default): native's arithmetic, run by the fastest kernel of it that runs here.

Each kind's descriptor (kinds.py, ``fastest``) names, per device type, the kind's own kernels of
native's arithmetic to run instead of native; the first whose class runs on the input's device and
dtype (``runs_on``: for rmsnorm.cpp a CPU, fp32, fp64, bf16 or fp16, and a kernel that builds) is used, native
everywhere else. ``decide`` makes each (kind, device type, dtype, width) decision once per process
and keeps it; a layer built with auto (``layers.AutoImpl``) keeps the decisions it ran, which the record
names (``environment.norm_impls``).

Why a table and not a measurement. The choices it makes are the ones the committed benchmark
measured with a wide margin (reports/bench-cpu/kernels.csv, fp32 forward+backward, 2-core AMD
EPYC, AVX-512): the compiled RMSNorm takes 0.20-0.22x native RMSNorm's time at every shape
(7.59 against 37.6 ms at 32768x256) and about native LayerNorm's (0.95x), while for every other
kind native is the fastest impl or within 5% of it. The gap holds for the kernel's other builds:
with ATEN_CPU_CAPABILITY=avx2 and =default (no SIMD; ATen's kernels lowered alike) it took
0.14-0.22x and 0.27-0.35x native's time at widths 64, 256 and 1024 (`bench kernels --kinds ln,rms
--hidden 64,256,1024 --dtypes fp32 --threads 1` on a loaded 2-core AMD EPYC, load 9). A gap of 5x needs no measuring on each
machine, and a gap of 5% cannot be measured on a loaded one: the auto before this one timed each
layer on its first call and chose by the load of that moment (on a busy 2-core machine, layers of
one width chose differently). A table chooses the same kernels for every run of a config on one
kind of machine and spends no training time on it. In bf16 (``norm.fp32=false``) the same
table holds for the same reason: native RMSNorm took 2.5-5.8x native LayerNorm's forward+backward at
widths 64-1024 (reports/bench-cpu/quiet-2026-12-01), and the kernel computes bf16 as native does, in
fp32, rounding once. Where the kernel does not build (no compiler),
``runs_on`` says so and auto runs native: the kernel's one warning line says why.

DyT and Derf (norms/elementwise.cpp): the formula is three to five separate ops a pass, each a trip
through memory with autograd saving their outputs; the kernel is one vectorized pass each way, 3-5x faster
than the formula at widths 64-1024 in fp32 (`bench kernels --kinds ln,rms,dyt,derf --hidden 64,256,1024
--threads 1`, reports/bench-cpu/elementwise-loaded-2026-12-02, a loaded 2-core Xeon: ratios, to be
re-measured on a quiet machine). In bf16/fp16 auto runs their formula: the kernel computes in fp32 and rounds
once where the formula rounds after each op, another arithmetic (DynamicTanhCompiled.runs_on).

Reference is never a candidate: it is the textbook formula in the input's dtype, under
``norm.fp32=false`` a different low-precision arithmetic (what it exists to measure), and in fp32
never faster than native by more than noise. Under torch.compile (``model.cell_kernel=torch_compile``)
auto runs native, whose ops inductor fuses; a C++ kernel is opaque to it.
"""

from __future__ import annotations

from typing import Mapping

import torch

from normbench.norms.kinds import kind_of

_DECIDED: dict[tuple[str, str, torch.dtype, int], str] = {}


def decide(kind: str, impls: Mapping[str, type], device_type: str, dtype: torch.dtype, width: int) -> str:
    """The impl auto runs for ``kind`` on (device type, dtype, width), decided once per process."""
    key = (kind, device_type, dtype, width)
    if key not in _DECIDED:
        preferred = kind_of(kind).fastest.get(device_type, ())
        _DECIDED[key] = next((impl for impl in preferred if impls[impl].runs_on(device_type, dtype)), "native")
    return _DECIDED[key]


def decisions() -> dict[str, str]:
    """This process's decisions so far, ``{"rms cpu float32 256": "compiled"}``."""
    return {f"{kind} {device} {str(dtype).removeprefix('torch.')} {width}": impl
            for (kind, device, dtype, width), impl in _DECIDED.items()}
