"""Checkpoints: an interrupted run resumed from its checkpoint ends as an uninterrupted one (normbench/training/checkpoint.py)."""

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from normbench.records.record import LOCK
from normbench.training import checkpoint
from normbench.training.train import Trainer
from tests.waiting import HANG_S

# Timings differ between any two runs; everything else a run measures must not.
CLOCKS = {"seconds_to_target"}


def interrupt_at(monkeypatch, stop_step):
    """Ctrl-C as the training loop reaches ``stop_step`` (the test hook: a preemption mid-run)."""
    step = Trainer._step

    def stopping(self, at):
        if at == stop_step:
            raise KeyboardInterrupt("test preemption")
        return step(self, at)
    monkeypatch.setattr(Trainer, "_step", stopping)


def curves(run_dir):
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in row.items() if k != "time_s"} for row in rows]


@pytest.mark.parametrize("extra", [[], ["norm=bn", "optim=sgd", "warmup_steps=3", "optim.schedule=cosine"],
                                   ["model=transformer", "model.layers=2"], ["model=mingru", "optim=muon"]])
def test_interrupted_and_resumed_run_equals_an_uninterrupted_one_bitwise(cli, tmp_path, monkeypatch, tiny_args, extra):
    args = [*tiny_args, *extra, "steps=11", "deterministic=true", "checkpoint_every=4"]
    code, _, err = cli(*args, "hydra.run.dir=whole")
    assert code == 0, err
    interrupt_at(monkeypatch, 7)  # checkpoint at step 4, lost work at steps 5 and 6
    code, _, err = cli(*args, "hydra.run.dir=parts")
    assert code == 130, err
    assert (tmp_path / "parts" / checkpoint.FILE).is_file()
    assert json.loads((tmp_path / "parts" / "summary.json").read_text())["status"] == "interrupted"
    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)
    code, _, err = cli(*args, "resume=true", "hydra.run.dir=parts")
    assert code == 0, err
    whole, parts = (json.loads((tmp_path / d / "summary.json").read_text()) for d in ("whole", "parts"))
    assert parts["status"] == "ok" and parts["resumed_from_step"] == 4 and "resumed_from_step" not in whole
    # bitwise: == on every float the run measured, curves and summary alike
    assert {k: v for k, v in parts["metrics"].items() if k not in CLOCKS} == \
        {k: v for k, v in whole["metrics"].items() if k not in CLOCKS}
    assert parts["profiles"] == whole["profiles"] and parts["precision"] == whole["precision"]
    assert curves(tmp_path / "parts") == curves(tmp_path / "whole")
    assert not (tmp_path / "parts" / checkpoint.FILE).exists()  # a finished run deletes its checkpoint


@pytest.mark.parametrize("before", [30, None])  # None: a record from before the key (whole batches, 0)
def test_a_resumed_run_evaluates_as_its_interrupted_leg_did(cli, tmp_path, monkeypatch, tiny_args, forwards, before):
    """eval_positions is outside the hash a checkpoint is matched by: the second leg takes the first's, and says so."""
    args = [*tiny_args, "model=transformer", "steps=9", "checkpoint_every=4", "hydra.run.dir=run"]
    with pytest.MonkeyPatch.context() as preempted:
        interrupt_at(preempted, 7)
        code, _, err = cli(*args, "eval_positions=30")  # adding's 6 steps: 5 examples a forward
    assert code == 130, err
    if before is None:
        summary = json.loads((tmp_path / "run" / "summary.json").read_text())
        del summary["config"]["eval_positions"]
        (tmp_path / "run" / "summary.json").write_text(json.dumps(summary))
    forwards.clear()
    code, _, err = cli(*args, "resume=true", "eval_positions=6")  # 1 example a forward, were it taken
    assert code == 0, err
    resumed = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert resumed["resumed_from_step"] == 4 and resumed["config"]["eval_positions"] == (before or 0)
    assert 1 not in forwards and (5 in forwards) == (before is not None)


def test_resume_without_a_checkpoint_starts_again_and_a_torn_file_is_no_checkpoint(cli, tmp_path, tiny_args):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / LOCK).touch()  # a killed run's folder: its lock makes it ours (records/folders.not_ours)
    (tmp_path / "run" / checkpoint.FILE).write_bytes(b"half a file")
    with pytest.raises(checkpoint.Refused):
        checkpoint.read(tmp_path / "run" / checkpoint.FILE, "any")
    code, _, err = cli(*tiny_args, "resume=true", "hydra.run.dir=run")
    assert code == 0, err
    assert "resumed_from_step" not in json.loads((tmp_path / "run" / "summary.json").read_text())


def test_checkpoint_every_is_a_harness_key_and_checked(cli, compose, tiny_args):
    from omegaconf import OmegaConf

    from normbench.configuration.contract import identity

    plain = lambda node: {k: v for k, v in OmegaConf.to_container(node, resolve=True).items() if k != "hydra"}
    assert identity(plain(compose("checkpoint_every=5"))).config_hash == identity(plain(compose())).config_hash
    code, _, err = cli(*tiny_args, "checkpoint_every=-1")
    assert code == 2 and "checkpoint_every must be >= 0, got -1" in err


def test_a_checkpoint_that_fails_while_restored_is_set_aside_and_the_run_equals_a_fresh_one(cli, tmp_path, monkeypatch,
                                                                                             tiny_args):
    """Another version's optimizer state (its groups merged: the model loads, then the optimizer
    refuses): the trainer is put back as built, so the resumed attempt is an uninterrupted run, bitwise."""
    args = [*tiny_args, "steps=11", "deterministic=true", "checkpoint_every=4"]
    code, _, err = cli(*args, "hydra.run.dir=whole")
    assert code == 0, err
    interrupt_at(monkeypatch, 7)
    assert cli(*args, "hydra.run.dir=parts")[0] == 130
    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "parts" / checkpoint.FILE
    wrapped = checkpoint.load_tensor_file(path)
    groups = wrapped["state"]["optimizer"]["param_groups"]
    assert len(groups) > 1  # decayed and undecayed parameters
    wrapped["state"]["optimizer"]["param_groups"] = [{**groups[0], "params": [i for g in groups for i in g["params"]]}]
    wrapped["sha256"] = checkpoint.checksum(wrapped["state"])
    torch.save(wrapped, path)
    code, _, err = cli(*args, "resume=true", "hydra.run.dir=parts")
    assert code == 0, err
    whole, parts = (json.loads((tmp_path / d / "summary.json").read_text()) for d in ("whole", "parts"))
    assert parts["status"] == "ok" and "resumed_from_step" not in parts
    assert {k: v for k, v in parts["metrics"].items() if k not in CLOCKS} == \
        {k: v for k, v in whole["metrics"].items() if k not in CLOCKS}
    assert curves(tmp_path / "parts") == curves(tmp_path / "whole")
    assert (tmp_path / "parts" / f"{checkpoint.FILE}{checkpoint.SET_ASIDE}").is_file()


def test_a_folder_named_checkpoint_pt_is_set_aside_by_the_first_save(cli, tmp_path, tiny_args):
    (tmp_path / "run" / checkpoint.FILE).mkdir(parents=True)
    (tmp_path / "run" / LOCK).touch()  # a normbench run's folder (without it, the folder is someone's: refused)
    (tmp_path / "run" / checkpoint.FILE / "keep").write_text("mine")
    code, _, err = cli(*tiny_args, "checkpoint_every=2", "hydra.run.dir=run")
    assert code == 0, err
    assert (tmp_path / "run" / f"{checkpoint.FILE}{checkpoint.SET_ASIDE}" / "keep").read_text() == "mine"
    assert not (tmp_path / "run" / checkpoint.FILE).exists()  # the run's own checkpoint, deleted at its end


def test_checkpoint_reads_the_trainer_through_its_state_dict_alone():
    """checkpoint.py saves ``Trainer.state_dict()`` and hands it back through ``load_state_dict``: no other
    attribute of the trainer (its device, its misfit check, its record) is read there, and the state's
    layout is training/state.py's (the checkpoint's own fields beside it)."""
    import ast
    import inspect

    from normbench.training import checkpoint, state

    tree = ast.parse(inspect.getsource(checkpoint))
    read = {node.attr for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "trainer"}
    assert read == {"state_dict", "load_state_dict"}
    assert not any(isinstance(node, ast.Constant) and node.value in state.FIELDS for node in ast.walk(tree))


def test_a_zip_writer_error_is_a_full_disk_only_when_it_is_one(tmp_path, monkeypatch):
    """Hostile h15 B11 (F04): a checkpoint on a full disk said torch's "[enforce fail ...] unexpected pos"."""
    import errno
    import shutil

    def broken(*args, **kwargs):
        raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 34816 vs 34768")
    monkeypatch.setattr(torch, "save", broken)
    path = tmp_path / "checkpoint.pt"
    with pytest.raises(RuntimeError, match="enforce fail"):  # space left: torch's own error, as it is
        checkpoint.save_tensors({}, None, path)
    monkeypatch.setattr(shutil, "disk_usage", lambda folder: shutil._ntuple_diskusage(1 << 30, 1 << 30, 0))
    with pytest.raises(OSError, match=f"^no space left on device writing {path}$") as raised:
        checkpoint.save_tensors({}, None, path)
    assert raised.value.errno == errno.ENOSPC


EFBIG_SAVE = """
import resource, sys, torch
from pathlib import Path
from normbench.training import checkpoint
resource.setrlimit(resource.RLIMIT_FSIZE, (60 * 1024, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
path = Path(sys.argv[1])
with open(path, "wb") as out:
    try:
        checkpoint.save_tensors({"x": torch.zeros(100_000)}, out, path)
    except OSError as err:
        print(err.errno, err)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_FSIZE and EFBIG as on Linux")
def test_a_file_size_limit_is_said_as_such(tmp_path):
    """Hostile h16 N16: `ulimit -f 60` made a save_model run fail with torch's "[enforce fail at inline_container.cc:672]
    . unexpected pos 34816 vs 34768"; EFBIG is said as the file-size limit, as a full disk is (h15 B11)."""
    path = tmp_path / "model.pt"
    done = subprocess.run([sys.executable, "-c", EFBIG_SAVE, str(path)], capture_output=True, text=True,
                          timeout=HANG_S, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert done.stdout == f"{errno.EFBIG} the file-size limit (ulimit -f) was hit writing {path} (errno EFBIG)\n", \
        done.stderr[-2000:]
