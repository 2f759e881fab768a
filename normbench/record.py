"""The run record on disk (docs/run-record.md): metrics.jsonl as it goes, summary.json atomically."""

from __future__ import annotations

import datetime as dt
import errno
import fcntl
import functools
import logging
import json
import math
import os
import platform
import socket
import stat
import subprocess
import tempfile
from pathlib import Path

import torch

import normbench
from normbench.contract import FINISHED, READABLE, SCHEMA, STATUSES, config_hash, group_hash  # noqa: F401
from normbench.report import records

log = logging.getLogger("normbench")



def _finite_or_none(value):
    """JSON has no NaN/inf: a non-finite measurement is written as null (its status says why)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite_or_none(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_or_none(v) for v in value]
    return value


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: Path, write, binary: bool = False) -> None:
    """``write(file)`` into a temporary file in the same folder, fsync, rename: readers (and a kill
    mid-write) see the old file or the new one, never half."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes it 0600; a record gets the mode any file would
        with os.fdopen(fd, "wb" if binary else "w") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, obj) -> None:
    text = json.dumps(_finite_or_none(obj), indent=1, sort_keys=False, allow_nan=False)
    write_atomic(path, lambda f: f.write(text))


def now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


@functools.lru_cache(maxsize=1)
def git_commit() -> str | None:
    source = Path(normbench.__file__).resolve().parent.parent
    try:
        out = subprocess.run(["git", "-C", str(source), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
        dirty = subprocess.run(["git", "-C", str(source), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None  # an installed wheel: normbench_version identifies the code
    return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


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


LOCK = ".normbench.lock"


def _occupant(run_dir: Path, digest: str) -> str | None:
    """Why ``run_dir`` may not take a new attempt at run ``digest`` (None: it may).

    A folder may be reused only when it holds no record, or an unfinished record (failed,
    interrupted, killed) of this very run: a finished record of any run, a record of another run
    or one this version cannot read is never overwritten.
    """
    path = run_dir / "summary.json"
    if not path.exists():
        return None
    summary = read_summary(path)
    if summary is None:
        return "an unreadable or foreign summary.json, set aside untouched"
    if summary.get("status") in FINISHED:
        return f"a finished record (status {summary.get('status')})"
    config = summary.get("config")
    if not isinstance(config, dict) or config_hash(config) != digest:
        return "an unfinished record of another run"
    return None


def claim_run_dir(preferred: Path, digest: str) -> tuple[Path, int]:
    """A folder for a new attempt at run ``digest``, held by an exclusive lock until the run ends.

    ``preferred`` when it is free; else ``preferred-<digest[:8]>``, then ``-2``, ``-3`` ... beside
    it. A folder is taken when no live process holds its lock (a lock dies with its process, so a
    killed run's folder is free again) and it holds nothing that must be kept (``_occupant``).
    Returns the folder and the lock's file descriptor.
    """
    preferred = Path(preferred)
    names = [preferred.name, f"{preferred.name}-{digest[:8]}"]
    for attempt in range(10_000):
        candidate = preferred.with_name(names[attempt] if attempt < 2 else f"{names[1]}-{attempt}")
        candidate.mkdir(parents=True, exist_ok=True)
        odd = planted(candidate)
        if odd is not None:
            log.debug("run folder %s holds %s that is not a regular file; taking another", candidate, odd)
            continue
        try:
            fd = open_run_file(candidate / LOCK, os.O_RDWR | os.O_CREAT)
        except OSError:  # a link or FIFO planted between the check and the open
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            log.debug("run folder %s is in use by a running job; taking another", candidate)
            continue
        why = _occupant(candidate, digest)
        if why is None:
            return candidate, fd
        os.close(fd)
        log.debug("run folder %s holds %s; taking another", candidate, why)  # the job's last line names the folder it took
    raise OSError(f"no free run folder beside {preferred}")


class RunRecord:
    """Owns one run directory's metrics.jsonl and summary.json."""

    def __init__(self, run_dir: Path, lock: int | None = None):
        self.run_dir = Path(run_dir)
        self.summary_path = self.run_dir / "summary.json"
        self.summary: dict = {"schema": SCHEMA, "status": "running", "reason": None}
        self._metrics = None
        self._lock = lock

    @classmethod
    def claim(cls, preferred: Path, digest: str) -> "RunRecord":
        """The record of a new attempt at run ``digest``, in a folder claimed by ``claim_run_dir``."""
        return cls(*claim_run_dir(preferred, digest))

    def start(self, **fields) -> None:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.summary.update(fields, time={"started": now_iso()})
        write_json_atomic(self.summary_path, self.summary)
        # "w": a resumed run starts its curve again rather than appending to a dead run's lines
        self._metrics = os.fdopen(open_run_file(self.run_dir / "metrics.jsonl"), "w", buffering=1)

    def log(self, row: dict) -> None:
        self._metrics.write(json.dumps(_finite_or_none(row), allow_nan=False) + "\n")  # line-buffered: flushed

    def finish(self, status: str, reason: str | None, **fields) -> None:
        assert status in STATUSES, status
        if self._metrics is not None:
            self._metrics.close()
        times = {**self.summary.get("time", {}), **fields.pop("time", {}), "ended": now_iso()}
        self.summary.update(fields, status=status, reason=reason, time=times)
        write_json_atomic(self.summary_path, self.summary)
        if self._lock is not None:
            os.close(self._lock)  # releases the folder
            self._lock = None


def read_summary(path: Path) -> dict | None:
    """A summary.json of a schema this version reads, or None for one the report would set aside
    (missing, partial, foreign, not a regular file, too large, malformed): the report's reader,
    normbench/report/records.py, is the only one."""
    record = records.read_summary(path)
    return None if isinstance(record, records.SetAside) else record.summary


# The policy for every file a run writes into its folder: a link planted there is never followed
# (it would truncate or grow its target), a FIFO never blocks the run, anything but a regular file
# is refused. summary.json is written beside and renamed over (write_json_atomic), which replaces
# a link rather than writing through it.
RUN_FILES = ("summary.json", "metrics.jsonl", "traceback.txt", ".normbench.lock")
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def open_run_file(path: Path, flags: int = os.O_WRONLY | os.O_CREAT | os.O_TRUNC) -> int:
    """A file descriptor for ``path`` opened under the policy above; OSError names the path otherwise."""
    fd = os.open(path, flags | _NO_FOLLOW, 0o666)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_run_text(path: Path, text: str) -> None:
    """``text`` into a run file (traceback.txt), under the policy above."""
    with os.fdopen(open_run_file(path), "w", encoding="utf-8") as handle:
        handle.write(text)


def planted(run_dir: Path) -> str | None:
    """The first run file in ``run_dir`` that is there but is not a regular file (a link, a FIFO, a folder)."""
    for name in RUN_FILES:
        try:
            mode = os.lstat(run_dir / name).st_mode
        except FileNotFoundError:
            continue
        except OSError:
            return name
        if not stat.S_ISREG(mode):
            return name
    return None
