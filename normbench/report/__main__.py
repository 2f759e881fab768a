"""python -m normbench.report PATH [PATH ...] [--out DIR]

Ctrl-C, SIGTERM or SIGHUP at any moment (the imports of pandas and matplotlib included, which take a second
or more) is one line and exit 128 + the signal's number, never a traceback: the SIGTERM handler is
installed before anything heavy is imported, and the imports run inside main's handling.
"""

from __future__ import annotations

import os
import signal
import sys


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP (a closed terminal), raised where the build is, so that its staging folder is
    removed on the way out; ``signum`` says which."""
    signum = signal.SIGTERM


# The signals that stop a report as SIGTERM does: SIGHUP too, or closing the terminal left the staging folder.
STOPS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


def _interrupt(signum, frame):
    stop = Terminated()
    stop.signum = signum
    raise stop


def _before_main(signum, frame):
    """A signal before main's handling is in place (the imports below): nothing is written yet, so the
    one line and the exit status are all there is to do."""
    print(f"normbench.report: stopped by {signal.Signals(signum).name}; no report written", file=sys.stderr)
    sys.stderr.flush()
    os._exit(128 + signum)


if __name__ == "__main__":  # first, before the imports below and main's (an early signal is one line too)
    for _signum in (*STOPS, signal.SIGINT):
        signal.signal(_signum, _before_main)

import argparse  # noqa: E402  (after the handler, deliberately)
from pathlib import Path  # noqa: E402

from normbench.checks import (
    OneLineParser,
    out_path,  # noqa: E402
)
from normbench.report.output import MANIFEST  # noqa: E402  (light: the record reader, no pandas)


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="python -m normbench.report",
        description="Report on normbench run records: leaderboard, curves, gradients, throughput, claims.")
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH",
                        help="a sweep directory (searched recursively for summary.json) or a run directory")
    parser.add_argument("--out", type=out_path, default=None,
                        help=f"output directory (default: the first PATH). The report lists what it writes in "
                             f"DIR/{MANIFEST} and replaces only those files, if unchanged; any other file in "
                             f"the way stops it (exit status 2) before anything is written")
    parser.add_argument("--claims", type=Path, action="append", default=[], metavar="DIR",
                        help="a folder of your own claims as YAML files (docs/claims.md), judged beside the "
                             "shipped ones; may be given more than once")
    return parser


def main(argv: list[str] | None = None) -> int:
    previous = {signum: signal.signal(signum, _interrupt) for signum in STOPS}
    signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C: KeyboardInterrupt, caught below
    try:
        args = _parser().parse_args(argv)
        if args.out is not None and args.out.is_symlink():  # a planted link would carry the report elsewhere
            print(f"normbench.report: --out {str(args.out)[:200]} is a symbolic link; give the folder it points to "
                  f"if the report belongs there", file=sys.stderr)
            return 2
        from normbench.analysis.result import ClaimFileError, use_folders
        from normbench.report.build import ReportError, build_report  # heavy: pandas, matplotlib

        try:
            use_folders(args.claims)
            html = build_report(args.paths, args.out)
        except (ReportError, ClaimFileError) as error:
            print(f"normbench.report: {error}", file=sys.stderr)
            return 2
    except KeyboardInterrupt as stop:  # Ctrl-C or SIGTERM: the staging folder is gone, nothing half-placed
        signum = stop.signum if isinstance(stop, Terminated) else signal.SIGINT
        print(f"normbench.report: stopped by {signal.Signals(signum).name}; no report written", file=sys.stderr)
        return 128 + signum
    finally:
        for signum, before in previous.items():
            signal.signal(signum, before)
    print(html)
    return 0


if __name__ == "__main__":
    from normbench.checks import exit_on_full_stdout

    try:
        code = exit_on_full_stdout("normbench.report", main)
    except KeyboardInterrupt:  # the instant between main's return and here
        code = 128 + signal.SIGINT
    sys.exit(code)
