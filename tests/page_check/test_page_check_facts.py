"""page_check's facts tool: bad input is one line and exit 2, never a hang (issue 50: P216, P222)."""

import os

import pytest

from normbench.page_check import facts


def test_a_fifo_is_refused_not_read(tmp_path, capsys):
    # P216: facts on a FIFO blocked forever on the read
    fifo = tmp_path / "page.html"
    os.mkfifo(fifo)
    assert facts.main([str(fifo)]) == 2
    err = capsys.readouterr().err
    assert "not a regular file" in err and err.count("\n") == 1


@pytest.mark.parametrize("width", ["-5", "0", "wide"])
def test_a_width_that_is_no_width_is_one_line(tmp_path, capsys, width):
    # P222: --widths -5 was accepted
    page = tmp_path / "report.html"
    page.write_text("<html><body></body></html>")
    with pytest.raises(SystemExit) as stop:
        facts.main([str(page), "--widths", width])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "--widths" in err and err.count("\n") == 1
