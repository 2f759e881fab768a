"""The command line as a user meets it: single runs, sweeps, and bad input."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from normbench.training.train import Trainer
from tests.waiting import HANG_S  # waits end on a hang, never on a slow machine

ROOT = Path(__file__).resolve().parents[2]


def summaries(root: Path):
    return {p.parent.name: json.loads(p.read_text()) for p in root.rglob("summary.json")}


def test_single_run_exits_zero_and_leaves_a_record(cli, tmp_path, tiny_args):
    code, out, err = cli(*tiny_args, "hydra.run.dir=run")
    assert code == 0
    (summary,) = summaries(tmp_path / "run").values()
    assert summary["status"] == "ok" and summary["overrides"][-1] == "task.n_test=32"  # hydra.* are not job overrides
    assert not (tmp_path / "run" / ".hydra").exists()  # the record holds the config; a reused folder stays untouched
    assert (tmp_path / "run" / "normbench.log").is_file()


BAD_INPUTS = [
    # (overrides, exit status, what the one line must say)
    (["norm=layer"], 2, "Could not find 'norm/layer'"),
    (["placement=inside"], 2, "Could not find 'placement/inside'"),
    (["model=mamba"], 2, "Could not find 'model/mamba'"),
    (["task=cifar"], 2, "Could not find 'task/cifar'"),
    (["precision=fp8"], 2, "Could not find 'precision/fp8'"),
    (["norm.eps=0"], 2, "norm.eps must be > 0, got 0.0"),
    (["norm.eps=-1e-6"], 2, "norm.eps must be > 0"),
    (["norm.eps=nan"], 2, "norm.eps=nan must be a finite number"),
    (["norm.eps=small"], 2, "could not be converted to Float"),
    (["batch_size=0"], 2, "batch_size must be >= 1, got 0"),
    (["batch_size=1.5"], 2, "could not be converted to Integer"),
    (["lr=-0.001"], 2, "lr must be > 0"),
    (["lr=fast"], 2, "could not be converted to Float"),
    (["steps=0"], 2, "steps must be >= 1, got 0"),
    (["steps=ten"], 2, "could not be converted to Integer"),
    (["device=cuda"], 2, "no CUDA device"),
    (["device=cuda:1"], 2, "device=cuda:1 but no CUDA device"),
    (["device=cuda:x"], 2, "valid: auto, cpu, cuda, cuda:N"),
    (["model=rnn", "placement=gate"], 2, "placement 'gate' is invalid for rnn"),
    (["model=transformer", "placement=in_cell"], 2, "placement 'in_cell' is invalid for transformer"),
    (["model=gru", "placement=in_cell", "placement.summed=true"], 2, "summed=true needs lstm or rnn"),
    (["model=transformer", "model.hidden=10", "model.heads=4"], 2, "must be divisible by n_heads"),
    (["unknown_key=1"], 2, "Could not override 'unknown_key'"),
    (["norm.colour=red"], 2, "Could not override 'norm.colour'"),
    (["task=adding", "task.length=1"], 2, "task.length must be >= 2, got 1"),
    (["task=text"], 2, "task.path is not set"),
    (["task=text", "task.path=/nonexistent/corpus.txt"], 2, "/nonexistent/corpus.txt"),
    (["task=idx", "task.path=/nonexistent/mnist"], 2, "/nonexistent/mnist"),
    (["task=imdb", "task.path=/nonexistent/aclImdb"], 2, "/nonexistent/aclImdb"),
    (["optim.beta1=1.5"], 2, "optim.beta1 must be in [0, 1)"),
    (["grad_clip=-1"], 2, "grad_clip must be > 0"),
    (["+unknown=1"], 2, "unknown key unknown"),
    (["+norm.colour=red"], 2, "unknown key norm.colour"),
    (["task=text", "task.path=" + "a" * 5000], 2, "text: cannot open"),
    (["norm=bn", "placement=in_cell", "batch_size=1"], 2, "norm=bn needs batch_size >= 2"),
    (["placement=in_cell", "norm=rms", "norm.impl=compiled", "model.cell_kernel=torch_compile"], 2,
     "model.cell_kernel=torch_compile needs norm.impl=auto, native or reference, got compiled"),
    (["model.hidden=300000"], 2, "GiB for weights, gradients, optimizer state and activations"),
    (["task=adding", "task.n_train=100000000000"], 2, "GiB for the task's tensors"),
    (["optim.weight_decay=inf"], 2, "optim.weight_decay=inf must be a finite number"),
    (["task.target=nan"], 2, "task.target=nan must be a finite number"),
    (["threads=999"], 2, "threads must be <="),
    (["eval_positions=-1"], 2, "eval_positions must be >= 0, got -1"),
    (["batch_size=5000"], 2, "larger than the 64 training examples"),
    (["task=adding", "task.name=copy"], 2, "does not match task=adding"),
    # every group's identity key so (hostile h18 H4: O53 O59 W08 ran one family at another's layers, labelled as it)
    (["model.family=transformer"], 2, "model.family='transformer' does not match model=lstm (its layers and sizes are "
                                      "lstm's); choose the model with model=transformer"),
    (["model=transformer", "model.family=rnn"], 2, "choose the model with model=rnn"),
    (["model=transformer", "model.family=mingru"], 2, "model.family='mingru' does not match model=transformer"),
    (["optim=adamw", "optim.name=sgd"], 2, "optim.name='sgd' does not match optim=adamw"),
    # a target its metric cannot take: reached by a model at chance, or by no run (hostile h18 H10: O17 O76 O77)
    (["task=digits", "task.target=-0.5"], 2, "task.target=-0.5 is no target for accuracy, the task's metric: it must be in (0, 1]"),
    (["task=digits", "task.target=1.5"], 2, "it must be in (0, 1]"),
    (["task=digits", "task.target=0"], 2, "it must be in (0, 1]"),
    (["task=adding", "task.target=-1"], 2, "task.target=-1 is no target for mse, the task's metric: it must be >= 0"),
    (["hydra.job.name=../../../../escaped_log"], 2, "must be a plain file name"),
    (["seed=18446744073709551616"], 2, "seed must be in [0, 2**63)"),
    (["model=transformer", "norm=none", "model.qk_norm=true"], 2, "qk_norm=true needs a norm"),
    (["logger=comet"], 2, "Could not find 'logger/comet'"),
]


@pytest.mark.parametrize("overrides,status,says", BAD_INPUTS, ids=[" ".join(o) for o, _, _ in BAD_INPUTS])
def test_bad_input_is_one_line_no_traceback_nothing_outside_the_run(cli, tmp_path, tiny_args, overrides, status, says):
    own_task = any(o.startswith("task=") for o in overrides)
    args = [a for a in tiny_args if not (own_task and a.startswith("task"))]
    earlier = tmp_path / "run" / "summary.json"  # a finished record already in the folder: never lost
    earlier.parent.mkdir()
    earlier.write_text(json.dumps({"schema": "normbench.run/2", "status": "ok", "config": {"seed": 99}}))
    before = earlier.read_bytes()
    code, out, err = cli(*args, *overrides, "hydra.run.dir=run")
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == status
    assert len(lines) == 1 and lines[0].startswith("normbench: ") and says in lines[0], err
    assert "Traceback" not in err + out
    assert all(p.name.startswith("run") for p in tmp_path.iterdir())  # nothing outside the run folder(s)
    assert not list(tmp_path.parent.glob("escaped_log*")) and not list(Path("/").glob("escaped_log*"))
    assert earlier.read_bytes() == before


def test_corrupt_data_file_is_one_line_naming_it(cli, tmp_path, tiny_args):
    bad = tmp_path / "corpus.txt"
    bad.write_bytes(b"\xff\xfe\xfa not utf-8 \xff")
    code, _, err = cli(*[a for a in tiny_args if not a.startswith("task")], "task=text", f"task.path={bad}", "hydra.run.dir=run")
    assert code == 2 and str(bad) in err and len(err.strip().splitlines()) == 1


def seed_1_fails(monkeypatch):
    """Training raises for seed 1 (a failed run), and runs as it does for any other seed."""
    real_fit = Trainer.fit

    def fit_fails_for_seed_1(self):
        if self.cfg.seed == 1:
            raise RuntimeError("injected fault")
        return real_fit(self)
    monkeypatch.setattr(Trainer, "fit", fit_fails_for_seed_1)


def test_a_sweep_that_ends_in_a_failed_run_leaves_the_next_sweep_its_own_study(cli, tmp_path, monkeypatch, tiny_args):
    """A sweep's callbacks name its study, progress, free cores and workers in os.environ for its jobs; a failed run
    ends the sweep before their clean-up, and the next sweep in this process kept the first one's study (its
    records said swept: seed where the sweep swept lr), as every later command kept --allow-code's opt-in. main
    puts them back as it found them."""
    from normbench.studies.app import COMMAND_ENVIRONMENT

    seed_1_fails(monkeypatch)
    for name in COMMAND_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    code, _, err = cli("--allow-code", "-m", *tiny_args, "seed=0,1", "hydra.sweep.dir=one", "report=false",
                       "progress=false")
    assert code == 1 and "1 run(s) failed" in err  # and --allow-code's opt-in was this command's alone
    assert not {name for name in COMMAND_ENVIRONMENT if name in os.environ}
    code, _, err = cli("-m", *tiny_args, "lr=0.01,0.02", "hydra.sweep.dir=two", "report=false", "progress=false")
    assert code == 0, err
    assert {s["study"]["swept"][0] for s in summaries(tmp_path / "two").values()} == {"lr"}


def test_sweep_continues_past_invalid_and_failed_runs_and_exit_status_says_so(cli, tmp_path, monkeypatch, tiny_args):
    seed_1_fails(monkeypatch)
    code, out, err = cli("-m", *tiny_args, "model=rnn", "placement=pre,gate", "seed=0,1",
                         "hydra.sweep.dir=sweep", "report=false")
    statuses = sorted(s["status"] for s in summaries(tmp_path / "sweep").values())
    assert statuses == ["failed", "invalid", "invalid", "ok"]
    assert code == 1 and "1 run(s) failed" in err
    assert "normbench sweep: 4 runs" in out
    failed = [d for d in (tmp_path / "sweep").iterdir() if (d / "traceback.txt").exists()]
    assert len(failed) == 1 and "injected fault" in (failed[0] / "traceback.txt").read_text()


def test_the_four_job_multirun_as_a_user_types_it(tmp_path, tiny_args):
    """`python -m normbench -m norm=ln,bn placement=pre,post`, shrunk, in a real process."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "normbench", "-m", "norm=ln,bn", "placement=pre,post", *tiny_args,
                           "hydra.sweep.dir=sweep"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=HANG_S)
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = summaries(tmp_path / "sweep")
    assert sorted(found) == ["0", "1", "2", "3"]
    assert {(s["axes"]["norm"], s["axes"]["placement"]) for s in found.values()} == {
        ("ln", "pre"), ("ln", "post"), ("bn", "pre"), ("bn", "post")}
    assert all(s["status"] == "ok" for s in found.values())
    assert "normbench sweep: 4 runs" in proc.stdout
    assert (tmp_path / "sweep" / "report.html").is_file()  # the report is written at the end of a multirun
    assert "normbench sweep: job" not in proc.stderr  # progress lines only on a terminal (tests/studies/test_progress.py)


def test_device_cuda_n_names_one_gpu_and_an_index_the_host_lacks_is_refused(monkeypatch):
    """The index check as a host with two GPUs answers it (this machine has none: its counts are set)."""
    import torch

    from normbench.configuration.config import ConfigError
    from normbench.training.run import resolve_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert resolve_device("cuda:1", job_num=4) == torch.device("cuda", 1)  # every job on the GPU named
    assert resolve_device("auto", job_num=3) == torch.device("cuda", 1)     # round-robin without a name
    with pytest.raises(ConfigError, match=r"device=cuda:2 but this host has 2 CUDA device\(s\): cuda:0..cuda:1"):
        resolve_device("cuda:2")


def test_a_stop_says_summaries_written_only_where_a_record_was_written_since_the_start(tmp_path):
    """Hostile h14 B10 (G05, G14): a sweep stopped before its first record said "summaries written"."""
    import signal
    import time

    from normbench.studies.app import stop_line, written_since

    assert stop_line(signal.SIGTERM, False) == "normbench: stopped by SIGTERM"
    assert stop_line(None, False) == "normbench: stopped by SIGINT"
    assert stop_line(signal.SIGHUP, True) == "normbench: interrupted by SIGHUP; summaries written"
    assert stop_line(None, True) == "normbench: interrupted; summaries written"

    sweep, old = tmp_path / "sweep", tmp_path / "sweep" / "0" / "summary.json"
    (sweep / "1").mkdir(parents=True)
    old.parent.mkdir()
    old.write_text("{}")
    os.utime(old, (time.time() - 60, time.time() - 60))  # a record of an earlier sweep, resumed now
    began = time.time() - 1
    assert not written_since(began, [sweep, None]) and not written_since(began, [])
    (sweep / "1" / "summary.json").write_text("{}")
    assert written_since(began, [None, sweep])
    run = tmp_path / "run"
    run.mkdir()
    (run / "summary.json").write_text("{}")
    assert written_since(began, [run])


def test_a_sweep_under_a_file_size_limit_of_zero_says_one_line(tmp_path, tiny_args):
    """Hostile h19 R09: joblib's "File too large. joblib will operate in serial mode" warning (two lines, a
    site-packages path) came before normbench's own line."""
    import resource

    env = {k: v for k, v in os.environ.items() if k != "TMPDIR"}
    done = subprocess.run([sys.executable, "-m", "normbench", "-m", *tiny_args, "norm=ln,rms", "hydra/launcher=local",
                           "hydra.launcher.n_jobs=2", "report=false", "progress=false", "hydra.sweep.dir=s"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=HANG_S,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0)))
    assert done.returncode == 2
    assert done.stderr.splitlines() == ["normbench: error: cannot write output: [Errno 27] File too large"]
