"""Every answer, mark and verdict that differs between two report builds of the same records.

    python scripts/verdict_diff.py BEFORE_DIR AFTER_DIR

BEFORE_DIR and AFTER_DIR each hold a report (report.md and summary.csv, as `python -m
normbench.report` writes them). Printed, one line each, grouped by kind:

- answer: per study and task, the answer's headline and what it says of the other arms;
- mark: per study, task and arm, its rank, ★ and "shown worse" in summary.csv;
- verdict: per claim and study, its status.

Items present in one build only are listed as added or removed. Exit 0 either way (it reports).
"""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

_CLAIM = re.compile(r"^### (\S+): (.+)$")
_STUDY = re.compile(r"Study: (.+?)\.(?:\s|$)")


def answers(md: str) -> dict[str, str]:
    """(study heading + task) -> headline and the paragraph after it, from the answer section."""
    by_study = "## The answer" not in md  # a report by study: each answer under its "## Study NAME"
    section = md if by_study else md.split("## The answer", 1)[-1].split("\n## 1.", 1)[0]
    found, study, lines = {}, "", section.splitlines()
    for i, line in enumerate(lines):
        if by_study and line.startswith("## "):
            study = line.removeprefix("## Study ") if line.startswith("## Study ") else ""
        elif not by_study and line.startswith("### "):
            study = line[4:].split(":", 1)[0]
        elif line.startswith("**On "):
            headline = line.strip("*")
            task = headline.split(",", 1)[0].removeprefix("On ")
            also = next((l for l in lines[i + 1:i + 4] if l.strip() and not l.startswith(("**", "![", "*"))), "")
            found[f"{study} / {task}"] = f"{headline} | {also.strip()}"
    return found


def verdicts(md: str) -> dict[str, str]:
    """(claim id + study) -> status, from the claims section's headings."""
    section = md.split("## 8. Claims", 1)[-1]  # the whole report when it is by study
    found, lines = {}, section.splitlines()
    for i, line in enumerate(lines):
        match = _CLAIM.match(line)
        if match:
            study = next((m.group(1) for l in lines[i + 1:i + 4] if (m := _STUDY.search(l))), "")
            found[f"{match.group(1)} / {study}"] = match.group(2)
    return found


def marks(summary: Path) -> dict[str, str]:
    with summary.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    return {f"{r.get('study_name', '')} / {r.get('task', '')} / {r.get('arm', '')}":
            f"rank {r.get('rank') or '—'}{'=' if r.get('tie') == 'True' else ''}, "
            f"{'★' if r.get('best') == 'True' else 'no ★'}, {'shown worse' if r.get('shown_worse') == 'True' else 'not shown worse'}"
            for r in rows}


def differences(before: dict[str, str], after: dict[str, str]) -> list[str]:
    out = []
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key), after.get(key)
        if old != new:
            out.append(f"{key}: {old or '(absent)'}  →  {new or '(absent)'}")
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    before, after = (Path(a) for a in argv)
    md = [(d / "report.md").read_text(encoding="utf-8") for d in (before, after)]
    kinds = {"answer": (answers(md[0]), answers(md[1])),
             "mark": (marks(before / "summary.csv"), marks(after / "summary.csv")),
             "verdict": (verdicts(md[0]), verdicts(md[1]))}
    for kind, (old, new) in kinds.items():
        changed = differences(old, new)
        print(f"## {kind}: {len(changed)} of {len(set(old) | set(new))} differ")
        for line in changed:
            print(f"- {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
