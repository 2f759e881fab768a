"""Two regenerations of the example (make.sh's runs folders) side by side, per study: make.sh's wall time for the
study (its timing.txt), the span of its runs (first start to last end, from the records' time fields), the rest
(the study command's own), and the runs' summed training time; then whether the same runs (study, config hash,
seed, role) measured the same metrics, and the metrics that differ. Usage: python compare_regenerations.py OLD NEW"""

import json
import re
import sys
from pathlib import Path

import pandas as pd


def records(runs: Path) -> pd.DataFrame:
    rows = []
    for path in runs.rglob("summary.json"):
        record = json.loads(path.read_text())
        time = record.get("time") or {}
        if "ended" not in time:  # a run still going
            continue
        study = path.relative_to(runs).parts[0]
        rows.append({"study": study, "key": (study, record.get("config_hash"), record.get("seed"),
                                             record["config"].get("role")),
                     "start": pd.Timestamp(time["started"]), "end": pd.Timestamp(time["ended"]),
                     "train_s": time.get("train_s"), "metrics": json.dumps(record.get("metrics"), sort_keys=True)})
    return pd.DataFrame(rows)


def study_seconds(runs: Path) -> dict[str, int]:
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"study (\w+): (\d+) s", (runs / "timing.txt").read_text())}


def main(old_runs: Path, new_runs: Path) -> None:
    old, new = records(old_runs), records(new_runs)
    rows = []
    for study, old_s in study_seconds(old_runs).items():
        new_s = study_seconds(new_runs).get(study)
        o, n = old[old.study == study], new[new.study == study]
        spans = [(r.end.max() - r.start.min()).total_seconds() for r in (o, n)]
        rows.append({"study": study, "runs": len(n), "old s": old_s, "new s": new_s, "old runs' span": spans[0],
                     "new runs' span": spans[1], "old rest": old_s - spans[0], "new rest": new_s - spans[1],
                     "old training": o.train_s.sum(), "new training": n.train_s.sum()})
    table = pd.DataFrame(rows)
    print(table.round(0).to_string(index=False))
    print("sum:", table.drop(columns="study").sum().round(0).to_dict())
    both = old.merge(new, on="key", suffixes=(" old", " new"))
    same = both["metrics old"] == both["metrics new"]
    print(f"runs in both: {len(both)} (old {len(old)}, new {len(new)}); identical metrics: {int(same.sum())}")
    for _, row in both[~same].iterrows():
        a, b = json.loads(row["metrics old"]), json.loads(row["metrics new"])
        print("differs:", row.key, {k: (a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)})


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
