"""The study and tune runners on hostile input (issue 50): every write under --out, bad input refused
before any run in one line with exit status 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from normbench.studies import children, study, tune


def sweep_dirs(args: list[str]) -> list[str]:
    return [a.split("=", 1)[1] for a in args if a.lstrip("+~").split("=", 1)[0] in ("hydra.sweep", "hydra.sweep.dir")]


@pytest.mark.parametrize("given", ["hydra.sweep.dir={}", "+hydra.sweep.dir={}", "++hydra.sweep.dir={}",
                                   "hydra.sweep={{dir:{}}}"])
def test_the_runners_child_sweeps_only_into_their_own_folder(given, tmp_path):
    args = children.into_folder(["-m", "norm=ln", given.format(tmp_path / "elsewhere"), "threads=1"], "mine")
    # the runner's folder is quoted: a path, never Hydra grammar (S12, S15)
    assert sweep_dirs(args) == ["'mine'"] and args[-1] == "hydra.sweep.dir='mine'" and "threads=1" in args


def test_tune_writes_both_stages_under_out_whatever_hydra_sweep_dir_says(tmp_path, monkeypatch):
    # P123: the user's hydra.sweep.dir reached the evaluation stage after tune's own, and won
    stages = []
    monkeypatch.setattr(tune, "_normbench", lambda args: stages.append(args) or 0)
    monkeypatch.setattr(tune, "write_arms", lambda selection, arms: [("arm000", "adding: ln", 0.01)])
    out = tmp_path / "out"
    tune.main(["--out", str(out), "norm=ln", f"hydra.sweep.dir={tmp_path / 'elsewhere'}"])
    assert [sweep_dirs(args) for args in stages] == [[f"'{out / 'selection'}'"], [f"'{out / 'evaluation'}'"]]


def test_a_study_round_sweeps_only_into_its_own_folder(tmp_path, monkeypatch):
    ran = []
    monkeypatch.setattr(children, "run", lambda command, **kw: ran.append(command) or 2)
    monkeypatch.setattr(study, "check_config", lambda overrides: None)
    study.main(["--out", str(tmp_path / "out"), "norm=ln,rms", f"hydra.sweep.dir={tmp_path / 'elsewhere'}"])
    assert [sweep_dirs(command) for command in ran] == [[f"'{Path(tmp_path / 'out' / 'round-1')}'"]]


@pytest.mark.parametrize("lr", ["0", "-1", "nan", "inf", "1e-50", "0.01,0", "range(0,0.1,0.05)", "choice(0.01,-0.1)"])
def test_tune_refuses_an_lr_that_cannot_run_before_any_stage(lr, tmp_path, monkeypatch, capsys):
    # N022/P116/P117: lr=0 and lr=-1 ran the whole selection stage into invalid records; lr=nan started it
    monkeypatch.setattr(tune, "_normbench", lambda args: pytest.fail("a stage ran"))
    with pytest.raises(SystemExit) as stop:
        tune.main(["--out", str(tmp_path / "t"), "norm=ln", f"lr={lr}"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1 and "lr must be > 0" in err
    assert not (tmp_path / "t").exists()


def test_a_study_refuses_an_lr_of_its_grid_that_cannot_run_before_any_round(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(study, "_normbench", lambda *a, **k: pytest.fail("a round ran"))
    assert study.main(["--out", str(tmp_path / "s"), "norm=ln", "lr=0.001,0.01,0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "lr must be > 0, got 0" in err


@pytest.mark.parametrize("where", ["arms", "arms/tuned_arm", "evaluation", "selection"])
@pytest.mark.parametrize("kind", ["link", "file"])
def test_tune_finds_a_planted_link_anywhere_in_its_layout_before_any_stage(where, kind, tmp_path, monkeypatch,
                                                                          capsys):
    # N067: a link at DIR/arms was found only once the selection stage had run
    monkeypatch.setattr(tune, "_normbench", lambda args: pytest.fail("a stage ran"))
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    (out / where).parent.mkdir(parents=True)
    elsewhere.mkdir()
    (out / where).symlink_to(elsewhere) if kind == "link" else (out / where).write_text("mine\n")
    with pytest.raises(SystemExit) as stop:
        tune.main(["--out", str(out), "norm=ln"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1 and f"{where} is a" in err
    assert list(elsewhere.iterdir()) == []


def test_a_tuned_study_finds_a_planted_arms_link_before_any_run(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(study, "_normbench", lambda *a, **k: pytest.fail("a round ran"))
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (out / "arms").symlink_to(elsewhere)
    assert study.main(["--out", str(out), "norm=ln,rms", "lr=0.001,0.003,0.01"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "arms is a link" in err and list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("tuned", [[], ["lr=0.001,0.01,0.1"]])
def test_a_round_refused_by_its_child_is_its_one_line_and_exit_2(tuned, tmp_path, capfd):
    # N017/N065/P105: the child's line, then the study's own "round 1 did not run (exit 2)"; a tuned
    # study's selection refused that way ended with exit 1
    assert study.main(["--out", str(tmp_path / "out"), "norm=bogus,ln", *tuned]) == 2  # two arms: a study
    err = capfd.readouterr().err
    assert err.count("\n") == 1 and "Could not find 'norm/bogus'" in err, err


@pytest.mark.usefixtures("no_hang")
@pytest.mark.parametrize("planted", ["fifo", "garbage"])
def test_a_fifo_where_a_record_goes_is_bad_data_as_a_corrupt_record_is(planted, tmp_path, tiny_args, capfd):
    # N121: a FIFO at OUT/round-1/0/summary.json is read as a corrupt record is: never waited on, named as
    # set aside in one line; its job runs in a folder of its own and the study goes on
    import os

    out = tmp_path / "out"
    (out / "round-1" / "0").mkdir(parents=True)
    path = out / "round-1" / "0" / "summary.json"
    os.mkfifo(path) if planted == "fifo" else path.write_bytes(b"\x00{not json")
    # --no-report: the line below is the round's own (its sweep runs report=false, so it names what it set aside,
    # studies/sweep_end.py), and the study's report would read the records through the same reader (find_records)
    assert study.main(["--out", str(out), "--pilot", "2", "--max-seeds", "2", "--jobs", "1", "--budget", "5m",
                       "--no-report", *tiny_args, "norm=ln,rms"]) == 0
    err = capfd.readouterr().err
    assert f"set aside 1 record(s): {path} (" in err and "Traceback" not in err
    records = [p for p in (out / "round-1").glob("*/summary.json") if p != path and p.is_file()]
    assert len(records) == 4  # 2 arms x 2 seeds, the planted folder's job among them
