"""`normbench compare BASELINE NEW`'s command line, answered before pandas and scipy load: its parser, the checks
of its arguments that read no record (BASELINE or NEW that does not exist, --out, the tolerances; --exact beside a
flag that loosens it), and ``main``, which then runs the comparison (normbench/studies/compare.py, whose docstring
says what it gates). A mistyped option, a folder that does not exist and ``--help`` take a fraction of a second,
not the two seconds those imports take."""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

from normbench.checks import OneLineParser, given_path, out_path
from normbench.records.metrics import PRIMARY_SCORE, SCORES, path
from normbench.records.record import Unreadable, open_regular

SCORE_COLUMNS = {key: path(key) for key in (*SCORES, "test")}  # the scores compare gates on
HEADING = "## normbench compare: "  # the first line of every summary: how --out recognises its own file


class CompareError(Exception):
    """Input that cannot be compared; the message is one line."""


def parser() -> OneLineParser:
    """compare's options; their types refuse an empty or over-long path (checks.given_path, out_path)."""
    cli = OneLineParser(
        prog="python -m normbench compare",
        description="Compare NEW run records against BASELINE, paired by setting and seed; exit 1 when NEW is worse.")
    cli.add_argument("baseline", type=lambda text: given_path(text, "BASELINE"), metavar="BASELINE",
                   help="a sweep or run directory")
    cli.add_argument("new", type=lambda text: given_path(text, "NEW"), metavar="NEW", help="a sweep or run directory")
    cli.add_argument("--metric", choices=sorted(SCORE_COLUMNS), default=None,
                   help=f"primary metric (default: the report's primary score, the baseline's optimized_metric, "
                        f"else {PRIMARY_SCORE}: the last validation value; best_val: the best validation value; "
                        "test: the final model on test)")
    cli.add_argument("--tolerance", type=float, default=None,
                   help="how much worse the primary metric may get, in its own units (default 0.01)")
    cli.add_argument("--relative", action="store_true", help="--tolerance is a fraction of the baseline mean")
    cli.add_argument("--max-new-divergences", type=int, default=None,
                   help="extra diverged runs per setting tolerated (default 0)")
    cli.add_argument("--step-time-tolerance", type=float, default=None, metavar="FRACTION",
                   help="fail when the median step time is more than FRACTION slower (default: not gated)")
    cli.add_argument("--exact", action="store_true",
                   help="deterministic runs of one machine: any change of a recorded metric fails (with the diff)")
    cli.add_argument("--ignore", action="append", default=[], metavar="KEY",
                   help="pair runs by every setting and the seed except KEY (repeatable; e.g. grad_clip, model)")
    cli.add_argument("--out", type=out_path, default=None, help="write the Markdown summary here too")
    return cli


def arguments(argv: list[str] | None) -> argparse.Namespace:
    """The parsed arguments, their defaults filled in; a contradiction between them exits 2 in one line (argparse)."""
    cli = parser()
    args = cli.parse_args(argv)
    loose = [flag for flag, given in (("--tolerance", args.tolerance is not None), ("--relative", args.relative),
                                      ("--max-new-divergences", (args.max_new_divergences or 0) > 0)) if given]
    # exact fails on any change: a tolerance would be silently ignored (hostile C02, C15); 0 more divergences is
    # what --exact means, and loosens nothing (C01)
    if args.exact and loose:
        cli.error(f"--exact fails on any change of a metric or a status; {loose[0]} loosens that gate: give one "
                f"or the other")
    args.tolerance = 0.01 if args.tolerance is None else args.tolerance
    args.max_new_divergences = args.max_new_divergences or 0
    return args


def check(args: argparse.Namespace) -> None:
    """Raises CompareError for arguments no comparison can take, the first of them in this order: BASELINE, then
    NEW, that does not exist (the records' reader's rule: records/reading.py); an --out that is not compare's to
    write; a tolerance that is not a finite number >= 0 (inf would turn the gate off, and nan fails every
    comparison). Before this module, a missing folder was said after --out and the tolerances, when it was read."""
    for given in (args.baseline, args.new):
        if not os.path.lexists(given):
            raise CompareError(f"{given} does not exist")
    if args.out is not None:
        _check_out(args.out)
    if not (math.isfinite(args.tolerance) and args.tolerance >= 0 and args.max_new_divergences >= 0
            and (args.step_time_tolerance is None
                 or (math.isfinite(args.step_time_tolerance) and args.step_time_tolerance >= 0))):
        raise CompareError("tolerances must be finite numbers >= 0")


def _check_out(out: Path) -> None:
    """``--out`` may replace only a summary compare wrote (its first line is HEADING): any other
    regular file there is the user's, refused before anything is compared, and so is a link (the writer would
    replace the user's link with the summary; hostile C09), as rerun's and report's --out are. A FIFO or
    folder is refused by the one writer (record.write_file)."""
    folder = out.parent
    if not folder.is_dir():  # said here, not as the writer's temporary file that could not be made (hostile C10)
        what = "is not a folder" if os.path.lexists(folder) else "does not exist"
        raise CompareError(f"--out {str(out)[:200]}: the folder {str(folder)[:200]} {what}")
    if os.path.islink(out):
        raise CompareError(f"--out {str(out)[:200]} is a symbolic link; give the file it points to if the summary "
                           f"belongs there")
    if not os.path.lexists(out):
        return
    try:
        fd, _ = open_regular(out)
    except Unreadable:
        return  # a FIFO, a folder, a device: write_file refuses it in one line
    try:
        first = os.read(fd, len(HEADING))
    finally:
        os.close(fd)
    if first != HEADING.encode():
        raise CompareError(f"--out {str(out)[:200]} exists and is not a summary compare wrote; choose another "
                           f"path or move it away")


def refused(error: Exception) -> int:
    """A refusal's one line (a key as typed may hold escapes or 40 kB: hostile N16, N17) and its status."""
    from normbench.studies.app import message_text  # torch-free

    print(f"normbench.compare: {message_text(error)}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None, run=None) -> int:
    """``normbench compare``: the arguments, then the comparison ``run`` (compare.run, imported only once they pass,
    unless its caller is compare.py itself and gives it: that module run as ``__main__`` is not imported twice)."""
    args = arguments(argv)
    try:
        check(args)
    except (CompareError, OSError) as error:
        return refused(error)
    if run is None:
        from normbench.__main__ import imported  # a stop while pandas and scipy import is one line

        run = imported("compare", "normbench.studies.compare").run
    return run(args)
