"""deterministic, model.qk_norm and norm.gain_offset as a run sees them: recorded, validated, built."""

import torch

from normbench.training.run import execute


def test_deterministic_is_recorded_and_not_inherited_by_the_next_job(compose, tmp_path):
    on = execute(compose("deterministic=true"), tmp_path / "on", [])
    off = execute(compose(), tmp_path / "off", [])
    assert on["status"] == off["status"] == "ok"
    assert on["environment"]["deterministic"] is True and off["environment"]["deterministic"] is False
    assert on["environment"]["cublas_workspace_config"]  # set for CUDA even when this run is on a CPU
    assert not torch.are_deterministic_algorithms_enabled()
    # harness: the same run, whichever kernels it used
    assert on["config_hash"] == off["config_hash"]
    collected = on["environment"]["collect_env"]
    assert "pip_packages" in collected or "error" in collected


def test_qk_norm_without_a_norm_is_invalid_in_one_line(compose, tmp_path):
    summary = execute(compose("model=transformer", "norm=none", "model.qk_norm=true"), tmp_path, [])
    assert summary["status"] == "invalid" and "qk_norm" in summary["reason"] and "\n" not in summary["reason"]


def test_qk_norm_and_gain_offset_train_and_are_part_of_identity(compose, tmp_path):
    plain = execute(compose("model=transformer"), tmp_path / "plain", [])
    both = execute(compose("model=transformer", "model.qk_norm=true", "norm.gain_offset=true"), tmp_path / "both", [])
    assert plain["status"] == both["status"] == "ok"
    assert both["axes"]["model.qk_norm"] is True and both["axes"]["norm.gain_offset"] is True
    assert plain["config_hash"] != both["config_hash"]
