"""What a sweep's process no longer pays per job (issue 48): config files parsed once, each task's data
built once, the sweep's finished records read once; and each still follows a change on disk."""

from __future__ import annotations

import json
import os

import pytest
import torch

from normbench.configuration import config
from normbench.configuration.config import ConfigError, SweepSource
from normbench.records import record as record_module
from normbench.tasks import tensors
from normbench.tasks.synthetic import AddingConfig
from normbench.training import run


def _source(tmp_path, text: str) -> SweepSource:
    (tmp_path / "sweeps").mkdir(exist_ok=True)
    (tmp_path / "sweeps" / "mine.yaml").write_text(text)
    source = SweepSource("test", f"{SweepSource.scheme()}://")
    source.dirs = [str(tmp_path / "sweeps")]
    return source


def test_a_sweep_file_is_parsed_once_each_caller_gets_its_own_copy_and_an_edit_is_seen(tmp_path, monkeypatch):
    source = _source(tmp_path, "# @package _global_\nsteps: 7\n")
    reads = []
    real = config.read_sweep_file
    monkeypatch.setattr(config, "read_sweep_file", lambda *a, **k: reads.append(a[0]) or real(*a, **k))
    first = source.load_config("sweep/mine")
    first.config.steps = 99  # Hydra edits what it is given (it takes the defaults list out)
    second = source.load_config("sweep/mine")
    assert second.config.steps == 7 and len(reads) == 1
    path = tmp_path / "sweeps" / "mine.yaml"
    stamp = path.stat()
    path.write_text("# @package _global_\nsteps: 8\n")  # same size, same inode
    os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))  # and the same mtime: a coarse clock's edit
    assert source.load_config("sweep/mine").config.steps == 8 and len(reads) == 2


def test_a_refused_sweep_file_is_refused_every_time(tmp_path):
    source = _source(tmp_path, "# @package _global_\nhydra:\n  callbacks:\n    x:\n      _target_: os.system\n")
    for _ in range(2):  # nothing of a refused file is kept to be served later
        with pytest.raises(ConfigError):
            source.load_config("sweep/mine")


def test_the_config_files_are_read_once_across_compositions(compose, monkeypatch):
    from omegaconf import OmegaConf

    compose("norm=rms")
    loads = []
    real = OmegaConf.load
    monkeypatch.setattr(OmegaConf, "load", lambda *a, **k: loads.append(a) or real(*a, **k))
    again = compose("norm=rms")
    ours = [a for a in loads if str(config.config_dir()) in str(getattr(a[0], "name", a[0]))]
    assert ours == [] and again.norm.kind == "rms"  # every conf/ file came from the first composition
    assert len(loads) < 10  # Hydra's own few files (hydra/conf) it still reads itself


def test_a_task_is_built_once_per_process_and_per_seed(monkeypatch):
    built = []
    real = AddingConfig.load
    monkeypatch.setattr(AddingConfig, "load", lambda self, seed: built.append(seed) or real(self, seed))
    monkeypatch.setattr(tensors, "_built", {})
    cfg = AddingConfig(length=10, n_train=64, n_val=16, n_test=16)
    first = tensors.load_task(cfg, 0)
    assert tensors.load_task(AddingConfig(length=10, n_train=64, n_val=16, n_test=16), 0) is first
    other = tensors.load_task(cfg, 1)
    longer = tensors.load_task(AddingConfig(length=12, n_train=64, n_val=16, n_test=16), 0)
    assert built == [0, 1, 0] and not torch.equal(first.train.x, other.train.x) and longer.seq_len == 12
    fresh = real(cfg, 0)  # what a lone run builds
    assert torch.equal(first.train.x, torch.from_numpy(fresh.train.x)) and torch.equal(first.val.y, torch.from_numpy(fresh.val.y))


def test_the_kept_tasks_stay_under_their_bytes(monkeypatch):
    monkeypatch.setattr(tensors, "_built", {})
    one = tensors._bytes(tensors.load_task(AddingConfig(length=10, n_train=64, n_val=16, n_test=16), 0))
    monkeypatch.setattr(tensors, "KEPT_BYTES", 2 * one)
    for seed in range(1, 5):
        tensors.load_task(AddingConfig(length=10, n_train=64, n_val=16, n_test=16), seed)
    assert sum(map(tensors._bytes, tensors._built.values())) <= 2 * one and len(tensors._built) == 2


def _record(folder, digest_config: dict, status: str = "ok"):
    from normbench.configuration.contract import RECORD_FORMAT, config_hash

    folder.mkdir(parents=True, exist_ok=True)
    summary = {"schema": RECORD_FORMAT, "status": status, "config": digest_config,
               "config_hash": config_hash(digest_config), "metrics": {}}
    record_module.write_json_atomic(folder / "summary.json", summary)
    return config_hash(digest_config)


def test_the_sweeps_records_are_parsed_once_and_a_replaced_one_again(tmp_path, monkeypatch):
    from normbench.configuration.contract import config_of
    from tests.report.conftest import DEFAULT_AXES

    a, b = config_of(DEFAULT_AXES, 0, 100), config_of(DEFAULT_AXES, 1, 100)
    monkeypatch.setattr(run, "_seen", {})
    digest_a = _record(tmp_path / "0", a)
    digest_b = _record(tmp_path / "1", b, status="running")
    parsed = []
    real = run.read_summary
    monkeypatch.setattr(run, "read_summary", lambda p: parsed.append(p) or real(p))
    assert run.finished_record(tmp_path / "2", tmp_path, digest_a) == tmp_path / "0" / "summary.json"
    assert run.finished_record(tmp_path / "2", tmp_path, digest_b) is None  # running: not final
    assert len(parsed) == 2  # each file once (the job's own folder has none yet)
    _record(tmp_path / "1", b)  # run 1 ends: its record is replaced (a rename)
    assert run.finished_record(tmp_path / "2", tmp_path, digest_b) == tmp_path / "1" / "summary.json"
    assert len(parsed) == 3  # run 0's record was not parsed again
    (tmp_path / "0" / "summary.json").write_text(json.dumps({"schema": "x"}))  # overwritten in place: seen too
    assert run.finished_record(tmp_path / "2", tmp_path, digest_a) is None
