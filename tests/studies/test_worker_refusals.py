"""A job refused in a joblib worker is said and counted as on the basic launcher (hostile h19 J2), and a record
left saying running once every job has ended is a failed run the end line names (hostile h19 J3)."""

import pytest
from omegaconf import OmegaConf

from normbench.studies.sweep_end import RunsFailed, SweepSummary
from tests.report.conftest import write_record
from tests.studies.test_lost_workers import joblib_sweep


def test_a_job_refused_in_a_worker_is_one_line_and_exit_2(tmp_path):
    """T01: grad_clip=nan in joblib workers printed nothing and exited 0; a single run says it and exits 2."""
    done, _ = joblib_sweep(tmp_path, "grad_clip=nan")
    ours = [line for line in done.stderr.splitlines() if line.startswith("normbench:")]
    assert (done.returncode, ours) == (2, ["normbench: error: grad_clip=nan must be a finite number: a record "
                                           "cannot hold it"]), done.stderr


def test_a_job_folder_holding_a_users_file_is_named_while_the_other_job_runs(tmp_path):
    """T02: job 0's folder holds the user's notes.txt: it was skipped with no word, the sweep exited 0."""
    (tmp_path / "s" / "0").mkdir(parents=True)
    (tmp_path / "s" / "0" / "notes.txt").write_text("mine\n")
    done, sweep = joblib_sweep(tmp_path)
    assert done.returncode == 2, done.stderr
    # said once, naming the job, before the end screen (hostile h26 w29: it came after the screen's "above")
    said = [line for line in done.stderr.splitlines() if "holds notes.txt" in line]
    assert len(said) == 1 and said[0].startswith(f"normbench: job #0 ran nothing: the run folder {sweep / '0'} holds"), \
        done.stderr
    assert (sweep / "1" / "summary.json").is_file() and (sweep / "0" / "notes.txt").read_text() == "mine\n"


def test_a_record_left_running_after_the_sweep_is_a_failed_run_named_in_the_end_line(tmp_path):
    """F06: a full disk left job 2's record running; the end line counted only the other failure."""
    sweep = tmp_path / "s"
    write_record(sweep, "0", status="ok")
    write_record(sweep, "1", status="failed", reason="OSError: no space left on device")
    write_record(sweep, "2", status="running", reason=None)
    config = OmegaConf.create({"hydra": {"sweep": {"dir": str(sweep)}}, "report": False})
    with pytest.raises(RunsFailed) as failed:
        SweepSummary().on_multirun_end(config)
    assert failed.value.run_dirs == [str(sweep / "1"), f"{sweep / '2'} (its record still says running: not finished)"]


def test_a_record_a_live_run_holds_is_not_called_failed(tmp_path):
    """Another sweep's job still running in the same folder holds its lock: its record is not stale."""
    import os

    from filelock import lock_descriptor

    from normbench.records.record import LOCK

    sweep = tmp_path / "s"
    write_record(sweep, "0", status="ok")
    held = write_record(sweep, "1", status="running", reason=None)
    fd = os.open(held / LOCK, os.O_RDWR | os.O_CREAT)
    try:
        assert lock_descriptor(fd, blocking=False)
        config = OmegaConf.create({"hydra": {"sweep": {"dir": str(sweep)}}, "report": False})
        SweepSummary().on_multirun_end(config)  # no RunsFailed
    finally:
        os.close(fd)


def test_a_record_that_cannot_be_finished_releases_its_folder(tmp_path, monkeypatch):
    """F06: the full disk's job kept its folder's lock in the idle worker, so its record looked live."""
    from normbench.records import record

    writer = record.RecordWriter.claim(tmp_path / "run", "digest")
    assert record.running_now(writer.run_dir)

    def full(_record):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(record, "write_record", full)
    with pytest.raises(OSError):
        writer.finish("failed", "OSError")
    assert not record.running_now(writer.run_dir)
