"""The end-of-sweep table says when a run's timing is noisy, as the report does."""

from pathlib import Path

from normbench.studies.sweep_end import sweep_table


def _summary(norm: str, p10: float, p90: float) -> dict:
    return {"status": "ok", "axes": {"norm": norm}, "metrics": {"best_val": 0.9},
            "throughput": {"step_ms_median": 12.0, "step_ms_p10": p10, "step_ms_p90": p90}}


def test_noisy_timing_is_flagged_beside_ms_per_step():
    table = sweep_table({Path("s/0/summary.json"): _summary("ln", 10.0, 30.0),
                         Path("s/1/summary.json"): _summary("bn", 10.0, 12.0),
                         Path("s/2/summary.json"): {"status": "failed", "axes": {"norm": "rms"}}})
    assert table["ms/step"].tolist() == ["12 noisy", "12", "—"]
