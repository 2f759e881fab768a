"""A sweep's up-front composition check (studies/validation.py): every override and every pair of overrides
is composed before the first job runs, and no job is composed there twice over."""

from __future__ import annotations

from itertools import combinations, product

from hydra._internal.config_loader_impl import ConfigLoaderImpl

from normbench.studies.validation import covering_jobs
from tests.conftest import TINY, TINY_TASK


def _pairs(jobs):
    return {pair for overrides in jobs for pair in combinations(sorted(overrides), 2)}


def test_the_covering_jobs_hold_every_value_and_every_pair_of_the_batch():
    batch = [[f"a={a}", f"b={b}", f"c={c}", "steps=2"] for a, b, c in product(range(3), range(2), range(4))]
    chosen = covering_jobs(batch)
    picked = [batch[i] for i in chosen]
    assert _pairs(picked) == _pairs(batch) and {o for j in picked for o in j} == {o for j in batch for o in j}
    assert chosen == sorted(chosen) and chosen[0] == 0
    assert len(chosen) < len(batch)  # 24 jobs; a∘c alone has 12 pairs, so 12 to 24 are needed and fewer taken


def test_a_job_that_brings_one_new_value_is_composed_even_late():
    batch = [["norm=ln", "seed=0"], ["norm=ln", "seed=1"], ["norm=ln", "seed=0"], ["norm=bogus", "seed=0"]]
    assert covering_jobs(batch) == [0, 1, 3]  # job 2 repeats job 0; job 3's norm was never composed
    assert covering_jobs([[]]) == [0] and covering_jobs([]) == []


def test_a_bad_value_in_the_last_job_still_refuses_the_sweep_before_any_job(cli, tmp_path):
    code, _, err = cli("-m", *TINY, *TINY_TASK, "seed=0,1,2", "norm=ln,rms,nope", "hydra.sweep.dir=sw", "report=false")
    assert code == 2 and err.count("\n") == 1 and "nope" in err, err
    assert not (tmp_path / "sw").exists()


def test_a_sweep_composes_its_jobs_fewer_than_twice_each(cli, tmp_path, monkeypatch):
    calls = []
    real = ConfigLoaderImpl.load_sweep_config
    monkeypatch.setattr(ConfigLoaderImpl, "load_sweep_config",
                        lambda self, *a, **k: calls.append(k.get("sweep_overrides", a[1] if len(a) > 1 else None))
                        or real(self, *a, **k))
    code, _, err = cli("-m", *TINY, *TINY_TASK, "seed=0,1", "norm=ln,rms", "lr=0.01,0.02", "hydra.sweep.dir=sw",
                       "report=false", "steps=2")
    assert code == 0, err
    # 8 jobs run, each composed once to run; the check before them composes only those that brought a new pair
    assert 8 + 4 <= len(calls) < 16, len(calls)
