"""What a reader needs to trust and redo a report: commands, code version, files, data, terms,
the machine's condition while timing; sections with nothing to show are left out."""

from __future__ import annotations

import json

import pytest

from normbench.report import build_report


@pytest.fixture(scope="module")
def report(tmp_path_factory, write_record):
    sweep = tmp_path_factory.mktemp("sweep")
    study = {"schema": "normbench.study/1", "id": "abc123abc123", "name": "fashion_norms", "purpose": "",
             "swept": ["norm", "seed"], "arms": ["norm"], "command": "python -m normbench -m norm=ln,bn seed=0,1"}
    for index, (norm, seed) in enumerate((("ln", 0), ("ln", 1), ("bn", 0), ("bn", 1))):
        run = write_record(sweep, f"r{index}", seed=seed, study=study, axes={"norm": norm})
        summary = json.loads((run / "summary.json").read_text())
        summary["task"]["name"] = "idx"
        summary["config"]["task"] = {"name": "idx", "path": "/usr/share/datasets/fashion-mnist"}
        summary["environment"].update({"load_1m": 1.0 + index, "parallel_jobs": 2, "cpu_pressure": {"some_avg10": 3.5}})
        (run / "summary.json").write_text(json.dumps(summary))
    out = tmp_path_factory.mktemp("out")
    build_report([sweep], out)
    return {"md": (out / "report.md").read_text(), "html": (out / "report.html").read_text()}


def test_how_to_reproduce_names_commands_code_files_and_data(report):
    md = report["md"]
    block = md.split("## How to reproduce")[1]
    assert "python -m normbench -m norm=ln,bn seed=0,1" in block and "python -m normbench.report " in block
    assert "git commit abc1234" in block
    assert "[runs.csv](runs.csv)" in block and "[summary.csv](summary.csv)" in block
    assert "Fashion-MNIST" in block and "dataset-fashion-mnist" in block
    for term in ("grad_time_ratio", "flow score", "steps to target", "timing p90/p10", "bn_train_eval_gap",
                 "final val", "best val"):
        assert f"**{term}" in md.split("## Legend")[1].split("## How to reproduce")[0], term  # written once
    assert 'href="summary.csv"' in report["html"] and 'id="reproduce"' in report["html"]


def test_the_machine_condition_is_shown_when_records_have_it(report):
    md = report["md"]
    assert "Machine condition while timing" in md
    assert "| load_1m | median 2.5 (range 1–4) | 4 |" in md
    assert "| parallel_jobs | 2 | 4 |" in md and "| cpu_pressure.some_avg10 | 3.5 | 4 |" in md


def test_empty_sections_are_left_out_from_the_contents_too(report):
    md, html = report["md"], report["html"]
    assert "## 9." not in md and "## 10." not in md and "(#9-learning-rate" not in md
    assert 'id="lr"' not in html and 'href="#profiles"' not in html
