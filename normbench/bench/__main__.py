"""python -m normbench.bench {kernels,cells,harness,sweep,all} [--out DIR] [--quick] [options]
python -m normbench.bench arms SWEEP_DIR [--rounds N] [--warmup K] [--steps-per-round S] [--reference ARM] [--threads T]"""

from __future__ import annotations

import signal
import sys


def _stopped(signum, frame):
    stop = KeyboardInterrupt(f"signal {signum}")
    stop.signum = signum  # the main CLI's subcommand() names the signal from this
    raise stop


if __name__ == "__main__":  # first, before torch: `python -m normbench.bench` is `normbench bench`, and a stop
    # at any moment (the imports included) is its one line and 128 + the signal's number, the sweep's temporary
    # folder removed on the way out. SIGHUP here, which subcommand() does not take; SIGTERM until it does.
    for _name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, _name):
            signal.signal(getattr(signal, _name), _stopped)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from normbench.__main__ import forward

    forward("bench", sys.argv[1:])  # imports this file again as normbench.bench.__main__, runs main, exits

from normbench.bench.options import parser, refusal  # noqa: E402  (after the stop handling, deliberately; torch-free)


def main(argv: list[str] | None = None) -> int:
    top = parser()
    args = top.parse_args(argv)  # before torch: a mistyped option, or --help, is answered at once
    refused = refusal(args)
    if refused:
        top.error(refused)
    from normbench.__main__ import imported  # a stop while torch and the benchmarks import is one line

    return imported("bench", "normbench.bench.command").run(top, args)
