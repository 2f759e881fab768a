"""A rerun reproduces the run and nothing else (issue 50): a record cannot name where its copies go,
and --out never holds someone's files."""

from __future__ import annotations

import json

import pytest

from normbench.training import rerun


@pytest.fixture
def recorded(cli, tmp_path, tiny_args):
    code, _, err = cli(*tiny_args, "hydra.run.dir=run")
    assert code == 0, err
    return tmp_path / "run"


def tamper(run, **logger):
    path = run / "summary.json"
    summary = json.loads(path.read_text())
    summary["config"]["logger"] = logger
    path.write_text(json.dumps(summary))


@pytest.mark.parametrize("logger", [
    {"mlflow": {"enabled": True, "tracking_uri": "http://127.0.0.1:9"}},   # a server that would be connected to
    {"wandb": {"enabled": True, "mode": "online"}},                      # an upload
    {"csv": {"enabled": True, "file": "planted.csv"}},
])
def test_a_records_loggers_are_never_started(recorded, tmp_path, logger, monkeypatch):
    monkeypatch.setenv("WANDB_BASE_URL", "http://127.0.0.1:9")
    tamper(recorded, **logger)
    out = tmp_path / "again"
    assert rerun.main([str(recorded), "--out", str(out)]) == 0
    new = json.loads((out / "summary.json").read_text())
    assert not any(v.get("enabled") for v in new["config"]["logger"].values())
    written = {p.name for p in out.iterdir() if not p.name.startswith(".")} - {"normbench.log"}
    assert written == {"metrics.jsonl", "summary.json"}


def test_loggers_come_from_the_command_line(recorded, tmp_path):
    out = tmp_path / "again"
    assert rerun.main([str(recorded), "--out", str(out), "--logger", "csv"]) == 0
    assert (out / "metrics.csv").is_file()


def test_the_same_run_keeps_its_recorded_settings(recorded):
    old = json.loads((recorded / "summary.json").read_text())
    config = rerun.recorded_config({**old, "config": {**old["config"], "deterministic": True, "threads": 0}})
    assert config["deterministic"] is True and config["threads"] == old["environment"]["threads"]


def test_a_record_from_before_eval_positions_is_evaluated_again_as_it_was_whole_batches(recorded):
    old = json.loads((recorded / "summary.json").read_text())
    assert rerun.recorded_config(old)["eval_positions"] == old["config"]["eval_positions"] == 8192
    before = {key: value for key, value in old["config"].items() if key != "eval_positions"}
    assert rerun.recorded_config({**old, "config": before})["eval_positions"] == 0


@pytest.mark.parametrize("holds", ["metrics.jsonl", "model_final.pt", "notes.txt"])
def test_out_holding_someones_files_is_refused(recorded, tmp_path, holds, capsys):
    out = tmp_path / "theirs"
    out.mkdir()
    (out / holds).write_text("someone's file\n")
    assert rerun.main([str(recorded), "--out", str(out)]) == 2
    assert (out / holds).read_text() == "someone's file\n" and len(list(out.iterdir())) == 1
    assert "new or empty" in capsys.readouterr().err


def test_out_may_be_an_empty_folder(recorded, tmp_path):
    (tmp_path / "empty").mkdir()
    assert rerun.main([str(recorded), "--out", str(tmp_path / "empty")]) == 0


def test_a_full_disk_says_the_new_record_is_stale_as_a_runs_line_does(recorded, tmp_path, monkeypatch, capsys):
    """F04: the new record left saying running, and the line did not say it is stale."""
    import errno

    from normbench.training import run

    def full_disk(node, out, overrides, extra=None):
        out.mkdir(parents=True)
        (out / "summary.json").write_text(json.dumps({"status": "running"}))
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(run, "execute", full_disk)
    out = tmp_path / "again"
    assert rerun.main([str(recorded), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(f"the record in {out} is stale (it says 'running')") and len(err.splitlines()) == 1, err


@pytest.mark.parametrize("edit", [
    {"model": {"hidden": 10**9}},                                 # a model no machine holds
    {"model": {"family": "transformer", "bidirectional": True}},  # a combination no builder makes
])
def test_a_rerun_of_settings_that_cannot_run_is_one_line_and_exit_2(recorded, tmp_path, capsys, edit):
    # X011/P176: a record edited to settings that cannot run reran as `invalid`: exit 1, the comparison
    # table on stdout and a line on stderr
    path = recorded / "summary.json"
    summary = json.loads(path.read_text())
    for group, values in edit.items():
        summary["config"][group].update(values)
    summary["environment"]["git_commit"] = "0" * 40  # its note is no second line of a refusal
    path.write_text(json.dumps(summary))
    assert rerun.main([str(recorded), "--out", str(tmp_path / "again")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1, err
    assert "the recorded settings cannot run (the new run is invalid, the recorded one ok)" in err


def test_a_record_whose_config_was_edited_is_said_to_be(recorded, tmp_path, capsys):
    """Hostile R01: a record's config edited (its hash kept) reran as "differs in: ..." without a word that the
    stored config_hash is not its config's, as compare says of the same record."""
    path = recorded / "summary.json"
    summary = json.loads(path.read_text())
    summary["config"]["lr"] = summary["config"]["lr"] * 3
    path.write_text(json.dumps(summary))
    assert rerun.main([str(recorded), "--out", str(tmp_path / "again")]) == 1
    out, err = capsys.readouterr()
    assert "differs in" in out and "stored config_hash" in err and "is not its config's" in err, err


def test_a_record_as_it_ran_has_no_note_on_its_hash(recorded, tmp_path, capsys):
    assert rerun.main([str(recorded), "--out", str(tmp_path / "again")]) == 0
    assert "config_hash" not in capsys.readouterr().err
