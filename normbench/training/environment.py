"""A run record's ``environment``: what the run ran on (versions, device, threads, host, code version).

Apart from the record (normbench/records/record.py) because it asks torch, and the record is read by the
report, which must not import torch.

The slow part, torch.utils.collect_env (about 1 s: it runs pip, lscpu and nvidia-smi), is asked
once per process, and once per sweep where the jobs of a sweep run in several processes (joblib
workers, SLURM jobs): the first job writes it into the sweep folder (``.environment.json``) under
a key naming the machine, the Python and the torch it describes, and later jobs whose key is the
same read it instead. A single run always collects its own.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import socket
import sys
import time
from pathlib import Path

import torch

from normbench.norms import user as user_norms
from normbench.records.record import Unreadable, git_commit, read_run_file, write_json_atomic

# What torch.utils.collect_env reports that the fields below do not: versions of the driver, the
# CUDA runtime, the compilers and the pip packages torch cares about (numpy, triton, ...).
_COLLECT_ENV = ("nvidia_driver_version", "nvidia_gpu_models", "cuda_runtime_version", "cudnn_version",
                "gcc_version", "os", "libc_version", "pip_packages", "caching_allocator_config")
SWEEP_CACHE = ".environment.json"
_CACHE_BYTES = 1 << 20

_shared_in: Path | None = None  # the sweep folder whose jobs share one collection (share_in)


def installed_version() -> str:
    """normbench's version as installed (pyproject.toml's, the one place it is written); "unknown" when
    the package runs from a source tree that was never installed."""
    try:
        return importlib.metadata.version("normbench")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def share_in(sweep_dir: Path | None) -> None:
    """The jobs this process runs from now on belong to ``sweep_dir`` and share its collected
    environment; None: a single run, which collects its own."""
    global _shared_in
    _shared_in = None if sweep_dir is None else Path(sweep_dir)


def cache_key() -> dict:
    """What a shared collection describes: a cached one is used only where all of it is the same.
    The folder that holds torch changes when packages are installed or removed there, and the boot
    id when the machine restarts (a new driver)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot = None
    packages = Path(torch.__file__).resolve().parent.parent
    try:
        packages_changed = os.stat(packages).st_mtime_ns
    except OSError:
        packages_changed = None
    return {"hostname": socket.gethostname(), "machine": platform.machine(), "python": sys.version,
            "executable": sys.executable, "torch": torch.__version__, "packages": str(packages),
            "packages_changed": packages_changed, "boot_id": boot}


def _collect() -> dict:
    """Part of torch.utils.collect_env.get_env_info(), as plain JSON values."""
    try:
        from torch.utils import collect_env

        info = collect_env.get_env_info()._asdict()
    except Exception as err:  # a missing tool or a locked pip: the record goes on without it
        return {"error": f"{type(err).__name__}: {err}"[:200]}
    out = {key: info.get(key) for key in _COLLECT_ENV}
    if isinstance(out["pip_packages"], str):
        out["pip_packages"] = out["pip_packages"].splitlines()
    return {k: v if isinstance(v, (str, int, float, bool, list, type(None))) else str(v) for k, v in out.items()}


def _plain_value(value) -> bool:
    if isinstance(value, list):
        return all(isinstance(v, str) for v in value)
    return isinstance(value, (str, int, float, bool, type(None)))


def _read_cache(path: Path, key: dict) -> dict | None:
    """The collection cached at ``path`` if it is one for ``key``: a file read is data, and anything
    but the object this module writes (another key, other fields, a link, a FIFO) is not used."""
    try:
        cached = json.loads(read_run_file(path, _CACHE_BYTES).decode("utf-8"))
    except (Unreadable, UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(cached, dict) or cached.get("key") != key:
        return None
    found = cached.get("collect_env")
    if not isinstance(found, dict) or set(found) != set(_COLLECT_ENV) or not all(map(_plain_value, found.values())):
        return None
    return found


_in_process: dict[Path | None, dict] = {}  # jobs that share a process share the machine


def collected_environment(sweep_dir: Path | None = None) -> tuple[dict, str]:
    """(collect_env's fields, where they came from): ``this process`` (an earlier job of it had
    them), ``sweep cache`` (another process of the sweep collected them) or ``collected`` (now)."""
    if sweep_dir in _in_process:
        return _in_process[sweep_dir], "this process"
    if sweep_dir is not None:
        key = cache_key()
        cached = _read_cache(sweep_dir / SWEEP_CACHE, key)
        if cached is not None:
            _in_process[sweep_dir] = cached
            return cached, "sweep cache"
    collected = _collect()
    if sweep_dir is not None and "error" not in collected:
        try:
            write_json_atomic(sweep_dir / SWEEP_CACHE, {"key": key, "collect_env": collected})
        except OSError:  # a read-only or full sweep folder: the next process collects its own
            pass
    _in_process[sweep_dir] = collected
    return collected, "collected"


def environment(device: torch.device) -> dict:
    """What a run runs on. ``collect_env_s`` is the time this call spent on collect_env (near 0 when
    this process or its sweep had it already), ``collect_env_from`` where it came from."""
    started = time.perf_counter()
    collected, source = collected_environment(_shared_in)
    collect_s = time.perf_counter() - started
    cuda = device.type == "cuda"
    if cuda:
        name = torch.cuda.get_device_name(device)
    else:
        name = platform.processor() or platform.machine()
        try:
            for line in Path("/proc/cpuinfo").read_text().splitlines():
                if line.startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
        except OSError:
            pass
    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "device": device.type,
        "device_name": name,
        "cuda": torch.version.cuda if cuda else None,
        "cudnn": torch.backends.cudnn.version() if cuda else None,
        "threads": torch.get_num_threads(),
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "normbench_version": installed_version(),
        "git_commit": git_commit(),
        "deterministic": torch.are_deterministic_algorithms_enabled(),
        "cublas_workspace_config": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
        "collect_env": collected,
        "collect_env_from": source,
        "collect_env_s": collect_s,
        # the users' norm kinds this process had, and where each class came from (normbench/norms/user.py)
        "user_norms": user_norms.sources(),
    }
