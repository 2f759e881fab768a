"""A run's log file (normbench.log), opened the way the record files are: never through a link,
never blocking on a FIFO or device planted under its name. Where the name is not a regular file the
log goes to a file beside it (``normbench-1.log``, ``normbench-2.log``, ...), as a record does.

conf/hydra/job_logging/normbench.yaml names this class; normbench/training/run.py moves it to the claimed folder.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
MAX_BESIDE = 100  # names tried beside the planted one before giving up the file (the console still has every line)


def open_regular(path: Path) -> int | None:
    """A descriptor appending to ``path`` if it is (or is now created as) a regular file; else None."""
    try:
        fd = os.open(path, FLAGS, 0o644)
    except OSError:  # a link (ELOOP), a folder, a FIFO without a reader (ENXIO), no permission
        return None
    try:
        status = os.fstat(fd)
        if stat.S_ISREG(status.st_mode) and status.st_nlink == 1:  # a hard link's other name is someone's file
            os.set_blocking(fd, True)  # a regular file never blocks; writes then complete in full
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def open_beside(path: Path) -> tuple[int, Path] | None:
    """``path``, or the first ``stem-N.suffix`` beside it that is a regular file or can be made one."""
    for n in range(MAX_BESIDE + 1):
        name = path if n == 0 else path.with_name(f"{path.stem}-{n}{path.suffix}")
        fd = open_regular(name)
        if fd is not None:
            return fd, name
    return None


class RunLogHandler(logging.StreamHandler):
    """logging.FileHandler's behaviour (append, ``delay`` opens at the first line) without following
    a link or blocking. ``baseFilename`` is the name asked for; ``path`` the one written."""

    def __init__(self, filename, mode: str = "a", encoding: str | None = "utf-8", delay: bool = True, errors=None):
        self.baseFilename = os.path.abspath(os.fspath(filename))
        self.path: Path | None = None
        # a path that is not valid UTF-8 (a folder named in another encoding) is written escaped, not a traceback
        self.encoding, self.errors = encoding or "utf-8", errors or "backslashreplace"
        self._failed = False
        logging.Handler.__init__(self)
        self.stream = None
        if not delay:
            self.stream = self._open()

    def _open(self):
        if self._failed:
            return None
        opened = open_beside(Path(self.baseFilename))
        if opened is None:
            self._failed = True
            return None
        fd, self.path = opened
        return os.fdopen(fd, "a", encoding=self.encoding, errors=self.errors)

    def emit(self, record: logging.LogRecord) -> None:
        if self.stream is None:
            self.stream = self._open()
            if self.stream is None:
                return
        logging.StreamHandler.emit(self, record)

    def handleError(self, record: logging.LogRecord) -> None:
        """A write that fails (a full disk, a quota, an I/O error) stops the file with one line on the
        console, which keeps every line, instead of logging's "--- Logging error ---" and a traceback
        at every later line; the run goes on, and its record says whether it could be written."""
        import sys

        error = sys.exc_info()[1]
        if not isinstance(error, OSError):
            return super().handleError(record)
        stream, self.stream, self._failed = self.stream, None, True
        try:
            stream.close()
        except OSError:
            pass
        try:
            print(f"normbench: {self.path or self.baseFilename} not written further: {error.strerror or error} "
                  "(the console has every line)", file=sys.stderr)
        except OSError:
            pass

    def close(self) -> None:
        self.acquire()
        try:
            try:
                if self.stream is not None:
                    try:
                        self.flush()
                    finally:
                        stream, self.stream = self.stream, None
                        stream.close()
            finally:
                logging.StreamHandler.close(self)
        finally:
            self.release()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.baseFilename} ({logging.getLevelName(self.level)})>"
