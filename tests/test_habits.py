"""The conventions users bring from lightning-hydra-template (docs/lightning-habits.md): `experiment=`,
`sweep=` and `debug=` without the `+`, the debug presets, the paths group."""

import json
from pathlib import Path

from normbench.configuration.config import ADDED_GROUPS, plain_groups
from tests.conftest import TINY, TINY_TASK, normbench

ROOT = Path(__file__).resolve().parent.parent
SMALL = [a for a in TINY if not a.startswith(("steps=", "eval_every=", "batch_size="))]  # the presets set these


def test_an_added_group_typed_plain_is_given_to_hydra_with_its_plus():
    assert ADDED_GROUPS == ("experiment", "sweep", "debug")
    typed = ["experiment=imdb_sentiment", "sweep=smoke", "debug=fast_dev_run", "+experiment=rnn_ln_table", "~sweep",
             "logger.mlflow.experiment=sweep", "sweep_timing=paired", "norm=ln", "-m", "experiment"]
    assert plain_groups(typed) == ["+experiment=imdb_sentiment", "+sweep=smoke", "+debug=fast_dev_run",
                                   "+experiment=rnn_ln_table", "~sweep", "logger.mlflow.experiment=sweep",
                                   "sweep_timing=paired", "norm=ln", "-m", "experiment"]


def test_both_spellings_of_an_experiment_print_the_same_config(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    shown = []
    for spelling in ("experiment=imdb_sentiment", "+experiment=imdb_sentiment"):
        assert normbench(spelling, "--cfg", "job") == 0
        shown.append(capsys.readouterr().out)
    assert shown[0] == shown[1] and "lr: 0.001" in shown[0] and "steps: 2000" in shown[0]


def test_both_spellings_of_a_sweep_file_run_the_same_runs_of_the_same_study(tmp_path, monkeypatch):
    """One job of batch_size (narrowed), tiny, under each spelling: the same config hash and study id."""
    monkeypatch.chdir(tmp_path)
    narrow = ["norm=ln", "batch_size=16", "lr=0.003", "seed=0", *SMALL, "steps=4", "report=false", "progress=false"]
    records = []
    for name, spelling in (("plain", "sweep=batch_size"), ("plus", "+sweep=batch_size")):
        assert normbench(spelling, *narrow, f"hydra.sweep.dir={name}") == 0
        (record,) = (tmp_path / name).rglob("summary.json")
        records.append(json.loads(record.read_text()))
    assert records[0]["config_hash"] == records[1]["config_hash"]
    assert records[0]["study"]["id"] == records[1]["study"]["id"] and records[0]["study"]["name"] == "batch_size"


def test_study_and_tune_take_the_plain_spelling_too(monkeypatch):
    from normbench.studies import study, tune

    seen = {}
    monkeypatch.setattr(study, "main", lambda argv: seen.setdefault("study", argv) and 0)
    monkeypatch.setattr(tune, "main", lambda argv: seen.setdefault("tune", argv) and 0)
    assert normbench("study", "sweep=batch_size", "--budget", "1m") == 0
    assert normbench("tune", "--out", "t", "experiment=rnn_ln_table", "norm=ln") == 0
    assert seen == {"study": ["+sweep=batch_size", "--budget", "1m"], "tune": ["--out", "t", "+experiment=rnn_ln_table", "norm=ln"]}


def test_completion_offers_the_plain_spellings_and_the_debug_presets():
    from tests.test_completion import complete

    assert {"experiment=", "sweep=", "debug=", "paths."} <= complete("normbench ")
    assert complete("normbench debug=") == {"debug=fast_dev_run", "debug=overfit_batch"}
    assert {"experiment=imdb_sentiment", "experiment=rnn_ln_table"} <= complete("normbench experiment=")


def test_fast_dev_run_trains_a_few_steps_with_one_evaluation(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert normbench("debug=fast_dev_run", *SMALL, *TINY_TASK, "hydra.run.dir=run") == 0
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    lines = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert summary["status"] == "ok" and summary["config"]["steps"] == 4
    assert [line["step"] for line in lines if line["kind"] == "eval"] == [4]


def test_overfit_batch_trains_on_one_batch_and_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert normbench("debug=overfit_batch", *SMALL, *TINY_TASK, "steps=6", "eval_every=3", "hydra.run.dir=run") == 0
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["config"]["overfit_batches"] == 1 and summary["task"]["n_train"] == 32  # batch_size's default
    assert summary["axes"]["overfit_batches"] == 1  # another run than the whole split's, and a report axis
    # more batches than the split holds: one line, exit 2
    assert normbench("overfit_batches=3", *TINY, *TINY_TASK, "batch_size=32", "hydra.run.dir=too_many") == 2
    assert "overfit_batches=3 x batch_size=32 is more than the 64 training examples" in capsys.readouterr().err


def test_paths_move_the_run_folders_and_name_a_data_root(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert normbench(*TINY, *TINY_TASK, "paths.outputs=elsewhere") == 0
    assert len(list((tmp_path / "elsewhere").rglob("summary.json"))) == 1 and not (tmp_path / "outputs").exists()
    assert normbench("-m", *TINY, *TINY_TASK, "seed=0,1", "paths.multirun=sweeps", "report=false") == 0
    assert len(list((tmp_path / "sweeps").rglob("summary.json"))) == 2 and not (tmp_path / "multirun").exists()
    book = tmp_path / "data" / "book.txt"
    book.parent.mkdir()
    book.write_text("a small book of words, read as characters. " * 200)
    assert normbench(*TINY, "task=text", "task.path=${paths.data}/book.txt", f"paths.data={tmp_path / 'data'}",
                     "task.n_train=64", "task.n_val=16", "task.n_test=16", "task.length=8", "hydra.run.dir=text") == 0
    summary = json.loads((tmp_path / "text" / "summary.json").read_text())
    assert summary["status"] == "ok" and summary["config"]["task"]["path"] == str(book)  # resolved: the identity's


def test_a_paths_key_that_does_not_exist_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert normbench(*TINY, *TINY_TASK, "+paths.logs=x") == 2
    assert "unknown key paths.logs" in capsys.readouterr().err
