"""Trained models kept on request (save_model=true) and read back as data (normbench/training/saved_model.py, evaluate.py)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import normbench
from normbench.training import evaluate
from normbench.training.saved_model import NoSavedModel, read_weights
from tests.waiting import HANG_S

ROOT = Path(__file__).resolve().parents[2]


def test_a_saved_model_reloads_and_reproduces_its_recorded_metrics_exactly(cli, tmp_path, tiny_args, capsys):
    # In-cell BN: population statistics (the kept weights hold those the evaluation used), kept per
    # time step (buffers that grow with the steps seen, so a fresh model's do not fit as built)
    code, _, err = cli(*tiny_args, "model=lstm", "placement=in_cell", "norm=bn", "save_model=true", "steps=7",
                       "hydra.run.dir=run")
    assert code == 0, err
    run = tmp_path / "run"
    record = json.loads((run / "summary.json").read_text())
    kept = record["saved_model"]
    assert kept["final"] == {"file": "model_final.pt", "step": 7, "test": record["metrics"]["test"]}
    assert kept["best"]["val_metric"] == record["metrics"]["best_val"] and kept["best"]["step"] in (3, 6, 7)
    weights = torch.load(run / "model_final.pt", weights_only=True)  # plain tensors: the safe loader reads it
    assert weights and all(isinstance(v, torch.Tensor) for v in weights.values())

    assert evaluate.main([str(run)]) == 0
    line = capsys.readouterr().out
    assert line.startswith(f"test mse {record['metrics']['test']:.6g} ") and "the same" in line, line
    _, test, _ = evaluate.score(run, "final", "test")
    assert test == record["metrics"]["test"]  # exactly, not approximately
    _, best, _ = evaluate.score(run, "best", "val")
    assert best == record["metrics"]["best_val"]

    model = normbench.load_model(run, which="best")
    assert not model.training
    assert all(torch.equal(p, q) for p, q in zip(model.state_dict().values(), read_weights(run / "model_best.pt").values()))


def test_evaluate_cuts_batches_as_the_record_says_and_a_record_from_before_the_key_whole(cli, tmp_path, tiny_args,
                                                                                          forwards):
    """A Transformer's evaluation batches run in parts of eval_positions (a regression head over fewer rows may
    round otherwise): `normbench evaluate` reads the record's; a record without the key was evaluated whole."""
    # adding at 50 steps, 200 test examples: the default (8192 // 50 = 163 a part) would cut them too
    code, _, err = cli(*tiny_args, "task.length=50", "task.n_test=200", "model=transformer", "eval_positions=2500",
                       "save_model=true", "hydra.run.dir=run")
    assert code == 0, err[-2000:]
    run, forwards[:] = tmp_path / "run", []
    record = json.loads((run / "summary.json").read_text())
    _, test, _ = evaluate.score(run, "final", "test")
    assert test == record["metrics"]["test"] and forwards == [50] * 4  # 50 examples a part
    del record["config"]["eval_positions"]
    (run / "summary.json").write_text(json.dumps(record))
    forwards.clear()
    evaluate.score(run, "final", "test")
    assert forwards == [200]


def test_without_save_model_nothing_is_kept(cli, tmp_path, tiny_args):
    code, _, err = cli(*tiny_args, "steps=3", "hydra.run.dir=run")
    assert code == 0, err
    assert not list((tmp_path / "run").glob("*.pt"))
    assert "saved_model" not in json.loads((tmp_path / "run" / "summary.json").read_text())
    with pytest.raises(NoSavedModel, match="not run with save_model=true"):
        normbench.load_model(tmp_path / "run")
    assert evaluate.main([str(tmp_path / "run")]) == 2


def test_a_model_file_is_data_never_code_or_a_link(tmp_path):
    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {tmp_path / 'pwned'}",))
    torch.save({"w": Payload()}, tmp_path / "model_final.pt")
    with pytest.raises(NoSavedModel, match="not a tensor file read as data"):
        read_weights(tmp_path / "model_final.pt")
    assert not (tmp_path / "pwned").exists()
    torch.save({"w": torch.ones(2)}, tmp_path / "real.pt")
    (tmp_path / "model_best.pt").symlink_to(tmp_path / "real.pt")
    with pytest.raises(NoSavedModel, match="symbolic link"):
        read_weights(tmp_path / "model_best.pt")
    torch.save([torch.ones(2)], tmp_path / "list.pt")
    with pytest.raises(NoSavedModel, match="not a state dict"):
        read_weights(tmp_path / "list.pt")
    torch.save({"w": torch.zeros(1).expand(2**27)}, tmp_path / "stride0.pt")  # 512 MiB claimed by 4 bytes
    with pytest.raises(NoSavedModel, match="stride-0 or overlapping view"):
        read_weights(tmp_path / "stride0.pt")
    with pytest.raises(NoSavedModel, match="which='last' is not valid"):
        normbench.load_model(tmp_path, which="last")


def _good_record() -> dict:
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("record_factory", Path(__file__).parents[1] / "report" / "conftest.py")
    factory = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(factory)
    return factory.make_record("kept")[0]


# A record's config is data: what would be resolved or composed from it is refused first, in one line.
_RECORD = _good_record()
INTERPOLATED = {
    "secret_task_name": {**_RECORD["config"], "task": {"name": "${oc.env:NB_SECRET}"}},  # would print the secret
    "env_task_name": {**_RECORD["config"], "task": {"name": "${oc.env:NB_TASK}"}},  # would resolve and run
    "missing_mark": {**_RECORD["config"], "norm": {**_RECORD["config"]["norm"], "name": "???"}},
    "nested_in_a_list": {**_RECORD["config"], "extra": {"tags": ["ok", "x${oc.env:NB_SECRET}"]}},
}


@pytest.mark.parametrize("name", sorted(INTERPOLATED))
def test_a_record_config_holding_an_interpolation_is_refused_before_anything_is_built(tmp_path, monkeypatch,
                                                                                       capsys, name):
    monkeypatch.setenv("NB_SECRET", "hunter2SECRETxyz")
    monkeypatch.setenv("NB_TASK", "digits")

    def composed(*_args, **_kwargs):
        raise AssertionError("a model was built from the record")
    monkeypatch.setattr("normbench.training.saved_model.build_recorded", composed)
    monkeypatch.setattr("normbench.training.run.prepare", composed)
    (tmp_path / "summary.json").write_text(json.dumps({**_RECORD, "config": INTERPOLATED[name]}))
    torch.save({"w": torch.ones(2)}, tmp_path / "model_final.pt")
    assert evaluate.main([str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    assert not out and len(err.splitlines()) == 1 and "never resolved" in err
    assert "hunter2" not in err and "digits" not in err
    with pytest.raises(NoSavedModel, match="holds an interpolation") as refused:
        normbench.load_model(tmp_path)
    assert "hunter2" not in str(refused.value) and "\n" not in str(refused.value)


def test_a_model_file_that_is_a_folder_is_one_line_not_a_traceback(tmp_path):
    (tmp_path / "model_final.pt").mkdir()
    with pytest.raises(NoSavedModel, match="not a regular file"):
        read_weights(tmp_path / "model_final.pt")


@pytest.mark.parametrize("kept", ["../../../etc/passwd", [1, 2], {"final": "x", "best": "y"}])
@pytest.mark.parametrize("which", ["final", "best"])
def test_evaluate_refuses_a_record_whose_saved_model_is_tampered_in_one_line(cli, tmp_path, tiny_args, capsys,
                                                                             kept, which):
    """Hostile h15 B6 (P18, J01, A02): AttributeError 'str' object has no attribute 'get', a traceback."""
    code, _, err = cli(*tiny_args, "steps=3", "save_model=true", "hydra.run.dir=run")
    assert code == 0, err
    summary = tmp_path / "run" / "summary.json"
    summary.write_text(json.dumps({**json.loads(summary.read_text()), "saved_model": kept}))
    assert evaluate.main([str(tmp_path / "run"), "--which", which]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no readable normbench record (saved_model" in err and "is not an object)" in err


ZIP_WRITER_FULL = "[enforce fail at inline_container.cc:672] . unexpected pos 34816 vs 34768"


def test_a_full_disk_while_the_model_is_saved_is_said_as_such(cli, tmp_path, tiny_args, monkeypatch):
    """Hostile h15 B11 (F01): the record said torch's "[enforce fail at inline_container.cc:672] ..."."""
    import shutil

    def full(*args, **kwargs):
        raise RuntimeError(ZIP_WRITER_FULL)
    monkeypatch.setattr(torch, "save", full)
    monkeypatch.setattr(shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(1 << 30, 1 << 30, 0))
    code, _, err = cli(*tiny_args, "steps=3", "save_model=true", "hydra.run.dir=run")
    assert code == 1
    record = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert record["status"] == "failed"
    assert record["reason"].startswith(f"OSError: no space left on device writing {tmp_path / 'run'}/model_")
    assert "enforce fail" not in record["reason"] and "enforce fail" not in err
    assert not [p for p in (tmp_path / "run").iterdir() if p.suffix in (".pt", ".tmp")]


@pytest.mark.parametrize("scored, status", [("recorded", 0), ("x1.5", 1), ("nan", 1)])
def test_evaluate_exits_1_when_the_saved_model_scores_otherwise_than_recorded(tmp_path, monkeypatch, capsys,
                                                                             scored, status):
    """Hostile h21 B8 (N123, N378): 'DIFFERS' was printed with exit status 0, as rerun's 1 is not."""
    recorded = _RECORD["metrics"]["test"]
    (tmp_path / "summary.json").write_text(json.dumps(_RECORD))
    metric = {"recorded": recorded, "x1.5": recorded * 1.5, "nan": float("nan")}[scored]
    monkeypatch.setattr(evaluate, "score", lambda *_args: (_RECORD, metric, 0.5))
    assert evaluate.main([str(tmp_path)]) == status
    assert ("DIFFERS" in capsys.readouterr().out) == bool(status)


def test_a_nan_recorded_and_scored_again_is_the_same():
    assert evaluate.same(float("nan"), float("nan")) and not evaluate.same(0.5, float("nan"))


@pytest.mark.parametrize("argv", [["--help"], ["--which", "latest", "{tmp}"], ["{tmp}/nowhere"], ["{tmp}"]])
def test_evaluates_arguments_are_answered_before_torch_is_imported(argv, tmp_path):
    """evaluate.py names the saved weights from the torch-free configuration schema (SAVED_MODELS), and refuses a
    folder that is not a run before it imports the model code: --help or a mistyped --which took 3-4 s of torch's
    import here."""
    code = ("import sys\nimport normbench.__main__ as entry\nstatus = entry.subcommand('evaluate', sys.argv[1:])\n"
            "print(status, 'torch' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code, *(a.format(tmp=tmp_path) for a in argv)], capture_output=True,
                          text=True, timeout=HANG_S, cwd=ROOT)
    assert done.stdout.splitlines()[-1] == ("0 False" if argv == ["--help"] else "2 False"), (done.stdout, done.stderr)
