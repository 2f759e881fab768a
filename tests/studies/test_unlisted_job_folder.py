"""A resumed sweep meeting a job folder it cannot list (hostile C67, H5): one line naming the folder as
unreadable, and no exception out of the end-of-sweep callback (Hydra turns one into a two-line warning)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from normbench.records.folders import not_ours
from normbench.studies import sweep_end


def _unlistable(monkeypatch, folder: Path) -> None:
    """``folder`` cannot be listed or looked into, as a mode-000 folder is without CAP_DAC_OVERRIDE (tests run as root)."""
    scandir, lstat = os.scandir, os.lstat

    def refused(path) -> bool:
        return os.path.abspath(path) == str(folder) or os.path.dirname(os.path.abspath(path)) == str(folder)

    def refusing_scandir(path="."):
        if refused(path):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return scandir(path)

    def refusing_lstat(path, *args, **kwargs):
        if os.path.dirname(os.path.abspath(path)) == str(folder):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return lstat(path, *args, **kwargs)

    monkeypatch.setattr(os, "scandir", refusing_scandir)
    monkeypatch.setattr(os, "lstat", refusing_lstat)


def test_a_job_folder_that_cannot_be_listed_is_named_as_such(tmp_path, monkeypatch):
    job = tmp_path / "1"
    job.mkdir()
    _unlistable(monkeypatch, job)
    why = not_ours(job, "normbench.log")
    assert why.startswith(f"the run folder {job} cannot be listed (Permission denied)")
    assert "holds" not in why and "\n" not in why


def test_the_sweep_end_does_not_raise_on_a_job_folder_it_cannot_look_in(tmp_path, monkeypatch):
    for name in ("0", "1", "2"):
        (tmp_path / name).mkdir()
    (tmp_path / "0" / "summary.json").write_text("{}")
    _unlistable(monkeypatch, tmp_path / "1")
    assert sweep_end.unrun_jobs(tmp_path) == ["2"]  # 1 is set aside by the report, not a job that never ran
