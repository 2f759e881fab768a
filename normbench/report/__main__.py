"""python -m normbench.report PATH [PATH ...] [--out DIR]"""

from __future__ import annotations

import argparse
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
    try:
        html = build_report(args.paths, args.out)
    except ReportError as error:
        print(f"normbench.report: {error}", file=sys.stderr)
        return 2
    print(html)
    return 0


if __name__ == "__main__":
    sys.exit(main())
