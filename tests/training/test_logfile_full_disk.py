"""A full disk under the run's log file is one line, not logging's "--- Logging error ---" and a
traceback at every later line (issue 50)."""

from __future__ import annotations

import logging
import os

import pytest

from normbench.training.logfile import RunLogHandler


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (a device whose writes fail ENOSPC)")
def test_a_full_disk_stops_the_log_file_with_one_line(tmp_path, capsys):
    handler = RunLogHandler(tmp_path / "normbench.log")
    logger = logging.getLogger("normbench-test-full-disk")
    logger.propagate, logger.level = False, logging.INFO
    logger.addHandler(handler)
    try:
        logger.info("first line")
        handler.stream.close()
        handler.stream = open("/dev/full", "w", encoding="utf-8")  # as a disk that has just filled up
        for n in range(3):
            logger.info("line %d", n)
    finally:
        logger.removeHandler(handler)
        handler.close()
    err = capsys.readouterr().err
    assert "Logging error" not in err and "Traceback" not in err
    assert err.count("\n") == 1 and "No space left on device" in err and "normbench.log" in err
    assert (tmp_path / "normbench.log").read_text().count("\n") == 1  # what was written before stays
