"""Every way a run ends writes a summary with the right status; the sweep is never taken down."""

import json
import math
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

from normbench.records.record import read_summary
from normbench.training import run as run_module
from normbench.training.probes import Probes
from normbench.training.run import execute, threads_for, unsupported_precision
from normbench.training.train import Trainer
from tests.waiting import HANG_S


def lines(path):
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_ok_run_writes_a_complete_record(compose, tmp_path):
    summary = execute(compose(), tmp_path, ["task=adding"])
    assert summary.pop("run_dir") == str(tmp_path)  # where the record went; not part of the record
    assert summary == read_summary(tmp_path / "summary.json").summary
    assert summary["status"] == "ok" and summary["reason"] is None
    assert summary["axes"]["norm"] == "ln" and summary["axes"]["placement"] == "pre"
    m, t = summary["metrics"], summary["throughput"]
    assert m["best_val"] is not None and m["test"] is not None and m["final_train_loss"] > 0
    assert m["grad_std"] > 0 and m["grad_kurtosis"] > 1 and m["act_max_abs"] > 0
    assert len(summary["profiles"]["grad_time_init"]) == 6 and m["grad_time_ratio_init"] is not None
    assert t["timed_steps"] == 3 and t["step_ms_median"] > 0 and t["samples_per_s"] > 0  # 6 - warm-up - 2 probe steps
    assert summary["environment"]["torch"] == torch.__version__
    assert summary["time"]["train_s"] > 0 and summary["config_hash"]
    kinds = [r["kind"] for r in lines(tmp_path / "metrics.jsonl")]
    assert kinds.count("train") == 6 and kinds.count("eval") == 2 and kinds.count("probe") == 2


def test_same_config_and_seed_give_identical_metrics(compose, tmp_path):
    a = execute(compose("seed=3"), tmp_path / "a", [])
    b = execute(compose("seed=3"), tmp_path / "b", [])
    c = execute(compose("seed=4"), tmp_path / "c", [])
    keys = ("best_val", "final_val", "test", "final_train_loss", "grad_norm_max", "grad_kurtosis")
    assert [a["metrics"][k] for k in keys] == [b["metrics"][k] for k in keys]
    assert a["metrics"]["final_train_loss"] != c["metrics"]["final_train_loss"]
    assert a["config_hash"] == b["config_hash"] != c["config_hash"]


@pytest.mark.parametrize("task,extra", [("copy", ["task.length=3", "task.delay=2"]), ("digits", []),
                                        ("mqar", ["task.n_pairs=2"])])
def test_each_builtin_task_trains(compose, tmp_path, task, extra):
    summary = execute(compose(f"task={task}", *extra), tmp_path, [])
    assert summary["status"] == "ok", summary["reason"]
    assert summary["task"]["metric"] == "accuracy" and summary["metrics"]["best_val"] is not None


def test_text_task_from_a_local_file(compose, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the quick brown fox jumps over the lazy dog. " * 200)
    summary = execute(compose("task=text", f"task.path={corpus}", "task.length=16", "model=transformer"),
                      tmp_path / "run", [])
    assert summary["status"] == "ok" and summary["task"]["metric"] == "bpc"
    assert summary["metrics"]["best_val"] < summary["task"]["chance"] * 1.5


def test_transformer_records_layer_gradients_at_init(compose, tmp_path):
    summary = execute(compose("model=transformer", "model.layers=3", "placement=post"), tmp_path, [])
    assert summary["status"] == "ok"
    assert {"layers.0", "layers.1", "layers.2"} <= set(summary["profiles"]["layer_grad_norm_init"])
    assert 0 < summary["profiles"]["ffn_w2_grad_norm_init"] < summary["profiles"]["layer_grad_norm_init"]["layers.2"]
    assert "grad_time_init" not in summary["profiles"] and summary["metrics"]["grad_time_ratio"] is None


def test_the_record_names_each_impl_auto_chose(compose, tmp_path):
    summary = execute(compose("norm=rms", "model=transformer", "model.layers=1"), tmp_path, [])  # auto: the default
    chosen = summary["environment"]["norm_impls"]
    assert chosen and all(set(c.split("|")) <= {"native", "compiled"} for c in chosen.values())
    assert execute(compose("norm.impl=native"), tmp_path / "native", [])["environment"]["norm_impls"] == {}


def test_batchnorm_records_train_eval_gap(compose, tmp_path):
    summary = execute(compose("norm=bn", "placement=in_cell"), tmp_path, [])
    assert summary["status"] == "ok" and summary["metrics"]["bn_train_eval_gap"] is not None
    assert execute(compose(), tmp_path / "ln", [])["metrics"]["bn_train_eval_gap"] is None


@pytest.mark.parametrize("overrides,reason", [
    (["model=rnn", "placement=gate"], "placement 'gate' is invalid for rnn"),
    (["norm.eps=0"], "norm.eps must be > 0"),
    (["task=text"], "task.path is not set"),
])
def test_invalid_input_is_recorded_as_invalid(compose, tmp_path, overrides, reason):
    summary = execute(compose(*overrides), tmp_path, overrides)
    assert summary["status"] == "invalid" and reason in summary["reason"]
    assert read_summary(tmp_path / "summary.json").status == "invalid"


def test_divergence_is_a_result_with_its_step(compose, tmp_path):
    summary = execute(compose("norm=none", "optim=sgd", "lr=1e12", "grad_clip=null"), tmp_path, [])
    assert summary["status"] == "diverged"
    assert summary["metrics"]["diverged_at_step"] >= 1 and "non-finite" in summary["reason"]


def test_a_final_evaluation_that_overflows_is_a_divergence_at_the_last_step(compose, tmp_path, monkeypatch):
    """K84: lr=1e10 trained with a finite loss (9.6e22) while validation and test were inf, and the run said ok."""
    monkeypatch.setattr(Trainer, "evaluate", lambda self, batches: (math.inf, math.inf))
    summary = execute(compose("steps=4"), tmp_path, [])
    assert summary["status"] == "diverged" and summary["metrics"]["diverged_at_step"] == 4
    assert summary["reason"].startswith("non-finite final evaluation at step 4 (val inf, test inf)")
    assert read_summary(tmp_path / "summary.json").status == "diverged"


def test_exception_in_training_is_failed_with_traceback(compose, tmp_path, monkeypatch):
    def boom(self):
        raise RuntimeError("kaboom")
    monkeypatch.setattr(Trainer, "fit", boom)
    summary = execute(compose(), tmp_path, [])
    assert summary["status"] == "failed" and "RuntimeError: kaboom" in summary["reason"]
    assert "kaboom" in (tmp_path / "traceback.txt").read_text()
    assert summary["precision"]["mode"]  # the trainer was built: its precision is recorded though fit never began


class _UserStop(BaseException):
    """A BaseException of the user's own, neither Exception nor a stop."""


@pytest.mark.parametrize("raised, says", [(SystemExit(0), "SystemExit (exit code 0)"),
                                          (SystemExit(), "SystemExit (exit code None)"),
                                          (SystemExit("bye"), "SystemExit (exit code 'bye')"),
                                          (GeneratorExit("gone"), "GeneratorExit: gone"),
                                          (_UserStop("mine"), "_UserStop: mine")])
def test_a_base_exception_from_the_runs_code_is_a_failed_run_not_left_running(compose, tmp_path, monkeypatch,
                                                                               raised, says):
    # hostile h25 wh009: a registered norm's sys.exit(0) left the record `running` and the command's status 0
    def leave(self):
        raise raised
    monkeypatch.setattr(Trainer, "fit", leave)
    summary = execute(compose(), tmp_path, [])
    assert summary["status"] == "failed" and says in summary["reason"], summary["reason"]
    assert read_summary(tmp_path / "summary.json").status == "failed"
    assert type(raised).__name__ in (tmp_path / "traceback.txt").read_text()


def test_sys_exit_0_in_a_registered_norm_is_one_line_and_status_1_from_normbench_main(tmp_path, tiny_args):
    script = tmp_path / "leaves.py"
    script.write_text(textwrap.dedent('''
        import sys
        from torch import nn
        import normbench

        class Leaves(nn.Module):
            def __init__(self, dim):
                super().__init__()

            def forward(self, x):
                sys.exit(0)

        normbench.register_norm("leaves", Leaves)
        print("main returned", normbench.main(sys.argv[1:]))
    '''))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, str(script), *tiny_args, "norm=leaves", "hydra.run.dir=run"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=HANG_S)
    assert done.stdout.strip().endswith("main returned 1"), (done.stdout, done.stderr[-2000:])
    said = [line for line in done.stderr.splitlines() if "SystemExit" in line]
    assert len(said) == 1 and said[0].startswith("normbench: failed: SystemExit (exit code 0)"), done.stderr[-2000:]
    record = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert record["status"] == "failed" and "SystemExit" in record["reason"]


def test_interrupt_keeps_metrics_so_far_and_reraises(compose, tmp_path, monkeypatch):
    real_probe = Probes.on_probe

    def interrupt_later(self, trainer, step, stats, activations):
        real_probe(self, trainer, step, stats, activations)
        raise KeyboardInterrupt
    monkeypatch.setattr(Probes, "on_probe", interrupt_later)
    with pytest.raises(KeyboardInterrupt):
        execute(compose(), tmp_path, [])
    summary = read_summary(tmp_path / "summary.json").summary
    assert summary["status"] == "interrupted"
    assert summary["metrics"]["steps_done"] == 3 and summary["metrics"]["final_train_loss"] is not None
    assert len(lines(tmp_path / "metrics.jsonl")) >= 3


def test_precision_the_device_cannot_run_is_skipped(compose, tmp_path, monkeypatch):
    class RefusesAutocast(torch.nn.Module):
        def forward(self, x, trace=None):
            if torch.is_autocast_enabled("cpu"):
                raise NotImplementedError("no fp16 kernel for this op on cpu")
            return x

    class Task:
        train = type("S", (), {"x": torch.zeros(4, 3, 2)})
    assert unsupported_precision(RefusesAutocast(), Task, torch.device("cpu"), "fp32") is None
    reason = unsupported_precision(RefusesAutocast(), Task, torch.device("cpu"), "fp16")
    assert reason.startswith("fp16 autocast on cpu is not supported") and "no fp16 kernel" in reason
    monkeypatch.setattr(run_module, "unsupported_precision", lambda *a: "fp16 autocast on cpu is not supported: x")
    summary = execute(compose("precision=fp16"), tmp_path, [])
    assert summary["status"] == "skipped" and summary["reason"].startswith("fp16 autocast")


def test_bf16_autocast_runs_on_cpu(compose, tmp_path):
    summary = execute(compose("precision=bf16", "model=transformer"), tmp_path, [])
    assert summary["status"] == "ok" and summary["axes"]["precision"] == "bf16"


def test_threads_are_shared_among_parallel_jobs():
    assert threads_for(3, 8) == 3
    assert threads_for(0, 1000) == 1
    assert threads_for(0, 1) >= 1


def test_gradient_probe_reads_gradients_before_clipping(compose, tmp_path):
    """With clipping, a post-clip probe would read a norm of exactly grad_clip at every clipped step."""
    def first_probe(clip):
        execute(compose(f"grad_clip={clip}", "probe_every=1", "seed=5"), tmp_path / clip, [])
        return next(json.loads(x) for x in (tmp_path / clip / "metrics.jsonl").read_text().splitlines()
                    if '"probe"' in x)
    clipped, free = first_probe("1e-6"), first_probe("null")
    assert clipped["step"] == free["step"] == 1
    assert clipped["grad_std"] == free["grad_std"] and clipped["layer_grad_norm"] == free["layer_grad_norm"]
    assert sum(v**2 for v in clipped["layer_grad_norm"].values()) ** 0.5 > 1e-3  # not the clipped 1e-6


def test_jobs_side_by_side_take_their_own_gpu(monkeypatch):
    from normbench.configuration.config import ConfigError
    from normbench.training.run import resolve_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)
    assert [resolve_device("auto", n).index for n in range(6)] == [0, 1, 2, 3, 0, 1]
    assert resolve_device("cuda", 5) == torch.device("cuda", 1)
    assert resolve_device("cpu", 3) == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto", 3) == torch.device("cpu")
    with pytest.raises(ConfigError, match="no CUDA device"):
        resolve_device("cuda")


def test_probe_every_0_still_probes_at_the_end(compose, tmp_path):
    summary = execute(compose("probe_every=0"), tmp_path, [])
    assert summary["metrics"]["grad_std"] is not None and summary["metrics"]["act_max_abs"] is not None
    probes_logged = [json.loads(x)["step"] for x in (tmp_path / "metrics.jsonl").read_text().splitlines()
                     if '"probe"' in x]
    assert probes_logged == [6]


def test_train_seconds_leave_out_the_gradient_probe(compose, tmp_path, monkeypatch):
    from normbench.training import probes

    real = probes.gradient_statistics

    def slow(model):
        time.sleep(0.5)
        return real(model)
    plain = execute(compose("probe_every=1"), tmp_path / "plain", [])
    monkeypatch.setattr(probes, "gradient_statistics", slow)
    summary = execute(compose("probe_every=1"), tmp_path / "slow", [])  # 6 probes: 3 s of sleeping
    # against the same run without the sleeps, not a fixed bound: a loaded machine slows both alike
    assert summary["time"]["train_s"] - plain["time"]["train_s"] < 1.5 and summary["time"]["wall_s"] > 3.0


def test_cpu_memory_is_this_runs_resident_memory(compose, tmp_path):
    t = execute(compose(), tmp_path, [])["throughput"]
    assert t["memory_kind"] == "process_rss_sampled" and t["peak_memory_mb"] > 10


def test_a_cell_kernels_earlier_name_is_recorded_by_its_present_one_and_resumes_as_one_run(compose, tmp_path):
    """model.cell_kernel=cpp (compiled's name before issue 47's rename) is recorded as compiled; a record made
    before the rename, which says cpp, is the finished run resume=true finds for model.cell_kernel=compiled."""
    in_cell = ("placement=in_cell", "norm=ln")
    summary = execute(compose(*in_cell, "model.cell_kernel=cpp"), tmp_path, ["model.cell_kernel=cpp"])
    assert summary["config"]["model"]["cell_kernel"] == "compiled" and summary["axes"]["model.cell_kernel"] == "compiled"
    assert summary["status"] != "ok" or summary["environment"]["cell_kernel"].startswith("compiled-")
    written = json.loads((tmp_path / "summary.json").read_text())
    written["config"]["model"]["cell_kernel"] = "cpp"  # as the record was written before the rename
    written["environment"]["cell_kernel"] = "cpp-avx2"
    (tmp_path / "summary.json").write_text(json.dumps(written))
    again = execute(compose(*in_cell, "model.cell_kernel=compiled", "resume=true"), tmp_path, [])
    assert again["duplicate_of"] == str(tmp_path) and again["config_hash"] == summary["config_hash"]


def test_a_stop_that_lands_in_an_import_waits_for_its_end(tmp_path, monkeypatch):
    """Hostile h16 N10 (seen in its fix): SIGTERM to one sweep worker landed in torch's lazy `import sympy`; the
    half-made module it left failed the next job that worker ran ("module 'sympy' has no attribute 'core'")."""
    import signal
    import sys

    from tests.waiting import HANG_S

    (tmp_path / "nb_stopped_while_imported.py").write_text(
        "import os, signal, time\nos.kill(os.getpid(), signal.SIGTERM)\ntime.sleep(0.3)\nfinished = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "nb_stopped_while_imported", raising=False)
    with pytest.raises(KeyboardInterrupt) as stopped, run_module.sigterm_as_interrupt():
        import nb_stopped_while_imported  # noqa: F401
        deadline = time.monotonic() + HANG_S
        while time.monotonic() < deadline:  # the stop, sent again once the import has ended
            time.sleep(0.01)
    assert stopped.value.signum == signal.SIGTERM
    assert sys.modules.pop("nb_stopped_while_imported").finished  # the import ended whole: the stop came after it


def test_a_stop_put_off_by_an_import_that_then_fails_still_ends_the_run_interrupted(compose, tmp_path, monkeypatch):
    """Hostile h26 n08: SIGTERM during a user norm module's import, which then failed: the run ended `invalid`
    (exit 2) before the put-off stop was sent again, instead of `interrupted` (143)."""
    import signal

    from normbench.checks import ConfigError

    modules = tmp_path / "modules"
    modules.mkdir()
    (modules / "nb_stopped_then_failed.py").write_text(
        "import os, signal, time\nos.kill(os.getpid(), signal.SIGTERM)\ntime.sleep(0.05)\nraise ImportError('no C')\n")
    monkeypatch.syspath_prepend(str(modules))
    monkeypatch.delitem(sys.modules, "nb_stopped_then_failed", raising=False)

    def prepare(*args, **kwargs):  # as user.load does: the failed import is the user's input
        try:
            import nb_stopped_then_failed  # noqa: F401
        except ImportError as error:
            raise ConfigError(f"the norm cannot be loaded: {error}") from None
    monkeypatch.setattr(run_module, "prepare", prepare)
    monkeypatch.setattr(run_module, "IMPORT_WAIT_S", 1.0)  # the stop is sent again only after the run has ended
    with pytest.raises(KeyboardInterrupt) as stopped:
        execute(compose(), tmp_path, [])
    assert stopped.value.signum == signal.SIGTERM
    assert read_summary(tmp_path / "summary.json").status == "interrupted"
    time.sleep(2 * run_module.IMPORT_WAIT_S)  # and not sent again once it has ended the run (SIGTERM would end pytest)


def test_a_run_and_a_joblib_workers_job_import_no_pandas(tmp_path, tiny_args):
    """A run's process (a single run; a worker's jobs) needs no pandas: it finds its records and says its score
    without it, and pandas is half a second of every process's start on a 2-core CPU. The sweep's own process
    imports it at the end, for the table it prints."""
    probe = ("import atexit, runpy, sys\n"
             "sys.argv = ['normbench', *sys.argv[1:]]\n"
             "atexit.register(lambda: print('pandas loaded:', 'pandas' in sys.modules, file=sys.stderr))\n"
             "runpy.run_module('normbench', run_name='__main__')\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "OMP_NUM_THREADS": "1"}
    single = subprocess.run([sys.executable, "-c", probe, *tiny_args, "hydra.run.dir=run"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=HANG_S)
    assert single.returncode == 0 and " ok " in single.stderr, single.stderr[-2000:]
    assert single.stderr.strip().splitlines()[-1] == "pandas loaded: False", single.stderr[-2000:]
    worker = ("import normbench.studies.app, normbench.training.run, sys\n"
              "print('pandas' in sys.modules)\n")  # what a loky worker imports to run a job
    assert subprocess.run([sys.executable, "-c", worker], env=env, capture_output=True, text=True,
                          timeout=HANG_S).stdout.strip() == "False"
