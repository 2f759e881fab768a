"""A run record's ``environment``: what the run ran on (versions, device, threads, host, code version).

Apart from the record (normbench/record.py) because it asks torch, and the record is read by the
report, which must not import torch.
"""

from __future__ import annotations

import functools
import os
import platform
import socket
from pathlib import Path

import torch

import normbench
from normbench.record import git_commit

# What torch.utils.collect_env reports that the fields below do not: versions of the driver, the
# CUDA runtime, the compilers and the pip packages torch cares about (numpy, triton, ...).
_COLLECT_ENV = ("nvidia_driver_version", "nvidia_gpu_models", "cuda_runtime_version", "cudnn_version",
                "gcc_version", "os", "libc_version", "pip_packages", "caching_allocator_config")


@functools.lru_cache(maxsize=1)
def collected_environment() -> dict:
    """Part of torch.utils.collect_env.get_env_info(), once per process: it runs lscpu, pip and
    nvidia-smi (about 1 s on a 2-core CPU), and jobs that share a process share the machine."""
    try:
        from torch.utils import collect_env

        info = collect_env.get_env_info()._asdict()
    except Exception as err:  # a missing tool or a locked pip: the record goes on without it
        return {"error": f"{type(err).__name__}: {err}"[:200]}
    out = {key: info.get(key) for key in _COLLECT_ENV}
    if isinstance(out["pip_packages"], str):
        out["pip_packages"] = out["pip_packages"].splitlines()
    return {k: v if isinstance(v, (str, int, float, bool, list, type(None))) else str(v) for k, v in out.items()}


def environment(device: torch.device) -> dict:
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
        "normbench_version": normbench.__version__,
        "git_commit": git_commit(),
        "deterministic": torch.are_deterministic_algorithms_enabled(),
        "cublas_workspace_config": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
        "collect_env": collected_environment(),
    }
