"""A sweep's last lines: each comparison's arms with their mean score and rank, then the answer the
report gives, word for word (report/answers.py: the sentence that names the first arm, or the
"not testable here" line that voids it, then what is said of the other arms).

Read from the result the report renders (analysis/result.py: built once from the records, each study at
its sequential design's level) and worded by the report's answers, so the terminal cannot say what the
report does not.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from normbench.analysis import result as study_result
from normbench.records.reading import find_records
from normbench.report import answers as report_answers
from normbench.report.tables import number

MAX_ARMS = 12  # arms listed per comparison before "and N more": the answer stays on one screen
MAX_LINE = 400  # characters of one answer line: a gate over 200 arms names each, the report says it whole


def _arm_lines(rows: pd.DataFrame) -> list[str]:
    """One line an arm, ranked first: rank (— when unranked), ★, mean primary score ± its 95% half-width, seeds."""
    score = str(rows["score"].iloc[0]) if "score" in rows else "final_val"
    ordered = rows.sort_values("rank", kind="stable", na_position="last")
    width = max(len(str(a)) for a in ordered["arm"])
    lines = []
    for _, row in ordered.head(MAX_ARMS).iterrows():
        rank = "—" if pd.isna(row.get("rank")) else str(int(row["rank"]))
        mean, low = row.get(f"{score}_mean"), row.get(f"{score}_ci_low")
        spread = f" ± {number(mean - low, 2)}" if pd.notna(mean) and pd.notna(low) else ""
        star = "★" if bool(row.get("best")) else " "
        lines.append(f"  {rank:>2} {star} {str(row['arm']):<{width}}  {score} {number(mean, 4)}{spread}  "
                     f"({int(row['seeds'])} seed{'s' if int(row['seeds']) != 1 else ''})")
    if len(ordered) > MAX_ARMS:
        lines.append(f"  ... and {len(ordered) - MAX_ARMS} more arms (the report lists them)")
    return lines


def bounded(text: str, sweep_dir: Path) -> str:
    """``text`` when it fits MAX_LINE; else its first parts (a gate's list of arms is "; "-separated) and
    its last (which ends the list and says what would make it testable), how many were left out between,
    and where the whole line is: the report's answer."""
    if len(text) <= MAX_LINE:
        return text
    where = f"the report's answer has them all: python -m normbench.report {sweep_dir}"
    parts = text.split("; ")
    last = parts[-1] if len(parts) > 1 and len(parts[-1]) <= MAX_LINE else ""
    if len(parts) == 1 or len(parts[0]) > MAX_LINE:  # no list to shorten: the characters that fit
        return f"{text[:MAX_LINE]} … ({len(text) - MAX_LINE} more characters left out here; {where})"
    kept = parts[:1]  # the first names the gate
    for part in parts[1:-1] if last else parts[1:]:
        if len("; ".join([*kept, part])) + len(last) > MAX_LINE:
            break
        kept.append(part)
    left = len(parts) - len(kept) - bool(last)
    return "; ".join([*kept, f"… ({left} more of {len(parts)} parts left out here; {where})", *([last] if last else [])])


def answer_lines(sweep_dir: Path) -> list[str]:
    """The sweep's answer block; empty when no record trained."""
    records = find_records([sweep_dir])
    runs, copies = study_result.runs_of(records)
    if runs.empty:
        return []
    result = study_result.build(records, runs, copies, [sweep_dir], say=False)
    if result.summary.empty:
        return []
    lines = []
    for comparison, answer in zip(result.comparisons, report_answers.answers(result)):
        rows = comparison.rows
        metric = str(rows["metric"].iloc[0]) if "metric" in rows else ""
        higher = bool(rows["higher_is_better"].iloc[0]) if "higher_is_better" in rows else True
        lines.append(f"normbench sweep: {answer.task}: {metric}, {'higher' if higher else 'lower'} is better "
                     f"(rank, ★ could be the best, mean ± 95% CI)")
        lines += _arm_lines(rows)
        lines.append(bounded(f"answer: {answer.headline}", sweep_dir))
        if answer.also:
            lines.append(bounded(f"  {answer.also.strip()}", sweep_dir))
        if answer.command:
            lines.append(f"  To decide it: {answer.command}")
    return lines
