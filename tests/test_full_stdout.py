"""Standard output on a full device (`> /dev/full`): one line on stderr and exit status 1 on every entry point,
never a traceback (hostile R25, P14, X06, N08)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.report.conftest import write_record
from tests.waiting import HANG_S

ROOT = Path(__file__).resolve().parents[1]


def _argv(args: list[str], tmp_path: Path) -> list[str]:
    """The command's arguments, with a run record, a page and an output folder made for it under tmp_path."""
    runs = tmp_path / "runs"
    write_record(runs, "r0", seed=0)
    page = tmp_path / "page.html"
    page.write_text("<html><head><title>t</title></head><body><p>x</p></body></html>", encoding="utf-8")
    return [a.format(page=page, runs=runs, out=tmp_path / "out") for a in args]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
@pytest.mark.parametrize("args", [["normbench", "--help"], ["normbench", "--hydra-help"],
                                  ["normbench", "-sc", "install=bash"], ["normbench", "--cfg", "job"],
                                  ["normbench", "--info"],
                                  ["normbench", "report", "--help"], ["normbench", "tune", "--help"],  # Z06
                                  ["normbench", "compare", "--help"], ["normbench", "evaluate", "--help"],
                                  ["normbench.page_check.facts", "{page}"],
                                  ["normbench.report", "{runs}", "--out", "{out}"],
                                  ["normbench.studies.compare", "{runs}", "{runs}"]])
def test_a_full_standard_output_is_one_line_and_exit_1(args, tmp_path):
    argv = _argv(args, tmp_path)
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", *argv], stdout=full, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=HANG_S)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-800:]
    assert done.stderr.strip().splitlines()[-1].endswith("cannot write to standard output (No space left on device)")
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


@pytest.mark.parametrize("args", [["normbench.report", "{runs}", "--out", "{out}"], ["normbench", "compare", "{runs}", "{runs}"],
                                  ["normbench.page_check.facts", "{page}"]])
def test_a_closed_standard_output_is_no_traceback(args, tmp_path):
    """Hostile Z09-Z16: `>&-` left sys.stdout None, and flush or isatty on it was a traceback."""
    argv = _argv(args, tmp_path)
    done = subprocess.run([sys.executable, "-m", *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=HANG_S,
                          preexec_fn=lambda: os.close(1))
    assert "Traceback" not in done.stderr and done.returncode in (0, 1), done.stderr[-800:]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
@pytest.mark.parametrize("args", [["normbench", "norm=bogus"], ["normbench", "--bogus-flag"],
                                  ["normbench", "evaluate", "{out}"], ["normbench.report", "{out}"]])
def test_bad_input_exits_2_even_when_its_line_cannot_be_written(args, tmp_path):
    """Hostile Z31, Z32: with standard error on a full device the refusal's line failed, and the status was 1."""
    argv = _argv(args, tmp_path)
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", *argv], stdout=subprocess.PIPE, stderr=full, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=tmp_path, timeout=HANG_S)
    assert done.returncode == 2 and done.stdout == ""


def test_a_printed_config_to_a_reader_that_has_gone_is_no_error(tmp_path):
    """`normbench --cfg job | head`: the reader has what it wanted; no line, exit 0."""
    proc = subprocess.Popen([sys.executable, "-m", "normbench", "--cfg", "job"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=tmp_path)
    proc.stdout.close()
    err = proc.communicate(timeout=HANG_S)[1].decode()
    assert proc.returncode == 0 and err == "", err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
@pytest.mark.parametrize("report", ["true", "false"])
def test_a_sweep_with_a_full_standard_output_is_one_line_and_its_report_is_written(report, tmp_path):
    """Hostile h13 F07, F15: Hydra's `[HYDRA] Launching` lines failed through logging (3 tracebacks, 186 lines), the
    sweep's report was lost, and the status was 0."""
    sweep = tmp_path / "sw"
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "normbench", "-m", "steps=2", "eval_every=1", "task=adding",
                               "task.n_train=64", "seed=0", f"report={report}", f"hydra.sweep.dir={sweep}"],
                              stdout=full, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                              env={**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}, timeout=HANG_S * 4)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and "Traceback" not in done.stderr and "Logging error" not in done.stderr, done.stderr
    assert lines[-1] == "normbench: cannot write to standard output (No space left on device)", done.stderr
    assert not any(line.startswith("normbench:") for line in lines[:-1]), done.stderr
    assert (sweep / "0" / "summary.json").is_file() and (sweep / "report.md").is_file() == (report == "true")
