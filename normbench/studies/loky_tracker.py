"""loky's resource tracker, started through this module so that its relaunch after a kill stays quiet.

When the tracker process is killed (an OOM killer, ``kill -9``), loky starts a new one on the next
register, with a "process died unexpectedly" UserWarning, and the new tracker prints a KeyError
traceback for each resource the dead one had registered and a worker now unregisters (hostile h15
W01, W02: four tracebacks after a sweep that finished ok). Nothing is lost either way: the sweep's
runs and records do not depend on the tracker. ``install`` makes loky launch its tracker as
``from normbench.studies.loky_tracker import main``, whose only change is that excepthook, and
ignores the warning. Kept free of imports: the tracker process loads only this and loky.
"""

from __future__ import annotations

import sys
import warnings

RELAUNCH_WARNING = "resource_tracker: process died unexpectedly"


def _quiet_unknown_unregister(hook):
    def excepthook(kind, value, tb):
        last = tb
        while last is not None and last.tb_next is not None:
            last = last.tb_next
        if kind is KeyError and last is not None and "resource_tracker" in last.tb_frame.f_code.co_filename:
            return  # an UNREGISTER of a resource the killed tracker held: nothing to clean here
        hook(kind, value, tb)
    return excepthook


def main(fd, verbose=0):
    """The tracker process's entry point (loky's main, with the excepthook above)."""
    from joblib.externals.loky.backend import resource_tracker

    sys.excepthook = _quiet_unknown_unregister(sys.excepthook)
    return resource_tracker.main(fd, verbose)


def install() -> None:
    """In a launcher or worker process: loky's tracker started through ``main`` here; its relaunch warning ignored."""
    warnings.filterwarnings("ignore", message=RELAUNCH_WARNING, category=UserWarning)
    try:
        from joblib.externals.loky.backend import resource_tracker
    except ImportError:
        return
    resource_tracker.main = main  # read by ResourceTracker._launch as f"from {main.__module__} import main"
