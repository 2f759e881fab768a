"""Where matplotlib keeps its font cache and reads its matplotlibrc: a temporary folder of this
process, removed at its exit, unless the user chose one (``MPLCONFIGDIR``). Left to itself matplotlib
writes ``~/.cache/matplotlib`` and ``~/.config/matplotlib``: files outside the run folder that
normbench never promised to write (hostile cases R00, R00b). Imported before matplotlib is."""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile

ENV = "MPLCONFIGDIR"


def _settle() -> None:
    # matplotlib reads the variable once, at its import: after that, setting it changes nothing
    if os.environ.get(ENV) or "matplotlib" in sys.modules:
        return
    folder = tempfile.mkdtemp(prefix="normbench-matplotlib-")
    os.environ[ENV] = folder  # the sweep's worker processes, started later, share it
    pid = os.getpid()
    # only the process that made it removes it (a forked worker exits first and must not)
    atexit.register(lambda: os.getpid() == pid and shutil.rmtree(folder, ignore_errors=True))


_settle()
