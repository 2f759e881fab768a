"""Sweeps at scale and under faults: launchers, resume, interruption, kill -9, full disk, rerun."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from normbench.records import record
from normbench.training import rerun
from normbench.training.train import Trainer
from tests.waiting import HANG_S  # waits end on a hang, never on a slow machine

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def statuses(sweep: Path) -> dict[str, str]:
    return {p.parent.name: json.loads(p.read_text())["status"] for p in sweep.rglob("summary.json")}


# `python -m normbench` with Ctrl-C raising KeyboardInterrupt, as from a terminal. A process started with
# SIGINT ignored passes that on, and Python then installs no handler of its own: a shell without job
# control ignores SIGINT in a command it starts with `&` (POSIX), so a suite started that way would see
# its SIGINT test hang. Set in the child, not by preexec_fn, which is unsafe once torch has threads.
AS_FROM_A_TERMINAL = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
                      "sys.argv[0] = 'normbench'; runpy.run_module('normbench', run_name='__main__', alter_sys=True)")


def normbench(*args, cwd):
    return subprocess.Popen([sys.executable, "-c", AS_FROM_A_TERMINAL, *args], cwd=cwd, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_resume_runs_only_jobs_without_a_finished_record(cli, tmp_path, monkeypatch, tiny_args):
    executed, interrupt_armed = [], [True]
    real_fit = Trainer.fit

    def counting_fit(self):
        executed.append(self.cfg.seed)
        if self.cfg.seed == 2 and interrupt_armed.pop() if interrupt_armed else False:
            raise KeyboardInterrupt  # Ctrl-C during the third job, the first time only
        return real_fit(self)
    monkeypatch.setattr(Trainer, "fit", counting_fit)
    sweep = ["-m", *tiny_args, "seed=0,1,2,3", "hydra.sweep.dir=sweep", "report=false"]
    code, _, _ = cli(*sweep)
    assert code == 130 and executed == [0, 1, 2]
    assert statuses(tmp_path / "sweep") == {"0": "ok", "1": "ok", "2": "interrupted"}
    first = {n: (tmp_path / "sweep" / n / "summary.json").read_text() for n in ("0", "1")}

    executed.clear()
    code, _, _ = cli(*sweep, "resume=true")
    assert code == 0 and executed == [2, 3]  # finished runs are not run again
    assert statuses(tmp_path / "sweep") == {"0": "ok", "1": "ok", "2": "ok", "3": "ok"}
    assert all((tmp_path / "sweep" / n / "summary.json").read_text() == t for n, t in first.items())  # nothing lost

    executed.clear()
    assert cli(*sweep, "resume=true")[0] == 0 and executed == []


def test_kill_9_leaves_earlier_records_intact_and_resume_finishes(tmp_path, tiny_args):
    # 1500 steps, so that job 1 still runs when it is killed; logged and probed rarely, as a longer run would be
    args = ["-m", *tiny_args, "steps=1500", "eval_every=1000", "log_every=100", "probe_every=500", "seed=0,1,2",
            "hydra.sweep.dir=sweep", "report=false"]
    proc = normbench(*args, cwd=tmp_path)
    running = tmp_path / "sweep" / "1" / "summary.json"
    deadline = time.time() + HANG_S
    while not (running.exists() and json.loads(running.read_text())["status"] == "running"):
        assert time.time() < deadline and proc.poll() is None, "job 1 never started"
        time.sleep(0.05)
    time.sleep(0.3)
    proc.kill()  # SIGKILL: no handler runs, nothing is flushed on purpose
    proc.wait()
    assert statuses(tmp_path / "sweep") == {"0": "ok", "1": "running"}
    report = subprocess.run([sys.executable, "-m", "normbench.report", str(tmp_path / "sweep")], env=ENV,
                            capture_output=True, text=True, timeout=HANG_S)
    assert report.returncode == 0 and "incomplete" in (tmp_path / "sweep" / "report.md").read_text()
    resumed = normbench(*args, "resume=true", cwd=tmp_path)
    out, err = resumed.communicate(timeout=HANG_S)
    assert resumed.returncode == 0, err[-2000:]
    assert statuses(tmp_path / "sweep") == {"0": "ok", "1": "ok", "2": "ok"}
    assert "resume: already finished" in err and out.count(" ok ") >= 3


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_during_a_run_writes_an_interrupted_summary(tmp_path, tiny_args, sig):
    proc = normbench(*tiny_args, "steps=100000", "eval_every=50000", "hydra.run.dir=run", cwd=tmp_path)
    metrics = tmp_path / "run" / "metrics.jsonl"
    deadline = time.time() + HANG_S
    while not (metrics.exists() and len(metrics.read_text().splitlines()) >= 20):
        assert time.time() < deadline and proc.poll() is None
        time.sleep(0.05)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=HANG_S)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert proc.returncode == 128 + sig and "interrupted" in err
    assert summary["status"] == "interrupted" and summary["metrics"]["steps_done"] >= 10
    assert summary["metrics"]["final_train_loss"] is not None and summary["throughput"]["timed_steps"] > 0


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_sent_to_a_local_launcher_alone_ends_every_workers_record_interrupted_and_starts_no_queued_job(
        tmp_path, tiny_args, sig):
    # G04 (SIGTERM), G021/N099 (Ctrl-C to the launcher alone, not its process group): the signal reached the
    # launcher only; loky killed its workers on the way out, and their records said `running` after the line
    # "summaries written"
    proc = normbench("-m", "hydra/launcher=local", "hydra.launcher.n_jobs=2", *tiny_args, "steps=100000",
                     "eval_every=50000", "seed=0,1,2,3", "hydra.sweep.dir=sweep", "report=false", cwd=tmp_path)
    deadline = time.time() + HANG_S
    while not all((tmp_path / "sweep" / job / "metrics.jsonl").exists()
                  and len((tmp_path / "sweep" / job / "metrics.jsonl").read_text().splitlines()) >= 5 for job in "01"):
        assert time.time() < deadline and proc.poll() is None
        time.sleep(0.1)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=HANG_S)
    assert proc.returncode == 128 + sig and "summaries written" in err, err[-2000:]
    # G030: seeds 2 and 3, queued, were handed to the workers the signal had freed, and left saying running
    assert statuses(tmp_path / "sweep") == {"0": "interrupted", "1": "interrupted"}
    assert not list((tmp_path / "sweep").glob(".normbench-stopping*"))


@pytest.mark.parametrize("launcher", ["local", "submitit_local"])
def test_real_launchers_run_a_tiny_sweep(tmp_path, tiny_args, launcher):
    seeds = ["seed=0,1"] if launcher == "local" else []  # two jobs a worker: the second finds the first's objects frozen
    proc = normbench("-m", f"hydra/launcher={launcher}", *tiny_args, "norm=ln,rms", *seeds, "hydra.sweep.dir=sweep",
                     "report=false", cwd=tmp_path)
    out, err = proc.communicate(timeout=HANG_S)
    assert proc.returncode == 0, err[-2000:]
    found = [json.loads(p.read_text()) for p in (tmp_path / "sweep").rglob("summary.json")]
    expected = ["ln", "ln", "rms", "rms"] if seeds else ["ln", "rms"]
    assert sorted(s["axes"]["norm"] for s in found) == expected and all(s["status"] == "ok" for s in found)
    if launcher == "local":  # two workers share the cores: threads = cores // 2, fewer where the load left fewer free
        cores = len(os.sched_getaffinity(0))
        assert all(1 <= s["environment"]["threads"] <= max(1, cores // 2) for s in found)
        assert len({s["environment"]["threads"] for s in found}) == 1  # one count for the whole sweep
    # each job ran in a process of its own (a joblib worker, a submitit job), and the end line says how they spent it
    efficiency = json.loads((tmp_path / "sweep" / "efficiency.json").read_text())
    marks = [json.loads(p.read_text()) for p in (tmp_path / "sweep" / ".timing").glob("*.json")]
    assert efficiency["workers"] == efficiency["processes"] == 2 and 0 < efficiency["efficiency"] <= 1
    assert len({m["pid"] for m in marks}) == 2 and proc.pid not in {m["pid"] for m in marks}
    assert abs(sum(efficiency["shares"].values()) - 1) < 1e-9 and f"efficiency {efficiency['efficiency']:.2f}" in out
    if launcher == "local":
        assert any(m["gc_frozen"] > 0 for m in marks) and efficiency["jobs"] == 4


def test_full_disk_is_one_line_and_no_half_written_summary(cli, tmp_path, monkeypatch, tiny_args):
    real_replace = os.replace

    def disk_full(src, dst):
        if str(dst).endswith("summary.json") and (tmp_path / "run" / "summary.json").exists():
            raise OSError(28, "No space left on device")
        return real_replace(src, dst)
    monkeypatch.setattr(record.os, "replace", disk_full)
    code, out, err = cli(*tiny_args, "hydra.run.dir=run")
    errors = [line for line in err.splitlines() if line.startswith("normbench:")]
    assert code == 2 and errors == ["normbench: error: cannot write output: [Errno 28] No space left on device; "
                                    f"the record in {tmp_path / 'run'} is stale (it says 'running')"]  # named (issue 50)
    assert "Traceback" not in err and err.strip().splitlines()[-1] == errors[0]
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["status"] == "running"  # old, whole
    assert not list((tmp_path / "run").glob(".summary.json.*"))


def test_unwritable_output_directory_is_one_line(cli, tmp_path, tiny_args):
    (tmp_path / "a_file").write_text("")
    code, out, err = cli(*tiny_args, "hydra.run.dir=a_file/run")
    assert code == 2 and err.startswith("normbench: error: cannot write output:") and len(err.splitlines()) == 1


def test_rerun_from_a_record_reproduces_it(cli, tmp_path, tiny_args, capsys):
    assert cli(*tiny_args, "norm=bn", "placement=in_cell", "hydra.run.dir=run")[0] == 0
    assert rerun.main([str(tmp_path / "run")]) == 0
    assert "reproduced exactly" in capsys.readouterr().out
    (new,) = (tmp_path / "outputs" / "reruns").rglob("summary.json")  # outside the original's folder
    assert json.loads(new.read_text())["rerun_of"]["run_dir"] == str(tmp_path / "run")
    assert not (tmp_path / "run" / "rerun").exists()
    assert rerun.main([str(tmp_path / "nothing")]) == 2
    assert rerun.main([str(tmp_path / "run"), "--out", str(new.parent)]) == 2  # never over a record


def test_rerun_of_a_resumed_job_trains_again(cli, tmp_path, tiny_args, monkeypatch):
    assert cli(*tiny_args, "resume=true", "hydra.run.dir=run")[0] == 0
    calls = []
    real_fit = Trainer.fit
    monkeypatch.setattr(Trainer, "fit", lambda self: calls.append(1) or real_fit(self))
    assert rerun.main([str(tmp_path / "run")]) == 0
    assert rerun.main([str(tmp_path / "run")]) == 0  # an earlier rerun's record is not taken for this one
    assert len(calls) == 2


@pytest.mark.parametrize("change,says", [
    (lambda c: c["task"].update(name="${oc.env:HOME}"), "holds an interpolation"),
    (lambda c: c.update(lr="${oc.env:HOME}"), "config.lr is not of type float"),  # the reader sets it aside
    (lambda c: c["norm"].update(kind="layer"), "the recorded config is not valid"),
    (lambda c: c.update(norm=5), "config.norm is not an object"),
])
def test_rerun_of_a_crafted_record_is_one_line(cli, tmp_path, tiny_args, capsys, change, says):
    """A record is data: never evaluated, and a malformed one is refused in one line."""
    assert cli(*tiny_args, "hydra.run.dir=run")[0] == 0
    path = tmp_path / "run" / "summary.json"
    summary = json.loads(path.read_text())
    change(summary["config"])
    path.write_text(json.dumps(summary))
    capsys.readouterr()
    assert rerun.main([str(tmp_path / "run")]) == 2
    out, err = capsys.readouterr()
    assert len(err.strip().splitlines()) == 1 and says in err and os.environ.get("HOME", "~") not in out + err


def test_duplicate_jobs_of_one_sweep_execute_once(cli, tmp_path, monkeypatch, tiny_args):
    """norm=none makes gamma_init inert: 2 gamma_inits x 3 seeds are 3 runs, each executed once."""
    executed = []
    real_fit = Trainer.fit
    monkeypatch.setattr(Trainer, "fit", lambda self: executed.append(self.cfg.seed) or real_fit(self))
    sweep = ["-m", *tiny_args, "norm=none", "norm.gamma_init=1.0,0.1", "seed=0,1,2", "hydra.sweep.dir=sweep",
             "report=false"]
    assert cli(*sweep)[0] == 0
    assert sorted(executed) == [0, 1, 2]
    found = [json.loads(p.read_text()) for p in (tmp_path / "sweep").rglob("summary.json")]
    assert sorted(s["seed"] for s in found) == [0, 1, 2] and len({s["config_hash"] for s in found}) == 3
    executed.clear()
    assert cli(*sweep)[0] == 0 and executed == []  # finished in this sweep's folder: not again, resume or not


def test_a_duplicate_of_a_running_job_writes_nothing_and_names_it(compose, tmp_path):
    from omegaconf import OmegaConf

    from normbench.configuration.contract import config_hash
    from normbench.training.run import SweepClaim, execute

    node = compose("norm=none")
    original = SweepClaim(tmp_path / "sweep", config_hash(OmegaConf.to_container(node, resolve=True)))
    original.name(tmp_path / "sweep" / "0")  # job 0 holds the claim: it is running
    try:
        summary = execute(compose("norm=none", "norm.gamma_init=0.1"), tmp_path / "sweep" / "1", [],
                          sweep_dir=tmp_path / "sweep")
    finally:
        original.release()
    assert summary["status"] == "skipped" and summary["duplicate_of"] == str(tmp_path / "sweep" / "0")
    assert "in progress" in summary["reason"] and not list((tmp_path / "sweep").rglob("summary.json"))
    assert execute(compose("norm=none"), tmp_path / "sweep" / "1", [], sweep_dir=tmp_path / "sweep")["status"] == "ok"


def test_duplicates_side_by_side_in_joblib_workers_execute_once(tmp_path, tiny_args):
    # seed outermost: the two jobs of one seed, one effective config, start side by side
    proc = normbench("-m", "hydra/launcher=local", "hydra.launcher.n_jobs=2", *tiny_args, "seed=0,1", "norm=none",
                     "norm.gamma_init=1.0,0.1", "hydra.sweep.dir=sweep", "report=false", cwd=tmp_path)
    out, err = proc.communicate(timeout=HANG_S)
    assert proc.returncode == 0, err[-2000:]
    found = [json.loads(p.read_text()) for p in (tmp_path / "sweep").rglob("summary.json")]
    assert sorted(s["seed"] for s in found) == [0, 1] and all(s["status"] == "ok" for s in found)
