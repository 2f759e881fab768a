"""bench sweep --profile: the fixed cost per run, the parts read from a cProfile file, and its refusals."""

from __future__ import annotations

import cProfile
from pathlib import Path

import pytest

from normbench.bench import sweep_profile
from normbench.bench.__main__ import main


def test_the_fixed_cost_is_what_a_job_takes_beyond_its_training():
    row = {"wall_s": 30.0, "cpu_s": 20.0, "train_s": 10.0, "jobs": 4}
    assert sweep_profile.fixed_cost(row) == (5.0, 2.5)


def test_each_side_is_averaged_over_its_own_rounds_only():
    rows = [{"code": "base", "wall_s": 40.0, "fixed_wall_s": 3.0, "fixed_cpu_s": 2.0},
            {"code": "new", "wall_s": 20.0, "fixed_wall_s": 1.0, "fixed_cpu_s": 0.5},
            {"code": "new", "wall_s": 10.0, "fixed_wall_s": 2.0, "fixed_cpu_s": 1.5},
            {"code": "base", "wall_s": 60.0, "fixed_wall_s": 5.0, "fixed_cpu_s": 4.0}]
    means = sweep_profile.side_means(rows)
    assert means == {"base": {"wall": 4.0, "cpu": 3.0, "sweep": 50.0}, "new": {"wall": 1.5, "cpu": 1.0, "sweep": 15.0}}
    assert list(sweep_profile.side_means(rows[1:3])) == ["new"]  # no base rounds: no base mean


def work_a(n):
    return sum(range(n))


def work_b(n):
    return work_a(n) + sum(range(n))


def step(n):  # nests a function of its own name: only the outer one counts
    return n if n == 0 else step(n - 1) + work_b(20000)


def test_parts_add_different_functions_and_count_nested_ones_of_one_name_once(tmp_path, monkeypatch):
    profile = cProfile.Profile()
    profile.runcall(step, 3)
    profile.dump_stats(tmp_path / "p.prof")
    here = Path(__file__).name
    monkeypatch.setattr(sweep_profile, "PARTS", (("both", ((here, "work_*"),)), ("outer", ((here, "step"),)),
                                                 ("b alone", ((here, "work_b"),))))
    found = sweep_profile.parts(tmp_path / "p.prof")
    import pstats

    stats = pstats.Stats(str(tmp_path / "p.prof")).stats
    cumulative = {name: entry[3] for (path, _, name), entry in stats.items() if path.endswith(here)}
    assert found["both"] == pytest.approx(cumulative["work_a"] + cumulative["work_b"])
    assert found["outer"] == pytest.approx(cumulative["step"]) and found["b alone"] == pytest.approx(cumulative["work_b"])


@pytest.mark.parametrize("argv, message", [
    (["sweep", "--against", "."], "give it with --profile"),
    (["sweep", "--profile", "--against", "/"], "not a checkout of normbench"),
])
def test_a_comparison_that_cannot_be_made_is_refused_in_one_line(argv, message, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2 and message in capsys.readouterr().err


def test_a_kept_folder_that_holds_sweeps_is_refused(tmp_path, capsys):
    (tmp_path / "0-new").mkdir()
    with pytest.raises(SystemExit) as stop:
        main(["sweep", "--profile", "--keep", str(tmp_path)])
    assert stop.value.code == 2 and "not empty" in capsys.readouterr().err


def test_an_override_hydra_cannot_parse_is_refused_before_any_sweep(capsys):
    """Hostile B22: --subset 'seed=((' ran a sweep, then ended in a RuntimeError's traceback."""
    with pytest.raises(SystemExit) as stop:
        main(["sweep", "--quick", "--profile", "--subset", "seed=(("])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and len(err.strip().splitlines()) == 1 and "'seed=(('" in err


@pytest.mark.parametrize("subset, named", [("norm=bogus", "norm/bogus"), ("lr=abc", "lr=abc")])
def test_a_subset_the_sweep_refuses_is_its_one_line_and_exit_2(subset, named, tmp_path, monkeypatch, capsys):
    """Hostile B06, B21 (B23 alike): the sweep's own refusal (exit 2) was raised as a RuntimeError, a
    30-line traceback and exit 1; it is the sweep's one line, naming the override, and exit 2."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(sweep_profile.tempfile, "tempdir", str(tmp_path))
    with pytest.raises(SystemExit) as stop:
        main(["sweep", "--quick", "--profile", "--subset", subset])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and len(err.strip().splitlines()) == 1
    assert "--subset: " in err and named in err and "Traceback" not in err


def test_a_refusal_is_the_last_error_line_of_the_sweep():
    log = "sweep profile: ...\nnormbench sweep: efficiency 0.00\nnormbench: error: no run ran: lr='x' is not valid\n\n"
    assert sweep_profile.refusal(log) == "no run ran: lr='x' is not valid"
    assert sweep_profile.refusal("") == "no reason given"


def test_each_side_imports_the_code_it_names_from_inside_a_checkout(tmp_path, monkeypatch):
    """`bench sweep --against DIR` started from a checkout ran that checkout's code on both sides: ``python -m``
    puts the working folder before PYTHONPATH. Each sweep runs from the bench's own folder instead."""
    other = tmp_path / "other"
    (other / "normbench").mkdir(parents=True)
    (other / "normbench" / "__init__.py").write_text("")
    runs = tmp_path / "runs"
    runs.mkdir()
    monkeypatch.chdir(sweep_profile.THIS_CODE)  # where a user runs the bench: the repository's root
    assert sweep_profile.imported_from(other, runs) == (other / "normbench").resolve()
    assert sweep_profile.imported_from(None, runs) == (sweep_profile.THIS_CODE / "normbench").resolve()
    with pytest.raises(RuntimeError, match="would import"):
        sweep_profile.timed(["true"], other, sweep_profile.THIS_CODE / "x.log")  # run from the checkout itself


@pytest.mark.parametrize("extra, profiled", [([], True), (["--no-parts"], False)])
def test_no_parts_leaves_out_the_sweep_under_cprofile(extra, profiled, tmp_path, monkeypatch):
    """--no-parts: the side-by-side rounds only (a long study's extra cProfile sweep costs a third more)."""
    seen = {}

    def fake_run(**kwargs):
        seen.update(kwargs)
        raise sweep_profile.Refused("stop here")
    monkeypatch.setattr(sweep_profile, "run", fake_run)
    with pytest.raises(SystemExit):
        main(["sweep", "--profile", "--against", str(sweep_profile.THIS_CODE), *extra])
    assert seen["profile"] is profiled and ("--no-parts" in seen["command"]) is not profiled  # what reproduces it
