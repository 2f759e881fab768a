"""dyt_faster_than_rms (issue 46) is decided on the paired timing of `bench arms`, each kind at its
fastest correct kernel, never on the runs' own step times when a paired timing lies beside them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from normbench.analysis import aggregate
from normbench.analysis.claims import CONTRADICTED, NOT_TESTABLE, SUPPORTED, evaluate_claims
from normbench.records.reading import find_records

ROOT = Path(__file__).resolve().parents[2]
STUDY = {"schema": "normbench.study/1", "id": "s1", "name": "dyt_speed", "arms": ["norm"], "command": ""}


def _runs(folder: Path, write_record, device: str = "cuda", precision: str = "bf16"):
    """Quiet runs (p90/p10 1.1) whose own clocks say DyT takes half of RMSNorm's step: 6 ms against 12; on
    the paper's hardware (a GPU at bf16) unless told otherwise."""
    for seed in (0, 1, 2):
        for norm, ms in (("dyt", 6.0), ("rms", 12.0)):
            write_record(folder, f"{norm}-{seed}", seed=seed, best_val=0.9, study=STUDY,
                         axes={"norm": norm, "impl": "native", "precision": precision}, environment={"device": device},
                         throughput={"step_ms_median": ms * (1 + 0.01 * seed), "step_ms_p10": ms, "step_ms_p90": 1.1 * ms})
    runs = aggregate.runs_frame(find_records([folder]).runs)
    return aggregate.label_groups(runs, aggregate.varying_axes(runs))


def _paired(folder: Path, runs, dyt_over_rms: float) -> None:
    """A bench arms file (`--reference norm=rms`): both arms timed in the same 20 rounds."""
    rng = np.random.default_rng(0)
    rms = 10 + rng.normal(0, 0.3, 20)
    arms = [{"group_hash": str(runs.loc[runs["axes.norm"] == norm, "group_hash"].iloc[0]), "study": "s1",
             "group": f"norm={norm}", "rounds_ms": list(rms * factor * (1 + rng.normal(0, 0.01, 20)))}
            for norm, factor in (("dyt", dyt_over_rms), ("rms", 1.0))]
    (folder / "paired-timing.json").write_text(json.dumps({"schema": "normbench.paired-timing/1", "arms": arms,
                                                           "rounds": 20, "created": "2026-12-02T00:00:00"}))


def _speed(runs):
    (_, verdict), = [(c, v) for c, v in evaluate_claims(runs) if c.id == "dyt_faster_than_rms"]
    return verdict.parts[0]


def test_the_paired_timing_decides_against_the_runs_own_clocks(write_record, tmp_path):
    """The runs' clocks alone support the claim (DyT 2x faster); the paired timing says DyT's step is 1.25x
    RMSNorm's, and it is what decides: contradicted, from 20 rounds."""
    runs = _runs(tmp_path, write_record)
    alone = _speed(runs)
    assert alone.status == SUPPORTED and "paired timing" not in alone.test  # what a per-run reading would say
    _paired(tmp_path, runs, 1.25)
    part = _speed(runs)
    assert part.status == CONTRADICTED, part.test + part.note
    assert "paired timing" in part.test and "20 rounds" in part.test
    assert part.effects[0].estimate == pytest.approx(1.25, rel=0.05)


def test_the_arm_table_shows_the_paired_step_times_not_the_runs_own(write_record, tmp_path):
    """Referee 19: rms_faster_than_ln's table printed the per-run median step ms (RMS 12% slower) while the paired,
    interleaved ratio was 0.997. Where the arms have a paired timing the table shows its step times; where they
    have none, the runs' own, labelled per-run and noisy."""
    from normbench.analysis.claims.engine import PAIRED_MS, PER_RUN_MS

    runs = _runs(tmp_path, write_record)
    (_, alone), = [(c, v) for c, v in evaluate_claims(runs) if c.id == "dyt_faster_than_rms"]
    assert PER_RUN_MS in alone.evidence and PAIRED_MS not in alone.evidence
    _paired(tmp_path, runs, 1.25)
    (_, verdict), = [(c, v) for c, v in evaluate_claims(runs) if c.id == "dyt_faster_than_rms"]
    table = verdict.evidence.set_index("arm")
    assert PER_RUN_MS not in table  # the runs' clocks (6 vs 12 ms) are not shown beside the paired timing
    assert table.loc["dyt", PAIRED_MS] == pytest.approx(12.5, rel=0.05)
    assert table.loc["rms", PAIRED_MS] == pytest.approx(10, rel=0.05)


def test_a_paired_timing_that_favours_dyt_supports_it(write_record, tmp_path):
    runs = _runs(tmp_path, write_record)
    _paired(tmp_path, runs, 0.8)
    part = _speed(runs)
    assert part.status == SUPPORTED and part.effects[0].estimate == pytest.approx(0.8, rel=0.05)


@pytest.mark.parametrize("device, precision", [("cpu", "fp32"), ("cpu", "bf16"), ("cuda", "fp32")])
def test_a_timing_off_the_papers_hardware_is_not_testable(write_record, tmp_path, device, precision):
    """The paper timed LLaMA 7B on a GPU in BF16: a paired timing on a CPU, or at fp32, that favours DyT by
    1.25x neither supports nor contradicts it (kernels and fusion differ by device and dtype). Referee 19: the
    paired ratio is still printed, labelled measured, not judged (it was blanked, and the per-run ms shown)."""
    from normbench.analysis.claims.engine import SHOWN_NOT_JUDGED

    runs = _runs(tmp_path, write_record, device, precision)
    _paired(tmp_path, runs, 0.8)
    part = _speed(runs)
    assert part.status == NOT_TESTABLE and part.effects[0].label.startswith(SHOWN_NOT_JUDGED)
    assert "paired timing" in part.effects[0].label and part.effects[0].estimate == pytest.approx(0.8, rel=0.05)
    assert "; rounds 0.7" in part.effects[0].label  # the range of the per-round ratios beside their median
    assert "timed_as_paper" in part.test and "cuda at bf16" in part.note


def test_the_study_runs_each_kind_at_its_fastest_correct_kernel():
    """sweeps/dyt_speed.yaml sweeps the norm alone: both arms at norm.impl=auto (the schema's default, which
    runs each site's fastest correct kernel: DyT's compiled elementwise kernel, RMSNorm's compiled one, or
    PyTorch's, as measured), nothing pinning either to a reference formula."""
    from normbench.configuration.schema import NormSpec

    sweep = yaml.safe_load((ROOT / "sweeps" / "dyt_speed.yaml").read_text())
    params = sweep["hydra"]["sweeper"]["params"]
    assert set(params["norm"].split(",")) == {"dyt", "rms"}
    assert not any("impl" in key for key in params) and "impl" not in (sweep.get("norm") or {})
    for kind in ("dyt", "rms"):
        assert "impl" not in (yaml.safe_load((ROOT / "conf" / "norm" / f"{kind}.yaml").read_text()) or {})
    assert NormSpec().impl == "auto"
