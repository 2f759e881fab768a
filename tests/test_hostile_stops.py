"""One line for every stop (issue 50): Ctrl-C or SIGTERM in any subcommand is one line and exit
128 + the signal's number, never a traceback."""

from __future__ import annotations

import importlib
import os
import signal
import subprocess
import sys
import time

import pytest

import normbench.__main__ as entry
from tests.waiting import HANG_S


@pytest.fixture(autouse=True)
def _handlers_back():
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s}
    yield
    for s, handler in saved.items():
        signal.signal(s, handler)


@pytest.mark.parametrize("name", sorted(entry.SUBCOMMANDS))
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, *[getattr(signal, "SIGHUP", 0)] * hasattr(signal, "SIGHUP")])
def test_a_signal_in_any_subcommand_is_one_line(name, signum, monkeypatch, capsys):
    module = importlib.import_module(entry.SUBCOMMANDS[name][0])

    def stopped(argv):
        os.kill(os.getpid(), signum)
        time.sleep(5)  # the signal arrives while the command works
        return 0
    monkeypatch.setattr(module, "main", stopped)
    assert entry.subcommand(name, []) == 128 + signum
    err = capsys.readouterr().err
    assert err == f"normbench {name}: stopped by {signal.Signals(signum).name}\n"


@pytest.mark.parametrize("command, module, args", [
    ("compare", "normbench.studies.compare_command", ["NB-SLOW-IMPORT"]),  # the subcommand's module
    ("compare", "normbench.studies.compare", ["{tmp}", "{tmp}", "--ignore", "NB-SLOW-IMPORT"]),  # once they pass
    ("evaluate", "torch", ["{tmp}/NB-SLOW-IMPORT"]),  # a run's folder: the model code is imported to score it
])
def test_sigterm_while_a_subcommand_imports_is_one_line(tmp_path, command, module, args):
    """The signal arrives before the command's module has finished importing (pandas, torch): the module the
    subcommand names, or one it imports once its arguments pass (compare_command's compare, evaluate's model code).
    The import here swallows the stop, as numpy's lazy imports and pybind11 do (hostile h16 N6): only the command
    line's guard (normbench/__main__.imported) ends the process then; without it the command went on."""
    from tests.report.conftest import write_record

    write_record(tmp_path, "NB-SLOW-IMPORT")
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import os, signal, sys, time\n"
        "if sys.argv[-1].endswith('NB-SLOW-IMPORT'):\n"
        "    class Slow:\n"
        "        def find_spec(self, name, path=None, target=None):\n"
        f"            if name == {module!r}:\n"
        "                try:\n"
        "                    os.kill(os.getpid(), signal.SIGTERM); time.sleep(5)\n"
        "                except KeyboardInterrupt:\n"
        "                    pass\n"
        "            return None\n"
        "    sys.meta_path.insert(0, Slow())\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.getcwd()])}
    done = subprocess.run([sys.executable, "-m", "normbench", command, *(a.format(tmp=tmp_path) for a in args)],
                          env=env, capture_output=True, text=True, timeout=HANG_S)
    assert done.returncode == 128 + signal.SIGTERM, done.stderr
    assert done.stderr == f"normbench {command}: stopped by SIGTERM\n"


# Imported by subcommand() itself before the command's module: a stop there was a traceback (hostile h14 B4)
@pytest.mark.parametrize("command, module, signame", [
    ("evaluate", "normbench.checks", "SIGINT"),
    ("evaluate", "normbench.studies.children", "SIGINT"),
    ("bench", "normbench.studies.children", "SIGTERM"),
    ("study", "normbench.configuration.config", "SIGINT"),
])
def test_a_stop_in_a_subcommands_first_imports_is_one_line(tmp_path, command, module, signame):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import os, signal, sys, time\n"
        "AT = os.environ.get('NB_STOP_AT', '').split(':')\n"
        "class StopOnce:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == AT[0]:\n"
        "            sys.meta_path.remove(self)  # once: the stop's own line may import it again\n"
        "            os.kill(os.getpid(), getattr(signal, AT[1])); time.sleep(5)\n"
        "        return None\n"
        "if len(AT) == 2:\n"
        "    sys.meta_path.insert(0, StopOnce())\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.getcwd()]), "NB_STOP_AT": f"{module}:{signame}"}
    done = subprocess.run([sys.executable, "-m", "normbench", command, str(tmp_path / "nowhere")], env=env,
                          capture_output=True, text=True, timeout=HANG_S, cwd=tmp_path)
    signum = getattr(signal, signame)
    assert (done.returncode, done.stderr) == (128 + signum, f"normbench {command}: stopped by {signame}\n")


# numpy's and scipy's lazy imports swallow an exception raised in them and leave a half-made module behind
SWALLOWING_IMPORT = (
    "import os, signal, sys, time\n"
    "AT = os.environ.get('NB_STOP_AT', '').split(':')\n"
    "class Swallowing:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name == AT[0]:\n"
    "            sys.meta_path.remove(self)\n"
    "            try:\n"
    "                os.kill(os.getpid(), getattr(signal, AT[1])); time.sleep(5)\n"
    "            except BaseException:\n"
    "                pass\n"
    "            raise AttributeError(\"module 'numpy._core' has no attribute '_multiarray_umath'\")\n"
    "        return None\n"
    "if len(AT) == 2:\n"
    "    sys.meta_path.insert(0, Swallowing())\n")


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_stop_that_an_import_swallows_is_still_one_line(tmp_path, signame):
    """Hostile h16 N6: a stop 0.25 s into `normbench bench`, while numpy or scipy imported, was swallowed there and
    ended in an AttributeError or RecursionError traceback (or, in torch's pybind11 calls, a C++ abort)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SWALLOWING_IMPORT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.getcwd()]),
           "NB_STOP_AT": f"normbench.bench.section:{signame}"}
    done = subprocess.run([sys.executable, "-m", "normbench", "bench", "kernels", "--quick", "--out", str(tmp_path / "bk")],
                          env=env, capture_output=True, text=True, timeout=HANG_S, cwd=tmp_path)
    signum = getattr(signal, signame)
    assert (done.returncode, done.stderr) == (128 + signum, f"normbench bench: stopped by {signame}\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP"])
def test_a_stop_while_the_app_imports_is_one_line(tmp_path, signame):
    """G08: SIGTERM before the app's own handlers were in place (Hydra importing) killed it without a word."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import os, signal, sys, time\n"
        "if sys.argv[-1] == 'NB-SLOW-IMPORT=1':\n"
        "    class Slow:\n"
        "        def find_spec(self, name, path=None, target=None):\n"
        "            if name == 'normbench.studies.app':\n"
        f"                os.kill(os.getpid(), signal.{signame}); time.sleep(5)\n"
        "            return None\n"
        "    sys.meta_path.insert(0, Slow())\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.getcwd()])}
    done = subprocess.run([sys.executable, "-m", "normbench", "NB-SLOW-IMPORT=1"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=HANG_S)
    assert done.returncode == 128 + getattr(signal, signame), done.stderr  # 143 or 129, as a subcommand's (G07)
    assert done.stderr == f"normbench: stopped by {signame}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]


@pytest.mark.parametrize("name", ["study", "report", "tune", "rerun", "compare"])
def test_an_empty_out_is_refused_in_one_line(name, tmp_path, monkeypatch, capsys):
    """``--out ''`` (an unset shell variable) is Path(''), the working folder: a report or a record would
    land among the files there."""
    monkeypatch.chdir(tmp_path)
    args = {"rerun": [str(tmp_path), "--out", ""], "compare": [str(tmp_path), str(tmp_path), "--out", ""],
            "report": [str(tmp_path), "--out", ""]}.get(name, ["--out", ""])
    assert entry.subcommand(name, args) == 2
    err = capsys.readouterr().err
    assert err == f"normbench {name}: --out is empty; name a folder (an unset shell variable?)\n"
    assert list(tmp_path.iterdir()) == []


def test_a_full_stdout_is_one_line_and_not_zero(tmp_path):
    """``normbench report RUNS > /dev/full``: the report is written, printing its path fails."""
    records = os.path.join(os.path.dirname(__file__), "data", "records_b1fa2f9")
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "normbench", "report", records, "--out", str(tmp_path / "o")],
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=HANG_S)
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr == "normbench report: cannot write to standard output (No space left on device)\n"


@pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="POSIX only")
def test_sighup_during_a_run_leaves_an_interrupted_record_and_one_line(tmp_path):
    """A closed terminal (SIGHUP) killed the run with its record still saying `running`."""
    import json

    from tests.conftest import TINY, TINY_TASK

    args = [a for a in TINY if not a.startswith("steps=")] + TINY_TASK + ["steps=1000000", "hydra.run.dir=run"]
    proc = subprocess.Popen([sys.executable, "-m", "normbench", *args], cwd=tmp_path, stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, text=True)
    metrics, deadline = tmp_path / "run" / "metrics.jsonl", time.monotonic() + HANG_S
    while time.monotonic() < deadline and not (metrics.exists() and metrics.stat().st_size > 0):
        time.sleep(0.2)
    proc.send_signal(signal.SIGHUP)
    err = proc.communicate(timeout=HANG_S)[1]
    assert proc.returncode == 128 + signal.SIGHUP and "Traceback" not in err, err  # 129, not 130 (G07)
    assert err.strip().splitlines()[-1] == "normbench: interrupted by SIGHUP; summaries written"
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["status"] == "interrupted" and f"signal {signal.SIGHUP.value}" in summary["reason"]


# A stop that lands while the interpreter runs its exit callbacks (torch's weakref.finalize among them), after
# the command's last line: an atexit callback registered first runs last, and sends it there, every time.
LATE_SIGTERM = ("import atexit, os, signal, sys, time\n"
                "atexit.register(lambda: (os.kill(os.getpid(), signal.SIGTERM), time.sleep(0.5), print('after', flush=True)))\n"
                "sys.argv = ['normbench', *sys.argv[1:]]\n"
                "from normbench.__main__ import main\n"
                "main()\n")


@pytest.mark.parametrize("command", ["compare", "run"])
def test_a_sigterm_among_the_exit_callbacks_changes_nothing(command, tmp_path):
    """Q26, M06, Q23: SIGTERM after the final line gave "Exception ignored in atexit callback ... Terminated"
    with exit 0, or exit 143 and no line over a record that says ok. The outcome is decided and said by
    then: the stop is ignored, the exit status is the command's own, and nothing more is printed."""
    from tests.conftest import TINY, TINY_TASK
    from tests.report.conftest import write_record

    if command == "compare":
        write_record(tmp_path / "sweep", "run-0", seed=0, axes={"task": "adding"}, best_val=0.05)
        args, code = ["compare", str(tmp_path / "sweep"), str(tmp_path / "sweep")], 0
    else:
        args, code = [*TINY, *TINY_TASK, f"hydra.run.dir={tmp_path / 'run'}"], 0
    done = subprocess.run([sys.executable, "-c", LATE_SIGTERM, *args], cwd=tmp_path, capture_output=True, text=True,
                          timeout=HANG_S, env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert done.returncode == code, done.stderr[-2000:]
    assert done.stdout.endswith("after\n") and "Traceback" not in done.stderr and "atexit" not in done.stderr


def test_a_sigterm_as_a_finished_run_says_its_last_line_changes_nothing(tmp_path):
    """Q26's other window: the run's record is final and its "ok |" line being said when SIGTERM lands; the
    run is not interrupted after the fact (it said "interrupted by SIGTERM" and 130 over a record saying ok)."""
    import json

    from tests.conftest import TINY, TINY_TASK

    late = ("import os, signal, sys, time\n"
            "sys.argv = ['normbench', *sys.argv[1:]]\n"
            "import normbench.studies.app as app\n"
            "said = app.describe\n"
            "def describe(summary):\n"
            "    os.kill(os.getpid(), signal.SIGTERM); time.sleep(0.5)\n"
            "    return said(summary)\n"
            "app.describe = describe\n"
            "from normbench.__main__ import main\n"
            "main()\n")
    done = subprocess.run([sys.executable, "-c", late, *TINY, *TINY_TASK, f"hydra.run.dir={tmp_path / 'run'}"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=HANG_S,
                          env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ok |" in done.stderr and "interrupted" not in done.stderr and "stopped" not in done.stderr
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["status"] == "ok"


@pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="POSIX only")
def test_sighup_of_tune_stops_its_stage_in_one_line(tmp_path):
    """Hostile h13 G15: a closed terminal killed `normbench tune` without a line, its selection run left `running`."""
    import json
    from pathlib import Path

    out = tmp_path / "t"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HOME": str(tmp_path), "PYTHONPATH": os.getcwd()}
    runner = subprocess.Popen([sys.executable, "-m", "normbench", "tune", "steps=3000", "eval_every=1000",
                               "task=adding", "task.n_train=64", "lr=0.1,0.01,0.001", "--out", str(out)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env)
    deadline = time.monotonic() + HANG_S
    while not list(out.rglob("summary.json")) and time.monotonic() < deadline and runner.poll() is None:
        time.sleep(0.3)  # the selection stage's first run has started
    runner.send_signal(signal.SIGHUP)
    _, err = runner.communicate(timeout=HANG_S)
    assert runner.returncode == 128 + signal.SIGHUP, err[-2000:]
    lines = err.strip().splitlines()
    assert lines[-1].startswith("normbench.tune: stopped by SIGHUP") and "Traceback" not in err, err[-2000:]
    statuses = {json.loads(Path(p).read_text())["status"] for p in out.rglob("summary.json")}
    assert statuses and statuses <= {"interrupted", "ok"}, statuses


HALF_IMPORTED_TORCH = (
    "import logging, os, signal, sys, time\n"
    "if 'NB-H13-HALF-TORCH' in os.environ:\n"
    "    class Stop:\n"
    "        def find_spec(self, name, path=None, target=None):\n"
    "            fake = sys.modules.get('torch._subclasses.fake_tensor')\n"
    "            if hasattr(fake, 'dump_cache_stats') and logging.getLogger('torch').level == logging.NOTSET:\n"
    "                sys.meta_path.remove(self)\n"
    "                os.kill(os.getpid(), signal.SIGTERM); time.sleep(5)\n"
    "            return None\n"
    "    sys.meta_path.insert(0, Stop())\n")


def test_a_stop_while_torch_imports_is_one_line(tmp_path):
    """Hostile h13 G16, G18: SIGTERM in a run's first seconds landed while torch imported, after it registered its
    exit-time "FakeTensor cache stats" (INFO) and before it set its logger to WARNING: 3 lines after the stop's."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(HALF_IMPORTED_TORCH)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.getcwd()]), "NB-H13-HALF-TORCH": "1",
           "HOME": str(tmp_path), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-m", "normbench", "steps=2", "task=adding", "task.n_train=64",
                           f"hydra.run.dir={tmp_path / 'run'}"], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=HANG_S)
    assert done.returncode == 128 + signal.SIGTERM, done.stderr
    lines = done.stderr.strip().splitlines()
    # no record yet: not "summaries written" (hostile h14 B10)
    assert "FakeTensor" not in done.stderr and lines[-1] == "normbench: stopped by SIGTERM", done.stderr
