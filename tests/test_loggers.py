"""logger=tensorboard: the event files hold what the record holds, read back as TensorBoard reads them."""

import pytest

from normbench.run import execute


def test_logger_none_writes_nothing_beside_the_record(compose, tmp_path):
    summary = execute(compose(), tmp_path, [])
    assert summary["status"] == "ok" and not (tmp_path / "tb").exists()


def test_tensorboard_writes_scalars_histograms_and_hparams(compose, tmp_path):
    pytest.importorskip("tensorboard", reason='logger=tensorboard needs pip install -e ".[tensorboard]"')
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams import plugin_data_pb2

    summary = execute(compose("logger=tensorboard", "model=transformer", "norm=rms", "model.qk_norm=true"),
                      tmp_path, [])
    assert summary["status"] == "ok"
    events = EventAccumulator(str(tmp_path / "tb"), size_guidance={"scalars": 0, "histograms": 0, "tensors": 0})
    events.Reload()
    scalars = set(events.Tags()["scalars"])
    assert {"train/loss", "train/lr", "train/grad_norm", "val/mse", "val/loss", "grad/std",
            "grad_norm/layers.0", "act_rms/layers.0", "hparam/best_val"} <= scalars
    losses = [e.value for e in events.Scalars("train/loss")]
    assert [e.step for e in events.Scalars("train/loss")] == list(range(1, 7))  # log_every=1, 6 steps
    assert losses[-1] == pytest.approx(summary["metrics"]["final_train_loss"], rel=1e-6)
    assert events.Scalars("hparam/best_val")[-1].value == pytest.approx(summary["metrics"]["best_val"], rel=1e-6)

    histograms = set(events.Tags()["histograms"])
    assert any(t.startswith("grad/backbone.layers.0.attn.qkv") for t in histograms)
    # every norm site, the QK-norms inside attention included, at both probe steps (3 and 6)
    norm_sites = {t for t in histograms if t.startswith("norm_output/")}
    assert "norm_output/backbone.layers.0.attn.q_norm.norm" in norm_sites
    assert "norm_output/backbone.final_norm.norm" in norm_sites
    assert [h.step for h in events.Histograms("norm_output/backbone.layers.0.norm1.norm")] == [3, 6]

    content = events.PluginTagToContent("hparams")
    session = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/session_start_info"])
    hparams = dict(session.session_start_info.hparams)
    assert hparams["norm"].string_value == "rms" and hparams["model.qk_norm"].number_value == 1  # torch writes bools as numbers
    experiment = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/experiment"])
    assert "hparam/best_val" in {m.name.tag for m in experiment.experiment.metric_infos}


def _imported(module_file) -> set[str]:
    import ast

    tree = ast.parse(open(module_file).read())
    return ({n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
            | {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names})


def test_the_mlflow_logger_stands_below_the_module_that_picks_it():
    """mlflow_logger.py takes the hooks and the final metrics from below (hooks.py, metrics.py), so
    loggers.build_logger imports it at the top and the two never import each other."""
    from normbench import hooks, loggers, mlflow_logger

    assert "normbench.loggers" not in _imported(mlflow_logger.__file__)
    assert "normbench.mlflow_logger" in _imported(loggers.__file__)
    assert loggers.RunLogger is hooks.RunLogger and issubclass(mlflow_logger.MLflowLogger, hooks.RunLogger)
