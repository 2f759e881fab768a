"""What each study's own report costs: build it from the study's records, one study after another, in one process
after one untimed build (imports, font cache), and print the seconds each took. The records are copied first, so
the folder given is only read. Usage: python time_reports.py RUNS_DIR [STUDY ...]"""

import shutil
import sys
import tempfile
import time
from pathlib import Path

from normbench.report import build_report


def main(runs: Path, studies: list[str]) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        copies = {name: Path(shutil.copytree(runs / name, Path(scratch) / name)) for name in studies}
        first = copies[studies[0]]
        build_report([first], first)  # untimed: imports and the font cache
        total = 0.0
        for name, folder in copies.items():
            started = time.perf_counter()
            build_report([folder], folder)
            took = time.perf_counter() - started
            total += took
            print(f"{name} {took:.1f} s", flush=True)
        print(f"total {total:.1f} s over {len(studies)} studies", flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:])
