"""Every check a checkpoint passes before it is restored, driven through one table of hostile checkpoint.pt files.

Each hostile file sits in a run folder beside a record of the run. ``checkpoint.find`` (what
``resume=true`` calls) must return within seconds, run no code from it, set it aside (renamed
beside itself, nothing deleted) with one line, and let the run start fresh. Restore-time failures
(another code version's model or optimizer) must leave the trainer as it was built.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import pickle
import zipfile

import pytest
import torch
from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from omegaconf import OmegaConf

from normbench.configuration.config import config_dir
from normbench.configuration.contract import RECORD_FORMAT, identity
from normbench.records.record import RecordWriter
from normbench.training import checkpoint, run
from normbench.training.probes import Probes
from normbench.training.recording import RecordHook
from normbench.training.train import Trainer
from tests.conftest import TINY, TINY_TASK

STEPS = 11


@functools.lru_cache(maxsize=1)
def composed():
    with initialize_config_dir(str(config_dir()), version_base="1.3"):
        return hydra_compose("config", overrides=[*TINY, *TINY_TASK, f"steps={STEPS}"])


def build(run_dir):
    """(trainer, config hash) of a tiny run of STEPS steps, its record started in ``run_dir``."""
    node = composed()
    plain = {k: v for k, v in OmegaConf.to_container(node, resolve=True).items() if k != "hydra"}
    digest = identity(plain).config_hash
    cfg, task, model, device = run.prepare(node)
    record = RecordWriter(run_dir)
    record.start(config=plain, config_hash=digest)
    return Trainer(cfg, task, model, device, [Probes(), RecordHook(record)]), digest


@pytest.fixture
def good(tmp_path):
    """A run folder with its record and a real checkpoint of it at step 4: (run_dir, digest)."""
    run_dir = tmp_path / "run"
    trainer, digest = build(run_dir)
    checkpoint.save(trainer, run_dir / checkpoint.FILE, 4, digest)
    return run_dir, digest


def fresh_state(trainer):
    return {k: v.clone() for k, v in trainer.master.state_dict().items()}, torch.get_rng_state()


class Boom:
    """A pickle that runs a command when it is loaded."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def rebuilt(change):
    """The good checkpoint with ``change(state)`` applied and its checksum made to match again:
    what a careful forger (or another version) writes, which only the field checks can refuse."""
    def make(path):
        wrapped = checkpoint.load_tensor_file(path)
        change(wrapped["state"])
        wrapped["sha256"] = checkpoint.checksum(wrapped["state"])
        torch.save(wrapped, path)
    return make


def flip_tensor_bytes(path):
    data = bytearray(path.read_bytes())
    at = data.index(b"data/0") + 200  # inside the first tensor's stored bytes
    data[at : at + 8] = bytes(255 - b for b in data[at : at + 8])
    path.write_bytes(bytes(data))


def pickled_code(path):
    torch.save({"format": checkpoint.FORMAT, "sha256": "x", "state": Boom(path.parent / "ran")}, path)


def raw_pickle(path):
    path.write_bytes(pickle.dumps(Boom(path.parent / "ran")))


def link_elsewhere(path):
    target = path.parent.parent / "elsewhere.pt"
    os.replace(path, target)
    path.symlink_to(target)


def replace_with(make):
    def hostile(path):
        path.unlink()
        make(path)
    return hostile


def drop(key):
    return rebuilt(lambda s: s.pop(key))


def setting(key, value):
    return rebuilt(lambda s: s.__setitem__(key, value))


def cut_curve(state):
    state["curves"] = '{"kind": "train", "step": 1, "loss": 0.5}\n{"kind": "train", "st'


def deflate(path):  # a few MB that would inflate into GB: torch.load would inflate what it is given
    wrapped = checkpoint.load_tensor_file(path)
    torch.save(wrapped, path.with_suffix(".stored"))
    with zipfile.ZipFile(path.with_suffix(".stored")) as src, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as dst:
        for entry in src.infolist():
            dst.writestr(entry.filename, src.read(entry.filename))
    path.with_suffix(".stored").unlink()


def format_one(path):  # what the earlier version wrote: numpy's state pickled (weights_only refuses it)
    import numpy as np
    torch.save({"format": 1, "config_hash": "x", "step": 4, "rng": {"numpy": np.random.get_state()}}, path)


def planted(key, value):
    """The good checkpoint with ``value`` in state[key][its first name] (``key`` a mapping) or as
    state[key]; its checksum left as it was: the tensors are refused before any checksum is taken."""
    def make(path):
        wrapped = checkpoint.load_tensor_file(path)
        inner = wrapped["state"][key]
        if isinstance(inner, dict) and not isinstance(value, dict):
            inner[next(iter(inner))] = value
        else:
            wrapped["state"][key] = value
        torch.save(wrapped, path)
    return make


_BASE = torch.zeros(20_000)
_SHARED = torch.zeros(10_000)


# name -> how to make the hostile checkpoint.pt from the good one in place
HOSTILE = {
    "pickle_calls_os_system": replace_with(pickled_code),
    "raw_pickle_calls_os_system": replace_with(raw_pickle),
    "symlink_to_a_good_one": link_elsewhere,
    "link_to_dev_zero": replace_with(lambda p: p.symlink_to("/dev/zero")),
    "fifo": replace_with(os.mkfifo),
    "folder": replace_with(lambda p: p.mkdir()),
    "empty": replace_with(lambda p: p.write_bytes(b"")),
    "half_a_file": lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]),
    "corrupted_tensor_bytes": flip_tensor_bytes,
    "foreign_format_1": replace_with(format_one),
    "legacy_non_zip_format": lambda p: torch.save(checkpoint.load_tensor_file(p), p, _use_new_zipfile_serialization=False),
    "deflated_entries": deflate,
    "foreign_format_99": lambda p: torch.save({**checkpoint.load_tensor_file(p), "format": 99}, p),
    "not_a_dict": replace_with(lambda p: torch.save([1, 2, 3], p)),
    "no_config_hash": drop("config_hash"),
    "another_runs_hash": setting("config_hash", "0" * 16),
    "step_beyond_the_run": setting("step", 10**9),
    "step_zero": setting("step", 0),
    "step_a_string": setting("step", "4"),
    "step_a_float": setting("step", 4.0),
    "model_a_list": setting("model", [1, 2]),
    "measured_losses_strings": rebuilt(lambda s: s["measured"].__setitem__("losses", ["a"])),
    "measured_unknown_field": rebuilt(lambda s: s["measured"].__setitem__("extra", 1)),
    "measured_under_both_names": rebuilt(lambda s: s.__setitem__("progress", dict(s["measured"]))),
    "earlier_name_of_unknown_fields": rebuilt(lambda s: s.__setitem__("progress", {**s.pop("measured"), "extra": 1})),
    "rng_a_tensor": setting("rng", torch.zeros(2)),
    "optimizer_param_ids_lists": rebuilt(lambda s: s["optimizer"]["param_groups"][0].__setitem__("params", [[0]])),
    "rng_numpy_short": rebuilt(lambda s: s["rng"]["numpy"].__setitem__("keys", torch.zeros(3, dtype=torch.int64))),
    "batch_pos_beyond_order": rebuilt(lambda s: s["batches"].__setitem__("pos", 10**6)),
    "batch_order_out_of_range": rebuilt(lambda s: s["batches"].__setitem__("order", torch.tensor([10**6]))),
    "cut_curve_line": rebuilt(cut_curve),
    "curve_line_a_list": setting("curves", "[1, 2]\n"),
    "another_model": rebuilt(lambda s: s.__setitem__("model", {"other.weight": torch.zeros(3)})),
    "another_shape": rebuilt(lambda s: s["model"].__setitem__(next(iter(s["model"])), torch.zeros(1))),
    "optimizer_state_shape": rebuilt(lambda s: s["optimizer"]["state"].__setitem__(0, {"exp_avg": torch.zeros(7, 7)})),
    # Views whose storage holds far less than their shape: torch.load builds them without the bytes.
    "stride0_view_of_one_float": planted("model", torch.zeros(1).expand(2**27)),  # 512 MiB from 4 bytes
    "overlapping_view": planted("model", torch.zeros(8191).as_strided((4096, 4096), (1, 1))),
    "transposed_view": planted("model", torch.zeros(3, 5).t()),
    "views_beyond_the_file": planted("model", {f"v{i}": _BASE[i : i + 10_000] for i in range(500)}),
    "one_tensor_referenced_100k_times": planted("spikes", {"window": [_SHARED] * 100_000, "steps": []}),
}


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_checkpoint_is_set_aside_and_the_run_starts_fresh(good, name, caplog, no_hang, tmp_path):
    """What resume does, find then restore: refused by one or the other, the trainer stays as built."""
    run_dir, digest = good
    path = run_dir / checkpoint.FILE
    HOSTILE[name](path)
    trainer, _ = build(tmp_path / "fresh")
    weights, rng = fresh_state(trainer)
    with caplog.at_level(logging.WARNING, logger="normbench"):
        found = checkpoint.find(run_dir, None, digest, STEPS)
        assert found is None or not checkpoint.restore(trainer, *found, torch.device("cpu"))
    assert all(torch.equal(v, weights[k]) for k, v in trainer.master.state_dict().items())
    assert torch.equal(torch.get_rng_state(), rng) and trainer.start_step == 0 and trainer.measured.losses == []
    assert not (run_dir / "ran").exists()  # no code ran
    assert not os.path.lexists(path) and os.path.lexists(run_dir / f"{checkpoint.FILE}{checkpoint.SET_ASIDE}")
    lines = [r.getMessage() for r in caplog.records if "set aside" in r.getMessage()]
    assert len(lines) == 1 and "\n" not in lines[0] and "the run starts fresh" in lines[0], lines


def test_the_good_checkpoint_passes_every_check(good):
    run_dir, digest = good
    found = checkpoint.find(run_dir, None, digest, STEPS)
    assert found is not None and found[0] == run_dir / checkpoint.FILE and found[1]["step"] == 4


def test_a_checkpoint_an_earlier_version_wrote_resumes(good, tmp_path):
    """Earlier versions saved what the trainer measured under "progress" (the word now left to the bar and
    the sweep's job lines): such a checkpoint is read and restored, not set aside."""
    run_dir, digest = good
    path = run_dir / checkpoint.FILE
    def earlier(state):
        state["measured"].update(step=4, losses=[2.5, 2.25, 2.0, 1.75], evals=[(4, 0.5)], best_val=0.5)
        state["progress"] = state.pop("measured")
    rebuilt(earlier)(path)
    assert "progress" in checkpoint.load_tensor_file(path)["state"]
    found = checkpoint.find(run_dir, None, digest, STEPS)
    trainer, _ = build(tmp_path / "again")
    assert found is not None and checkpoint.restore(trainer, *found, torch.device("cpu"))
    assert trainer.start_step == 4 and trainer.measured.losses == [2.5, 2.25, 2.0, 1.75]
    assert trainer.measured.evals == [(4, 0.5)] and trainer.measured.best_val == 0.5
    assert "progress" not in trainer.state_dict() and trainer.state_dict()["measured"]["step"] == 4
    assert not os.path.lexists(run_dir / f"{checkpoint.FILE}{checkpoint.SET_ASIDE}")


def test_a_checkpoint_beside_no_record_of_this_run_is_set_aside(good):
    run_dir, digest = good
    (run_dir / "summary.json").unlink()
    assert checkpoint.find(run_dir, None, digest, STEPS) is None
    assert (run_dir / f"{checkpoint.FILE}{checkpoint.SET_ASIDE}").is_file()


def test_a_second_set_aside_keeps_the_first(good):
    run_dir, digest = good
    (run_dir / f"{checkpoint.FILE}{checkpoint.SET_ASIDE}").write_bytes(b"earlier")
    flip_tensor_bytes(run_dir / checkpoint.FILE)
    assert checkpoint.find(run_dir, None, digest, STEPS) is None
    assert (run_dir / f"{checkpoint.FILE}{checkpoint.SET_ASIDE}").read_bytes() == b"earlier"
    assert (run_dir / f"{checkpoint.FILE}{checkpoint.SET_ASIDE}-2").is_file()


def test_in_a_sweep_only_a_checkpoint_beside_a_record_of_this_run_is_read(good, tmp_path):
    run_dir, digest = good
    sweep = tmp_path
    other = sweep / "another"  # (sorted first) a planted pickle beside a copy of the run's record: refused, not run
    other.mkdir()
    (other / "summary.json").write_bytes((run_dir / "summary.json").read_bytes())
    pickled_code(other / checkpoint.FILE)
    stranger = sweep / "stranger"  # beside another run's record: not touched at all
    stranger.mkdir()
    (stranger / "summary.json").write_text(json.dumps({"schema": RECORD_FORMAT, "status": "running", "config_hash": "f" * 16}))
    pickled_code(stranger / checkpoint.FILE)
    moved = sweep / "moved"  # the run's own checkpoint in another job folder: found (resume across folders)
    moved.mkdir()
    (moved / "summary.json").write_bytes((run_dir / "summary.json").read_bytes())
    os.replace(run_dir / checkpoint.FILE, moved / checkpoint.FILE)
    found = checkpoint.find(run_dir, sweep, digest, STEPS)
    assert found is not None and found[0] == moved / checkpoint.FILE
    assert not (other / "ran").exists() and (other / f"{checkpoint.FILE}{checkpoint.SET_ASIDE}").exists()
    assert (stranger / checkpoint.FILE).exists() and not (stranger / "ran").exists()


def test_load_tensor_file_reads_data_and_refuses_code_and_links(tmp_path):
    torch.save({"w": torch.ones(2)}, tmp_path / "model.pt")
    assert torch.equal(checkpoint.load_tensor_file(tmp_path / "model.pt")["w"], torch.ones(2))
    pickled_code(tmp_path / "code.pt")
    (tmp_path / "link.pt").symlink_to(tmp_path / "model.pt")
    for name in ("code.pt", "link.pt", "missing.pt"):
        with pytest.raises(checkpoint.Unreadable):
            checkpoint.load_tensor_file(tmp_path / name)
    assert not (tmp_path / "ran").exists()


def test_a_checkpoint_that_fails_while_restored_leaves_the_trainer_as_built(good, tmp_path):
    """Two optimizer groups made one (the total of parameters unchanged): the model loads, then
    the optimizer refuses. The trainer must be put back exactly as built, and the file set aside."""
    run_dir, digest = good
    path = run_dir / checkpoint.FILE
    def merge_groups(state):
        groups = state["optimizer"]["param_groups"]
        state["optimizer"]["param_groups"] = [{**groups[0], "params": [i for g in groups for i in g["params"]]}]
    rebuilt(merge_groups)(path)
    trainer, _ = build(tmp_path / "again")
    weights, rng = fresh_state(trainer)
    saved = checkpoint.read(path, digest, STEPS)
    saved["model"] = {k: v + 1 for k, v in saved["model"].items()}  # weights that differ from the built ones
    assert not checkpoint.restore(trainer, path, saved, torch.device("cpu"))
    assert all(torch.equal(v, weights[k]) for k, v in trainer.master.state_dict().items())
    assert torch.equal(torch.get_rng_state(), rng) and trainer.start_step == 0 and trainer.measured.losses == []
    assert (run_dir / f"{checkpoint.FILE}{checkpoint.SET_ASIDE}").is_file()


def test_a_resumed_sweep_with_planted_checkpoints_runs_fresh_and_exits_0(cli, tmp_path, tiny_args):
    """End to end: a sweep resumed over job folders holding a code pickle beside the run's record
    and a folder named checkpoint.pt: no code runs, both are set aside, every run ends ok."""
    args = ["-m", *tiny_args, "seed=0,1", "hydra.sweep.dir=sw", "report=false", "checkpoint_every=2"]
    code, _, err = cli(*args)
    assert code == 0, err
    jobs = sorted(p.parent for p in (tmp_path / "sw").rglob("summary.json"))
    for job in jobs:  # as an interrupted attempt would leave them
        summary = json.loads((job / "summary.json").read_text())
        (job / "summary.json").write_text(json.dumps({**summary, "status": "interrupted"}))
    pickled_code(jobs[0] / checkpoint.FILE)
    (jobs[1] / checkpoint.FILE).mkdir()
    code, _, err = cli(*args, "resume=true")
    assert code == 0, err
    assert not (jobs[0] / "ran").exists()
    for job in jobs:
        assert json.loads((job / "summary.json").read_text())["status"] == "ok"
        assert os.path.lexists(job / f"{checkpoint.FILE}{checkpoint.SET_ASIDE}")


VIEWS = {"stride0_view_of_one_float": "not contiguous", "overlapping_view": "not contiguous",
         "transposed_view": "not contiguous", "views_beyond_the_file": "more bytes than its own",
         "one_tensor_referenced_100k_times": "more bytes than its own"}


@pytest.mark.parametrize("name", VIEWS)
def test_tensors_holding_more_than_the_file_are_refused_before_the_checksum(good, monkeypatch, caplog, name):
    run_dir, digest = good
    HOSTILE[name](run_dir / checkpoint.FILE)
    assert (run_dir / checkpoint.FILE).stat().st_size < 1 << 20

    def never(_state):
        raise AssertionError("the checksum built the tensors")
    monkeypatch.setattr(checkpoint, "checksum", never)
    with caplog.at_level(logging.WARNING, logger="normbench"):
        assert checkpoint.find(run_dir, None, digest, STEPS) is None
    assert VIEWS[name] in caplog.text


def test_a_view_inside_its_storage_is_read(tmp_path):
    run_dir = tmp_path
    torch.save({"w": torch.zeros(8)[2:6], "r": torch.get_rng_state()}, run_dir / "view.pt")  # inside its storage
    assert torch.equal(checkpoint.load_tensor_file(run_dir / "view.pt")["w"], torch.zeros(4))
