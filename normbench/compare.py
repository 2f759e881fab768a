"""`python -m normbench.compare`: the previous release's spelling of `normbench compare`, kept so that
scripts written for it still run. It only hands over to the subcommand (normbench/__main__.py)."""

import sys

from normbench.__main__ import forward

if __name__ == "__main__":
    forward("compare", sys.argv[1:])
