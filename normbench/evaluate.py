"""`python -m normbench.evaluate`: the previous release's spelling of `normbench evaluate`, kept so that
scripts written for it still run. It only hands over to the subcommand (normbench/__main__.py)."""

import sys

from normbench.__main__ import forward

if __name__ == "__main__":
    forward("evaluate", sys.argv[1:])
