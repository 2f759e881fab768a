"""The study runner: arguments checked up front, rounds of seeds, the plan and report written."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from normbench.records import study_plan
from normbench.studies.study import StudyArgumentError, _parse, budget_seconds, study_of
from tests.waiting import HANG_S  # waits end on a hang, never on a slow machine

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("argv, words", [
    (["--budget", "0"], "--budget"), (["--budget", "soon"], "--budget"), (["seed=0,1"], "seeds"),
    (["--pilot", "1"], "--pilot"), (["--max-seeds", "2", "--pilot", "3"], "--max-seeds"),
    (["--alpha", "0.7"], "--alpha"), (["--jobs", "0"], "--jobs"), (["--frobnicate"], "unknown option"),
    (["--selection-seeds", "3"], "--selection-seeds"), (["--selection-seeds", "0"], "--selection-seeds"),
])
def test_bad_arguments_are_one_line(argv, words):
    with pytest.raises(StudyArgumentError, match=words):
        _parse(argv)


def test_budget_units():
    assert budget_seconds("90s") == 90 and budget_seconds("2m") == 120 and budget_seconds("1.5h") == 5400


def test_bad_arguments_exit_2_without_a_traceback():
    result = subprocess.run([sys.executable, "-m", "normbench.studies.study", "--budget", "-3"], capture_output=True,
                            text=True, cwd=ROOT)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_a_tiny_study_runs_rounds_and_writes_its_plan_and_report(tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    result = subprocess.run([sys.executable, "-m", "normbench.studies.study", "norm=ln,none", "steps=4", "eval_every=2",
                             "--pilot", "2", "--step", "1", "--max-seeds", "3", "--jobs", "1", "--out", str(tmp_path)],
                            capture_output=True, text=True, cwd=ROOT, env=env, timeout=HANG_S)
    assert result.returncode == 0, result.stderr[-2000:]
    plan = json.loads((tmp_path / "sequential.json").read_text())
    assert plan["looks"] == [2, 3] and abs(sum(plan["levels"]) - 0.05) < 1e-12
    seeds = {json.loads(p.read_text())["seed"] for p in tmp_path.rglob("summary.json")}
    assert seeds == set(range(len(plan["rounds"]) + 1))  # 2 seeds in the pilot, 1 more per further round
    studies = {json.loads(p.read_text())["study"]["id"] for p in tmp_path.rglob("summary.json")}
    assert studies == {plan["study"]} and plan["schema"] == study_plan.STUDY_PLAN_FORMAT  # every round is the plan's study
    assert (tmp_path / "report.html").is_file()
    assert "normbench.study: round 1 of at most 2: 2 seeds per arm" in result.stdout  # progress (normbench/studies/progress.py)
    answer = result.stdout[result.stdout.index("normbench.study: answer after"):]  # the answer comes last
    assert any(words in answer for words in ("stopped at the maximum seed count", "every question decided",
                                             "every testable question decided, the rest not testable here"))
    assert "\n  digits: " in answer  # the comparison's answer in the report's words (analysis/decisions.py)
    if "digits: not testable here" in answer:  # 4 steps: likely at chance; then no rank is claimed
        assert "ranks first" not in answer and "every question decided" not in answer
    assert ("every question decided" in answer) + ("  undecided: " in answer) <= 1  # what is still open is listed


def test_no_report_ends_with_the_plan_and_the_answer_and_says_how_to_report_later(tmp_path):
    """--no-report (reports/example/make.sh reports on every study at its end): no report files, the plan and the
    answer as ever, and the line it prints instead is the command that writes the report."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out = tmp_path / "a study"  # a space: the printed command must quote it
    probe = ("import atexit, runpy, sys\n"  # what the study runner's own process imported, said as it exits
             "atexit.register(lambda: print('imported:', *(name in sys.modules for name in ('normbench.report.build', "
             "'matplotlib'))))\n"
             "sys.argv = ['study', *sys.argv[1:]]\n"
             "runpy.run_module('normbench.studies.study', run_name='__main__')\n")
    result = subprocess.run([sys.executable, "-c", probe, "norm=ln,none", "steps=4", "eval_every=2",
                             "--pilot", "2", "--max-seeds", "2", "--jobs", "1", "--no-report", "--out", str(out),
                             "--claims", "examples/claims"],
                            capture_output=True, text=True, cwd=ROOT, env=env, timeout=HANG_S)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "imported: False False" in result.stdout  # the report builder and its plotting: not paid for
    assert (out / "sequential.json").is_file() and "normbench.study: answer after 1 round(s)" in result.stdout
    assert not list(out.glob("report*")) and not (out / "figures").exists()
    line = next(line for line in result.stdout.splitlines() if line.startswith("report: "))
    command = line.split("; ", 1)[1].removesuffix(" writes it")
    assert command == f"python -m normbench.report '{out}' --claims examples/claims"  # the study's own claims too
    later = subprocess.run([sys.executable, *shlex.split(command)[1:]], capture_output=True, text=True, cwd=ROOT,
                           env=env, timeout=HANG_S)
    assert later.returncode == 0 and (out / "report.html").is_file(), later.stderr[-2000:]
    assert "ln_simple_as_good" in (out / "report.md").read_text()  # examples/claims' claim, judged there


def test_the_report_command_quotes_what_a_shell_or_an_option_parser_would_misread():
    from normbench.studies.study import report_command

    assert report_command(Path("-x"), [Path("my claims")]) == "python -m normbench.report ./-x --claims 'my claims'"
    assert report_command(Path("/a/b"), []) == "python -m normbench.report /a/b"


def test_a_study_of_a_sweep_file_is_described_as_its_multirun_describes_itself():
    described = study_of(["+sweep=batch_size", "steps=4"])
    assert described["name"] == "batch_size" and {"norm", "batch_size"} <= set(described["arms"])
    assert "seed" not in described["arms"] and described["id"] == study_of(["steps=4", "+sweep=batch_size"])["id"]


def _processes_naming(text: str) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and text.encode() in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
        except OSError:
            continue
    return found


@pytest.mark.slow
def test_sigterm_of_the_study_runner_stops_its_round_in_one_line(tmp_path):
    import signal
    import time

    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    runner = subprocess.Popen([sys.executable, "-m", "normbench.studies.study", "norm=ln,none", "steps=3000", "eval_every=1000",
                               "--jobs", "1", "--out", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, cwd=ROOT, env=env)
    assert runner.stdout.readline().startswith("+ python -m normbench")
    deadline = time.monotonic() + HANG_S
    while not list(tmp_path.rglob("summary.json")) and time.monotonic() < deadline:
        time.sleep(0.5)  # the round's first run has started
    runner.send_signal(signal.SIGTERM)
    _, err = runner.communicate(timeout=HANG_S)
    assert runner.returncode == 128 + signal.SIGTERM, err[-2000:]
    assert "stopped by SIGTERM" in err and "Traceback" not in err
    assert _processes_naming(str(tmp_path)) == []  # the round's process is gone too
    statuses = {json.loads(p.read_text())["status"] for p in tmp_path.rglob("summary.json")}
    assert statuses <= {"interrupted", "ok"}


# overrides -> refused before any round (the config the jobs would run cannot), or None: left to the rounds
CONFIG_CHECKS = [
    (["lr=${oc.env:NB_SECRET}"], "lr"), (["steps=${oc.env:NB_SECRET}"], "steps"),
    (["norm=ln,none", "lr=${oc.env:NB_SECRET}"], "lr"), (["steps=99999999999999999999"], "steps"),
    (["norm=ln,none", "steps=4"], None), (["+sweep=batch_size", "steps=4"], None),
    (["lr=${oc.env:NB_NUMBER}"], None), (["norm=nonesuch"], None),  # Hydra's own refusal: the round says it
    (["norm=ln,rms", "norm.eps=0"], "norm.eps"),  # no job can run: refused
    # an arm no run of could build is refused too, though the other arm's jobs could run (hostile h18 H3: a round ran,
    # then "nothing compared (one arm ...)", exit 0)
    (["norm=ln,none", "norm.eps=0"], r"^the arm norm=ln cannot run: norm.eps must be > 0"),
    (["+sweep=tuned", "lr=0.01", "steps=0"], "steps"),  # the sweep file's params composed too
    (["model=rnn", "placement=gate,pre"], r"^the arm placement=gate cannot run: placement 'gate' is invalid for rnn"),
    (["model=lstm,transformer", "placement=in_cell"], r"^the arm model=transformer cannot run: placement 'in_cell'"),
    (["model=rnn", "placement=gate", "norm=ln,bn"], r"cannot run in any of the 2 jobs of the sweep: placement 'gate'"),
    (["norm=ln,rms", "task=digits", "task.target=-0.5"], r"task.target=-0.5 is no target for accuracy"),
    (["model=rnn", "placement=pre,post", "norm=ln,none"], None),  # every cell builds
]


@pytest.mark.parametrize("overrides, words", CONFIG_CHECKS)
def test_the_config_is_resolved_and_checked_before_any_round(overrides, words, monkeypatch):
    from normbench.studies.study import check_config

    monkeypatch.setenv("NB_SECRET", "hunter2SECRETxyz")
    monkeypatch.setenv("NB_NUMBER", "0.01")
    if words is None:
        check_config(overrides)
        return
    with pytest.raises(StudyArgumentError, match=words) as why:
        check_config(overrides)
    assert "hunter2SECRETxyz" not in str(why.value) and "\n" not in str(why.value)


@pytest.mark.slow
def test_kill_9_of_the_study_runner_takes_its_round_along(tmp_path):
    import signal
    import time

    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    runner = subprocess.Popen([sys.executable, "-m", "normbench.studies.study", "norm=ln,none", "steps=3000", "eval_every=1000",
                               "--jobs", "1", "--out", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, cwd=ROOT, env=env)
    deadline = time.monotonic() + HANG_S
    while not list(tmp_path.rglob("summary.json")) and time.monotonic() < deadline:
        time.sleep(0.5)  # the round's first run has started
    runner.send_signal(signal.SIGKILL)
    runner.communicate(timeout=HANG_S)
    deadline = time.monotonic() + HANG_S
    while _processes_naming(str(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.5)  # the round got SIGTERM from the kernel and writes its interrupted records
    assert _processes_naming(str(tmp_path)) == []


def test_the_plan_counts_arms_to_say_what_its_seeds_can_show_before_running():
    from normbench.studies.study import arm_count

    assert arm_count(["norm=ln,bn,none", "placement=pre,post", "seed=0,1,2", "task=copy,adding"]) == 6
    assert arm_count(["norm=ln", "lr=0.1"]) == 1
    assert arm_count(["norm=ln,bn", "lr=range(1,3)"]) is None  # not a plain list: no line rather than a wrong one


def test_arms_are_the_distinct_values_a_sweep_runs(monkeypatch):
    """Hostile h15 B7: the comma-separated texts were counted (norm=ln,ln two arms, tags=[a,b] two)."""
    from normbench.studies import study

    assert study.arm_count(["norm=ln,ln,rms"]) == 2
    assert study.arm_count(["lr=0.1,0.10"]) == 1
    assert study.arm_count(["norm=ln,rms", "tags=[a,b]"]) == 2
    # hostile h16 N8: the values as the config takes them: one text however quoted, one number however written
    assert study.arm_count(["norm=\"ln\",'ln'"]) == 1
    assert study.arm_count(["model.hidden=64,064"]) == 1  # Hydra parses 064 as text; model.hidden holds 64
    assert study.arm_count(["model.hidden=64,'64',65"]) == 2
    assert study.arm_count(["norm.affine=true,'true',false"]) == 2
    monkeypatch.setattr(study, "_sweep_params", lambda overrides: ("dup", {"norm": "ln,ln"}, None))  # N02
    assert study.arm_count(["+sweep=dup"]) == 1


@pytest.mark.parametrize("overrides", [
    ["steps=2", "eval_every=1", "task=adding", "task.n_train=64"],   # P37: no +sweep=, nothing swept
    ["norm=ln", "task=adding,copy"],                                 # a comparison is one task: tasks are not arms
    ["norm=ln", "lr=0.001,0.01,0.1"],                                 # tuned: the lr is chosen per arm, not an arm
    ["steps=2", "norm=ln,ln"],                                        # hostile h15 B7 (S01): one value twice
    ["steps=2", "norm=\"ln\",'ln'"],                                   # hostile h16 N8 (I02): one text, two quotes
    ["steps=2", "model.hidden=64,064"],                               # I03: one number, two spellings
    ["steps=2", "tags=[a,b]"],                                        # S02: a list value, and a label
    ["steps=2", "tags=a,b"],                                          # a label swept: the same run twice
])
def test_a_study_of_one_arm_is_refused_before_any_round(overrides, tmp_path, monkeypatch, capsys):
    """Hostile h14 B8: three seeds ran for 40 s, then "nothing compared ... a study needs two arms", exit 0."""
    from normbench.studies import study

    monkeypatch.setattr(study, "_normbench", lambda *a, **k: pytest.fail("a round ran"))
    assert study.main(["--out", str(tmp_path / "s"), *overrides]) == 2
    err = capsys.readouterr().err
    assert err.startswith("normbench.study: a study needs two arms or more") and err.count("\n") == 1, err
    assert not (tmp_path / "s").exists()  # a refused study makes no folder (hostile h25 a013)


def test_a_list_given_to_a_group_is_refused_before_any_round(tmp_path, monkeypatch, capsys):
    """Hostile h16 N11: norm=[ln,rms] merges both configs into each job of every round."""
    from normbench.studies import study

    monkeypatch.setattr(study, "_normbench", lambda *a, **k: pytest.fail("a round ran"))
    assert study.main(["--out", str(tmp_path / "s"), "steps=2", "norm=[ln,rms]", "placement=pre,post"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("normbench.study: norm=[ln,rms]: norm takes one option") and err.count("\n") == 1, err
    assert err.rstrip().endswith("sweep them: norm=ln,rms"), err  # a study sweeps every comma list: no -m


@pytest.mark.parametrize("code, says", [(129, "round 1 was stopped by SIGHUP (exit 129)"), (-9, "round 1 was stopped by SIGKILL (exit -9)"),
                                        (3, "round 1 ended with exit 3")])
def test_a_round_stopped_by_a_signal_says_so(tmp_path, monkeypatch, capsys, code, says):
    """Hostile h16 N19 (G14): a round whose child a SIGHUP stopped 6 s in read "round 1 did not run (exit 129)"."""
    from normbench.studies import study

    monkeypatch.setattr(study, "_normbench", lambda *a, **k: code)
    assert study.main(["--out", str(tmp_path / "s"), "steps=2", "norm=ln,rms"]) == code
    assert f"normbench.study: {says}" in capsys.readouterr().err
