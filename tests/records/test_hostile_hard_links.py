"""A run file that is a hard link (hostile case U05: a ``cp -al`` snapshot, a planted link): its
other name is someone's file, so a run never truncates or appends through it, as with a symlink."""

from __future__ import annotations

import os

import pytest

from normbench.records.record import claim_run_dir, open_run_file, planted
from normbench.training.logfile import open_regular

PRECIOUS = "someone's precious lines\n"


@pytest.fixture
def linked(tmp_path):
    victim = tmp_path / "victim.jsonl"
    victim.write_text(PRECIOUS)
    run = tmp_path / "run"
    run.mkdir()
    os.link(victim, run / "metrics.jsonl")
    return victim, run


def test_a_hard_linked_run_file_is_refused_without_truncating_it(linked):
    victim, run = linked
    with pytest.raises(OSError, match="hard link"):
        open_run_file(run / "metrics.jsonl")
    assert victim.read_text() == PRECIOUS


def test_a_run_folder_holding_one_is_set_aside(linked):
    victim, run = linked
    assert planted(run) == "metrics.jsonl"
    taken, fd = claim_run_dir(run, "ab" * 32)
    os.close(fd)
    assert taken != run and victim.read_text() == PRECIOUS


def test_a_fresh_run_file_is_still_written_and_truncated(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text("old line\n")
    with os.fdopen(open_run_file(path), "w") as handle:
        handle.write("new\n")
    assert path.read_text() == "new\n"


def test_the_run_log_does_not_append_through_a_hard_link(tmp_path):
    victim = tmp_path / "victim.log"
    victim.write_text(PRECIOUS)
    os.link(victim, tmp_path / "normbench.log")
    assert open_regular(tmp_path / "normbench.log") is None
    assert victim.read_text() == PRECIOUS
