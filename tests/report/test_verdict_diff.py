"""scripts/verdict_diff.py lists the answers, marks and verdicts that differ between two report builds."""

import subprocess
import sys
from pathlib import Path

from tests.waiting import HANG_S  # waits end on a hang, never on a slow machine

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "verdict_diff.py"
MD = """# normbench report

## The answer: which arm, per study and task

### mine: Which norm?

**On copy, {first} ranks first: final val accuracy 0.9, 3 seeds (chance 0.1).**

{also}

## 1. What was run

## 8. Claims

### ln_claim: {status}

LN is best. (Practice) Study: mine.
"""
CSV = "study_name,task,arm,rank,best,shown_worse\nmine,copy,ln,1.0,True,False\nmine,copy,bn,2.0,{star},{worse}\n"


def _build(folder: Path, first: str, also: str, status: str, star: str, worse: str) -> Path:
    folder.mkdir()
    (folder / "report.md").write_text(MD.format(first=first, also=also, status=status))
    (folder / "summary.csv").write_text(CSV.format(star=star, worse=worse))
    return folder


def test_each_changed_answer_mark_and_verdict_is_listed(tmp_path):
    before = _build(tmp_path / "before", "ln", "Every other arm is shown worse.", "supported", "False", "True")
    after = _build(tmp_path / "after", "ln", "Not shown worse (★): bn 0.89.", "depends on lr", "True", "False")
    out = subprocess.run([sys.executable, str(SCRIPT), str(before), str(after)], capture_output=True, text=True,
                         timeout=HANG_S).stdout
    assert "## answer: 1 of 1 differ" in out and "Every other arm is shown worse." in out
    assert "## mark: 1 of 2 differ" in out and "mine / copy / bn: rank 2.0, no ★, shown worse  →  rank 2.0, ★" in out
    assert "## verdict: 1 of 1 differ" in out and "ln_claim / mine: supported  →  depends on lr" in out
