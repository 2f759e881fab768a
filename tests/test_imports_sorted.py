"""The import order is the one formatter the project declares (pyproject.toml, [tool.ruff]: isort rules only):
checked here, so the README's test command, and CI with it, fail on an unsorted import block."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.waiting import HANG_S  # waits end on a hang, never on a slow machine

ROOT = Path(__file__).resolve().parent.parent


def test_every_import_block_is_sorted():
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed (it comes with the dev extra: pip install -e '.[dev]')")
    checked = subprocess.run([ruff, "check", "--no-cache", "normbench", "tests"], cwd=ROOT, capture_output=True,
                             text=True, timeout=HANG_S)
    assert checked.returncode == 0, f"imports out of order; `ruff check --fix` sorts them:\n{checked.stdout[-3000:]}"
