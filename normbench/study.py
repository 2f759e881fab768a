"""`python -m normbench.study`: the previous release's spelling of `normbench study`, kept so that
scripts written for it still run. It only hands over to the subcommand (normbench/__main__.py)."""

import sys

from normbench.__main__ import forward

if __name__ == "__main__":
    forward("study", sys.argv[1:])
