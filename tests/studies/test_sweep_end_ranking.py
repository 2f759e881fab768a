"""The end of a multirun: its table in run-number order, the arms' paired timing when asked for
(reported apart from the sweep's efficiency), and a last line that says why no arm is ranked."""

import json
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from normbench.bench import arms
from normbench.records import sweep_time
from normbench.studies import sweep_end


def test_the_table_lists_runs_in_numeric_order():
    summaries = {Path(f"s/{k}/summary.json"): {"status": "ok", "axes": {"norm": "ln"}, "seed": int(k) if k.isdigit() else 0}
                 for k in ("10", "2", "0", "11", "1", "resumed")}
    assert sweep_end.sweep_table(summaries)["run"].tolist() == ["0", "1", "2", "10", "11", "resumed"]


def test_the_unranked_line_names_the_reason_and_a_command_that_ranks():
    config = OmegaConf.create({"hydra": {"overrides": {"task": ["norm=ln,bn", "placement=pre,post", "seed=0",
                                                                 "hydra.sweep.dir=/tmp/x"]}}})
    one_seed = {Path(f"s/{i}/summary.json"): {"status": "ok", "seed": 0, "axes": {"norm": n, "placement": p}}
                for i, (n, p) in enumerate([("ln", "pre"), ("ln", "post"), ("bn", "pre"), ("bn", "post")])}
    line = sweep_end.unranked_line(config, one_seed)
    assert "no arm is ranked: every arm has fewer than 2 finished seeds" in line
    assert line.endswith("To rank these arms: python -m normbench -m norm=ln,bn placement=pre,post seed=0,1,2")
    two_seeds = {**one_seed, Path("s/9/summary.json"): {"status": "ok", "seed": 1, "axes": {"norm": "ln", "placement": "pre"}}}
    assert sweep_end.unranked_line(config, two_seeds) is None
    failed = {p: {**s, "status": "failed"} for p, s in one_seed.items()}
    assert "no run finished" in sweep_end.unranked_line(config, failed)


def test_two_seeds_of_one_run_are_one_arm_whatever_axes_their_records_store(compose):
    """An in-cell RMSNorm LSTM record written before 2026-12-06 stores no model.cell_kernel among its axes, one
    written now stores auto: the same run (one group hash). Arms are read from the configs, as the report reads
    them, so a resumed sweep holding one of each ranks the arm rather than saying it has one seed."""
    from normbench.configuration.contract import identity

    config = OmegaConf.create({"hydra": {"overrides": {"task": ["norm=rms", "placement=in_cell", "model=lstm"]}}})
    summaries = {}
    for seed in (0, 1):
        plain = OmegaConf.to_container(compose("norm=rms", "placement=in_cell", "model=lstm", f"seed={seed}"),
                                       resolve=True)
        axes = dict(identity(plain).settings)
        if seed == 0:
            axes.pop("model.cell_kernel")  # as the earlier version wrote it
        summaries[Path(f"s/{seed}/summary.json")] = {"status": "ok", "seed": seed, "axes": axes, "config": plain}
    assert sweep_end.unranked_line(config, summaries) is None
    assert "model.cell_kernel" not in sweep_end.sweep_table(summaries).columns  # not a varying axis either


def test_an_unknown_sweep_timing_is_one_clear_error(compose):
    from normbench.checks import ConfigError
    from normbench.configuration.config import to_config

    with pytest.raises(ConfigError, match="sweep_timing"):
        to_config(compose("sweep_timing=unpaired"))


def test_a_sweep_can_time_its_own_arms_at_the_end(tmp_path, capfd):
    """sweep_timing=paired on a real two-arm multirun of one seed each: the paired timing is written
    beside the records, the efficiency line counts it apart, and the last line says why nothing is ranked."""
    from hydra.core.global_hydra import GlobalHydra

    from normbench.studies import app
    from tests.conftest import TINY, TINY_TASK

    patch = pytest.MonkeyPatch()
    patch.chdir(tmp_path)
    patch.setattr("sys.argv", ["normbench", "-m", *TINY, *TINY_TASK, "norm=ln,rms", "hydra.sweep.dir=sweep",
                               "report=false", "progress=false", "sweep_timing=paired"])
    try:
        app.main()
    finally:
        GlobalHydra.instance().clear()
        patch.undo()
    out = capfd.readouterr().out.strip().splitlines()
    timing = json.loads((tmp_path / "sweep" / arms.FILE).read_text())
    assert sorted(a["arm"] for a in timing["arms"]) == ["norm=ln", "norm=rms"]
    assert any(line.startswith("normbench sweep: paired timing of 2 arm(s)") for line in out), out
    efficiency = json.loads((tmp_path / "sweep" / sweep_time.RECORD).read_text())
    assert efficiency["apart_s"]["paired timing"] > 0
    last = out[-1]
    assert last.startswith("normbench sweep: no arm is ranked") and last.endswith(" seed=0,1,2"), last
    assert " norm=ln,rms " in last and "hydra.sweep.dir" not in last  # the same arms, into a new folder


def test_a_sweep_whose_every_run_was_refused_says_no_run_ran_and_suggests_no_seeds(cli, tiny_args):
    """M02: every job invalid (norm.eps=0) exited 0 and its last line offered seed=0,1,2; nothing ran, and the
    sweep's settings are bad input: one error line, exit 2, as a single run's."""
    code, out, err = cli("-m", *tiny_args, "norm.eps=0", "seed=0,1", "hydra.sweep.dir=sw", "report=false")
    assert code == 2
    assert err.strip().splitlines()[-1] == ("normbench: error: no run ran: every setting was refused (2 invalid): "
                                            "norm.eps must be > 0, got 0.0")
    assert "seed=0,1,2" not in out + err and "To rank" not in out + err
    refused = {Path(f"s/{i}/summary.json"): {"status": status, "seed": i, "axes": {"norm": "ln"}}
               for i, status in enumerate(["invalid", "skipped", "skipped"])}
    config = OmegaConf.create({"hydra": {"overrides": {"task": ["norm=ln", "seed=0,1,2"]}}})
    line = sweep_end.unranked_line(config, refused)
    assert "no run ran: every setting was refused (1 invalid, 2 skipped)" in line and "seed=" not in line


def test_a_sweep_with_a_refused_job_advises_no_command(cli, tiny_args):
    """Hostile h15 B17 (N13): `-m lr=0.1,nan` refused job 1 (exit 2, right), then advised re-running with lr=0.1,nan."""
    code, out, err = cli("-m", *tiny_args, "lr=0.1,nan", "hydra.sweep.dir=s")
    assert code == 2 and "lr=nan must be a finite number" in err
    assert "python -m normbench" not in out, out
    assert "job(s) 1 ran nothing" in out
    assert "normbench: job #1 ran nothing: lr=nan must be a finite number" in err
    assert sweep_end.unrun_jobs(Path("s")) == [] and not Path("s/1").exists()  # its empty folder goes with exit 2


def test_a_job_whose_config_cannot_resolve_is_named_before_the_end_screen(cli, tiny_args, monkeypatch):
    """Hostile h26 w29/w31: job 1's interpolation overflowed; the end screen said "the line that says why is above"
    and that line came after it, naming no job; job 1's folder stayed, empty. Nothing can be recorded for it (no
    resolved config, no identity): its line comes first, naming it, once; the other job's record stays."""
    monkeypatch.setattr(sys, "stderr", sys.stdout)  # one stream: the order of the lines is what is tested
    code, out, _ = cli("-m", *[a for a in tiny_args if not a.startswith("task.length=")],
                       "task.length=8,${ceil_div:1e400,1}", "hydra.sweep.dir=s", "report=false")
    assert code == 2, out
    lines = [line for line in out.splitlines() if not line.startswith("[")]
    said = [i for i, line in enumerate(lines) if "OverflowError" in line]
    screen = next(i for i, line in enumerate(lines) if "job(s) 1 ran nothing (the line that says why is above)" in line)
    assert len(said) == 1 and said[0] < screen and lines[said[0]].startswith("normbench: job #1 ran nothing: "), lines
    assert Path("s/0/summary.json").is_file() and not Path("s/1").exists()
