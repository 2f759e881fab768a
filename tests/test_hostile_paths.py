"""A working folder whose name is not valid UTF-8 (issue 50): runs and sweeps finish, no traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TINY, TINY_TASK
from tests.waiting import HANG_S


def test_a_sweep_in_a_folder_named_in_another_encoding(tmp_path):
    folder = tmp_path / os.fsdecode(b"caf\xe9-latin1")  # not UTF-8: Python holds it as a surrogate
    folder.mkdir()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}

    def normbench(*args):
        return subprocess.run([sys.executable, "-m", "normbench", *args, *TINY, *TINY_TASK], cwd=folder, env=env,
                              capture_output=True, timeout=HANG_S)
    done = normbench("-m", "seed=0", "report=false", "hydra.sweep.dir=sweep")
    err = done.stderr.decode(errors="replace")
    assert done.returncode == 0 and "Traceback" not in err and "Logging error" not in err, err
    assert json.loads((folder / "sweep" / "0" / "summary.json").read_text())["status"] == "ok"
    assert "\\udce9" in (folder / "sweep" / "0" / "normbench.log").read_text()  # the path, escaped


@pytest.mark.parametrize("args", [["paths.outputs="], ["-m", "paths.multirun=", "seed=0"], ["paths.outputs= "]])
def test_a_blank_paths_folder_is_refused_before_hydra_makes_a_folder_at_the_root(args, tmp_path):
    """Hostile N12b, N13, N21: paths.outputs= made /DATE/TIME/ (the run refused, its record written there) and
    paths.multirun= a whole sweep with its report at the filesystem's root."""
    before = set(os.listdir("/"))
    done = subprocess.run([sys.executable, "-m", "normbench", *args, "steps=2", "eval_every=1", "task=adding",
                           "task.n_train=64"], cwd=tmp_path, capture_output=True, text=True, timeout=HANG_S,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert done.returncode == 2 and "is empty: its folders would be made at the filesystem's root" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert set(os.listdir("/")) == before and not list(tmp_path.iterdir())
