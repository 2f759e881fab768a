"""The sweep's last lines stay readable for a big sweep: a "not testable here" gate over many arms names
the first few, counts the rest and says where the whole line is; a short line is printed whole."""

import importlib.util
from pathlib import Path

from normbench.studies.sweep_answer import MAX_LINE, answer_lines, bounded

_spec = importlib.util.spec_from_file_location("report_records", Path(__file__).parents[1] / "report" / "conftest.py")
records = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(records)


def test_a_gate_over_many_arms_is_cut_to_a_count_and_a_pointer(tmp_path):
    for arm in range(40):  # 40 arms, every one at chance (0.1 on copy): one gate names them all
        for seed in range(2):
            records.write_record(tmp_path, f"r{arm}-{seed}", seed=seed, best_val=0.1 + 0.0001 * seed,
                                 axes={"task": "copy", "lr": 1e-4 * (arm + 1)})
    lines = answer_lines(tmp_path)
    gated = [line for line in lines if "not testable here" in line.lower()]
    assert gated, lines
    for line in lines:
        assert len(line) <= MAX_LINE + 200, line[:300]
    assert any("left out here" in line and f"python -m normbench.report {tmp_path}" in line for line in gated)


def test_a_short_line_is_printed_whole_and_a_long_one_keeps_its_first_parts(tmp_path):
    assert bounded("answer: On copy, norm=ln ranks first.", tmp_path) == "answer: On copy, norm=ln ranks first."
    long = ("answer: every arm is at chance (" + "; ".join(f"lr={k}: mean 0.1" for k in range(100))
            + ") — testable with more steps")
    cut = bounded(long, tmp_path)
    assert cut.startswith("answer: every arm is at chance (lr=0: mean 0.1; lr=1: mean 0.1")
    assert cut.endswith("; lr=99: mean 0.1) — testable with more steps")  # what would make it testable stays
    kept = cut.split("; … (")[0].count("; ") + 1
    assert f"{100 - kept - 1} more of 100 parts left out here" in cut and len(cut) < len(long)
