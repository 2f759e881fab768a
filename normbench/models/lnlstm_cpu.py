"""The compiled in-cell LayerNorm-LSTM layer for CPUs (``lnlstm.cpp``), behind an autograd Function.

Each thread of torch's pool runs every time step for its own block of batch rows (rows never
meet in the recurrence), so a step costs one matrix product and a few passes over each row.
The C++ source is compiled on first use with the machine's C++ compiler through
``torch.utils.cpp_extension`` (about 40 s once; torch caches the build under
``$TORCH_EXTENSIONS_DIR``, default ``~/.cache/torch_extensions``). Where that fails (no compiler,
no ninja) ``load()`` returns None, ``UNAVAILABLE`` says why in one line, and the layer uses the
Python recurrence instead, which computes the same function.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import sys
import sysconfig
import time
from pathlib import Path

import torch

SOURCE = Path(__file__).with_name("lnlstm.cpp")
# -fopenmp: at::parallel_for uses torch's own thread pool (the libgomp.so.1 torch has loaded).
# AVX2 only where torch itself found it at run time; the build's name includes the flags.
FLAGS = ["-O3", "-fopenmp"] + (["-mavx2", "-mfma"] if torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512")
                               else [])
UNAVAILABLE: str | None = None
_module = None
log = logging.getLogger(__name__)


STALE_LOCK_S = 600  # a build takes under a minute; a lock this old was left by a killed build


def _staged_source() -> Path:
    """A copy of the source at a path fixed by its content, the flags, torch's version and the
    interpreter's ABI.

    ninja rebuilds when the source's path changes, so compiling each installation's own copy
    (the checkout, a wheel in a venv) would rebuild every time one switches to another.
    """
    from torch.utils.cpp_extension import get_default_build_root

    code = SOURCE.read_bytes()
    abi = " ".join([*FLAGS, torch.__version__, sysconfig.get_config_var("EXT_SUFFIX") or sys.version])
    digest = hashlib.sha256(code + abi.encode()).hexdigest()[:12]
    root = Path(os.environ.get("TORCH_EXTENSIONS_DIR") or get_default_build_root())
    staged = root / "normbench" / f"lnlstm_{digest}" / SOURCE.name
    if not staged.exists() or staged.read_bytes() != code:
        staged.parent.mkdir(parents=True, exist_ok=True)
        partial = staged.with_suffix(f".{os.getpid()}.tmp")
        partial.write_bytes(code)
        os.replace(partial, staged)  # atomic: a concurrent job sees the old file or the whole new one
    return staged


def _import_built(name: str, folder: Path):
    """The module a finished build left in ``folder``, or None. Its folder is named by everything
    that decides the build, so a library there is this source's; importing it directly skips
    ninja and torch's build lock."""
    library = folder / f"{name}.so"
    if not library.exists():
        return None
    try:
        spec = importlib.util.spec_from_file_location(name, library)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except (ImportError, OSError):  # a link cut short: build again
        return None
    return module


def _clear_stale_lock(folder: Path) -> None:
    """torch waits forever on its build lock; a job killed mid-build (SIGKILL, a sweep's time
    limit) leaves one behind, which would hang every later run on this machine."""
    lock = folder / "lock"
    try:
        if time.time() - lock.stat().st_mtime > STALE_LOCK_S:
            log.warning("removing a build lock left %.0f s ago by a killed build: %s", time.time() - lock.stat().st_mtime,
                        lock)
            lock.unlink()
    except FileNotFoundError:
        pass


def load():
    """The compiled module, or None (then ``UNAVAILABLE`` says why). Compiles at most once per process."""
    global _module, UNAVAILABLE
    if _module is not None or UNAVAILABLE is not None:
        return _module
    try:
        from torch.utils.cpp_extension import load as load_extension

        source = _staged_source()
        name = f"normbench_{source.parent.name}"
        _module = _import_built(name, source.parent)
        if _module is None:
            _clear_stale_lock(source.parent)
            _module = load_extension(name, [str(source)], extra_cflags=FLAGS, extra_ldflags=["-fopenmp"],
                                     build_directory=str(source.parent), verbose=False)
    except Exception as err:  # no compiler, no ninja, a read-only cache: the Python recurrence still works
        lines = [line.strip() for line in str(err).splitlines() if line.strip()] or [type(err).__name__]
        first = next((line for line in lines if "error" in line.lower() and "building extension" not in line), lines[0])
        UNAVAILABLE = f"{type(err).__name__}: {first[:200]}"
        log.warning("compiled LN-LSTM kernel unavailable, using the Python recurrence: %s", UNAVAILABLE)
    return _module


class LayerNormLSTMLayer(torch.autograd.Function):
    """h (batch, time, hidden) of the in-cell LN-LSTM, from xw = x W_ih^T (batch, time, 4 hidden).

    ``bias`` is beta_x + beta_h + b_ih + b_hh: the four are added to the same pre-activation, so
    each one's gradient is the sum of da over rows and autograd hands it to all four.
    """

    @staticmethod
    def forward(ctx, xw, w_hh, gamma_x, gamma_h, bias, gamma_c, beta_c, eps: float, cell_norm: bool):
        xw, w_hh, gamma_x, gamma_h, gamma_c = (t.contiguous() for t in (xw, w_hh, gamma_x, gamma_h, gamma_c))
        saved = _module.forward(xw, w_hh, gamma_x, gamma_h, bias.contiguous(), gamma_c, beta_c.contiguous(), eps,
                                cell_norm)
        ctx.save_for_backward(xw, w_hh, gamma_x, gamma_h, gamma_c, *saved)
        ctx.cell_norm = cell_norm
        return saved[0][1:].transpose(0, 1)

    @staticmethod
    def backward(ctx, grad_out):
        xw, w_hh, gamma_x, gamma_h, gamma_c, *saved = ctx.saved_tensors
        grads = _module.backward(grad_out, xw, w_hh, gamma_x, gamma_h, gamma_c, ctx.cell_norm, saved)
        return (*grads, None, None)
