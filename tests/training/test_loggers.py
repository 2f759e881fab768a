"""logger=tensorboard: the event files hold what the record holds, read back as TensorBoard reads them;
the logger group (several at once, the earlier one-logger form), the up-front checks of a tracking
server and a logger's packages, and the masking of secrets in what a logger is given."""

import time

import pytest

from normbench.configuration.config import to_config
from normbench.configuration.schema import ConfigError, LoggerConfig, MLflowLog, TensorBoardLog
from normbench.training.run import execute
from normbench.training.tracking import interpolated_secrets, masked, run_names


def test_logger_none_writes_nothing_beside_the_record(compose, tmp_path):
    summary = execute(compose(), tmp_path, [])
    assert summary["status"] == "ok" and not (tmp_path / "tb").exists()


def test_tensorboard_writes_scalars_histograms_and_hparams(compose, tmp_path, monkeypatch):
    pytest.importorskip("tensorboard", reason='logger=tensorboard needs pip install -e ".[tensorboard]"')
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams import plugin_data_pb2

    monkeypatch.setenv("NB_TEST_TB_DIR", "tb")  # a value read from the environment reaches no logger
    summary = execute(compose("logger=tensorboard", "model=transformer", "norm=rms", "model.qk_norm=true",
                              "logger.tensorboard.dir=${oc.env:NB_TEST_TB_DIR}"), tmp_path, [])
    assert summary["status"] == "ok"
    events = EventAccumulator(str(tmp_path / "tb"), size_guidance={"scalars": 0, "histograms": 0, "tensors": 0})
    events.Reload()
    scalars = set(events.Tags()["scalars"])
    assert {"train/loss", "train/lr", "train/grad_norm", "val/mse", "val/loss", "grad/std",
            "grad_norm/layers.0", "act_rms/layers.0", "final/best_val"} <= scalars
    losses = [e.value for e in events.Scalars("train/loss")]
    assert [e.step for e in events.Scalars("train/loss")] == list(range(1, 7))  # log_every=1, 6 steps
    assert losses[-1] == pytest.approx(summary["metrics"]["final_train_loss"], rel=1e-6)
    assert events.Scalars("final/best_val")[-1].value == pytest.approx(summary["metrics"]["best_val"], rel=1e-6)

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
    # the params every logger gets: the resolved config with dotted names, MLflow's and W&B's too
    assert hparams["norm.kind"].string_value == "rms" and hparams["model.qk_norm"].number_value == 1  # bools as numbers
    assert hparams["seed"].number_value == 0 and hparams["logger.tensorboard.dir"].string_value == "***"
    experiment = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/experiment"])
    assert {"final/best_val", "final/diverged"} <= {m.name.tag for m in experiment.experiment.metric_infos}


def _imported(module_file) -> set[str]:
    import ast

    tree = ast.parse(open(module_file).read())
    return ({n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
            | {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names})


def test_the_library_loggers_stand_below_the_module_that_picks_them():
    """mlflow_logger.py and wandb_logger.py take the hooks and the names from below (hooks.py,
    tracking.py), so loggers.build_logger imports them at the top and none imports it back."""
    from normbench.training import hooks, loggers, mlflow_logger, tracking, wandb_logger

    for module, cls in ((mlflow_logger, "MLflowLogger"), (wandb_logger, "WandbLogger")):
        assert "normbench.training.loggers" not in _imported(module.__file__)
        assert module.__name__ in _imported(loggers.__file__)
        assert issubclass(getattr(module, cls), hooks.Hook)
    assert "normbench.training.loggers" not in _imported(tracking.__file__)
    assert loggers.Hook is hooks.Hook


def test_the_logger_group_selects_several_at_once(compose):
    """logger=[a,b] merges the group's options, each under its own key (it once composed to the last alone)."""
    both = to_config(compose("logger=[tensorboard,mlflow,wandb,csv]", "logger.mlflow.experiment=mine")).logger
    assert set(both.chosen()) == {"tensorboard", "mlflow", "wandb", "csv"}
    assert both.mlflow.experiment == "mine" and both.tensorboard.dir == "tb" and both.wandb.mode == "offline"
    assert to_config(compose()).logger.chosen() == {}
    assert set(to_config(compose("logger=csv")).logger.chosen()) == {"csv"}


def test_a_logger_setting_without_its_logger_is_one_line_not_silence(cli, tiny_args, tmp_path):
    code, out, err = cli(*tiny_args, "logger=tensorboard", "logger.mlflow.tracking_uri=sqlite:///m.db", "hydra.run.dir=run")
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "logger.mlflow.tracking_uri is set but mlflow is not a logger" in lines[0]
    assert "Traceback" not in err + out and not (tmp_path / "m.db").exists() and not (tmp_path / "run" / "tb").exists()


def test_a_record_of_the_one_logger_form_reads_as_that_logger():
    """Records before several loggers kept {name, dir, histograms, tracking_uri}: rerun still runs them."""
    old = LoggerConfig.from_plain({"name": "tensorboard", "dir": "events", "histograms": False, "tracking_uri": None})
    assert old.chosen() == {"tensorboard": TensorBoardLog(enabled=True, dir="events", histograms=False)}
    old = LoggerConfig.from_plain({"name": "mlflow", "dir": "mlruns", "histograms": False, "tracking_uri": "file:///x"})
    assert old.chosen() == {"mlflow": MLflowLog(enabled=True, dir="mlruns", tracking_uri="file:///x")}
    assert LoggerConfig.from_plain({"name": "none", "dir": "tb", "histograms": True, "tracking_uri": None}).chosen() == {}
    with pytest.raises(ConfigError, match="logger.name"):
        LoggerConfig.from_plain({"name": "comet"})


BAD_URIS = ["garbage://x", "ftp://host/x", "mlflow.db:x", " ", "s3://bucket/x", "http://[::1", "http://h:99999",
            "http://h:port", "http://", "https:///path"]


@pytest.mark.parametrize("uri", BAD_URIS)
def test_a_tracking_uri_of_an_unknown_scheme_is_refused_at_config_time(uri):
    with pytest.raises(ConfigError, match="logger.mlflow.tracking_uri"):
        MLflowLog(tracking_uri=uri)


@pytest.mark.parametrize("uri", ["http://host:5000", "https://h", "sqlite:////abs/m.db", "sqlite:///m.db",
                                 "postgresql+psycopg2://u@h/db", "file:///x/mlruns", "mlruns", "/abs/mlruns",
                                 "databricks"])
def test_the_schemes_mlflow_stores_answer_pass(uri):
    MLflowLog(tracking_uri=uri)


UNANSWERED = [  # (overrides, environment, the key the one line names); port 9 on this machine: nobody listens
    (["logger=mlflow", "logger.mlflow.tracking_uri=http://127.0.0.1:9"], {}, "logger.mlflow.tracking_uri"),
    (["logger=[tensorboard,mlflow]", "logger.mlflow.tracking_uri=http://u:secret@127.0.0.1:9/x"], {},
     "logger.mlflow.tracking_uri"),
    (["logger=wandb", "logger.wandb.mode=online"], {"WANDB_BASE_URL": "http://127.0.0.1:9"}, "WANDB_BASE_URL"),
    (["logger=mlflow", "logger.mlflow.tracking_uri=garbage://x"], {}, "logger.mlflow.tracking_uri has the scheme"),
]


@pytest.mark.parametrize(("overrides", "environment", "says"), UNANSWERED, ids=[" ".join(o) for o, _, _ in UNANSWERED])
def test_a_server_that_does_not_answer_is_refused_up_front_in_one_line(cli, tiny_args, tmp_path, monkeypatch,
                                                                        overrides, environment, says):
    """Not minutes of retries before step 1, nor a failed run: bad input, exit 2, within seconds."""
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    start = time.perf_counter()
    code, out, err = cli(*tiny_args, *overrides, "hydra.run.dir=run")
    assert time.perf_counter() - start < 15
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and says in lines[0] and "Traceback" not in err + out, err
    assert "secret" not in err and not (tmp_path / "run" / "tb").exists()  # nothing opened before the check
    assert {p.name for p in (tmp_path / "run").iterdir()} <= {".normbench.lock", "normbench.log", "summary.json",
                                                            "metrics.jsonl"}  # the record alone


@pytest.mark.parametrize(("logger", "module"), [("wandb", "wandb"), ("mlflow", "mlflow"), ("tensorboard", "tensorboard")])
def test_a_logger_without_its_package_is_one_line_naming_the_extra(cli, tiny_args, tmp_path, monkeypatch, logger, module):
    import sys

    monkeypatch.setitem(sys.modules, module, None)  # as where the extra is not installed
    code, out, err = cli(*tiny_args, f"logger=[csv,{logger}]", "hydra.run.dir=run")
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and f'logger={logger} needs the {module} package: pip install -e ".[{logger}]"' in lines[0]
    assert not (tmp_path / "run" / "metrics.csv").exists()  # checked before any logger opened a file


def test_secrets_never_reach_a_logger(compose, monkeypatch):
    """A value read through ${oc.env:...} and a URI's password are a mark in every param and tag."""
    monkeypatch.setenv("NB_TEST_TOKEN", "s3cr3t-token")
    node = compose("logger=mlflow", "logger.mlflow.tracking_uri=http://me:${oc.env:NB_TEST_TOKEN}@127.0.0.1:9",
                   "logger.mlflow.experiment=plain-${oc.env:NB_TEST_TOKEN}")
    secrets = interpolated_secrets(node)
    assert secrets == ("s3cr3t-token",)
    from omegaconf import OmegaConf

    config = OmegaConf.to_container(node, resolve=True)
    config.pop("hydra", None)
    names = run_names({"config": config, "seed": 0, "config_hash": "ab" * 8, "environment": {"git_commit": "c0ffee"}},
                      secrets)
    assert names.params["logger.mlflow.tracking_uri"] == "http://me:***@127.0.0.1:9"
    assert names.params["logger.mlflow.experiment"] == "plain-***"
    assert not any("s3cr3t" in str(v) for v in [*names.params.values(), *names.tags.values(), names.name])
    assert masked("https://user:pw@host/x") == "https://user:***@host/x" and masked("http://host:5000") == "http://host:5000"
    assert names.name == "seed=0 abababab" and names.experiment == "normbench" and names.tags["normbench.commit"] == "c0ffee"


def test_names_say_the_study_arm_seed_and_group():
    study = {"schema": "normbench.study/1", "id": "0123456789ab", "name": "ln_vs_rms", "arms": ["norm", "lr"]}
    names = run_names({"config": {"norm": {"kind": "rms"}, "lr": 0.01, "seed": 3}, "seed": 3, "study": study,
                       "axes": {"norm": "rms", "lr": 0.01}, "config_hash": "f" * 16, "group_hash": "e" * 16,
                       "environment": {"git_commit": "abc-dirty", "normbench_version": "0.1.0"}})
    assert names.name == "norm=rms, lr=0.01 seed=3 ffffffff" and names.experiment == "ln_vs_rms"
    assert names.tags == {"normbench.study": "ln_vs_rms", "normbench.study_id": "0123456789ab",
                          "normbench.arm": "norm=rms, lr=0.01", "normbench.seed": "3", "normbench.group_hash": "e" * 16,
                          "normbench.config_hash": "f" * 16, "normbench.commit": "abc-dirty", "normbench.version": "0.1.0"}


def test_each_command_line_sweep_is_its_own_experiment():
    one, two = ({"schema": "normbench.study/1", "id": i * 12, "name": "command line", "arms": []} for i in "ab")
    assert run_names({"study": one}).experiment == "command line [aaaaaa]" != run_names({"study": two}).experiment
    assert run_names({"study": {**one, "name": "ln_vs_rms"}}).experiment == "ln_vs_rms"


def test_a_full_disk_under_tensorboard_is_one_line_not_the_writer_threads_traceback(compose, tmp_path, monkeypatch,
                                                                                      caplog):
    """Hostile h16 N3: tensorboard's writer thread printed its "Exception in thread" traceback (threading's
    excepthook) before the run's own line "tensorboard: stopped logging (...)"."""
    pytest.importorskip("tensorboard", reason='logger=tensorboard needs pip install -e ".[tensorboard]"')
    import errno
    import threading

    from tensorboard.summary.writer import record_writer

    write, written = record_writer.RecordWriter.write, []

    def filling(self, data):  # the disk fills after the first events: in the writer thread
        written.append(data)
        if len(written) > 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return write(self, data)
    monkeypatch.setattr(record_writer.RecordWriter, "write", filling)
    uncaught = []
    monkeypatch.setattr(threading, "excepthook", uncaught.append)
    summary = execute(compose("logger=tensorboard"), tmp_path, [])
    assert summary["status"] == "ok"
    assert uncaught == []
    said = [r.getMessage() for r in caplog.records if "tensorboard" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith("tensorboard: stopped logging (OSError: [Errno 28] No space left")
