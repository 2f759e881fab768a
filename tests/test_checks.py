"""The shared argument checks (normbench/checks.py)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from normbench.checks import ArgumentRefused, given_path, name_too_long
from tests.waiting import HANG_S

ROOT = Path(__file__).resolve().parents[1]
LONG_NAMES = {"300 bytes": "b" * 300, "130 x ü": "ü" * 130, "5000 deep": "a/" * 2500}


@pytest.mark.parametrize("text", LONG_NAMES.values(), ids=LONG_NAMES)
def test_a_name_too_long_for_the_filesystem_is_refused(text):
    assert name_too_long(text)
    with pytest.raises(ArgumentRefused, match="longer than the filesystem allows"):
        given_path(text, "--out")
    assert name_too_long("ü" * 127) is None and name_too_long("a/" * 100) is None


COMMANDS = {  # h15 B5: each raised OSError ENAMETOOLONG from a stat of the argument
    "report --out": ["normbench", "report", ".", "--out", "{}"],
    "report PATH": ["normbench", "report", "{}"],
    "report --claims": ["normbench", "report", ".", "--claims", "{}"],
    "normbench.report --out": ["normbench.report", ".", "--out", "{}"],
    "rerun --out": ["normbench", "rerun", "r", "--out", "{}"],
    "study --out": ["normbench", "study", "norm=ln,rms", "--out", "{}"],
    "tune --out": ["normbench", "tune", "lr=0.1,0.2,0.3", "--out", "{}"],
    "bench kernels --out": ["normbench", "bench", "kernels", "--out", "{}"],
    "bench sweep --keep": ["normbench", "bench", "sweep", "--profile", "--keep", "{}"],
    "evaluate": ["normbench", "evaluate", "{}"],
}


@pytest.mark.parametrize("name", ["b" * 300, "ü" * 130], ids=["300 bytes", "130 x ü"])
@pytest.mark.parametrize("command", COMMANDS.values(), ids=COMMANDS)
def test_every_path_argument_refuses_a_too_long_name_in_one_line(command, name, tmp_path):
    module, *args = command
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", module, *[a.format(name) for a in args]], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=HANG_S)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "longer than the filesystem allows" in done.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", ["report", "compare", "evaluate"])
def test_no_usable_temporary_folder_is_one_line(command, tmp_path):
    """Hostile h19 J4 (F18b R08): under a file-size limit of 0 no temporary folder is usable, and report and
    compare ended in a traceback from matplotlib's config folder, evaluate in one from torch's temporary file."""
    import resource

    (tmp_path / "run").mkdir()
    args = {"report": ["run", "--out", "o"], "compare": ["run", "run"], "evaluate": ["run"]}[command]
    env = {k: v for k, v in os.environ.items() if k not in ("TMPDIR", "MPLCONFIGDIR")}
    done = subprocess.run([sys.executable, "-m", "normbench", command, *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=HANG_S,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0)))
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [f"normbench {command}: no usable temporary folder ($TMPDIR, /tmp, /var/tmp and "
                                        f"the current folder are full or not writable): set TMPDIR to a writable "
                                        f"folder with free space"]


def test_a_whole_number_argument_takes_its_bounds_and_refuses_the_rest_in_one_line():
    """checks.whole_number, the type of report's --jobs, bench's sizes and the screenshot's pixels: inclusive
    bounds, a word or a fraction refused, the unit named in both refusals where there is one."""
    import argparse

    from normbench.checks import whole_number

    jobs, pixels = whole_number(1, 256), whole_number(1, 16384, "pixels")
    assert (jobs("1"), jobs("256"), jobs(" 7 "), pixels("16384")) == (1, 256, 7, 16384)
    for text, message in (("0", "must be >= 1 and <= 256, got 0"), ("257", "got 257"),
                          ("1.5", "'1.5' is not a whole number"), ("", "'' is not a whole number"),
                          ("9" * 60, "got " + "9" * 40)):
        with pytest.raises(argparse.ArgumentTypeError, match=message):
            jobs(text)
    with pytest.raises(argparse.ArgumentTypeError, match="'x' is not a whole number of pixels"):
        pixels("x")
    with pytest.raises(argparse.ArgumentTypeError, match=r"<= 16384 pixels, got -5"):
        pixels("-5")


def test_a_command_that_ignores_stops_in_a_tests_process_leaves_them_as_they_were():
    """normbench's subcommand ignores stops once its outcome is decided (a CLI process ends there); the suite's
    autouse fixture (tests/conftest.py, stop_dispositions_kept) puts the dispositions back, so the next test in this
    worker, and the children it starts, can still be stopped."""
    import signal

    from normbench.__main__ import subcommand
    from tests.conftest import STOPS, stop_dispositions_kept

    before = {signum: signal.getsignal(signum) for signum in STOPS}
    with stop_dispositions_kept():
        assert subcommand("report", [""]) == 2  # an empty path: refused in one line
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN  # what a test's process was left with
    assert {signum: signal.getsignal(signum) for signum in STOPS} == before


@pytest.mark.parametrize(("cpu_max", "v1", "expected"), [
    ("max 100000\n", None, 16), ("400000 100000\n", None, 4), ("150000 100000\n", None, 2), ("50000 100000", None, 1),
    ("3200000 100000", None, 16),  # a quota above the mask: the mask
    (None, ("400000", "100000"), 4), (None, ("-1", "100000"), 16),  # cgroup v1; -1 is no limit
    (None, None, 16), ("garbage", None, 16), ("x 100000", None, 16), ("100000 0", None, 16)])
def test_the_cores_are_the_affinity_mask_cut_to_the_cgroup_cpu_quota(cpu_max, v1, expected, tmp_path, monkeypatch):
    """docker --cpus=4 on a 64-core host leaves the affinity mask at 64: the threads and workers counted from it
    alone would oversubscribe the 4 CPUs the quota allows (joblib's -1 counts 4 there)."""
    from normbench import checks

    monkeypatch.setattr(os, "sched_getaffinity", lambda _: set(range(16)), raising=False)
    v2_file, quota_file, period_file = tmp_path / "cpu.max", tmp_path / "quota", tmp_path / "period"
    if cpu_max is not None:
        v2_file.write_text(cpu_max)
    if v1 is not None:
        quota_file.write_text(v1[0] + "\n")
        period_file.write_text(v1[1] + "\n")
    monkeypatch.setattr(checks, "CGROUP_CPU_MAX", str(v2_file))
    monkeypatch.setattr(checks, "CGROUP_V1_QUOTA", (str(quota_file), str(period_file)))
    assert checks.cores() == expected
