"""The README's headline sweep, shrunk: its report's first screen answers (a sentence naming the
first arm with what is said of the others, or the "not testable here" line that voids it: never empty
family rows, never a bold "ranks first" its gate voids), and the terminal's last lines are that answer."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The README's headline command, read from between its "headline sweep" marks (a pilot chose it: LN vs BN
# in the in-cell LSTM on variable-length adding, 2m37s for its 6 runs at load 5-7 on 2 cores, LN shown better).
_MARKED = (ROOT / "README.md").read_text().split("<!-- headline sweep:")[1].split("<!-- headline sweep: end -->")[0]
HEADLINE = re.search(r"```bash\n(.*?)\n```", _MARKED, re.S).group(1).strip()
# the same sweep, tiny: fewer steps, examples and seeds; every other setting as shipped
TINY = {"steps": "150", "eval_every": "25", "task.length": "12", "task.n_train": "1024", "task.n_val": "128",
        "task.n_test": "128", "seed": "0,1"}


def _tiny_command() -> list[str]:
    words = shlex.split(HEADLINE)[3:]  # after "python -m normbench"
    keys = {w.split("=", 1)[0] for w in words}
    return [f"{w.split('=', 1)[0]}={TINY[w.split('=', 1)[0]]}" if w.split("=", 1)[0] in TINY else w for w in words] + \
        [f"{k}={v}" for k, v in TINY.items() if k not in keys]


def test_the_headline_sweep_ends_with_the_answer_its_report_gives(tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    result = subprocess.run([sys.executable, "-m", "normbench", *_tiny_command(), "threads=1",
                             f"hydra.sweep.dir={tmp_path / 'sweep'}"], capture_output=True, text=True, cwd=ROOT, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    report = (tmp_path / "sweep" / "report.md").read_text()
    first_screen = report[:report.index("### Leaderboard")]
    assert "no evidence yet" not in first_screen  # only the family the sweep ran
    headline = re.search(r"^\*\*(On adding.*)\*\*$", first_screen, re.M).group(1)
    after = first_screen[first_screen.index(headline):]
    if "ranks first" in headline:  # a ranking that stands: what is said of the other arm follows
        assert "not testable here" not in after
        assert any(w in after for w in ("shown worse", "cannot be told apart", "Could also be the best"))
    else:
        assert headline.startswith("On adding: not testable here: ")
    lines = result.stdout.strip().splitlines()
    answer = next(i for i, line in enumerate(lines) if line.startswith("answer: "))
    assert lines[answer] == f"answer: {headline}".replace("\\", "") and len(lines) - answer <= 3  # the last lines
    arms = [line for line in lines[answer - 3:answer] if "norm=" in line]
    assert len(arms) == 2 and all(" final_val " in line and "seeds)" in line for line in arms)  # means and ranks
