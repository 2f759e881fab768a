"""The metric registry: every record key described once, and its readers ask it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from normbench.records import metrics
from normbench.records.metrics import METRICS, VIEWS, in_record_order, keys, path, viewed

PACKAGE = Path(metrics.__file__).parents[1]  # normbench/, above records/


def test_each_key_is_registered_once_in_its_section():
    assert len({m.key for m in METRICS}) == len(METRICS)
    assert {m.section for m in METRICS} == {"metrics", "throughput"}
    assert {m.direction for m in METRICS} <= {"higher", "lower", "task", None}
    assert {m.chance for m in METRICS} <= {"task", None}


def test_every_metric_names_a_module_that_exists():
    for m in METRICS:
        assert (PACKAGE.parent / (m.computed_in.replace(".", "/") + ".py")).is_file(), m.key


def test_views_name_only_registered_metrics_in_the_order_their_readers_printed():
    assert all(k in metrics.BY_KEY for shown in VIEWS.values() for k in shown)
    assert viewed("rerun")[-2:] == ("grad_norm_max", "loss_spikes")  # rerun's table, as it always printed


def test_record_order_is_the_registry_order_and_an_unknown_key_is_refused():
    shuffled = {"test": 0.5, "best_val": 0.9, "final_val": 0.8}
    assert list(in_record_order("metrics", shuffled)) == ["best_val", "final_val", "test"]
    with pytest.raises(KeyError, match="grad_toy"):
        in_record_order("metrics", {"best_val": 0.9, "grad_toy": 1.0})
    with pytest.raises(KeyError, match="samples_per_s"):  # a throughput key in the metrics section
        in_record_order("metrics", {"samples_per_s": 10.0})


def test_a_registered_metric_enters_the_record_where_the_registry_puts_it(monkeypatch):
    toy = metrics.Metric("grad_toy", "metrics", "toy")
    at = [m.key for m in METRICS].index("grad_std")
    monkeypatch.setattr(metrics, "METRICS", (*METRICS[:at], toy, *METRICS[at:]))
    monkeypatch.setitem(metrics.BY_KEY, "grad_toy", toy)
    assert list(in_record_order("metrics", {"grad_std": 0.1, "grad_toy": 1.0, "grad_norm_max": 2.0})) == [
        "grad_norm_max", "grad_toy", "grad_std"]


def test_path_names_the_frame_column_and_refuses_a_typo():
    assert path("grad_norm_max") == "metrics.grad_norm_max"
    assert path("step_ms_p90") == "throughput.step_ms_p90"
    with pytest.raises(KeyError, match="grad_norm_mx"):
        path("grad_norm_mx")


def test_the_convergence_keys_are_the_ones_convergence_computes():
    from normbench.records.convergence import convergence

    computed = convergence([(1, 1.0), (2, 0.5)], [(2, 0.3)], 2, False)
    assert set(computed) == {m.key for m in METRICS if m.computed_in == "normbench.records.convergence"}
    assert list(in_record_order("metrics", computed)) == list(computed)


def test_one_timing_threshold_read_by_the_report_and_the_claims():
    from normbench.analysis import aggregate
    from normbench.analysis.claims import speed_parts, vocabulary
    from normbench.report import answers, tables

    for module in (aggregate, answers, tables, speed_parts):
        assert module.TIMING_NOISY is metrics.TIMING_NOISY
    assert not hasattr(vocabulary, "INTERFERENCE")


def _string_literals(module: Path) -> set[str]:
    return {node.value for node in ast.walk(ast.parse(module.read_text()))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)}


@pytest.mark.parametrize("module", ["analysis/aggregate.py", "analysis/claims/engine.py",
                                    "analysis/claims/comparison.py", "analysis/claims/score_parts.py",
                                    "analysis/claims/speed_parts.py", "analysis/claims/convergence_parts.py",
                                    "analysis/claims/specs.py", "analysis/ranking.py", "analysis/tuning.py",
                                    "report/tables.py", "report/figures/tradeoffs.py", "report/figures/bars.py",
                                    "report/answers.py",
                                    "training/loggers.py", "training/mlflow_logger.py", "training/rerun.py"])
def test_readers_name_record_metrics_through_the_registry(module):
    """No ``"metrics.<key>"`` / ``"throughput.<key>"`` column spelled out, no list of keys repeated."""
    literals = _string_literals(PACKAGE / module)
    spelled = {f"{m.section}.{m.key}" for m in METRICS} & literals
    assert not spelled, spelled



def test_the_loggers_rerun_and_compare_show_the_registry_views():
    from normbench.studies import compare
    from normbench.training import loggers, rerun

    assert compare.GRADIENTS == tuple(path(k) for k in viewed("compare"))
    assert loggers.FINAL_METRICS == viewed("final") and rerun.COMPARED == viewed("rerun")
