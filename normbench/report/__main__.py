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


_STOPPED: list[int] = []  # the signals that arrived during main, even one whose exception Python swallowed


def _interrupt(signum, frame):
    # raised where the build is; but a signal landing in a weakref callback or __del__ (matplotlib's) has its
    # exception printed and dropped, and the build goes on: main reads _STOPPED after it, so the stop is still said
    _STOPPED.append(signum)
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

from normbench.checks import (  # noqa: E402
    ArgumentRefused,
    OneLineParser,
    claims_path,
    given_path,
    one_line,
    out_folder_problem,
    out_path,
    shown,
    whole_number,
)
from normbench.report.output import MANIFEST  # noqa: E402  (light: the record reader, no pandas)


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="python -m normbench.report",
        description="Report on normbench run records: leaderboard, curves, gradients, throughput, claims.")
    parser.add_argument("paths", nargs="+", type=lambda text: given_path(text, "PATH"), metavar="PATH",
                        help="a sweep directory (searched recursively for summary.json) or a run directory")
    parser.add_argument("--out", type=out_path, default=None,
                        help=f"output directory (default: the first PATH). The report lists what it writes in "
                             f"DIR/{MANIFEST} and replaces only those files, if unchanged; any other file in "
                             f"the way stops it (exit status 2) before anything is written")
    parser.add_argument("--claims", type=claims_path, action="append", default=[], metavar="DIR",
                        help="a folder of your own claims as YAML files (docs/claims.md), judged beside the "
                             "shipped ones; may be given more than once")
    parser.add_argument("--jobs", type=_jobs, default=None, metavar="N",
                        help="processes the figures are drawn in while the report goes on, the report's own "
                             "counted (default: the cores this process may use, at most 4; 1 draws them in the "
                             "report's process)")
    return parser


MAX_JOBS = 256


_jobs = whole_number(1, MAX_JOBS)


def main(argv: list[str] | None = None) -> int:
    _STOPPED.clear()
    previous = {signum: signal.signal(signum, _interrupt) for signum in STOPS}
    signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C: KeyboardInterrupt, caught below
    try:
        args = _parser().parse_args(argv)
        refused = _refusal(args)
        if refused:
            _say(refused)
            return 2
        from normbench.analysis.result import ClaimFileError, use_folders
        from normbench.report.build import ReportError, build_report  # heavy: pandas, matplotlib

        try:
            use_folders(args.claims)
            html = build_report(args.paths, args.out, jobs=args.jobs)
        except (ReportError, ClaimFileError) as error:
            _say(error)
            return 2
    except KeyboardInterrupt as stop:  # Ctrl-C or SIGTERM: the staging folder is gone, nothing half-placed
        signum = stop.signum if isinstance(stop, Terminated) else signal.SIGINT
        print(f"normbench.report: stopped by {signal.Signals(signum).name}; no report written", file=sys.stderr)
        return 128 + signum
    finally:
        for signum, before in previous.items():
            signal.signal(signum, before)
    if _STOPPED:  # a stop whose exception was swallowed: the report was finished and placed before it took effect
        name = signal.Signals(_STOPPED[0]).name
        print(f"normbench.report: stopped by {name}, after the report was written: {html}", file=sys.stderr)
        return 128 + _STOPPED[0]
    print(html)
    return 0


def _refusal(args: argparse.Namespace) -> str | None:
    """One line on arguments no report can be made from or written to, before anything is read or written."""
    missing = next((p for p in args.paths if not p.exists()), None)
    if missing is not None:  # a mistyped PATH is the user's slip, not a record to set aside (hostile R07)
        return f"PATH {shown(str(missing), 200)} does not exist"
    if args.out is None:
        return None
    if args.out.is_symlink():  # a planted link would carry the report elsewhere
        return (f"--out {shown(str(args.out), 200)} is a symbolic link; give the folder it points to if the report "
                f"belongs there")
    return out_folder_problem(args.out)


def _say(error: object) -> None:
    """``error`` as one line on stderr: a path echoed in it may hold a newline or an escape (hostile R27)."""
    print(f"normbench.report: {one_line(error)}", file=sys.stderr)


if __name__ == "__main__":
    from normbench.checks import exit_on_full_stdout

    try:
        code = exit_on_full_stdout("normbench.report", main)
    except ArgumentRefused as refused:  # `normbench report` says it in subcommand(); this spelling here
        print(f"normbench.report: {refused}", file=sys.stderr)
        code = 2
    except KeyboardInterrupt:  # the instant between main's return and here
        code = 128 + signal.SIGINT
    sys.exit(code)
