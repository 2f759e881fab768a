"""A benchmark's --out never writes over files an earlier benchmark did not write (hostile pass 4, O30: a user's
kernels.json, .csv and .md were silently replaced by `bench kernels --out`)."""

import json

import pytest

from normbench.bench.__main__ import _foreign_output, main
from normbench.bench.section import Section


def test_a_users_files_stop_the_benchmark_before_it_runs(tmp_path, capsys):
    for name in ("kernels.json", "kernels.csv", "kernels.md"):
        (tmp_path / name).write_text("mine\n")
    with pytest.raises(SystemExit) as stop:
        main(["kernels", "--quick", "--out", str(tmp_path)])
    assert stop.value.code == 2 and "kernels.json is not a benchmark's output" in capsys.readouterr().err
    assert all((tmp_path / n).read_text() == "mine\n" for n in ("kernels.json", "kernels.csv", "kernels.md"))


def test_an_earlier_benchmarks_files_are_its_own_to_replace(tmp_path):
    Section("kernels", "python -m normbench.bench kernels", {}, [{"a": 1}], "# kernels").write(tmp_path)
    assert _foreign_output(tmp_path, ("kernels",), everything=False) is None
    (tmp_path / "cells.md").write_text("mine\n")  # no cells.json beside it: not a benchmark's
    assert _foreign_output(tmp_path, ("kernels", "cells"), everything=False) == "cells.md"
    (tmp_path / "summary.json").write_text(json.dumps({"mine": 1}))
    assert _foreign_output(tmp_path, ("kernels",), everything=True) == "summary.json"


def test_a_linked_out_is_refused_before_anything_runs(tmp_path, capsys):
    # B004: bench followed a link given as --out and wrote its files into the link's target
    target = tmp_path / "elsewhere"
    target.mkdir()
    (tmp_path / "bo").symlink_to(target)
    with pytest.raises(SystemExit) as stop:
        main(["kernels", "--quick", "--out", str(tmp_path / "bo"), "--kinds", "ln", "--dtypes", "fp32"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "is a link" in err and err.count("\n") == 1 and list(target.iterdir()) == []
