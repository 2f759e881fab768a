"""Where matplotlib keeps its font cache and reads its matplotlibrc: a temporary folder of this
process, removed at its exit, unless the user chose one (``MPLCONFIGDIR``). Left to itself matplotlib
writes ``~/.cache/matplotlib`` and ``~/.config/matplotlib``: files outside the run folder that
normbench never promised to write (hostile cases R00, R00b). Imported before matplotlib is."""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import sys
import tempfile

ENV = "MPLCONFIGDIR"


def _settle() -> None:
    # matplotlib reads the variables once, at its import: after that, setting them changes nothing
    if "matplotlib" in sys.modules:
        return
    # every figure is drawn on an explicit Agg canvas; a backend named in the environment that matplotlib
    # does not know ended the report in a ValueError at matplotlib's import (hostile h16 K11: MPLBACKEND=bogus)
    os.environ["MPLBACKEND"] = "Agg"
    if os.environ.get(ENV):
        return
    folder = tempfile.mkdtemp(prefix="normbench-matplotlib-")
    os.environ[ENV] = folder  # the sweep's worker processes, started later, share it
    pid = os.getpid()
    # only the process that made it removes it (a forked worker exits first and must not)
    atexit.register(lambda: os.getpid() == pid and shutil.rmtree(folder, ignore_errors=True))


class _UnsavedFontCache(logging.Filter):
    """Drops matplotlib's warning that its font cache could not be saved (a file-size limit, a full disk):
    the cache is only a speed-up, rebuilt by the next process, and what the command failed to write is
    said in its own one line (hostile F04 F06 F18: matplotlib's line came first)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Could not save font_manager cache")


_settle()
logging.getLogger("matplotlib.font_manager").addFilter(_UnsavedFontCache())
