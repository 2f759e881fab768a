"""A benchmark's --out never writes over files a benchmark did not write, nor through a link (hostile pass 4, O30:
a user's kernels.json, .csv and .md were silently replaced by `bench kernels --out`; issue 50: a link at
kernels.png or kernels.json was written through, a kernels.csv the user put in place of a first run's was
replaced, `--out FILE/sub` and a refused sweep override were tracebacks). Every case here stops before any timing."""

import os

import pytest

from normbench.bench.__main__ import main
from normbench.bench.section import BENCH_MANIFEST, Section
from normbench.report.output import OutputError

QUICK = ["--quick", "--kinds", "ln", "--dtypes", "fp32"]


def _refused(capsys, argv) -> str:
    with pytest.raises(SystemExit) as stop:
        main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    return err


def _first_run(folder, name="kernels"):
    Section(name, f"python -m normbench.bench {name}", {}, [{"a": 1}], f"# {name}").write(folder)


def test_a_users_files_stop_the_benchmark_before_it_runs(tmp_path, capsys):
    for name in ("kernels.json", "kernels.csv", "kernels.md"):
        (tmp_path / name).write_text("mine\n")
    err = _refused(capsys, ["kernels", *QUICK, "--out", str(tmp_path)])
    assert "kernels.json exists and was not written by a normbench benchmark" in err
    assert all((tmp_path / n).read_text() == "mine\n" for n in ("kernels.json", "kernels.csv", "kernels.md"))


def test_an_earlier_benchmarks_files_are_its_own_to_replace(tmp_path):
    _first_run(tmp_path)
    _first_run(tmp_path)  # the same files again: its own, unchanged
    assert (tmp_path / "kernels.md").read_text() == "# kernels\n" and (tmp_path / BENCH_MANIFEST).is_file()


def test_a_file_the_user_put_in_place_of_a_runs_is_not_replaced(tmp_path, capsys):
    # P254: after a first run the user replaced kernels.csv with their own; the second run overwrote it
    _first_run(tmp_path)
    (tmp_path / "kernels.csv").write_text("my edited table\n")
    err = _refused(capsys, ["kernels", *QUICK, "--out", str(tmp_path)])
    assert "kernels.csv exists and was not written by a normbench benchmark" in err
    assert (tmp_path / "kernels.csv").read_text() == "my edited table\n"


@pytest.mark.parametrize("name", ["kernels.png", "kernels.json", "kernels.md"])
def test_a_link_at_a_files_name_is_refused_before_anything_runs(tmp_path, capsys, name):
    # P252/P253/P265: a link at OUT/kernels.png (or .json) pointing outside OUT was written through
    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / name).symlink_to(outside)
    err = _refused(capsys, ["kernels", *QUICK, "--out", str(out)])
    assert name in err and outside.read_text() == "precious\n"


def test_a_link_or_file_planted_while_it_ran_is_refused_never_written_through(tmp_path):
    # P199-P201, P263: the writer itself refuses a link or a user's file at any name it writes, even one
    # that appeared after the check before the run; nothing outside the folder changes
    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "cells.csv").symlink_to(outside)
    with pytest.raises(OutputError, match="cells.csv is not a regular file"):
        _first_run(out, "cells")
    assert outside.read_text() == "precious\n" and (out / "cells.csv").is_symlink()
    (out / "cells.csv").unlink()
    (out / "cells.csv").write_text("mine\n")  # a user's file put there meanwhile
    with pytest.raises(OutputError, match="cells.csv exists and was not written"):
        _first_run(out, "cells")
    assert (out / "cells.csv").read_text() == "mine\n"


def test_all_refuses_a_users_summary_before_it_runs(tmp_path, capsys):
    (tmp_path / "bench.md").write_text("my notes\n")
    err = _refused(capsys, ["all", "--quick", "--out", str(tmp_path)])
    assert "bench.md" in err and (tmp_path / "bench.md").read_text() == "my notes\n"


def test_a_variants_own_files_are_checked(tmp_path, capsys):
    # cells --grid writes cells-grid.*, not cells.*: the check before the run names those
    (tmp_path / "cells-grid.md").write_text("mine\n")
    err = _refused(capsys, ["cells", "--grid", "axes", "--quick", "--out", str(tmp_path)])
    assert "cells-grid.md" in err


def test_a_linked_out_is_refused_before_anything_runs(tmp_path, capsys):
    # B004: bench followed a link given as --out and wrote its files into the link's target
    target = tmp_path / "elsewhere"
    target.mkdir()
    (tmp_path / "bo").symlink_to(target)
    err = _refused(capsys, ["kernels", *QUICK, "--out", str(tmp_path / "bo")])
    assert "is a link" in err and list(target.iterdir()) == []


def test_an_out_below_a_file_is_refused_before_anything_runs(tmp_path, capsys):
    # P202: --out f/bo with f a regular file ran the benchmark, then a traceback
    (tmp_path / "f").write_text("mine\n")
    err = _refused(capsys, ["kernels", *QUICK, "--out", str(tmp_path / "f" / "bo")])
    assert "is not a folder" in err and (tmp_path / "f").read_text() == "mine\n"


def test_an_empty_out_is_refused(capsys):
    assert "empty" in _refused(capsys, ["kernels", *QUICK, "--out", ""])


def test_a_sweep_override_that_runs_code_is_one_line(tmp_path, capsys):
    # P214: the sweep subprocess refused it, after the other sweeps ran, and the bench raised a traceback
    err = _refused(capsys, ["sweep", "--profile", "--subset", "+foo._target_=os.system"])
    assert "+foo._target_" in err
    err = _refused(capsys, ["sweep", "--profile", "--subset", "hydra.output_subdir=/tmp/x"])
    assert "hydra.output_subdir" in err


def test_the_manifest_itself_may_not_be_a_link(tmp_path, capsys):
    (tmp_path / "elsewhere.json").write_text("{}")
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(tmp_path / "elsewhere.json", out / BENCH_MANIFEST)
    assert BENCH_MANIFEST in _refused(capsys, ["kernels", *QUICK, "--out", str(out)])
