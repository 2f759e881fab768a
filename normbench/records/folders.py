"""Whose files an output folder holds, asked before a run or a sweep writes into it: a run never
writes over files it did not write. A folder that holds someone's files and no normbench record is
refused with one line (the command line's run, a sweep, ``normbench rerun --out``)."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

from normbench.records.record import LOCK, SUMMARY


def foreign_entry(folder: Path, ours: tuple[str, ...] = ()) -> str | None:
    """The first entry of ``folder`` not named in ``ours``: None when the folder is absent, empty or
    holds only those. A folder that cannot be listed, or a file where the folder should be, is named
    itself: nothing can be written there without risk to what it holds."""
    try:
        with os.scandir(folder) as entries:
            return next((e.name for e in entries if e.name not in ours), None)
    except FileNotFoundError:
        return None
    except OSError:
        return str(folder)


# The first line of a job's log as conf/hydra/job_logging writes it: "[HH:MM:SS] message".
OUR_LOG_LINE = re.compile(rb"\[\d\d:\d\d:\d\d\] ")


def _log_left_alone(path: Path) -> bool:
    """Whether the job's log may already be at ``path``: a regular file whose first line is ours (a duplicate
    job's log), or no regular file at all (a link or FIFO planted there, which the run's log handler,
    training/logfile.RunLogHandler, leaves and writes beside). Never opened unless regular (a FIFO would block)."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return True
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            return OUR_LOG_LINE.match(os.read(fd, 16)) is not None
        finally:
            os.close(fd)
    except FileNotFoundError:
        return False
    except OSError:
        return True  # not readable as ours: the log handler's own checks decide, as for a planted entry


def not_ours(run_dir: Path, log_name: str, hydra_files: str | None = None) -> str | None:
    """Why a run may not write into ``run_dir`` (None: it may): the folder holds someone's files and
    no normbench record. A record (summary.json) or the lock a killed attempt left makes it a
    normbench run folder, which record.claim_run_dir reuses or steps beside. Other names a new run may
    find: Hydra's folder of the job's config (``hydra_files``: hydra.output_subdir, written before the
    job starts) and the job's log (``log_name``) when it is one of ours (a duplicate job writes its log
    and no record) or no regular file (_log_left_alone); a regular log in any other format is someone's, and
    the run would append to it."""
    if any(os.path.lexists(Path(run_dir) / name) for name in (SUMMARY, LOCK)):
        return None
    try:
        os.scandir(run_dir).close()
    except FileNotFoundError:
        return None
    except OSError as error:  # C67: named as what it is, not as its own content
        return (f"the run folder {run_dir} cannot be listed ({error.strerror or error}); a run never writes "
                f"where it cannot see what is there: choose another output folder")
    allowed = (hydra_files,) if hydra_files else ()
    if _log_left_alone(Path(run_dir) / log_name):
        allowed += (log_name,)
    found = foreign_entry(run_dir, allowed)
    if found is None:
        return None
    return (f"the run folder {run_dir} holds {found} but no normbench record; a run never writes over files "
            f"it did not write: choose another output folder")


def stale_note(run_dir: Path) -> str:
    """What an error line adds when the run's record could not be finished: a summary.json left saying
    ``running`` is stale (no process is running it), and the report counts it as incomplete."""
    try:
        with open(run_dir / "summary.json", encoding="utf-8") as handle:
            status = json.loads(handle.read(1 << 20)).get("status")
    except (OSError, ValueError, AttributeError):
        return ""
    return f"; the record in {run_dir} is stale (it says {status!r})" if status == "running" else ""
