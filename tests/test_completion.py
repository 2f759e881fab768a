"""Shell completion of the `normbench` console script, by Hydra: `normbench -sc install=bash`."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The console script's entry point, as pip's `normbench` wrapper calls it (argv[0] is the script's name).
AS_CONSOLE_SCRIPT = "import sys; sys.argv[0] = 'normbench'; from normbench.__main__ import main; main()"


def normbench(*args, comp_line=None):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if comp_line is not None:
        env.update(COMP_LINE=comp_line, COMP_POINT=str(len(comp_line)))
    return subprocess.run([sys.executable, "-c", AS_CONSOLE_SCRIPT, *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120)


def test_completion_lists_config_group_options_and_keys():
    groups = normbench("-sc", "query=bash", comp_line="normbench norm=")
    assert groups.returncode == 0, groups.stderr
    assert set(groups.stdout.split()) == {f"norm={k}" for k in ("none", "bn", "ln", "rms", "scale", "dyt")}
    keys = normbench("-sc", "query=bash", comp_line="normbench lo")  # a key and a group (each process ~5 s: torch)
    assert {"log_every=", "logger="} <= set(keys.stdout.split())


def test_install_script_completes_the_console_script():
    script = normbench("-sc", "install=bash")
    assert script.returncode == 0, script.stderr
    assert "hydra_bash_completion normbench" in script.stdout
