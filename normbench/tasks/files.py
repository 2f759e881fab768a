"""Reading a task's files with limits, so a wrong task.path fails with one line instead of hanging.

`Path.read_bytes` follows a symlink to /dev/zero and reads until memory runs out, blocks forever
on a FIFO with no writer, and raises a bare IsADirectoryError on a folder named like a file. The
tasks read through `read_regular_file` instead: it opens without blocking, looks at what it opened
(not at the name, which can change in between), and reads at most `limit` bytes.
"""

from __future__ import annotations

import gzip
import io
import os
import stat
import zlib
from pathlib import Path

from normbench.tasks.data import TaskDataError

MIB = 1 << 20


def read_regular_file(task: str, path: Path, limit: int, hint: str = "") -> bytes:
    """The bytes of `path`, a regular file of at most `limit` bytes; TaskDataError otherwise.

    `hint` ends the "no such file" message, e.g. " (set task.path to ...)".
    """
    try:
        # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise TaskDataError(f"{task}: no such file: {path}{hint}") from None
    except OSError as error:
        raise TaskDataError(f"{task}: cannot open {path}: {error.strerror or error}") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise TaskDataError(f"{task}: not a file: {path} is a folder")
        if not stat.S_ISREG(mode):
            raise TaskDataError(f"{task}: not a file: {path} is a {_kind(mode)}, not a regular file")
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as handle:
        try:
            data = handle.read(limit + 1)  # the size can change after fstat; the read is what counts
        except OSError as error:
            raise TaskDataError(f"{task}: cannot read {path}: {error.strerror or error}") from None
    if len(data) > limit:
        raise TaskDataError(f"{task}: too large: {path} holds more than {_size(limit)}, the most this task reads")
    return data


def gunzip_capped(task: str, path: Path, compressed: bytes, limit: int) -> bytes:
    """The decompressed bytes, at most `limit` of them: a small .gz can expand without bound."""
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(compressed)) as stream:
            data = stream.read(limit + 1)
    except (OSError, EOFError, zlib.error) as error:
        raise TaskDataError(f"{task}: not a readable gzip file: {path} ({error})") from None
    if len(data) > limit:
        raise TaskDataError(f"{task}: too large: {path} decompresses to more than {_size(limit)}, "
                            f"the most this task reads")
    return data


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "FIFO"), (stat.S_ISCHR, "character device"),
                       (stat.S_ISBLK, "block device"), (stat.S_ISSOCK, "socket")):
        if test(mode):
            return name
    return "special file"


def _size(n_bytes: int) -> str:
    return f"{n_bytes // MIB} MiB" if n_bytes >= MIB else f"{n_bytes} bytes"
