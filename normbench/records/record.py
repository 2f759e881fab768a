"""The run record (docs/run-record.md): what a record is, the one reader and the one writer.

A run's record is its folder's ``summary.json`` (written at the start and the end of each attempt,
atomically) and ``metrics.jsonl`` (a line per step, as it goes). ``RunRecord`` is one record in
memory: what ``read_summary`` returns and what ``write_record`` writes. ``RecordWriter`` holds a
run's folder while the run fills its record. Imports no torch: the report reads records through
this module (the record's ``environment`` block, which asks torch, is normbench/training/environment.py).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import functools
import json
import logging
import math
import os
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path

from filelock import lock_descriptor  # flock on POSIX, LockFileEx on Windows: a lock dies with its process

from normbench.configuration.contract import READABLE, RECORD_FORMAT, config_hash, group_hash  # noqa: F401
from normbench.configuration.schema import TASK_CONFIGS, Config

log = logging.getLogger("normbench")

# -- what a record says: its status ---------------------------------------------------------------
RUNNING = "running"  # written at an attempt's start; a record left so was killed or runs still
STATUSES = ("ok", "diverged", "invalid", "skipped", "failed", "interrupted")  # how an attempt ended
FINAL_STATUSES = ("ok", "diverged", "invalid", "skipped")  # final: never run again by resume, never overwritten
RESULT_STATUSES = ("ok", "diverged")  # training ran to its end or diverged (a result): the metrics say how it went
TRAINED_STATUSES = ("ok", "diverged", "failed", "interrupted")  # training started (invalid and skipped never train)
SUMMARY = "summary.json"


@dataclass(frozen=True)
class RunRecord:
    """One run's record: its folder and its summary.json's object, every key as written (docs/run-record.md).

    The summary stays the object on disk, keys in their order, so a record read and written again is
    the same file (bar strings cut to MAX_STRING) and keys this version does not know are kept.
    """

    run_dir: Path
    summary: dict

    @property
    def path(self) -> Path:
        return self.run_dir / SUMMARY

    @property
    def status(self) -> str:
        """One of STATUSES, or RUNNING (read_summary sets aside a record with any other)."""
        return self.summary.get("status")

    @property
    def config(self) -> dict | None:
        """The config the run was given, plain (read_summary sets aside a record whose config is not an object)."""
        return self.summary.get("config")

    @property
    def final(self) -> bool:
        """Whether this attempt is final: it is never run again or overwritten (FINAL_STATUSES)."""
        return self.status in FINAL_STATUSES

    def of_run(self, digest: str) -> bool:
        """Whether this is a record of run ``digest``; identity is recomputed from the config, so a record
        of an earlier version (another hash) is still recognised."""
        return self.run_digest() == digest

    def run_digest(self):
        """The identity of the run this records, recomputed from its config (None: it has no config)."""
        if not isinstance(self.config, dict):
            return None
        if interpolation_in(self.config) is not None:  # a value read from the environment is kept as its text
            return self.summary.get("config_hash")
        return config_hash(self.config)


@dataclass(frozen=True)
class SetAside:
    """A summary.json that is not read, and why (a short phrase)."""

    path: Path
    why: str


# -- the one reader -------------------------------------------------------------------------------
# What one record may bring in. A record the runner writes is a few kB to a few hundred kB; the
# caps are far above that and far below what would hold up (or exhaust) a report.
MAX_RECORD_BYTES = 16 << 20
MAX_STRING = 10_000  # characters of one string (a failure reason, a path); longer ones end in "…"
# Keys in one file: a record holds hundreds (a deep model's per-layer profiles a few thousand);
# 400,000 metric keys would be 400,000 report columns, minutes of work for nothing.
MAX_KEYS = 50_000
# Keys of each block the report turns into table columns (a record has some tens in each).
MAX_COLUMN_KEYS = 1_000
COLUMN_FIELDS = ("config", "axes", "task", "metrics", "throughput")
DICT_FIELDS = ("config", "axes", "task", "metrics", "profiles", "throughput", "environment", "time",
               "precision", "rerun_of", "saved_model")


class Unreadable(Exception):
    """A run file that is not read; the message is the one phrase saying why."""


def open_regular(path: Path) -> tuple[int, os.stat_result]:
    """A file descriptor of the regular file at ``path`` and its fstat, for reading as data.

    Opened without following a link in its last component and without blocking, then checked
    with fstat: a FIFO, a device, a folder or a link (planted, or to /dev/zero) is refused, never
    waited on or read without end. The caller closes the descriptor. Raises Unreadable.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise Unreadable(f"no {Path(path).name}") from None
    except OSError as error:
        link = os.path.islink(path)
        raise Unreadable(f"{Path(path).name} is a symbolic link" if link else
                         f"{Path(path).name} cannot be opened ({error.strerror or error})") from None
    try:
        info = os.fstat(fd)
    except OSError as error:
        os.close(fd)
        raise Unreadable(f"{Path(path).name} cannot be read ({error.strerror or error})") from None
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise Unreadable(f"{Path(path).name} is not a regular file")
    return fd, info


def read_run_file(path: Path, max_bytes: int) -> bytes:
    """The bytes of a regular file inside a run folder (open_regular), at most ``max_bytes`` of them.
    Raises Unreadable."""
    fd, info = open_regular(path)
    try:
        if info.st_size > max_bytes:
            raise Unreadable(f"{Path(path).name} is larger than {max_bytes >> 20} MiB")
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as error:
        raise Unreadable(f"{Path(path).name} cannot be read ({error.strerror or error})") from None
    finally:
        os.close(fd)
    if len(data) > max_bytes:  # grew while being read
        raise Unreadable(f"{Path(path).name} is larger than {max_bytes >> 20} MiB")
    return data


def _int64(text: str) -> int | float | None:
    """An int as JSON has it, but one beyond int64 (which no table column holds) as the float it is near."""
    number = int(text)
    return number if -2**63 <= number < 2**63 else _finite_float(text)


def parse_json(data: bytes, name: str, max_keys: int = MAX_KEYS, overflows: list | None = None):
    """The JSON value of a file's bytes, every string cut to MAX_STRING; NaN, ±Infinity and numbers
    too large for a float read as null, an int beyond int64 as a float. Raises Unreadable with the
    reason it is not one: not UTF-8 JSON, nested too deeply, or more than ``max_keys`` keys (counted
    while parsing, so a file of millions of keys is refused after ``max_keys`` of them). ``overflows``
    gets the text of each number read as null for being too large (no writer of normbench writes one)."""
    keys = 0

    def big(read, text):
        number = read(text)
        if number is None and overflows is not None:
            overflows.append(text[:40])
        return number

    def counted(pairs):
        nonlocal keys
        keys += len(pairs)
        if keys > max_keys:
            raise Unreadable(f"{name} has more than {max_keys:,} keys")
        return dict(pairs)

    try:
        return bounded(json.loads(data.decode("utf-8"), parse_constant=lambda _: None,
                                  parse_float=functools.partial(big, _finite_float),
                                  parse_int=functools.partial(big, _int64), object_pairs_hook=counted))
    except (UnicodeDecodeError, ValueError):  # JSONDecodeError, an int of thousands of digits
        raise Unreadable(f"unreadable {name}") from None
    except RecursionError:
        raise Unreadable(f"{name} is nested too deeply") from None


def read_json_file(path: Path, max_bytes: int = MAX_RECORD_BYTES, max_keys: int = MAX_KEYS):
    """The one reader of every JSON file the project reads besides records (sequential.json,
    paired-timing.json, a report's manifest): read_run_file's policy (a regular file, never a link,
    FIFO or device; at most ``max_bytes``), then parse_json's (at most ``max_keys`` keys). Raises Unreadable."""
    return parse_json(read_run_file(path, max_bytes), Path(path).name, max_keys)


def bounded(value: object) -> object:
    """``value`` with every string (and key) encodable as UTF-8 (a lone surrogate, which JSON's
    ``\\ud800`` escape lets in and no file, table or terminal can write, kept as that escape) and cut
    to MAX_STRING characters, ending in "…"."""
    if isinstance(value, str):
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                value = value.encode("utf-8", "backslashreplace").decode("utf-8")
        return value if len(value) <= MAX_STRING else value[: MAX_STRING - 1] + "…"
    if isinstance(value, dict):
        return {bounded(k): bounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [bounded(v) for v in value]
    return value


def _finite_float(text: str) -> float | None:
    number = float(text)
    return number if math.isfinite(number) else None  # 1e999: as the runner writes inf, null


def parse_record(data: bytes) -> dict:
    """A summary.json's object, bounded; raises Unreadable with the reason it is not one.

    NaN and ±Infinity (which JSON does not have, and the runner never writes: it writes null)
    read as null, like a number too large for a float.
    """
    overflows: list[str] = []
    summary = parse_json(data, SUMMARY, overflows=overflows)
    if not isinstance(summary, dict):
        raise Unreadable("summary.json is not an object")
    schema = summary.get("schema")
    if schema not in READABLE:
        raise Unreadable("no schema" if schema is None else f"schema {str(schema)[:60]!r}")
    status = summary.get("status")
    if not isinstance(status, str) or status not in (*STATUSES, RUNNING):
        raise Unreadable(f"status {str(status)[:60]!r} is not a run status")
    wrong = [key for key in DICT_FIELDS if summary.get(key) is not None and not isinstance(summary[key], dict)]
    if wrong:
        raise Unreadable(f"{wrong[0]} is not an object")
    wide = next((key for key in COLUMN_FIELDS if _keys(summary.get(key)) > MAX_COLUMN_KEYS), None)
    if wide:
        raise Unreadable(f"{wide} has more than {MAX_COLUMN_KEYS:,} keys")
    mistyped = (_mistyped(summary.get("config") or {}, Config, "config.") or _mistyped_study(summary.get("study"))
                or next((f"saved_model.{k} is not an object" for k, v in (summary.get("saved_model") or {}).items()
                         if v is not None and not isinstance(v, dict)), None)  # saved_model.finish's {file, step, ...}
                or _misread(summary, overflows and data))
    if mistyped:
        raise Unreadable(mistyped)
    return summary


def _seed(value: object) -> bool:
    return type(value) is int and value >= 0


def _metric(value: object) -> bool:
    # the runner's metrics: numbers, null (a non-finite measurement, its status says why), step lists
    return value is None or type(value) in (int, float, list)


# The fields the report, load_runs and compare read from every record, and what each must be. A record
# whose field is not so is set aside, the field named (hostile h26 r01, r04, r25, r28: a seed "zero" read as
# no seed, which changed an arm's n; no metrics block; final_val true read as 1.0), rather than used.
# "metrics.*" is each value of the metrics block. A field the record lacks is checked only where
# ``required`` holds for its status.
# yes/no metrics as written on disk: records from before the analysis decided the chance band hold a frozen bool
# under its earlier name (read as metrics.at_chance: records/metrics.py RENAMED)
FLAGS = {"metrics.did_not_train"}

CHECKED_FIELDS = {
    "seed": ("a non-negative integer", _seed, lambda status: False),
    # a finished record without its metrics block is still a finished run: resume finds it (tests/test_identity.py),
    # and the report reads its metrics as missing
    "metrics": ("an object", lambda value: isinstance(value, dict), lambda status: False),
    "metrics.*": ("a number", _metric, lambda status: False),
}


def _misread(summary: dict, raw: bytes | None) -> str | None:
    """The first CHECKED_FIELDS field of ``summary`` that is not what it must be, as a phrase, or None.
    ``raw``: the file's bytes when a number was read as null for being too large for a float (parse_json),
    to tell such a metric (1e400, an int of 400 digits) from the null the runner writes."""
    status = summary.get("status")
    too_large = _too_large(raw)
    for field, (what, fits, required) in CHECKED_FIELDS.items():
        block, _, key = field.partition(".")
        if key == "*":
            values = summary.get(block) if isinstance(summary.get(block), dict) else {}
            found = [(f"{block}.{k}", v) for k, v in values.items()]
        else:
            found = [(field, summary[field])] if field in summary else []
            if not found and required(status):
                return f"no {field} (a {status} record has one)"
        for name, value in found:
            if name in too_large:
                return f"{name} is too large for a float"
            if not fits(value) and not (name in FLAGS and type(value) is bool):
                return f"{name} is not {what}"
    return None


def _too_large(raw: bytes | None) -> set[str]:
    """The dotted names of the metrics too large for a float in a summary.json's bytes (read again, rarely)."""
    if not raw:
        return set()
    try:
        metrics = json.loads(raw.decode("utf-8")).get("metrics")
    except (ValueError, RecursionError, AttributeError):
        return set()
    return {f"metrics.{k}" for k, v in (metrics.items() if isinstance(metrics, dict) else ())
            if isinstance(v, (int, float)) and not isinstance(v, bool)
            and (abs(v) > sys.float_info.max if isinstance(v, int) else math.isinf(v))}


def _keys(value: object) -> int:
    """The keys of ``value`` and of every object within it."""
    if isinstance(value, dict):
        return len(value) + sum(_keys(v) for v in value.values())
    if isinstance(value, list):
        return sum(_keys(v) for v in value)
    return 0


_STUDY_TEXT = ("schema", "id", "name", "purpose", "command")  # study_info.describe's strings


def _mistyped_study(study: object) -> str | None:
    """Why a record's ``study`` block is not what study_info.describe writes (an object of strings and
    lists of strings), or None; a name that is a dict would be a key nobody can hash or print."""
    if study is None:
        return None
    if not isinstance(study, dict):
        return "study is not an object"
    wrong = next((k for k in _STUDY_TEXT if study.get(k) is not None and not isinstance(study[k], str)), None)
    if wrong:
        return f"study.{wrong} is not a string"
    wrong = next((k for k in ("swept", "arms") if study.get(k) is not None and not (
        isinstance(study[k], list) and all(isinstance(v, str) for v in study[k]))), None)
    return f"study.{wrong} is not a list of strings" if wrong else None


# What a config value of each annotated type may be in JSON (a float setting may be written as 1).
_JSON_TYPES = {"float": (int, float), "int": (int,), "bool": (bool,), "str": (str,),
               "Optional[float]": (int, float, type(None)), "Optional[int]": (int, type(None)),
               "Optional[str]": (str, type(None))}


def _mistyped(values: dict, schema: type, prefix: str) -> str | None:
    """The first setting of a recorded config whose value is not of its schema type (a string where
    the schema has a number), or None. Keys the schema does not know are left alone (older records)."""
    for item in fields(schema):
        if item.name not in values:
            continue
        value, key = values[item.name], f"{prefix}{item.name}"
        if item.name == "task" and isinstance(value, dict) and not isinstance(value.get("name", ""), str):
            return f"{key}.name is not a string"  # the task's name picks its schema: a list is no name
        group = TASK_CONFIGS.get(str(value.get("name"))) if item.name == "task" and isinstance(value, dict) else (
            item.default_factory if is_dataclass(item.default_factory) else None)
        if group is not None or is_dataclass(item.default_factory):
            if not isinstance(value, dict):
                return f"{key} is not an object"
            found = _mistyped(value, group, f"{key}.") if group is not None else None
            if found:
                return found
            continue
        allowed = _JSON_TYPES.get(str(item.type))
        if value is None and str(item.type) in ("float", "int"):  # NaN, ±Infinity and 1e999 read as null
            return f"{key} is not a finite number"  # (hostile h14 R06: "config.lr is not of type float" for NaN)
        if int in (allowed or ()) and float not in allowed and isinstance(value, float) and abs(value) >= 2**63:
            return f"{key} is out of range (beyond int64)"  # an int past int64 reads as a float (_int64; h15 B14)
        if allowed and (not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed)):
            return f"{key} is not of type {item.type}"
    return None


def interpolation_in(value: object, prefix: str = "config") -> str | None:
    """The dotted key of the first string in ``value`` that OmegaConf would not take as text: one it
    would resolve (``${...}``) or its missing-value mark ``???``; None when there is none. A record's
    values are data: what rebuilds a run from one (bench arms, tune) refuses such a value rather than
    resolve ``${oc.env:SECRET}`` or pass it on; the runner records resolved configs."""
    if isinstance(value, str):
        return prefix if "${" in value or value == "???" else None
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    return next((found for key, item in items if (found := interpolation_in(item, f"{prefix}.{key}"))), None)


def read_summary(path: Path) -> RunRecord | SetAside:
    """The one reader of a summary.json, used by the report, load_runs, compare, rerun, tune, the
    runner's resume and folder claims, checkpoints and the end of a sweep. Never raises, hangs or
    reads without bound: a record it cannot use comes back as SetAside with a one-phrase reason."""
    path = Path(path)
    try:
        return RunRecord(path.parent, parse_record(read_run_file(path, MAX_RECORD_BYTES)))
    except Unreadable as why:
        return SetAside(path, str(why))


# -- the one writer -------------------------------------------------------------------------------
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


_TEMP_SUFFIX = ".tmp"


def _temp_prefix(path: Path) -> str:
    """``.NAME.``, the prefix of ``path``'s hidden temporary file, with NAME cut so that the temporary name
    (mkstemp adds 8 characters, then the suffix) fits wherever NAME itself fits (hostile h16 N9: a legal
    242-byte name was refused because its temporary file's was 256)."""
    try:
        name_max = os.pathconf(path.parent, "PC_NAME_MAX")
    except (OSError, ValueError):
        name_max = 255
    room = max(name_max - len(".." + "x" * 8 + _TEMP_SUFFIX), 1)
    return f".{os.fsdecode(os.fsencode(path.name)[:room])}."


def write_atomic(path: Path, write, binary: bool = False) -> None:
    """``write(file)`` into a temporary file in the same folder, fsync, rename: readers (and a kill
    mid-write) see the old file or the new one, never half. An error of the temporary file names ``path``,
    the file asked for."""
    path = Path(path)
    prefix, tmp = _temp_prefix(path), None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=prefix, suffix=_TEMP_SUFFIX)
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes it 0600; a record gets the mode any file would
        with (os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8")) as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as error:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        if isinstance(error, OSError) and os.path.basename(str(error.filename)).startswith(prefix):
            raise OSError(error.errno, error.strerror, str(path)) from None  # the hidden file is ours, not the user's
        raise


def folder_inside(root: Path, rel: Path | str = ".") -> Path:
    """``root/rel`` as a folder, made as needed, whose every part below ``root`` is a real folder and
    not a link: what is written there lands inside ``root``. ``rel`` is a plain relative path (no
    ``..``). Raises OSError naming the part that is a link, a file or a FIFO."""
    rel = Path(rel)
    if rel.is_absolute() or ".." in rel.parts:
        raise OSError(errno.EINVAL, "not a plain relative path", str(rel))
    folder = Path(root)
    for part in rel.parts:
        if part == ".":
            continue
        folder = folder / part
        try:
            os.mkdir(folder)
        except FileExistsError:
            pass
        if not stat.S_ISDIR(os.lstat(folder).st_mode):  # lstat: a link to a folder is not one here
            raise OSError(errno.ENOTDIR, "a link or a file where a folder should be", str(folder))
    return folder


def write_file(path: Path, data: str | bytes) -> None:
    """``data`` as the file ``path``: the writer of every file the project writes besides records
    (sequential.json, paired-timing.*, tune's arm files, compare --out, the report's manifest).

    The same policy as a record's: written beside it and renamed over, after fsync (a kill or a
    full disk leaves the old file or none, never a cut or empty one); a link of that name is
    replaced, never written through; a folder, FIFO or device of that name is refused, never
    waited on. Raises OSError naming the path.
    """
    path = Path(path)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
        raise OSError(errno.EEXIST, "exists and is not a regular file", str(path))
    write_atomic(path, lambda f: f.write(data), binary=isinstance(data, bytes))


def write_inside(root: Path, rel: Path | str, data: str | bytes) -> Path:
    """``data`` as ``root/rel`` (write_file), every folder on the way inside ``root`` (folder_inside)."""
    rel = Path(rel)
    path = folder_inside(root, rel.parent) / rel.name
    write_file(path, data)
    return path


def write_json_atomic(path: Path, obj) -> None:
    text = json.dumps(_finite_or_none(obj), indent=1, sort_keys=False, allow_nan=False)
    write_atomic(path, lambda f: f.write(text))


def write_record(record: RunRecord) -> None:
    """``record`` as its folder's summary.json, atomically: the one writer of a summary.json."""
    write_json_atomic(record.path, record.summary)


def now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


@functools.lru_cache(maxsize=1)
def git_commit() -> str | None:
    source = Path(__file__).resolve().parent.parent  # the checkout (or site-packages) this package runs from
    try:
        out = subprocess.run(["git", "-C", str(source), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
        dirty = subprocess.run(["git", "-C", str(source), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None  # an installed wheel: normbench_version identifies the code
    return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


LOCK = ".normbench.lock"
UNFINISHED_OTHER = "an unfinished record of another run"


def _occupant(run_dir: Path, digest: str) -> str | None:
    """Why ``run_dir`` may not take a new attempt at run ``digest`` (None: it may).

    A folder may be reused only when it holds no record, or an unfinished record (failed,
    interrupted, killed) of this very run: a finished record of any run, a record of another run
    or one this version cannot read is never overwritten.
    """
    path = run_dir / SUMMARY
    if not path.exists():
        return None
    record = read_summary(path)
    if isinstance(record, SetAside):
        return "an unreadable or foreign summary.json, set aside untouched"
    if record.final:
        return f"a finished record (status {record.status})"
    if not record.of_run(digest):
        return UNFINISHED_OTHER
    return None


def running_now(run_dir: Path) -> bool:
    """Whether a live process holds the run folder's lock (claim_run_dir): a record there saying running is
    being written, not stale."""
    try:
        fd = os.open(Path(run_dir) / LOCK, os.O_RDONLY | _NO_FOLLOW)
    except OSError:
        return False
    try:
        return not lock_descriptor(fd, blocking=False)
    finally:
        os.close(fd)  # and the lock it may have taken with it


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
        made_lock = not os.path.lexists(candidate / LOCK)
        try:
            fd = open_run_file(candidate / LOCK, os.O_RDWR | os.O_CREAT)
        except OSError:  # a link or FIFO planted between the check and the open
            continue
        if not lock_descriptor(fd, blocking=False):
            os.close(fd)
            log.debug("run folder %s is in use by a running job; taking another", candidate)
            continue
        why = _occupant(candidate, digest)
        if why is None:
            return candidate, fd
        if made_lock and why != UNFINISHED_OTHER:  # a folder no run will ever take again: the lock
            # this attempt made there goes with it, leaving the folder as it was found (O06); one beside an
            # unfinished record stays, as another attempt at that run may be opening it now
            with contextlib.suppress(OSError):
                os.unlink(candidate / LOCK)
        os.close(fd)
        log.debug("run folder %s holds %s; taking another", candidate, why)  # the job's last line names the folder it took
    raise OSError(f"no free run folder beside {preferred}")


class RecordWriter:
    """Holds one run's folder while the run writes its record: summary.json (through write_record)
    at the start and the end, metrics.jsonl a line at a time, and the folder's lock until the end."""

    def __init__(self, run_dir: Path, lock: int | None = None):
        self.record = RunRecord(Path(run_dir), {"schema": RECORD_FORMAT, "status": RUNNING, "reason": None})
        self._metrics = None
        self._lock = lock
        self.secrets: tuple[str, ...] = ()  # values read from the environment: the reason masks them

    @property
    def run_dir(self) -> Path:
        return self.record.run_dir

    @property
    def summary(self) -> dict:
        """The record's summary, filled in by the run (the Trainer adds its ``precision``) until ``finish``."""
        return self.record.summary

    @classmethod
    def claim(cls, preferred: Path, digest: str) -> "RecordWriter":
        """The writer of a new attempt at run ``digest``, in a folder claimed by ``claim_run_dir``."""
        return cls(*claim_run_dir(preferred, digest))

    def start(self, **fields) -> None:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.summary.update(fields, time={"started": now_iso()})
        write_record(self.record)
        # "w": a resumed run starts its curve again rather than appending to a dead run's lines
        self._metrics = os.fdopen(open_run_file(self.run_dir / "metrics.jsonl"), "w", buffering=1)

    def log(self, row: dict) -> None:
        self._metrics.write(json.dumps(_finite_or_none(row), allow_nan=False) + "\n")  # line-buffered: flushed

    def finish(self, status: str, reason: str | None, **fields) -> None:
        assert status in STATUSES, status
        if self._metrics is not None:
            self._metrics.close()
        times = {**self.summary.get("time", {}), **fields.pop("time", {}), "ended": now_iso()}
        for secret in self.secrets if isinstance(reason, str) else ():
            reason = reason.replace(secret, "***")
        self.summary.update(fields, status=status, reason=reason, time=times)
        try:
            write_record(self.record)
        finally:  # written or not (a full disk), the run is over: a record left running is then stale (running_now)
            if self._lock is not None:
                os.close(self._lock)  # releases the folder
                self._lock = None


# The policy for every file a run writes into its folder: a link planted there is never followed
# (it would truncate or grow its target), a hard link neither (its other name is someone's file: a
# ``cp -al`` snapshot), a FIFO never blocks the run, anything but a regular file is refused. summary.json is written beside and renamed over (write_json_atomic), which replaces
# a link rather than writing through it.
RUN_FILES = ("summary.json", "metrics.jsonl", "traceback.txt", ".normbench.lock")
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def open_run_file(path: Path, flags: int = os.O_WRONLY | os.O_CREAT | os.O_TRUNC) -> int:
    """A file descriptor for ``path`` opened under the policy above; OSError names the path otherwise."""
    # O_TRUNC at the open would empty a hard link's other name before it is seen: truncated after
    fd = os.open(path, (flags & ~os.O_TRUNC) | _NO_FOLLOW, 0o666)
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        if status.st_nlink > 1:
            raise OSError(errno.EMLINK, "a hard link to another file", str(path))
        if flags & os.O_TRUNC:
            os.ftruncate(fd, 0)
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
    """The first run file in ``run_dir`` that is there but is not a regular file of its own (a link,
    a hard link, a FIFO, a folder)."""
    for name in RUN_FILES:
        try:
            status = os.lstat(run_dir / name)
        except FileNotFoundError:
            continue
        except OSError:
            return name
        if not stat.S_ISREG(status.st_mode) or status.st_nlink > 1:
            return name
    return None
