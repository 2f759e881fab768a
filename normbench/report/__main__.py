"""python -m normbench.report PATH [PATH ...] [--out DIR]"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from normbench.report.build import ReportError, build_report
from normbench.report.output import MANIFEST


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m normbench.report",
        description="Report on normbench run records: leaderboard, curves, gradients, throughput, claims.")
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH",
                        help="a sweep directory (searched recursively for summary.json) or a run directory")
    parser.add_argument("--out", type=Path, default=None,
                        help=f"output directory (default: the first PATH). The report lists what it writes in "
                             f"DIR/{MANIFEST} and replaces only those files, if unchanged; any other file in "
                             f"the way stops it (exit status 2) before anything is written")
    args = parser.parse_args(argv)
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        html = build_report(args.paths, args.out)
    except ReportError as error:
        print(f"normbench.report: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as stop:  # Ctrl-C or SIGTERM: the staging folder is gone, nothing half-placed
        signum = signal.SIGTERM if isinstance(stop, Terminated) else signal.SIGINT
        print(f"normbench.report: stopped by {signal.Signals(signum).name}; no report written", file=sys.stderr)
        return 128 + signum
    finally:
        signal.signal(signal.SIGTERM, previous)
    print(html)
    return 0


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the build is, so that its staging folder is removed on the way out."""


def _interrupt(signum, frame):
    raise Terminated()


if __name__ == "__main__":
    sys.exit(main())
