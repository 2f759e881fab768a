"""What the precision and batch-size sweeps run: the settings each job's record will hold."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from normbench.config import to_config


@pytest.mark.parametrize("batch, steps, eval_every", [(4, 1600, 200), (16, 400, 50), (64, 100, 13)])
def test_batch_size_sweep_trains_every_batch_on_equal_data(compose, batch, steps, eval_every):
    node = compose("+sweep=batch_size", f"batch_size={batch}", tiny=False)
    recorded = OmegaConf.to_container(node, resolve=True)  # what run.execute records and hashes
    assert recorded["steps"] == steps and recorded["steps"] * batch >= 6400 > (recorded["steps"] - 1) * batch
    assert recorded["eval_every"] == eval_every
    assert to_config(node).steps == steps


def test_eps_sweep_puts_an_fp16_norm_where_zero_rows_occur(compose):
    cfg = to_config(compose("+sweep=eps_fp16", "norm.eps=1e-8", "norm.fp32=false", tiny=False))
    assert cfg.precision.dtype == "fp16_pure" and cfg.norm.impl == "reference" and cfg.norm.kind == "ln"
    assert cfg.model.family == "lstm" and cfg.placement.name == "in_cell"  # norm on U·h_{t-1}, 0 at t = 1
