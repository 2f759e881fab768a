"""Harness and sweep machinery (not their timings): the loop span, equal arithmetic, the commands."""

import json

import pytest
import torch

from normbench.bench import harness, sweep
from normbench.bench.section import OtherLoad, RatioLine, Section


def test_harness_and_bare_loop_do_the_same_training(compose, tmp_path):
    node = compose("eval_every=100")  # TINY: 6 steps, probes at 3 and 6; no evaluation inside the loop
    result = harness.trial(node, tmp_path)
    assert result["steps"] == result["bare_steps"] == 6 and result["probes"] == 2
    assert result["bare_s"] > 0 and result["probe_s"] > 0
    assert abs(result["final_loss"] - result["bare_final_loss"]) < 1e-6


def test_sweep_commands_differ_only_in_the_launcher():
    parallel = sweep.sweep_command(4, ["steps=10"], jobs=2)
    sequential = sweep.sweep_command(4, ["steps=10"], jobs=None)
    assert parallel[:len(sequential)] == sequential
    assert parallel[len(sequential):] == ["hydra/launcher=local", "hydra.launcher.n_jobs=2"]  # the project's preset
    assert "seed=0,1,2,3" in sequential and "threads=1" in sequential and "report=false" in sequential


@pytest.mark.slow
def test_bench_sweep_reads_each_sweeps_efficiency():
    section = sweep.run(quick=True, command="python -m normbench.bench sweep --quick")
    assert {r["launcher"] for r in section.rows} == {"parallel", "sequential"}
    assert all(0 < r["efficiency"] <= 1 and r["after_end_s"] >= 0 for r in section.rows)
    assert [r.name.split(" ")[0] for r in section.ratios] == ["sweep", "efficiency", "efficiency"]
    assert "efficiency" in section.markdown and section.extra["efficiency"]["sequential"] is not None
    assert "load" not in section.markdown  # the bench CLI's, read around the whole section (condition_line)


def test_ratio_targets_and_section_files(tmp_path):
    assert RatioLine("a", 1.4, "b", "cmd", target="<= 1.5").met is True
    assert RatioLine("a", 1.4, "b", "cmd", target=">= 1.6").met is False
    assert RatioLine("a", None, "b", "cmd", target=">= 1.6").met is None
    section = Section("demo", "cmd", {"torch": "x"}, [{"a": 1.0, "b": float("nan")}, {"c": "z"}], "## Demo",
                      [RatioLine("a", 2.0, "b", "cmd")])
    paths = section.write(tmp_path)
    assert [p.name for p in paths] == ["demo.json", "demo.csv", "demo.md"]
    data = json.loads(paths[0].read_text())  # strict JSON: NaN written as null
    assert data["rows"][0]["b"] is None and data["ratios"][0]["value"] == 2.0
    assert paths[1].read_text().splitlines()[0] == "a,b,c"


def test_harness_summary_finds_the_probe_interval_that_fits():
    rows = [{"trial": k, "steps": 100, "harness_ms_per_step": 10.4, "bare_ms_per_step": 10.0,
             "ratio": 1.04, "probes": 2, "trainer_probe_ms": 1.0, "harness_step_ms_median": 10.1,
             "loss_difference": 0.0} for k in range(3)]
    costs = {"activation_probe_ms": 2.0, "gradient_statistics_ms": 2.0, "forward_backward_ms": 8.0}
    section = harness.summarize(rows, costs, 50, ["steps=100"], torch.device("cpu"), "cmd")
    facts = section.extra["facts"]
    assert facts["probe_ms"] == 5.0
    # 0.4 ms/step of overhead, 0.1 of it from probes: 0.3 ms/step other; 1.0 - 0.3 = 0.7 ms/step left for probes
    assert abs(facts["other_overhead_ms_per_step"] - 0.3) < 1e-9
    assert abs(facts["min_probe_interval_for_target"] - 5.0 / 0.7) < 1e-9
    assert "probe_every >= 8" in section.markdown and section.ratios[0].met is True
    assert "load" not in section.markdown  # the bench CLI's, read around the whole section (condition_line)


def test_other_load_is_a_share_of_the_cpus():
    others = OtherLoad()
    sum(i * i for i in range(200_000))  # our own work is not counted as anyone else's
    share = others.fraction()
    assert share is None or 0.0 <= share <= 1.0


def test_the_fold_ceiling_times_one_step_of_seeds_x_batch_against_one_of_batch(monkeypatch):
    from tests.conftest import TINY

    widths = []
    real = harness.BareLoop.__init__

    def built(self, cfg, task, model, device):
        widths.append(cfg.batch_size)
        real(self, cfg, task, model, device)
    monkeypatch.setattr(harness.BareLoop, "__init__", built)
    section = harness.fold_ceiling(seeds=3, configs={"tiny": [o for o in TINY if not o.startswith("threads")]},
                                   repeats=2, quick=True, threads=1, command="cmd")
    (row,) = section.rows
    assert widths == [row["batch_size"], 3 * row["batch_size"]]  # the stacked step sees the seeds' examples
    assert row["ceiling"] == pytest.approx(3 * row["step_ms"] / row["stacked_step_ms"])
    assert section.ratios[0].target == ">= 3" and "3 x" in section.ratios[0].note and "ceiling" in section.markdown
    assert "load" not in section.markdown  # the bench CLI's, read around the whole section (condition_line)


def test_muon_kernels_times_torchs_muon_against_normbenchs_on_one_model():
    """Both sides train the same tiny Transformer; only the Muon half differs, torch's class on one side: the
    ratios are torch's time over normbench's, for the training step and the Muon step alone."""
    from tests.conftest import TINY, TINY_TASK

    overrides = [*TINY_TASK, *(o for o in TINY if not o.startswith("threads")), "model=transformer"]
    section = harness.muon_kernels(overrides=overrides, repeats=2, quick=True, threads=1, command="cmd")
    rows = {row["muon"]: row for row in section.rows}
    assert rows["torch"]["muon_class"] == "torch.optim.Muon"  # (the module torch names it under)
    assert rows["normbench"]["muon_class"] == "normbench.training.muon.Muon"
    step, alone = section.ratios
    assert step.value == pytest.approx(rows["torch"]["step_ms"] / rows["normbench"]["step_ms"])
    assert alone.value == pytest.approx(rows["torch"]["muon_step_ms"] / rows["normbench"]["muon_step_ms"])
    assert "derf_muon" in section.markdown and section.name == "harness-muon"
    assert "load" not in section.markdown  # the bench CLI's, read around the whole section (condition_line)


def test_evaluation_parts_times_a_transformers_evaluation_in_parts_against_whole_batches(forwards):
    """The two sides are train.evaluate at the config's eval_positions and at 0 (whole), on the same model and
    batches; the ratio is parts over whole, and the row says whether they scored the same."""
    from tests.conftest import TINY

    tiny = ["task=mqar", "task.n_train=64", "task.n_val=30", "task.n_test=30", "eval_positions=240",
            *(o for o in TINY if not o.startswith("threads"))]  # mqar's 24 steps: 10 examples a part
    section = harness.evaluation_parts(configs={"tiny": ["model=transformer", *tiny]}, repeats=2, quick=True, threads=1,
                                       command="cmd")
    (row,) = section.rows
    assert (row["examples"], row["steps"], row["positions"]) == (30, 24, 240) and isinstance(row["identical"], bool)
    assert forwards[:4] == [30, 10, 10, 10] and set(forwards) == {30, 10}  # whole, then three parts of 10
    (ratio,) = section.ratios
    assert ratio.value == pytest.approx(row["parts_s"] / row["whole_s"]) and ratio.against == "whole batches"
    assert section.name == "harness-evaluation" and "eval_positions" in section.markdown
