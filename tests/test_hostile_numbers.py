"""Numbers a run cannot use, refused in one line at the config check (issue 50: N31, H22, S10)."""

from __future__ import annotations

import time

import pytest

from normbench.configuration.config import to_config
from normbench.configuration.schema import MAX_LAYERS


def test_a_model_too_deep_to_build_is_refused_at_once(cli, tiny_args, tmp_path):
    """N31: model.layers=100000 passed the memory check (width 8) and sat with no line for minutes."""
    started = time.monotonic()
    code, _, err = cli(*tiny_args, "model.layers=100000", f"hydra.run.dir={tmp_path / 'run'}")
    assert code == 2 and "model.layers must be <= 1000" in err and len(err.strip().splitlines()) == 1, err
    assert time.monotonic() - started < 30


def test_the_deepest_allowed_model_passes_the_check(compose):
    assert to_config(compose(f"model.layers={MAX_LAYERS}")).model.layers == MAX_LAYERS


@pytest.mark.parametrize("value", ["-1", "0", "x", "1.5"])
def test_a_sweepers_batch_size_below_1_is_one_line(cli, tiny_args, tmp_path, value):
    """H22: Hydra's basic sweeper asserted max_batch_size > 0: a traceback."""
    code, _, err = cli("-m", f"hydra.sweeper.max_batch_size={value}", "seed=1,2", *tiny_args,
                       f"hydra.sweep.dir={tmp_path / 'sweep'}")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert not (tmp_path / "sweep" / "0").exists()


def test_a_non_finite_setting_is_refused_before_its_record(cli, tiny_args, tmp_path):
    """S10: ``lr: nan`` in a sweep made a record saying lr null, which the report then set aside."""
    sweep = tmp_path / "sweep"
    code, _, err = cli("-m", *tiny_args, "lr=nan,0.001", "report=false", f"hydra.sweep.dir={sweep}")
    assert code == 2 and err.strip().splitlines()[-1].endswith("lr=nan must be a finite number: a record cannot hold it")
    assert not (sweep / "0" / "summary.json").exists()
    assert (sweep / "1" / "summary.json").exists()  # the other job ran


def test_the_slurm_launcher_without_slurm_is_one_line(cli, tiny_args, tmp_path, monkeypatch):
    """Hostile pass 4, H54: submitit's SLURM launcher raised "Could not detect srun" inside Hydra's launch: a
    traceback. Without `srun` on PATH (PATH emptied here, so the test holds on a cluster too) it is one line."""
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    code, _, err = cli("-m", "hydra/launcher=submitit_slurm", "seed=1", *tiny_args,
                       f"hydra.sweep.dir={tmp_path / 'sweep'}")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "srun" in err and "Traceback" not in err, err
    assert not (tmp_path / "sweep" / "0").exists()
