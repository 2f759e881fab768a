"""The run record on disk (docs/run-record.md): metrics.jsonl as it goes, summary.json atomically."""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import math
import os
import platform
import socket
import subprocess
import tempfile
from pathlib import Path

import torch

import normbench

SCHEMA = "normbench.run/1"
STATUSES = ("ok", "diverged", "invalid", "skipped", "failed", "interrupted")
FINISHED = ("ok", "diverged", "invalid", "skipped")  # a resumed sweep does not run these again
HARNESS_KEYS = ("threads", "progress", "resume", "report")  # do not change results, so not hashed


def _finite_or_none(value):
    """JSON has no NaN/inf: a non-finite measurement is written as null (its status says why)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite_or_none(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_or_none(v) for v in value]
    return value


def write_json_atomic(path: Path, obj) -> None:
    """Write to a temporary file in the same folder, fsync, rename: readers see old or new, never half."""
    text = json.dumps(_finite_or_none(obj), indent=1, sort_keys=False, allow_nan=False)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def config_hash(config: dict) -> str:
    semantic = {k: v for k, v in config.items() if k not in HARNESS_KEYS}
    canonical = json.dumps(semantic, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


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
    }


class RunRecord:
    """Owns one run directory's metrics.jsonl and summary.json."""

    def __init__(self, run_dir: Path):
        self.run_dir = Path(run_dir)
        self.summary_path = self.run_dir / "summary.json"
        self.summary: dict = {"schema": SCHEMA, "status": "running", "reason": None}
        self._metrics = None

    def start(self, **fields) -> None:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.summary.update(fields, time={"started": now_iso()})
        write_json_atomic(self.summary_path, self.summary)
        # "w": a resumed run starts its curve again rather than appending to a dead run's lines
        self._metrics = open(self.run_dir / "metrics.jsonl", "w", buffering=1)

    def log(self, row: dict) -> None:
        self._metrics.write(json.dumps(_finite_or_none(row), allow_nan=False) + "\n")  # line-buffered: flushed

    def finish(self, status: str, reason: str | None, **fields) -> None:
        assert status in STATUSES, status
        if self._metrics is not None:
            self._metrics.close()
        times = {**self.summary.get("time", {}), **fields.pop("time", {}), "ended": now_iso()}
        self.summary.update(fields, status=status, reason=reason, time=times)
        write_json_atomic(self.summary_path, self.summary)


def read_summary(path: Path) -> dict | None:
    """A summary.json of this schema, or None for a missing, partial or foreign one."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("schema") == SCHEMA else None
