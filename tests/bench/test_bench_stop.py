"""`python -m normbench.bench` stopped by a signal: one line, 128 + the signal's number, no temporary folder left
(B23, B24, B24b-d, B24g-h). The signal is sent by the child itself at a chosen moment, so the test is exact."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.waiting import HANG_S

ROOT = Path(__file__).resolve().parents[2]

# argv: SIGNAL WHERE; WHERE is "imports" (as torch starts to load) or "sweep" (inside the sweep's temporary folder)
CHILD = """
import os, runpy, signal, sys
signum, where = getattr(signal, sys.argv[1]), sys.argv[2]
if where == "imports":
    class _Hook:
        def find_spec(self, name, path=None, target=None):
            if name == "torch":
                os.kill(os.getpid(), signum)
            return None
    sys.meta_path.insert(0, _Hook())
else:
    from normbench.bench import sweep
    def _stopped_here(*args, **kwargs):
        os.kill(os.getpid(), signum)
        return sweep.time.sleep(5)
    sweep.timed_sweep = _stopped_here
sys.argv = ["normbench.bench", "sweep", "--quick"]
runpy.run_module("normbench.bench", run_name="__main__", alter_sys=True)
"""


def _stopped(name: str, where: str, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path)}
    return subprocess.run([sys.executable, "-c", CHILD, name, where], capture_output=True, text=True, env=env,
                          timeout=HANG_S)


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_stop_during_the_imports_is_one_line(name, tmp_path):
    done = _stopped(name, "imports", tmp_path)
    assert done.returncode == 128 + getattr(signal, name), done.stderr
    assert done.stderr.strip() == f"normbench bench: stopped by {name}"


@pytest.mark.parametrize("name", ["SIGTERM", "SIGINT"])
def test_a_stopped_sweep_leaves_no_temporary_folder(name, tmp_path):
    done = _stopped(name, "sweep", tmp_path)
    assert done.returncode == 128 + getattr(signal, name), done.stderr
    assert done.stderr.strip() == f"normbench bench: stopped by {name}"
    assert not list(tmp_path.glob("normbench-sweep-*"))
