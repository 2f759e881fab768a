"""Compiling normbench's C++ CPU kernels (lnlstm.cpp, gru.cpp, rmsnorm.cpp, elementwise.cpp) for this CPU.

Each kernel is built once per CPU capability that torch dispatches its own kernels for
(``torch.backends.cpu.get_cpu_capability()``, which ``ATEN_CPU_CAPABILITY=avx2`` lowers), with
the flags and the ``CPU_CAPABILITY_*`` macro ATen's own per-capability kernels are built with, so
``at::vec::Vectorized<float>`` in ``rows.h`` is 16 lanes under AVX-512, 8 under AVX2, and a
plain array otherwise. The variant goes into the run record (e.g. ``compiled-avx512``).

Builds go through ``torch.utils.cpp_extension`` with the machine's C++ compiler (about 40 s
each, once, up to 100 s on a busy machine; cached under ``$TORCH_EXTENSIONS_DIR``, default
``~/.cache/torch_extensions``, and never built where that default is not under a home folder).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import logging
import os
import sys
import sysconfig
import time
from pathlib import Path

import torch

HERE = Path(__file__).parent
HEADERS = (HERE / "rows.h", HERE / "row_blocks.h", HERE / "norm_blocks.h", HERE / "gemm.h")
# The flags CMake gives ATen's AVX2 and AVX-512 kernels (cmake/Codegen.cmake; -mf16c: the fp16 loads of
# Vectorized<Half> under AVX2, which rmsnorm.cpp uses), plus the macros
# that select Vectorized<T>'s implementation. -fopenmp: at::parallel_for uses torch's own pool.
CAPABILITY_FLAGS = {
    "avx512": ["-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mfma", "-DCPU_CAPABILITY_AVX512",
               "-DCPU_CAPABILITY=AVX512"],
    "avx2": ["-mavx2", "-mfma", "-mf16c", "-DCPU_CAPABILITY_AVX2", "-DCPU_CAPABILITY=AVX2"],
    "default": ["-DCPU_CAPABILITY_DEFAULT", "-DCPU_CAPABILITY=DEFAULT"],
}
COMMON_FLAGS = ["-O3", "-fopenmp"]
BUILD_WAIT_S = 600  # how long a build waits for another process building the same kernel (a build: 40-100 s)
log = logging.getLogger(__name__)


def capability() -> str:
    """The variant to build for torch's CPU capability now: avx512, avx2 or default."""
    found = torch.backends.cpu.get_cpu_capability().lower()
    return found if found in CAPABILITY_FLAGS else "default"


def runnable_variants() -> list[str]:
    """The variants this CPU runs: the plain one, and AVX2/AVX-512 where torch found them."""
    found = torch.backends.cpu.get_cpu_capability().lower()
    return ["default", "avx2", "avx512"][: {"avx512": 3, "avx2": 2}.get(found, 1)]


def flags(variant: str) -> list[str]:
    return COMMON_FLAGS + CAPABILITY_FLAGS[variant]


def _unusable(base: str) -> bool:
    """A base folder a build must not go under: a relative one (a folder of wherever the run was
    started) or the filesystem's root (``/``, ``//``, ``/tmp/..``)."""
    return not os.path.isabs(base) or os.path.realpath(base) == "/"


def build_root() -> Path:
    """Where the builds go: the folder torch would use, ``$TORCH_EXTENSIONS_DIR``, else
    ``$XDG_CACHE_HOME/torch_extensions`` (torch takes XDG_CACHE_HOME as given, set at all: empty or
    relative too), else ``~/.cache/torch_extensions``. Raises where that folder's base (the variable
    itself, XDG_CACHE_HOME or HOME) is relative or the filesystem's root: torch would build at
    ``/torch_extensions`` or ``/.cache/torch_extensions`` (hostile X22, h15 O01), or in the run's
    current folder (h15 X13); HOME must also be a writable folder."""
    from torch.utils.cpp_extension import get_default_build_root

    chosen = os.environ.get("TORCH_EXTENSIONS_DIR")
    if chosen:  # torch reads an empty one as unset
        if _unusable(chosen):
            raise RuntimeError(f"no folder for the build: TORCH_EXTENSIONS_DIR is {chosen!r}, not an absolute "
                               "folder below the root; set TORCH_EXTENSIONS_DIR to one")
        return Path(chosen)
    cache = os.environ.get("XDG_CACHE_HOME")
    if sys.platform != "darwin" and cache is not None:
        if _unusable(cache):
            raise RuntimeError(f"no folder for the build: XDG_CACHE_HOME is {cache!r}, not an absolute folder "
                               "below the root; set TORCH_EXTENSIONS_DIR or XDG_CACHE_HOME")
        return Path(get_default_build_root())
    home = os.path.expanduser("~")  # "/" for HOME= and HOME=/
    if _unusable(home) or not (os.path.isdir(home) and os.access(home, os.W_OK)):
        raise RuntimeError(f"no folder for the build: HOME is {os.environ.get('HOME', home)!r}, not a writable "
                           f"home folder; set TORCH_EXTENSIONS_DIR or HOME")
    return Path(get_default_build_root())


def _staged_source(source: Path, variant: str) -> Path:
    """A copy of the source and the headers at a path fixed by their content, the flags, torch's
    version and the interpreter's ABI.

    ninja rebuilds when the source's path changes, so compiling each installation's own copy
    (the checkout, a wheel in a venv) would rebuild every time one switches to another.
    """
    files = {p.name: p.read_bytes() for p in (source, *HEADERS)}
    abi = " ".join([*flags(variant), torch.__version__, sysconfig.get_config_var("EXT_SUFFIX") or sys.version])
    digest = hashlib.sha256(b"".join(files.values()) + abi.encode()).hexdigest()[:12]
    folder = build_root() / "normbench" / f"{source.stem}_{variant}_{digest}"
    for name, code in files.items():
        staged = folder / name
        if not staged.exists() or staged.read_bytes() != code:
            staged.parent.mkdir(parents=True, exist_ok=True)
            partial = staged.with_suffix(f".{os.getpid()}.tmp")
            partial.write_bytes(code)
            os.replace(partial, staged)  # atomic: a concurrent job sees the old file or the whole new one
    return folder / source.name


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


@contextlib.contextmanager
def build_lock(folder: Path):
    """Held while this process builds the kernel in ``folder``: an exclusive ``flock`` on a file of
    normbench's own there, which the kernel drops when its holder ends, however it ends.

    torch's own build lock is a plain file (``lock``), which a job killed mid-build (SIGKILL, a
    sweep's time limit, the OOM killer) leaves behind, and torch waits on it forever (hostile X01,
    X21). Every normbench build takes this lock first, so a ``lock`` found while holding it has no
    live owner: it is removed. Waiting for a live holder ends after ``BUILD_WAIT_S`` with TimeoutError
    (the kernel is then unavailable and the caller's fallback runs)."""
    fd = os.open(folder / "normbench-build.flock", os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
    try:
        deadline = time.monotonic() + BUILD_WAIT_S
        if not _locked(fd):  # said once, so that a wait of minutes is not read as a hang (hostile h15 X04)
            log.warning("waiting for another process that is building %s (at most %.0f s)", folder.name, BUILD_WAIT_S)
        while not _locked(fd):
            if time.monotonic() > deadline:
                raise TimeoutError(f"another process has been building {folder.name} for over {BUILD_WAIT_S:.0f} s")
            time.sleep(0.2)
        left = folder / "lock"
        if left.exists():
            log.warning("removing a build lock left by a killed build: %s", left)
            left.unlink(missing_ok=True)
        yield
    finally:
        os.close(fd)  # the flock goes with it


def _locked(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def build(source: Path, variant: str | None = None):
    """The compiled module of ``source`` for ``variant`` (default: this CPU's); raises if it does not build."""
    from torch.utils.cpp_extension import load as load_extension

    variant = variant or capability()
    staged = _staged_source(source, variant)
    name = f"normbench_{staged.parent.name}"
    module = _import_built(name, staged.parent)
    if module is None:
        with build_lock(staged.parent):
            module = _import_built(name, staged.parent)  # built by the process this one waited for
            if module is None:
                module = load_extension(name, [str(staged)], extra_cflags=flags(variant), extra_ldflags=["-fopenmp"],
                                        build_directory=str(staged.parent), verbose=False)
    return module


class Kernel:
    """One C++ source, built for this CPU on first use and at most once per process.

    Where it does not build (no compiler, no ninja, a read-only cache, no home folder for the cache,
    another process's build of it still running after ``BUILD_WAIT_S``), ``load()`` returns None,
    ``unavailable`` says why in one line, logged once as "``what`` unavailable, using ``instead``" where a
    caller falls back to ``instead`` (``load(required=True)``: it refuses instead, and says why itself). A test stands in for a missing compiler by setting ``module``
    and ``unavailable``.
    """

    def __init__(self, source: Path, what: str, instead: str):
        self.source, self.what, self.instead = source, what, instead
        self.module = None
        self.variant: str | None = None  # the capability the module was built for: avx512 | avx2 | default
        self.unavailable: str | None = None
        self.fallback_said = False

    def load(self, required: bool = False):
        """The compiled module, or None (then ``unavailable`` says why). ``required``: the caller refuses to run
        without it (model.cell_kernel=compiled asked by name), so no "using ``instead``" line contradicts its
        refusal (hostile h21 B9); the line is the fallback's, said the first time one runs."""
        if self.module is None and self.unavailable is None:
            try:
                variant = capability()
                self.module, self.variant = build(self.source, variant), variant
            except Exception as err:  # noqa: BLE001 - reported in unavailable and the log; the fallback runs
                self.unavailable = why(err)
        if self.unavailable is not None and not required and not self.fallback_said:
            self.fallback_said = True
            log.warning("%s unavailable, using %s: %s", self.what, self.instead, self.unavailable)
        return self.module

    def name(self) -> str:
        """What the run record calls this kernel: compiled-avx512, compiled-avx2 or compiled-default."""
        return kernel_name(self.variant)


def kernel_name(variant: str | None) -> str:
    """What the run record calls a compiled kernel: compiled-avx512, compiled-avx2 or compiled-default
    (model.cell_kernel=compiled; records made before that name say cpp-avx512 ...: contract.recorded_cell_kernel)."""
    return f"compiled-{variant or capability()}"


def why(err: Exception) -> str:
    """One line saying why a build failed: the first compiler error, else the first line."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()] or [type(err).__name__]
    first = next((line for line in lines if "error" in line.lower() and "building extension" not in line), lines[0])
    return f"{type(err).__name__}: {first[:200]}"
