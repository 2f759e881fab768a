"""Whose files an output folder holds, asked before a run or a sweep writes into it: a run never
writes over files it did not write. A folder that holds someone's files and no normbench record is
refused with one line (the command line's run, a sweep, ``normbench rerun --out``)."""

from __future__ import annotations

import json
import os
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


def not_ours(run_dir: Path, log_name: str) -> str | None:
    """Why a run may not write into ``run_dir`` (None: it may): the folder holds someone's files and
    no normbench record. A record (summary.json) or the lock a killed attempt left makes it a
    normbench run folder, which record.claim_run_dir reuses or steps beside; the job's log
    (``log_name``, Hydra's, opened at the first line) is the only other name a new run may find."""
    if any(os.path.lexists(Path(run_dir) / name) for name in (SUMMARY, LOCK)):
        return None
    found = foreign_entry(run_dir, (log_name,))
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
