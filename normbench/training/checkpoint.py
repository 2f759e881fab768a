"""Checkpoints: runs that survive preemption (``checkpoint_every``, ``resume=true``).

Every ``checkpoint_every`` steps, between two steps (after step k's evaluation, before step k+1
draws its batch), ``checkpoint.pt`` in the run folder is replaced atomically by the whole state
the rest of the run depends on: the weights (and a pure mode's half copy), the optimizer, the
loss scaler, every random generator (torch, CUDA, numpy, Python, the batch sampler's generator and
its place in the epoch), what it measured so far (losses, best metric, profiles, spikes) and the
curves written (metrics.jsonl up to step k). The learning-rate schedule is a function of the step
(train.learning_rate), so the step is its state. ``resume=true`` continues an interrupted run from
its checkpoint: the new attempt writes the saved curves again and trains steps k+1.., so that it
ends with the metrics an uninterrupted run has (bitwise, on CPU with ``deterministic=true``;
tests/training/test_checkpoint.py). A run that ends (ok, diverged) deletes its checkpoint.

A checkpoint is data, never code: the state is tensors and plain containers only (numpy's and
Python's generator states as integer tensors), read back with ``torch.load(weights_only=True)``
(``load_tensor_file``, the one loader of a tensor file) from a regular file opened without
following a link. Before anything is restored it must be of this format, match its SHA-256 (over
every tensor's bytes and every value), be of this run (its config hash), lie beside a record of
this run, hold fields of the types this version writes, a step within the run's steps and curves
that parse, and fit the model and optimizer as built. One that fails any of these, or that fails
while being restored (the trainer is then put back as it was built), is set aside (renamed
``checkpoint.pt.set-aside``, nothing deleted) with one line, and the run starts fresh.

The Trainer knows nothing of files: ``Checkpointer`` is one more hook on its loop
(normbench/training/hooks.py), which saves the trainer's ``state_dict()`` with the step and the random
generators' states; ``restore`` hands a checked one back to ``Trainer.load_state_dict`` (which refuses one
that does not fit the trainer as built) before ``fit``. This module reads the trainer through those two
alone, and the state's layout and checks are normbench/training/state.py's, not restated here.
"""

from __future__ import annotations

import copy
import errno
import hashlib
import logging
import os
import random
import shutil
import stat
import warnings
import zipfile
from pathlib import Path

import numpy as np
import torch

from normbench.records.record import RunRecord, Unreadable, open_regular, read_summary, write_atomic
from normbench.training import state as trainer_state
from normbench.training.hooks import Hook
from normbench.training.state import is_int, is_number, is_tensor

log = logging.getLogger("normbench")
FILE = "checkpoint.pt"
FORMAT = 2  # 1: the pickled numpy and Python states of earlier versions (not data: never loaded)
SET_ASIDE = ".set-aside"


class Refused(Exception):
    """A checkpoint that is not restored; the message is the one phrase saying why."""


# -- the one loader of a tensor file ---------------------------------------------------------------
def load_tensor_file(path: Path):
    """What ``torch.save`` wrote into ``path``, read as data: tensors and plain containers only.

    ``path`` must be a regular file, opened without following a link in its last component and
    without blocking (a link, FIFO, device or folder is refused, never waited on or read without
    end), and the zip archive torch.save writes, its entries stored (nothing inflates beyond the
    file's size). It is read by ``torch.load(weights_only=True)``, which builds no object but
    tensors, containers and numbers, so a pickle that would call a function is refused; then every
    tensor it built must be contiguous, inside its storage, and all of them no more bytes than the
    file (``_tensors_problem``: a stride-0 view claims what its storage does not hold). Raises
    Unreadable with one phrase; never anything else for a file torch cannot read as data.
    """
    path = Path(path)
    fd, info = open_regular(path)  # the record reader's open: a regular file, no link, never blocking
    with os.fdopen(fd, "rb") as handle:
        os.set_blocking(handle.fileno(), True)
        _require_stored_archive(handle, info.st_size, path.name)
        try:
            with warnings.catch_warnings():  # torch's remarks on a foreign pickle: the refusal below says it
                warnings.simplefilter("ignore")
                loaded = torch.load(handle, map_location="cpu", weights_only=True)
        except Exception as error:  # noqa: BLE001 - torn, foreign or code-carrying: not data torch can read
            first = (str(error).strip().splitlines() or [type(error).__name__])[0]
            raise Unreadable(f"{path.name} is not a tensor file read as data ({first[:120]})") from None
    why = _tensors_problem(loaded, info.st_size)
    if why:
        raise Unreadable(f"{path.name} {why}")
    return loaded


def _tensors(value):
    """Every tensor in ``value`` and the containers within it, each time it occurs (no recursion:
    a pickle may nest deeply)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, torch.Tensor):
            yield item
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)


def _tensors_problem(value, size: int) -> str | None:
    """Why the tensors torch.load built would hold more than the file does (None: they do not).
    A pickled tensor names its storage, offset, shape and strides apart: a stride-0 or overlapping
    view of a 4-byte storage can claim 2 GiB, which the checksum (or any operation) would build. So
    every tensor must be dense, contiguous and inside its storage, and all of them together, counted
    each time they occur, no more bytes than the file: checked here, before anything touches them."""
    total = 0
    for tensor in _tensors(value):
        if tensor.layout != torch.strided:
            return f"holds a {str(tensor.layout).removeprefix('torch.')} tensor, not a dense one"
        if not tensor.is_contiguous():
            return "holds a tensor that is not contiguous (a stride-0 or overlapping view)"
        nbytes = tensor.numel() * tensor.element_size()
        if tensor.storage_offset() * tensor.element_size() + nbytes > tensor.untyped_storage().nbytes():
            return "holds a tensor larger than its storage (a stride-0 or overlapping view)"
        total += nbytes
        if total > size:
            return f"holds tensors of more bytes than its own {size:,}"
    return None


def _require_stored_archive(handle, size: int, name: str) -> None:
    """The zip archive torch.save writes (entries stored, not compressed), so that what torch.load
    allocates is bounded by the file's size: a legacy (non-zip) file claims storage sizes it need not
    hold, and a deflated entry can inflate a few MB into many GB."""
    try:
        with zipfile.ZipFile(handle) as archive:  # a file object passed in stays open
            entries = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError):
        raise Unreadable(f"{name} is not the zip archive torch.save writes") from None
    if any(e.compress_type != zipfile.ZIP_STORED for e in entries) or sum(e.file_size for e in entries) > size:
        raise Unreadable(f"{name} holds compressed entries (torch.save stores them; a compressed one may inflate)")
    handle.seek(0)


# -- saving ----------------------------------------------------------------------------------------
class Checkpointer(Hook):
    """Saves the trainer's state every ``every`` steps into ``<run_dir>/checkpoint.pt``."""

    def __init__(self, every: int, path: Path, config_hash: str):
        self.every, self.path, self.config_hash = every, Path(path), config_hash
        self.saved_step = 0

    def on_step_start(self, trainer, step: int) -> None:
        done = step - 1
        if done > self.saved_step and done % self.every == 0:
            if self.saved_step == 0 and os.path.lexists(self.path) and not _regular(self.path):
                set_aside(self.path, "not a regular file")  # a folder there would fail every save
            save(trainer, self.path, done, self.config_hash)
            self.saved_step = done


def _numpy_rng() -> dict:
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    assert kind == "MT19937", kind
    return {"keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos), "has_gauss": int(has_gauss),
            "cached_gaussian": float(cached)}


def _python_rng() -> dict:
    version, internal, gauss_next = random.getstate()
    return {"version": version, "internal": torch.tensor(internal, dtype=torch.int64), "gauss_next": gauss_next}


def _rng() -> dict:
    return {"torch": torch.get_rng_state(), "numpy": _numpy_rng(), "python": _python_rng(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None}


def _set_rng(rng: dict, device: torch.device) -> None:
    torch.set_rng_state(rng["torch"])
    n = rng["numpy"]
    np.random.set_state(("MT19937", n["keys"].numpy().astype(np.uint32), n["pos"], n["has_gauss"],
                         n["cached_gaussian"]))
    p = rng["python"]
    random.setstate((p["version"], tuple(p["internal"].tolist()), p["gauss_next"]))
    if rng["cuda"] is not None and device.type == "cuda":
        torch.cuda.set_rng_state_all(rng["cuda"])


def state(trainer, step: int, config_hash: str) -> dict:
    """Everything the run's remaining steps depend on, after ``step`` steps: tensors and plain containers."""
    return {"config_hash": config_hash, "step": step, "rng": _rng(), **trainer.state_dict()}


def _contiguous(item):
    """``item`` with every tensor in it contiguous (a copy only of one that is not); containers are
    copied, not changed (an optimizer's state_dict holds its live per-parameter dicts), a state
    dict's ``_metadata`` kept."""
    if isinstance(item, torch.Tensor):
        return item if item.is_contiguous() else item.contiguous()
    if isinstance(item, (dict, list)):
        out = copy.copy(item)
        for key, inner in (item.items() if isinstance(item, dict) else enumerate(item)):
            out[key] = _contiguous(inner)
        return out
    if type(item) is tuple:
        return tuple(_contiguous(inner) for inner in item)
    return item


def checksum(value) -> str:
    """SHA-256 over a state: every tensor's dtype, shape and bytes, every key and value, in order."""
    digest = hashlib.sha256()

    def feed(item):
        if isinstance(item, torch.Tensor):
            tensor = item.detach().cpu().contiguous()
            digest.update(f"T{tensor.dtype}{tuple(tensor.shape)}".encode())
            digest.update(tensor.reshape(-1).view(torch.uint8).numpy().tobytes())
        elif isinstance(item, dict):
            digest.update(b"D%d" % len(item))
            for key, inner in item.items():
                feed(key)
                feed(inner)
        elif isinstance(item, (list, tuple)):
            digest.update(b"L%d" % len(item))
            for inner in item:
                feed(inner)
        elif item is None or isinstance(item, (bool, int, float, str)):
            digest.update(repr((type(item).__name__, item)).encode())
        else:
            raise Refused(f"holds a {type(item).__name__}, not data this version writes")
    feed(value)
    return digest.hexdigest()


def save(trainer, path: Path, step: int, config_hash: str) -> None:
    """``state`` into ``path``, atomically: a reader (or a kill mid-write) sees the old file or the new one."""
    saved = _contiguous(state(trainer, step, config_hash))  # what load_tensor_file accepts
    wrapped = {"format": FORMAT, "sha256": checksum(saved), "state": saved}
    write_atomic(Path(path), lambda out: save_tensors(wrapped, out, Path(path)), binary=True)


# The limits a write hits that torch's zip writer reports as "unexpected pos": said as what they are
WRITE_LIMITS = {errno.ENOSPC: "no space left on device writing {path}",
                errno.EFBIG: "the file-size limit (ulimit -f) was hit writing {path} (errno EFBIG)"}


def save_tensors(value, out, path: Path) -> None:
    """``torch.save(value, out)``, ``out`` the open file for ``path``, with a full disk or a file-size limit
    said as such: torch's zip writer reports either as "[enforce fail at inline_container.cc:672] . unexpected
    pos ..." (hostile h15 B11, h16 N16). Checked here, while the partial file still fills the disk: write_atomic
    removes it once this raises."""
    try:
        torch.save(value, out)
    except RuntimeError as err:
        code = _limit_hit(err, path.parent)
        if code is None:
            raise
        full = OSError(WRITE_LIMITS[code].format(path=path))
        full.errno = code
        raise full from err


def _limit_hit(err: BaseException, folder: Path) -> int | None:
    """The errno of WRITE_LIMITS that ``err`` (or an error it came from) is, or ENOSPC when ``folder``'s
    filesystem has no space left; None when neither."""
    seen = err
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno in WRITE_LIMITS:
            return seen.errno
        seen = seen.__cause__ or seen.__context__
    try:
        return errno.ENOSPC if shutil.disk_usage(folder).free == 0 else None
    except OSError:
        return None


# -- reading ---------------------------------------------------------------------------------------
def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _fields_problem(saved: dict, steps: int | None) -> str | None:
    """Why ``saved`` does not hold the fields of the types this version writes (None: it does): its own
    (step, random generators), then the Trainer's state's (normbench/training/state.py)."""
    if set(saved) != {"config_hash", "step", "rng", *trainer_state.FIELDS}:
        return "holds other fields than this version's"
    step = saved["step"]
    if not is_int(step) or step < 1:
        return f"step {str(step)[:40]} is not a positive step"
    if is_int(steps) and step > steps:
        return f"step {step} is beyond the run's {steps} steps"
    rng = saved["rng"]
    numpy_rng, python_rng = (rng.get(k) if isinstance(rng, dict) else None for k in ("numpy", "python"))
    ok = isinstance(rng, dict) and isinstance(numpy_rng, dict) and isinstance(python_rng, dict) \
        and is_tensor(rng.get("torch"), torch.uint8, 1) \
        and is_tensor(numpy_rng.get("keys"), torch.int64, 1) and numpy_rng["keys"].numel() == 624 \
        and is_int(numpy_rng.get("pos")) and is_int(numpy_rng.get("has_gauss")) \
        and is_number(numpy_rng.get("cached_gaussian")) \
        and is_int(python_rng.get("version")) and is_tensor(python_rng.get("internal"), torch.int64, 1) \
        and (python_rng.get("gauss_next") is None or is_number(python_rng["gauss_next"])) \
        and (rng.get("cuda") is None or (isinstance(rng["cuda"], list)
                                         and all(is_tensor(t, torch.uint8, 1) for t in rng["cuda"])))
    if not ok:
        return "rng is not the random generators' states"
    return trainer_state.problem(saved)


def read(path: Path, config_hash: str, steps: int | None = None) -> dict:
    """The state in checkpoint ``path`` of run ``config_hash`` (a run of ``steps`` steps), checked
    before anything is restored from it. Raises Refused with the reason it is no checkpoint of this run."""
    path = Path(path)
    if not _regular(path):
        raise Refused("is a symbolic link" if os.path.islink(path) else "is not a regular file")
    record = read_summary(path.parent / "summary.json")
    if not (isinstance(record, RunRecord) and record.summary.get("config_hash") == config_hash):
        raise Refused("lies beside no record of this run")
    try:
        wrapped = load_tensor_file(path)
    except Unreadable as why:
        raise Refused(str(why)) from None
    if not isinstance(wrapped, dict) or set(wrapped) != {"format", "sha256", "state"} or wrapped["format"] != FORMAT:
        found = wrapped.get("format") if isinstance(wrapped, dict) else None
        raise Refused(f"format {str(found)[:20]} is not this version's ({FORMAT})" if found is not None else
                      "is not a checkpoint of this version")
    saved = wrapped["state"]
    if not isinstance(saved, dict) or checksum(saved) != wrapped["sha256"]:
        raise Refused("does not match its checksum (corrupted)")
    if saved.get("config_hash") != config_hash:
        raise Refused("is a checkpoint of another run" if "config_hash" in saved else "names no config hash")
    saved = trainer_state.renamed(saved)  # an earlier version's field names: its checkpoint resumes too
    why = _fields_problem(saved, steps)
    if why is not None:
        raise Refused(why)
    return saved


def set_aside(path: Path, why: str) -> Path | None:
    """``path`` renamed beside itself (``checkpoint.pt.set-aside``, ``-2`` ...), never deleted, with one line."""
    path = Path(path)
    for n in range(1, 1000):
        target = path.with_name(f"{path.name}{SET_ASIDE}" + (f"-{n}" if n > 1 else ""))
        if os.path.lexists(target):
            continue
        try:
            os.rename(path, target)
        except OSError as error:
            log.warning("resume: %s not used (%s); it cannot be set aside (%s)", path, why, error.strerror or error)
            return None
        log.warning("resume: %s set aside as %s: %s; the run starts fresh", path, target.name, why)
        return target
    return None


def find(run_dir: Path, sweep_dir: Path | None, config_hash: str, steps: int | None = None) -> tuple[Path, dict] | None:
    """The checkpoint of run ``config_hash``: in its run folder first, else anywhere in its sweep
    beside a record of this run. A candidate that fails ``read`` is set aside."""
    own = Path(run_dir) / FILE
    candidates = [own] if os.path.lexists(own) else []
    if sweep_dir is not None:  # another folder's checkpoint, when the record beside it is of this run
        try:
            found = sorted(Path(sweep_dir).rglob(FILE))  # ** does not enter linked folders
        except OSError:
            found = []
        candidates += [p for p in found if p != own
                       and isinstance(record := read_summary(p.parent / "summary.json"), RunRecord)
                       and record.summary.get("config_hash") == config_hash]
    for path in candidates:
        try:
            return path, read(path, config_hash, steps)
        except Refused as why:
            set_aside(path, str(why))
        except Exception as error:  # noqa: BLE001 - a check this file trips over: still no checkpoint, never a crash
            set_aside(path, f"cannot be checked ({type(error).__name__}: {' '.join(str(error).split())[:160]})")
    return None


def discard(path: Path) -> None:
    """Deletes a checkpoint that has served; anything there that is not a regular file is left alone."""
    if _regular(path):
        Path(path).unlink(missing_ok=True)


# -- restoring -------------------------------------------------------------------------------------
def _one_line(error: Exception) -> str:
    return f"{type(error).__name__}: {' '.join(str(error).split())[:160]}"


def restore(trainer, path: Path, saved: dict, device: torch.device) -> bool:
    """Puts ``saved`` (from ``find``, read from ``path``) into a freshly built trainer on ``device`` through
    ``Trainer.load_state_dict``, which refuses a state that does not fit; the trainer then continues after
    ``saved['step']``. One that does not fit, or fails while being loaded, is set aside and the trainer
    (and the random generators) left as built (False): the run starts fresh."""
    built, why = _rng(), None
    try:
        _set_rng(saved["rng"], device)
        trainer.load_state_dict(saved, saved["step"])
    except Exception as error:  # noqa: BLE001 - another run's or version's state: the run starts fresh instead
        _set_rng(built, device)
        why = f"cannot be restored ({_one_line(error)})"
    if why is not None:
        set_aside(path, why)
        return False
    log.info("resume: continuing from the checkpoint at step %d", saved["step"])
    return True
