"""One run, one count: grouping by the whole config, resume and rerun that never double-count or overwrite."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from normbench.report import build_report
from normbench.training import rerun
from normbench.training.train import Trainer
from tests.waiting import HANG_S  # waits end on a hang, never on a slow machine

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def record_bytes(sweep: Path) -> dict[str, bytes]:
    """Every record file under a sweep, by path: what must never change once written."""
    return {str(p.relative_to(sweep)): p.read_bytes() for p in sorted(sweep.rglob("*"))
            if p.name in ("summary.json", "metrics.jsonl")}


def summary_csv(sweep: Path) -> pd.DataFrame:
    """The report's summary table of a sweep, built here (its sweeps run with report=false: one report, not two)."""
    build_report([sweep], sweep)
    return pd.read_csv(sweep / "summary.csv")


@pytest.fixture
def executed(monkeypatch):
    """Seeds of the jobs that really trained."""
    seeds: list[int] = []
    real_fit = Trainer.fit
    monkeypatch.setattr(Trainer, "fit", lambda self: seeds.append(self.cfg.seed) or real_fit(self))
    return seeds


def test_norm_none_under_several_placements_counts_once(cli, tmp_path, tiny_args, executed):
    code, *_ = cli("-m", *tiny_args, "norm=ln,none", "placement=pre,post", "seed=0,1", "hydra.sweep.dir=sweep",
                   "report=false")
    assert code == 0
    assert sorted(executed) == [0, 0, 0, 1, 1, 1]  # ln pre and post, and norm=none once a seed: one sweep runs it once
    summary = summary_csv(tmp_path / "sweep").set_index("group")
    none = summary.loc[summary["norm"] == "none"]
    assert len(none) == 1 and none["n"].item() == 2  # 2 records, 2 distinct seeds
    assert sorted(summary.loc[summary["norm"] == "ln", "n"]) == [2, 2]
    # the same study run again into another folder (another seed list: the same question): its copies count once
    assert cli("-m", *tiny_args, "norm=ln,none", "placement=pre,post", "seed=0", "hydra.sweep.dir=other",
               "report=false")[0] == 0
    build_report([tmp_path / "sweep", tmp_path / "other"], tmp_path / "both")
    assert "Copies counted once" in (tmp_path / "both" / "report.md").read_text()


def test_a_setting_outside_any_list_splits_groups(cli, tmp_path, tiny_args):
    code, *_ = cli("-m", *tiny_args, "task.length=4,12", "seed=0,1", "hydra.sweep.dir=sweep", "report=false")
    assert code == 0
    summary = summary_csv(tmp_path / "sweep")
    assert sorted(summary["group"]) == ["task.length=12", "task.length=4"] and set(summary["n"]) == {2}


def test_a_dotted_key_set_only_by_a_sweep_file_splits_groups(cli, tmp_path, tiny_args):
    (tmp_path / "extra" / "sweep").mkdir(parents=True)
    (tmp_path / "extra" / "sweep" / "decay.yaml").write_text(
        "# @package _global_\nhydra:\n  sweeper:\n    params:\n      optim.weight_decay: 0.0,0.5\n      seed: 0,1\n")
    code, out, err = cli("-m", *tiny_args, "+sweep=decay", f"hydra.searchpath=[file://{tmp_path / 'extra'}]",
                         "hydra.sweep.dir=sweep", "report=false")
    assert code == 0, err
    summary = summary_csv(tmp_path / "sweep")
    assert sorted(summary["group"]) == ["optim.weight_decay=0", "optim.weight_decay=0.5"] and set(summary["n"]) == {2}


def test_resume_executes_only_new_work_and_never_touches_finished_records(cli, tmp_path, tiny_args, executed):
    assert cli("-m", *tiny_args, "seed=0,1,2", "hydra.sweep.dir=sweep", "report=false")[0] == 0
    before = record_bytes(tmp_path / "sweep")
    executed.clear()
    assert cli("-m", *tiny_args, "seed=0,5,1,2", "resume=true", "hydra.sweep.dir=sweep", "report=false")[0] == 0
    assert executed == [5]  # job 1 is now seed 5: its folder holds seed 1's record, so it goes beside it
    after = record_bytes(tmp_path / "sweep")
    assert {k: after[k] for k in before} == before
    (new,) = [k for k in after if k not in before and k.endswith("summary.json")]
    assert new.startswith("1-") and json.loads(after[new])["seed"] == 5


def test_resume_after_changing_steps_keeps_the_old_records(cli, tmp_path, tiny_args, executed):
    assert cli("-m", *tiny_args, "seed=0,1", "hydra.sweep.dir=sweep", "report=false")[0] == 0
    before = record_bytes(tmp_path / "sweep")
    assert cli("-m", *tiny_args, "steps=8", "seed=0,1", "resume=true", "hydra.sweep.dir=sweep", "report=false")[0] == 0
    after = record_bytes(tmp_path / "sweep")
    assert {k: after[k] for k in before} == before and len(after) == 2 * len(before)
    steps = sorted(json.loads(v)["config"]["steps"] for k, v in after.items() if k.endswith("summary.json"))
    assert steps == [6, 6, 8, 8]


def test_records_made_with_impl_native_are_resumed_and_compared_by_the_default_auto(cli, tmp_path, tiny_args, executed):
    """norm.impl was native by default before auto: a sweep made then resumes under auto without running
    again, and compare pairs its records with auto's (contract.effective_config: auto counts as native)."""
    from normbench.studies import compare

    assert cli("-m", *tiny_args, "norm=rms", "norm.impl=native", "hydra.sweep.dir=old", "report=false")[0] == 0
    before = record_bytes(tmp_path / "old")
    executed.clear()
    assert cli("-m", *tiny_args, "norm=rms", "resume=true", "hydra.sweep.dir=old", "report=false")[0] == 0
    assert executed == [] and record_bytes(tmp_path / "old") == before
    assert cli("-m", *tiny_args, "norm=rms", "hydra.sweep.dir=new", "report=false")[0] == 0
    settings_, only_old, only_new = compare.compare(compare.load(tmp_path / "old"), compare.load(tmp_path / "new"))
    assert len(settings_) == 1 and only_old.empty and only_new.empty
    new = [json.loads(p.read_text()) for p in (tmp_path / "new").rglob("summary.json")]
    assert {r["config"]["norm"]["impl"] for r in new} == {"auto"}  # the record keeps what was asked
    ran = {impl for r in new for impl in r["environment"]["norm_impls"].values()}
    assert ran and ran <= {"compiled", "native"}  # and names what ran: compiled where it built, else native


def test_a_foreign_or_unreadable_record_is_set_aside_untouched(cli, tmp_path, tiny_args, executed):
    for job, text in (("0", json.dumps({"schema": "normbench.run/99", "status": "ok"})), ("1", "{not json")):
        (tmp_path / "sweep" / job).mkdir(parents=True)
        (tmp_path / "sweep" / job / "summary.json").write_text(text)
    before = record_bytes(tmp_path / "sweep")
    assert cli("-m", *tiny_args, "seed=0,1", "resume=true", "hydra.sweep.dir=sweep", "report=false")[0] == 0
    assert executed == [0, 1]
    after = record_bytes(tmp_path / "sweep")
    assert {k: after[k] for k in before} == before and len(after) == len(before) + 4


def test_resume_finds_a_finished_record_that_lacks_fields(cli, tmp_path, tiny_args, executed):
    assert cli(*tiny_args, "hydra.run.dir=run")[0] == 0
    path = tmp_path / "run" / "summary.json"
    summary = json.loads(path.read_text())
    del summary["task"], summary["metrics"]
    path.write_text(json.dumps(summary))
    executed.clear()
    code, out, err = cli(*tiny_args, "resume=true", "hydra.run.dir=run")
    assert code == 0 and executed == [] and "Traceback" not in err


def test_a_rerun_inside_a_sweep_is_not_another_seed(cli, tmp_path, tiny_args, capsys):
    assert cli("-m", *tiny_args, "seed=0,1,2", "hydra.sweep.dir=sweep", "report=false")[0] == 0
    assert set(summary_csv(tmp_path / "sweep")["n"]) == {3}
    assert rerun.main([str(tmp_path / "sweep" / "0"), "--out", str(tmp_path / "sweep" / "0" / "again")]) == 0
    assert "reproduced exactly" in capsys.readouterr().out
    summary = summary_csv(tmp_path / "sweep")
    assert set(summary["n"]) == {3} and len(summary) == 1
    assert "a rerun of the run in 0" in (tmp_path / "sweep" / "report.md").read_text()


def test_concurrent_runs_into_one_folder_get_a_record_each(tmp_path, tiny_args):
    args = [*tiny_args, "steps=300", "eval_every=100", "hydra.run.dir=run"]
    procs = [subprocess.Popen([sys.executable, "-m", "normbench", *args, f"seed={s}"], cwd=tmp_path, env=ENV,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for s in (0, 1)]
    assert all(p.wait(timeout=HANG_S) == 0 for p in procs), [p.stderr.read()[-2000:] for p in procs]
    records = {json.loads(p.read_text())["seed"]: p.parent for p in tmp_path.rglob("summary.json")}
    assert sorted(records) == [0, 1] and len(set(records.values())) == 2
    for folder in records.values():  # each curve is one run's: steps rise, never interleave
        steps = [json.loads(line)["step"] for line in (folder / "metrics.jsonl").read_text().splitlines()
                 if json.loads(line)["kind"] == "train"]
        assert steps == sorted(steps) and len(steps) == len(set(steps))


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="a 2-worker sweep gives each job fewer threads only with >= 2 cores")
def test_rerun_of_a_joblib_job_uses_its_recorded_threads_and_reproduces(tmp_path, tiny_args):
    """A 2-worker sweep gives each job cores // 2 threads; the rerun must use that count, not all cores."""
    args = [a for a in tiny_args if not a.startswith("threads=")]
    proc = subprocess.run([sys.executable, "-m", "normbench", "-m", *args, "model.hidden=64", "steps=40",
                           "hydra/launcher=local", "hydra.launcher.n_jobs=2", "seed=0,1", "hydra.sweep.dir=sweep",
                           "report=false"], cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=HANG_S)
    assert proc.returncode == 0, proc.stderr[-2000:]
    run = tmp_path / "sweep" / "0"
    recorded = json.loads((run / "summary.json").read_text())
    # cores // 2, or fewer where other work (the suite's other worker) left fewer cores free (run.threads_for)
    assert recorded["config"]["threads"] == 0 and 1 <= recorded["environment"]["threads"] <= (os.cpu_count() or 2) // 2
    again = subprocess.run([sys.executable, "-m", "normbench.training.rerun", str(run), "--out", str(tmp_path / "again")],
                           cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=HANG_S)
    assert again.returncode == 0 and "reproduced exactly" in again.stdout, again.stdout + again.stderr
    assert json.loads((tmp_path / "again" / "summary.json").read_text())["environment"]["threads"] == \
        recorded["environment"]["threads"]


def test_sigterm_while_loading_leaves_an_interrupted_record(compose, tmp_path, monkeypatch):
    import signal

    from normbench.training import run

    def slow_load(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
    monkeypatch.setattr(run, "load_task", slow_load)
    with pytest.raises(KeyboardInterrupt):
        run.execute(compose(), tmp_path, [])
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["status"] == "interrupted" and summary["reason"] == f"interrupted (signal {signal.SIGTERM.value})"


def test_two_sweeps_into_one_folder_never_share_a_record(tmp_path, tiny_args):
    args = [*tiny_args, "steps=200", "eval_every=100", "hydra.sweep.dir=sweep", "report=false"]
    procs = [subprocess.Popen([sys.executable, "-m", "normbench", "-m", *args, seeds], cwd=tmp_path, env=ENV,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for seeds in ("seed=0,1", "seed=2,3")]
    assert all(p.wait(timeout=HANG_S) == 0 for p in procs), [p.stderr.read()[-2000:] for p in procs]
    records = {json.loads(p.read_text())["seed"]: p.parent for p in (tmp_path / "sweep").rglob("summary.json")}
    assert sorted(records) == [0, 1, 2, 3] and len(set(records.values())) == 4
    for seed, folder in records.items():
        lines = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
        steps = [line["step"] for line in lines if line["kind"] == "train"]
        assert steps == sorted(set(steps)) and json.loads((folder / "summary.json").read_text())["status"] == "ok"


RECORDS_B1FA2F9 = ROOT / "tests" / "data" / "records_b1fa2f9"  # two tiny runs recorded by commit b1fa2f9's code


@pytest.mark.parametrize("name", ["adding", "digits_gru_bn_in_cell"])
def test_a_committed_older_record_keeps_its_identity(compose, name):
    """Records made before overfit_batches, paths and the debug presets existed: today's code gives the
    recorded hash, both from the record's config and from today's composition of its overrides at the
    new settings' defaults; a debug preset's name and the paths change nothing (harness, or a preset of
    ordinary settings), overfit_batches=1 is another run."""
    from omegaconf import OmegaConf

    from normbench.configuration.contract import config_hash

    record = json.loads((RECORDS_B1FA2F9 / name / "summary.json").read_text())
    assert record["environment"]["git_commit"].startswith("b1fa2f9") and "paths" not in record["config"]
    assert config_hash(record["config"]) == record["config_hash"]

    def hashed(*extra):
        node = compose(*record["overrides"], *extra, tiny=False)
        return config_hash(OmegaConf.to_container(node, resolve=True))

    assert hashed() == record["config_hash"]
    assert hashed("paths.outputs=elsewhere", "paths.multirun=sweeps", "paths.data=/mnt/data") == record["config_hash"]
    assert hashed("overfit_batches=0") == record["config_hash"]
    assert hashed("overfit_batches=1") != record["config_hash"]
    # debug=fast_dev_run is its settings (the command line's own values win over a preset's): the same
    # run as those settings typed out
    preset = ["steps=4", "eval_every=4", "log_every=1", "probe_every=2", "timing_warmup=1", "checkpoint_every=0", "report=false"]
    alone = [o for o in record["overrides"] if o.split("=")[0] not in {p.split("=")[0] for p in preset}]
    typed = config_hash(OmegaConf.to_container(compose(*alone, *preset, tiny=False), resolve=True))
    assert config_hash(OmegaConf.to_container(compose(*alone, "+debug=fast_dev_run", tiny=False), resolve=True)) == typed
    assert typed != record["config_hash"]
def test_committed_records_keep_their_identity_with_every_new_setting_at_its_default():
    """Records written by normbench at b1fa2f9 (before Derf, norm.groups, norm.alpha_rule, norm.shift_init,
    placement.post_fraction and optim=muon existed): their recorded hashes come out of their configs again,
    and again once each new setting is added at its default, as a record written today carries it."""
    from normbench.configuration.contract import identity

    committed = json.loads((ROOT / "tests" / "data" / "records_b1fa2f9.json").read_text())["records"]
    assert len(committed) >= 30
    for record in committed:
        config = record["config"]
        assert identity(config).config_hash == record["config_hash"]
        today = {**config, "norm": {**config["norm"], "groups": 1, "alpha_rule": "single", "shift_init": 0.0},
                 "placement": {**config["placement"], "post_fraction": 0.25}}
        assert (identity(today).config_hash, identity(today).group_hash) == (record["config_hash"], record["group_hash"])
        moved = {**today, "norm": {**today["norm"], "groups": 2}}  # a setting away from its default that acts
        if config["norm"]["kind"] in ("ln", "rms"):
            assert identity(moved).config_hash != record["config_hash"]
