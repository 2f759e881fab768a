"""The newer surfaces (the one writer, plan files, the study runner, bench arms, tune, compare --out,
report staging) driven through hostile tables, as tests/records/test_hostile_records.py drives the record readers.

Each table is one surface: what is planted (a link to a victim outside, a dangling link, a FIFO, a
folder, a link to /dev/zero, a foreign or schema-less file) and what must hold: the victim comes
through unchanged, nothing blocks, a bad input is one line (exit 2), never a traceback.
"""

from __future__ import annotations

import errno
import fcntl
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from normbench.bench import arms
from normbench.records import record, study_plan
from normbench.records.record import Unreadable, folder_inside, read_json_file, write_file, write_inside
from normbench.report.output import STAGING, remove_stale_staging
from normbench.studies import children, compare, study, tune
from tests.conftest import VICTIM_TEXT, plant
from tests.waiting import HANG_S  # waits end on a hang, never on a slow machine

_spec = importlib.util.spec_from_file_location("record_factory", Path(__file__).parent / "report" / "conftest.py")
factory = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(factory)

pytestmark = pytest.mark.usefixtures("no_hang")  # tests/conftest.py: a reader or writer that blocks fails its test




def untouched(victim: Path) -> bool:
    return victim.read_text() == VICTIM_TEXT and sorted(p.name for p in victim.parent.iterdir()) == ["victim.txt"]


# -- the one writer ---------------------------------------------------------------------------------
# kind -> whether write_file replaces it (a link is replaced, never written through) or refuses it
WRITER = {"link_to_victim": "replaced", "dangling_link": "replaced", "dev_zero": "replaced", "fifo": "refused",
          "folder": "refused"}


@pytest.mark.parametrize("kind", sorted(WRITER))
def test_the_one_writer_never_writes_through_or_waits_on_a_planted_file(tmp_path, victim, kind):
    target = tmp_path / "out" / "paired-timing.json"
    target.parent.mkdir()
    plant(kind, target, victim)
    if WRITER[kind] == "replaced":
        write_file(target, "{}\n")
        assert target.read_text() == "{}\n" and not target.is_symlink()
    else:
        with pytest.raises(OSError):
            write_file(target, "{}\n")
    assert untouched(victim)
    assert [p.name for p in target.parent.iterdir()] == ["paired-timing.json"]  # no temporary file left


def test_a_full_disk_leaves_the_old_file_not_an_empty_one(tmp_path, monkeypatch):
    target = tmp_path / "paired-timing.json"
    write_file(target, "old\n")

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match="No space"):
        write_file(target, "new\n")
    assert target.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["paired-timing.json"]


@pytest.mark.parametrize("kind", ["link_to_victim", "folder_link", "file"])
def test_folders_on_the_way_are_real_folders_inside(tmp_path, victim, kind):
    root = tmp_path / "out"
    root.mkdir()
    if kind == "folder_link":
        (root / "arms").symlink_to(victim.parent, target_is_directory=True)
    elif kind == "link_to_victim":
        (root / "arms").symlink_to(victim)
    else:
        (root / "arms").write_text("a file")
    with pytest.raises(OSError):
        write_inside(root, "arms/tuned_arm/arm000.yaml", "x: 1\n")
    with pytest.raises(OSError):
        folder_inside(root, "../outside")
    assert untouched(victim)


# -- the one reader ---------------------------------------------------------------------------------
READER = {
    "fifo": lambda p, v: os.mkfifo(p),
    "dev_zero": lambda p, v: p.symlink_to("/dev/zero"),
    "link": lambda p, v: p.symlink_to(v),
    "folder": lambda p, v: p.mkdir(),
    "huge": lambda p, v: (p.write_bytes(b""), os.truncate(p, study_plan.MAX_BYTES + 1)),
    "many_keys": lambda p, v: p.write_text(json.dumps({f"k{i}": 1 for i in range(record.MAX_KEYS + 1)})),
    "nested": lambda p, v: p.write_bytes(b"[" * 100_000 + b"]" * 100_000),
    "not_utf8": lambda p, v: p.write_bytes(b'{"a": "\xff"}'),
}


@pytest.mark.parametrize("name", sorted(READER))
def test_the_one_reader_refuses_quickly_what_is_not_a_small_regular_json_file(tmp_path, victim, name):
    path = tmp_path / "sequential.json"
    READER[name](path, victim)
    started = time.monotonic()
    with pytest.raises(Unreadable) as why:
        read_json_file(path, study_plan.MAX_BYTES)
    assert time.monotonic() - started < 5 and "\n" not in str(why.value)


def test_a_summary_with_400000_metric_keys_is_set_aside_in_a_second(tmp_path):
    good = factory.make_record("many")[0]
    path = tmp_path / "summary.json"
    path.write_text(json.dumps({**good, "metrics": {f"m{i}": 1.0 for i in range(400_000)}}))
    started = time.monotonic()
    found = record.read_summary(path)
    assert isinstance(found, record.SetAside) and "keys" in found.why and time.monotonic() - started < 5


# name -> a paired-timing.json beside the records that the report passes over (never hangs or crashes on)
PAIRED_TIMING = {
    "fifo": lambda p: os.mkfifo(p),
    "dev_zero": lambda p: p.symlink_to("/dev/zero"),
    "folder": lambda p: p.mkdir(),
    "arms_not_objects": lambda p: p.write_text(json.dumps({"schema": "normbench.paired-timing/1", "arms": [1, None]})),
    "group_a_dict": lambda p: p.write_text(json.dumps({"schema": "normbench.paired-timing/1",
                                                        "arms": [{"group": {"a": 1}, "study": ["x"]}]})),
    "rounds_text": lambda p: p.write_text(json.dumps({"schema": "normbench.paired-timing/1",
                                                       "arms": [{"group": "g", "rounds_ms": ["a"]}]})),
}


@pytest.mark.parametrize("name", sorted(PAIRED_TIMING))
def test_the_report_passes_over_a_hostile_paired_timing_file(tmp_path, name):
    from normbench.analysis import speed

    PAIRED_TIMING[name](tmp_path / "paired-timing.json")
    assert speed.paired_timing([tmp_path]).empty


# -- plan files (sequential.json): which apply ------------------------------------------------------
STUDY = {"schema": "normbench.study/1", "id": "abc", "name": "dropout", "arms": ["model.dropout_at"], "command": ""}


def _plan(**fields) -> bytes:
    return json.dumps({"schema": study_plan.STUDY_PLAN_FORMAT, "study": "abc", "final_level": 0.0001, **fields}).encode()


# name -> the bytes (or maker) of a plan file that must change nothing
FOREIGN_PLANS = {
    "no_schema": json.dumps({"final_level": 0.0001}).encode(),
    "old_schema": _plan(schema="normbench.sequential/1"),
    "other_study": _plan(study="someone-else"),
    "no_study": _plan(study=None),
    "study_dict": _plan(study={"id": "abc"}),
    "level_0_45_planted": json.dumps({"final_level": 0.45}).encode(),
    "level_out_of_range": _plan(final_level=0.7),
    "level_string": _plan(final_level="0.0001"),
    "level_nan": _plan().replace(b"0.0001", b"NaN"),
    "list": b"[1]",
    "fifo": os.mkfifo,
    "dev_zero": lambda p: p.symlink_to("/dev/zero"),
    "folder": lambda p: p.mkdir(),
}


@pytest.fixture(scope="module")
def dropout_sweep(tmp_path_factory) -> Path:
    """The supported dropout claim of tests/report/test_build.py, one study (id abc), three seeds."""
    root = tmp_path_factory.mktemp("plans") / "s"
    for seed in (0, 1, 2):
        for at, value in (("after_norm", 0.90), ("before_norm", 0.88)):
            factory.write_record(root, f"{at}-{seed}", seed=seed, best_val=value + 0.003 * seed, study=STUDY,
                                 axes={"model": "lstm", "norm": "bn", "placement": "post", "model.dropout": 0.3,
                                       "model.dropout_at": at})
    return root


@pytest.mark.parametrize("name", sorted(FOREIGN_PLANS))
def test_a_foreign_or_planted_plan_file_is_ignored_with_one_line(dropout_sweep, name):
    path = dropout_sweep / "sequential.json"
    try:
        made = FOREIGN_PLANS[name]
        made(path) if callable(made) else path.write_bytes(made)
        plans, ignored = study_plan.levels([dropout_sweep])
        run = (dropout_sweep / "after_norm-0").resolve()
        assert not [p for p in plans if p.study == "abc" and (p.folder == run or p.folder in run.parents)]
        assert plans if name == "other_study" else (len(ignored) == 1 and "\n" not in ignored[0])
    finally:
        if path.is_dir() and not path.is_symlink():
            path.rmdir()
        else:
            path.unlink()


def test_the_report_applies_a_plan_to_its_own_study_only_and_names_the_rest(dropout_sweep, capsys):
    from normbench.analysis import aggregate
    from normbench.analysis.result import _claims  # the result object builds the claims (report/ only renders)
    from normbench.records.reading import find_records

    runs, _ = aggregate.distinct_runs(aggregate.runs_frame(find_records([dropout_sweep]).runs))
    runs = aggregate.label_groups(runs, aggregate.varying_axes(runs))

    def verdict(level: float | None = None) -> str:
        return next(v.status for c, v in _claims(runs, [dropout_sweep], level) if c.id == "dropout_after_norm")

    assert verdict() == "supported"
    (dropout_sweep / "sequential.json").write_bytes(json.dumps({"final_level": 0.45}).encode())  # planted
    (dropout_sweep / study_plan.name_for("zzz")).write_bytes(_plan(study="zzz"))  # another study's: no runs here
    try:
        capsys.readouterr()
        assert verdict() == "supported"
        lines = [line for line in capsys.readouterr().err.splitlines() if "sequential plan" in line]
        assert len(lines) == 1 and "no schema" in lines[0]
        (dropout_sweep / study_plan.name_for("abc")).write_bytes(_plan())  # its own: applies
        assert verdict() != "supported"
    finally:
        (dropout_sweep / study_plan.name_for("abc")).unlink(missing_ok=True)
        (dropout_sweep / "sequential.json").unlink()
        (dropout_sweep / study_plan.name_for("zzz")).unlink()


def test_a_second_study_writes_its_own_plan_beside_the_first(tmp_path, victim):
    first = study_plan.write(tmp_path, "aaa", {"final_level": 0.01})
    second = study_plan.write(tmp_path, "bbb", {"final_level": 0.02})
    again = study_plan.write(tmp_path, "aaa", {"final_level": 0.03})
    assert first == again == tmp_path / "sequential.json" and second == tmp_path / "sequential-bbb.json"
    assert {p.study: p.level for p in study_plan.levels([tmp_path])[0]} == {"aaa": 0.03, "bbb": 0.02}
    (tmp_path / "sequential.json").unlink()
    (tmp_path / "sequential.json").symlink_to(victim)  # planted: not a plan, left alone, never written through
    assert study_plan.write(tmp_path, "ccc", {"final_level": 0.01}) == tmp_path / "sequential-ccc.json"
    assert untouched(victim) and (tmp_path / "sequential.json").is_symlink()


# name -> a file already at DIR/sequential.json that a study must keep as it is (README: ignored)
KEPT_PLANS = {
    "older_format": json.dumps({"schema": "normbench.sequential/1", "study": "other", "final_level": 0.45}).encode(),
    "older_format_same_id": json.dumps({"schema": "normbench.sequential/1", "study": "abc", "final_level": 0.01}).encode(),
    "another_study": _plan(study="someone-else"),
    "no_schema": json.dumps({"final_level": 0.0001}).encode(),
    "garbage": b"\x00\xffnot json at all",
    "empty": b"",
    "bad_level_same_study": _plan(final_level=0.7),
}


@pytest.mark.parametrize("name", sorted(KEPT_PLANS))
def test_a_study_never_replaces_a_plan_file_it_cannot_read_as_its_own(tmp_path, name):
    (tmp_path / "sequential.json").write_bytes(KEPT_PLANS[name])
    written = study_plan.write(tmp_path, "abc", {"final_level": 0.02})
    assert written == tmp_path / "sequential-abc.json"
    assert (tmp_path / "sequential.json").read_bytes() == KEPT_PLANS[name]
    assert study_plan.read(written).study == "abc" and study_plan.read(written).level == 0.02


# -- the study runner -------------------------------------------------------------------------------
def test_the_looks_count_the_studys_own_runs_only(tmp_path):
    other = {**STUDY, "id": "other"}
    for seed in (0, 1):
        factory.write_record(tmp_path / "round-1", f"mine-{seed}", seed=seed, study=STUDY)
        factory.write_record(tmp_path / "round-1", f"theirs-{seed}", seed=seed, study=other, axes={"norm": "rms"})
    factory.write_record(tmp_path / "round-1", "none", seed=5)
    runs = study._runs(tmp_path, "abc")
    assert sorted(Path(d).name for d in runs["run_dir"]) == ["mine-0", "mine-1"]


def _out_is(kind: str, tmp_path: Path) -> list[str]:
    out = tmp_path / "out"
    if kind == "file":
        out.write_text("x")
    elif kind in ("plan_folder", "plan_fifo"):
        out.mkdir()
        (out / "sequential.json").mkdir() if kind == "plan_folder" else os.mkfifo(out / "sequential.json")
    elif kind == "under_a_file":
        (tmp_path / "f").write_text("x")
        out = tmp_path / "f" / "out"
    return ["--out", str(out)]


# argv -> words of the one line; every one is refused before anything runs
BAD_STUDY_ARGUMENTS = [
    (["--max-seeds", "50000000"], "--max-seeds"), (["--jobs", "100000"], "--jobs"),
    (["--budget", "99999999999h"], "--budget"), (["--budget", "9" * 5000], "--budget"), (["--alpha", "nan"], "--alpha"),
    (["--pilot", "three"], "invalid int"), (["--max-seeds"], "expected one argument"),
    (["--alpha", "inf"], "--alpha"), (["--budget", "\u0661\u0660m"], "--budget"),  # Arabic-Indic digits
    (["norm=[ln", "--out", "{tmp}"], "cannot be parsed"),
]
BAD_OUTS = ["file", "plan_folder", "plan_fifo", "under_a_file"]


@pytest.mark.parametrize("argv, words", BAD_STUDY_ARGUMENTS)
def test_bad_study_numbers_are_refused_up_front_in_one_line(argv, words, capsys, tmp_path):
    started = time.monotonic()
    assert study.main([a.format(tmp=tmp_path) for a in argv]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1 and time.monotonic() - started < 2


@pytest.mark.parametrize("kind", BAD_OUTS)
def test_an_out_that_cannot_take_the_study_is_one_line(kind, tmp_path, capsys):
    assert study.main(["norm=ln", *_out_is(kind, tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("normbench.study: --out") and err.count("\n") == 1 and "Traceback" not in err


def test_a_config_no_job_could_run_is_refused_before_any_round_with_the_secret_masked(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("NB_SECRET", "hunter2SECRETxyz")
    ran = []
    monkeypatch.setattr(study, "_normbench", lambda *a, **k: ran.append(a) or 0)
    assert study.main(["--out", str(tmp_path), "--pilot", "2", "--max-seeds", "2", "lr=${oc.env:NB_SECRET}"]) == 2
    err = capsys.readouterr().err
    assert not ran and err.count("\n") == 1 and "lr" in err and "hunter2SECRETxyz" not in err
    assert "Traceback" not in err


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_round_is_passed_the_signal_and_never_left_running(signum):
    # the child takes SIGINT's default itself: a suite started in the background (`cmd &` in a script)
    # inherits SIGINT ignored, and the subject here is the passing on, not that inheritance
    child = children.start([sys.executable, "-c", "import signal, sys, time\n"
                            "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
                            "signal.signal(signal.SIGTERM, lambda *a: sys.exit(7))\ntime.sleep(3600)"])
    _wait_until_caught(child.pid, signal.SIGTERM)  # its handlers are in place, however slowly it started
    started = time.monotonic()
    children.stop_child(child, signum if signum == signal.SIGTERM else None, grace=0.1)
    assert child.poll() is not None and time.monotonic() - started < 600  # stopped, not its hour waited out
    assert child.returncode == (7 if signum == signal.SIGTERM else -signal.SIGINT)


# -- record values are data -------------------------------------------------------------------------
def test_bench_arms_never_resolves_an_interpolation_found_in_a_record(monkeypatch):
    monkeypatch.setenv("NB_SECRET", "hunter2")
    arm = arms.Arm("s", "adding", "g", "a", "h", Path("r"), {"task": {"name": "adding", "data": "${oc.env:NB_SECRET}"}})
    with pytest.raises(ValueError) as why:
        arms.build(arm)
    assert "task.data" in str(why.value) and "hunter2" not in str(why.value)


@pytest.mark.parametrize("value", ["???", "${oc.env:NB_SECRET}"])
def test_bench_arms_refuses_a_record_holding_an_interpolation_instead_of_skipping_its_arm(tmp_path, monkeypatch, value):
    # R75/R76: such an arm was skipped with a note and the command exited 0; a record no run wrote is bad input
    monkeypatch.setenv("NB_SECRET", "hunter2")
    factory.write_record(tmp_path, "good")
    run_dir = factory.write_record(tmp_path, "tampered", axes={"norm": "rms"})
    summary = json.loads((run_dir / "summary.json").read_text())
    summary["config"]["lr"] = value
    (run_dir / "summary.json").write_text(json.dumps(summary))
    with pytest.raises(arms.ArmsError) as why:
        arms.run(tmp_path)
    assert "config.lr" in str(why.value) and "tampered" in str(why.value) and "hunter2" not in str(why.value)
    assert not (tmp_path / arms.FILE).exists()


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_bench_arms_refuses_a_planted_output_before_timing(tmp_path, kind, victim):
    factory.write_record(tmp_path, "a")
    plant(kind, tmp_path / "paired-timing.md", victim)
    with pytest.raises(arms.ArmsError, match="not a regular file"):
        arms.run(tmp_path)


# -- compare ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", sorted(WRITER))
def test_compare_out_never_writes_through_or_waits_on_a_planted_file(tmp_path, victim, kind, capsys):
    factory.write_record(tmp_path / "base", "a")
    out = tmp_path / "summary.md"
    plant(kind, out, victim)
    code = compare.main([str(tmp_path / "base"), str(tmp_path / "base"), "--out", str(out)])
    err = capsys.readouterr().err
    # a link is refused too, never replaced (hostile C09: the user's link was lost), as rerun's --out is
    assert code == 2 and "Traceback" not in err
    assert untouched(victim) and os.path.lexists(out) and (out.is_symlink() or WRITER[kind] == "refused")


def test_compare_fails_a_new_whose_runs_finished_without_the_metric(tmp_path, capsys):
    for seed in (0, 1, 2):
        factory.write_record(tmp_path / "base", f"r{seed}", seed=seed, best_val=0.9)
        new = factory.write_record(tmp_path / "new", f"r{seed}", seed=seed, best_val=0.9)
        summary = json.loads((new / "summary.json").read_text())
        summary["metrics"] = {}
        (new / "summary.json").write_text(json.dumps(summary))
    assert compare.main([str(tmp_path / "base"), str(tmp_path / "new")]) == 1
    assert "final_val missing in NEW for 3 of 3" in capsys.readouterr().out


# -- tune -------------------------------------------------------------------------------------------
RECORDED = {"task": {"name": "adding", "length": 7}, "model": {"family": "gru", "hidden": 8}, "norm": {"kind": "rms"},
            "lr": 0.01, "seed": 1, "steps": 10}
# name -> a selection record's config that must not become an arm file as it is
HOSTILE_ARMS = {
    "interpolation": {**RECORDED, "task": {"name": "adding", "path": "${oc.env:HOME}"}},
    # (not "tags": that is now a harness key, which never enters an arm file)
    "interpolation_in_list": {**RECORDED, "notes": ["${oc.env:HOME}"]},
    "option_path": {**RECORDED, "model": {"family": "../../../etc/passwd"}},
    "option_dict": {**RECORDED, "norm": {"kind": {"a": 1}}},
    "option_newline": {**RECORDED, "model": {"family": "gru\n"}},
    "missing_mark": {**RECORDED, "task": {"name": "adding", "path": "???"}},
}


@pytest.mark.parametrize("name", sorted(HOSTILE_ARMS))
def test_a_hostile_selection_record_never_becomes_config(name):
    with pytest.raises(tune.ArmRefused):
        tune.arm_file(HOSTILE_ARMS[name], 0.03)


def test_an_arm_file_holds_recognised_settings_only():
    import yaml

    planted = {**RECORDED, "defaults": [{"override /hydra/launcher": "joblib"}], "hydra": {"callbacks": {"x": 1}},
               "surprise": {"_target_": "os.system"}, "model": {**RECORDED["model"], "_target_": "os.system"}}
    body = yaml.safe_load(tune.arm_file(planted, 0.03))
    assert body["defaults"] == [{"override /task": "adding"}, {"override /model": "gru"}, {"override /norm": "rms"}]
    assert "hydra" not in body and "surprise" not in body and "_target_" not in body["model"]
    assert body["lr"] == 0.03 and body["steps"] == 10 and "seed" not in body


@pytest.mark.parametrize("kind", ["link_to_victim", "folder_link"])
def test_tune_never_cleans_or_writes_through_a_planted_arms_folder(tmp_path, victim, kind):
    (tmp_path / "arms").mkdir()
    if kind == "folder_link":
        (victim.parent / "mine.yaml").write_text("x")
        (tmp_path / "arms" / "tuned_arm").symlink_to(victim.parent, target_is_directory=True)
    else:
        (tmp_path / "arms").rmdir()
        (tmp_path / "arms").symlink_to(victim)
    with pytest.raises(OSError):
        tune.write_arms(tmp_path / "selection", tmp_path / "arms")
    assert victim.read_text() == VICTIM_TEXT and (kind != "folder_link" or (victim.parent / "mine.yaml").exists())


# -- the report's staging folders -------------------------------------------------------------------
def test_staging_folders_of_killed_reports_go_and_a_running_ones_stay(tmp_path):
    out = tmp_path / "out"
    dead, running, young = (out / f"{STAGING}{n}" for n in ("dead", "running", "young"))
    for folder in (dead, running, young):
        folder.mkdir(parents=True)
        (folder / "runs.csv").write_text("x")
    old = time.time() - 60
    for folder in (dead, running):
        os.utime(folder, (old, old))
    held = os.open(running, os.O_RDONLY)
    fcntl.flock(held, fcntl.LOCK_EX)  # a build running beside this one
    try:
        assert remove_stale_staging(out) == [dead]
    finally:
        os.close(held)
    assert not dead.exists() and running.exists() and young.exists()
    (out / f"{STAGING}link").symlink_to(tmp_path, target_is_directory=True)  # never followed
    remove_stale_staging(out)
    assert tmp_path.is_dir() and (out / f"{STAGING}link").is_symlink()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])  # SIGHUP: G14b, a closed terminal
def test_sigterm_of_a_report_is_one_line_and_leaves_no_staging(tmp_path, capsys, signum):
    from normbench.report.__main__ import main

    for seed in (0, 1):
        factory.write_record(tmp_path / "sweep", f"r{seed}", seed=seed)
    signal.setitimer(signal.ITIMER_REAL, 0.5)  # no_hang's SIGALRM handler is replaced for this test
    previous = signal.signal(signal.SIGALRM, lambda *a: os.kill(os.getpid(), signum))
    try:
        code = main([str(tmp_path / "sweep"), "--out", str(tmp_path / "out")])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    err = capsys.readouterr().err
    name = signal.Signals(signum).name
    assert code == 128 + signum and f"stopped by {name}" in err and "Traceback" not in err
    assert not list((tmp_path / "out").glob(f"{STAGING}*"))


# -- the runners' children (normbench/studies/children.py: study and tune) ----------------------------------
SLEEPER = "import signal, sys, time\nsignal.signal(signal.SIGTERM, lambda *a: sys.exit(7))\ntime.sleep(60)"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_a_child_is_started_with_sigterm_as_its_parent_death_signal():
    code = ("import ctypes, ctypes.util; libc = ctypes.CDLL(ctypes.util.find_library('c')); v = ctypes.c_int(); "
            "libc.prctl(2, ctypes.byref(v), 0, 0, 0); print(v.value)")  # PR_GET_PDEATHSIG
    child = children.start([sys.executable, "-c", code], env=None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout  # a plain child: 0
    child.wait(timeout=HANG_S)
    assert out.strip() == "0"
    reader = subprocess.run([sys.executable, "-c", "from normbench.studies import children; import sys; "
                             f"sys.exit(children.start([sys.executable, '-c', {code!r}]).wait())"],
                            capture_output=True, text=True, timeout=HANG_S)
    assert reader.stdout.strip() == str(int(signal.SIGTERM))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_a_runner_killed_outright_takes_its_child_along(tmp_path):
    parent = subprocess.Popen([sys.executable, "-c", "from normbench.studies import children; import sys\n"
                               f"child = children.start([sys.executable, '-c', {SLEEPER!r}])\n"
                               "print(child.pid, flush=True)\nchild.wait()"], stdout=subprocess.PIPE, text=True)
    pid = int(parent.stdout.readline())
    assert _alive(pid)
    parent.kill()  # SIGKILL: no handler of the runner runs
    parent.wait(timeout=HANG_S)
    deadline = time.monotonic() + HANG_S
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's (prctl)")
def test_a_runner_that_ignores_sigterm_still_takes_its_child_along_when_killed(tmp_path):
    """A runner whose SIGTERM is ignored (children.start outside handling(), after ignore_stops) passes the ignored
    disposition on through exec. The child here installs no handler of its own, so only the default disposition
    the child is started with lets the death signal end it: its own sleep outlasts the wait (a hang, on the code
    before), and it is killed at the end whatever happened."""
    plain_sleeper = f"import time\ntime.sleep({4 * HANG_S})"
    parent = subprocess.Popen([sys.executable, "-c", "import signal, sys\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                               "from normbench.studies import children\n"
                               f"child = children.start([sys.executable, '-c', {plain_sleeper!r}])\n"
                               "print(child.pid, flush=True)\nchild.wait()"], stdout=subprocess.PIPE, text=True)
    pid = int(parent.stdout.readline())
    try:
        assert _alive(pid)
        parent.kill()
        parent.wait(timeout=HANG_S)
        deadline = time.monotonic() + HANG_S
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(pid)
    finally:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_tune_passes_the_signal_on_and_ends_in_one_line(signum, tmp_path, monkeypatch, capsys):
    # Ctrl-C as normbench's entry sets it before tune's main (normbench/__main__.py): a suite started in the
    # background finds SIGINT ignored, and the autouse fixture (tests/conftest.py) puts that back after each test
    signal.signal(signal.SIGINT, signal.default_int_handler)
    started = []

    def stage(args):  # the stage's child: a sleeper that stops on SIGTERM, as normbench -m does
        child = children.start([sys.executable, "-c", SLEEPER])
        started.append(child)
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        try:
            return child.wait()
        except BaseException as stop:
            children.stop_child(child, stop.signum if isinstance(stop, children.Stopped) else None, grace=0.1)
            raise

    monkeypatch.setattr(tune, "_normbench", stage)
    previous = signal.signal(signal.SIGALRM, lambda *a: os.kill(os.getpid(), signum))  # replaces no_hang's
    try:
        code = tune.main(["--out", str(tmp_path / "t"), "norm=ln"])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    err = capsys.readouterr().err
    assert code == 128 + signum and err.count("\n") == 1 and signal.Signals(signum).name in err
    assert "Traceback" not in err and started[0].poll() is not None


def _tune_children(out: Path) -> list[int]:
    """Processes whose command line names ``out`` (the tune's stages, their jobs), the test's own aside."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and int(proc.name) != os.getpid():
            try:
                if str(out).encode() in (proc / "cmdline").read_bytes() and _alive(int(proc.name)):
                    found.append(int(proc.name))
            except OSError:
                continue
    return found


@pytest.mark.slow
@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", "SIGKILL"])
def test_a_real_tune_stopped_during_selection_leaves_no_child_training(how, tmp_path, tiny_args):
    out = tmp_path / "tuned"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    tuner = subprocess.Popen([sys.executable, "-m", "normbench.studies.tune", "--out", str(out), *tiny_args, "steps=400"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + HANG_S
    while not list(out.glob("selection/*/summary.json")) and time.monotonic() < deadline:
        time.sleep(0.2)  # the selection is training: its first job has claimed its folder
    tuner.send_signal(getattr(signal, how))
    _, err = tuner.communicate(timeout=HANG_S)
    deadline = time.monotonic() + HANG_S
    while _tune_children(out) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _tune_children(out)
    if how != "SIGKILL":
        assert tuner.returncode == 128 + getattr(signal, how) and "Traceback" not in err
        assert err.strip().splitlines()[-1].startswith(f"normbench.tune: stopped by {how}")


# argv of --evaluation-seeds -> refused before anything runs (argparse: exit 2)
BAD_TUNE_SEEDS = {
    "duplicate": "1,1", "duplicate_far": "100,7,100", "too_many": ",".join(map(str, range(100, 1101))),
    "twenty_thousand": ",".join(map(str, range(100, 20100))), "negative": "-1", "empty": ",",
}


@pytest.mark.parametrize("name", sorted(BAD_TUNE_SEEDS))
def test_bad_evaluation_seeds_are_refused_up_front(name, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(tune, "_normbench", lambda args: pytest.fail("a stage ran"))
    with pytest.raises(SystemExit) as stop:
        tune.main(["--out", str(tmp_path / "t"), "--evaluation-seeds", BAD_TUNE_SEEDS[name], "norm=ln"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "--evaluation-seeds" in err and len(err) < 2000 and "Traceback" not in err


def test_a_thousand_distinct_evaluation_seeds_are_accepted():
    assert len(tune._seeds(",".join(map(str, range(1000))))) == 1000


# -- bench arms and compare: numbers out of their bounds --------------------------------------------
BAD_ARMS_NUMBERS = {
    "rounds_huge": ["--rounds", "1000000000000"], "rounds_10001": ["--rounds", "10001"], "rounds_0": ["--rounds", "0"],
    "warmup_huge": ["--warmup", "99999999999"], "steps_per_round_huge": ["--steps-per-round", "99999999999"],
    "threads_0": ["--threads", "0"], "threads_negative": ["--threads", "-2"],
}


@pytest.mark.parametrize("name", sorted(BAD_ARMS_NUMBERS))
def test_bench_arms_refuses_numbers_out_of_bounds_in_one_line(name, tmp_path, capsys):
    from normbench.bench.__main__ import main

    started = time.monotonic()
    assert main(["arms", str(tmp_path), *BAD_ARMS_NUMBERS[name]]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("normbench.bench arms:") and time.monotonic() - started < 5


BAD_COMPARE_NUMBERS = {
    "tolerance_inf": ["--tolerance", "inf"], "tolerance_minus_inf": ["--tolerance=-inf"],
    "tolerance_nan": ["--tolerance", "nan"], "tolerance_negative": ["--tolerance", "-1"],
    "step_time_inf": ["--step-time-tolerance", "inf"], "step_time_nan": ["--step-time-tolerance", "nan"],
    "divergences_negative": ["--max-new-divergences", "-1"],
}


@pytest.mark.parametrize("name", sorted(BAD_COMPARE_NUMBERS))
def test_compare_refuses_a_tolerance_that_is_not_a_finite_number(name, tmp_path, capsys):
    assert compare.main([str(tmp_path), str(tmp_path), *BAD_COMPARE_NUMBERS[name]]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "tolerances must be finite" in err


# -- config ints: bounded before a run starts -------------------------------------------------------
BAD_CONFIG_INTS = {
    "steps_above_int64": ("steps=99999999999999999999", "steps"),
    "steps_above_a_billion": ("steps=1000000001", "steps must be <="),
    "batch_size_above_int64": ("batch_size=99999999999999999999", "batch_size"),
    "eval_every_above_int64": ("eval_every=99999999999999999999", "eval_every"),
    "warmup_above_int64": ("warmup_steps=99999999999999999999", "warmup_steps"),
    "hidden_above_int64": ("model.hidden=99999999999999999999", "model.hidden"),
    "task_length_above_int64": ("task.length=99999999999999999999", "task.length"),
}


@pytest.mark.parametrize("name", sorted(BAD_CONFIG_INTS))
def test_an_int_setting_beyond_int64_or_its_maximum_is_one_line(name, compose):
    from normbench.checks import ConfigError
    from normbench.configuration.config import to_config

    override, words = BAD_CONFIG_INTS[name]
    with pytest.raises((ConfigError, ValueError)) as why:
        to_config(compose(override))
    assert words in str(why.value) and "\n" not in str(why.value) and len(str(why.value)) < 300


def test_a_billion_steps_is_still_a_config(compose):
    from normbench.configuration.config import to_config

    assert to_config(compose("steps=1000000000")).steps == 10**9


# -- the report: a signal at any moment, the imports included ---------------------------------------
def _wait_until_caught(pid: int, signum: int, limit_s: float = HANG_S) -> None:
    """Until process ``pid`` catches ``signum`` (Linux: its SigCgt mask), so that the signal sent next
    meets the report's own handler however slowly a loaded machine starts the interpreter."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return
        caught = next((int(line.split()[1], 16) for line in status.splitlines() if line.startswith("SigCgt:")), 0)
        if caught >> (signum - 1) & 1:
            return
        time.sleep(0.01)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_the_report_imports_is_one_line(signum, tmp_path):
    for seed in (0, 1):
        factory.write_record(tmp_path / "sweep", f"r{seed}", seed=seed)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    report = subprocess.Popen([sys.executable, "-m", "normbench.report", str(tmp_path / "sweep"), "--out",
                               str(tmp_path / "out")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    # the report's SIGTERM handler is in place (Python catches SIGINT from its own start, before any module of
    # the program runs): the imports of pandas and matplotlib follow
    _wait_until_caught(report.pid, signal.SIGTERM)
    report.send_signal(signum)
    out, err = report.communicate(timeout=HANG_S)
    assert report.returncode == 128 + signum, (report.returncode, err[-2000:])
    assert err.count("\n") == 1 and f"stopped by {signal.Signals(signum).name}" in err and "Traceback" not in err


# -- secrets: a value read from the environment never reaches a record (third hostile pass) ---------
SECRET = "hunter2SECRETxyz"
# name -> an override reading NB_SECRET; each run is refused (batch_size=0) after its record started, so
# its config, overrides, axes and reason are all written
# (settings that name a file, folder, experiment or project refuse such a value before any record:
# tests/test_hostile_env_names.py iterates their table, normbench/configuration/env_names.py)
SECRET_SETTINGS = {
    "mlflow_tracking_uri": "logger.mlflow.tracking_uri=http://user:${oc.env:NB_SECRET}@localhost:5000",
    "device": "device=${oc.env:NB_SECRET}",
}


def _files_holding(folder: Path, text: str) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.is_file() and text.encode() in p.read_bytes()]


@pytest.mark.parametrize("name", sorted(SECRET_SETTINGS))
def test_a_value_read_from_the_environment_is_never_written_into_the_record(cli, tiny_args, monkeypatch, tmp_path, name):
    monkeypatch.setenv("NB_SECRET", SECRET)
    override = SECRET_SETTINGS[name]
    code, out, err = cli(*tiny_args, override, "batch_size=0", "hydra.run.dir=run")
    assert code == 2 and err.count("\n") == 1 and SECRET not in out + err
    assert not _files_holding(tmp_path / "run", SECRET)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    key, _, text = override.partition("=")
    value = summary["config"]
    for part in key.split("."):
        value = value[part]
    assert value == text and override in summary["overrides"]  # the record names where the value came from


def test_a_run_whose_config_reads_the_environment_is_still_found_finished(cli, tiny_args, monkeypatch):
    monkeypatch.setenv("NB_DEVICE", "cpu")
    args = [*tiny_args, "device=${oc.env:NB_DEVICE}", "hydra.run.dir=run"]
    assert cli(*args)[0] == 0
    code, out, err = cli(*args, "resume=true")
    assert code == 0 and "already finished" in out + err  # the record's config holds the text, its hash the run's


def test_a_number_read_from_the_environment_is_kept_so_the_record_stays_readable(cli, tiny_args, monkeypatch, tmp_path):
    from normbench.records.record import RunRecord, read_summary

    monkeypatch.setenv("NB_LR", "0.0123")
    assert cli(*tiny_args, "lr=${oc.env:NB_LR}", "hydra.run.dir=run")[0] == 0
    found = read_summary(tmp_path / "run" / "summary.json")  # the report, resume and compare read it
    assert isinstance(found, RunRecord) and found.config["lr"] == 0.0123


def test_a_sweeps_study_command_keeps_the_interpolation_text(compose, monkeypatch):
    from normbench.configuration import study_info

    monkeypatch.setenv("NB_SECRET", SECRET)
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    from normbench.configuration.config import config_dir

    with initialize_config_dir(str(config_dir()), version_base="1.3"):
        config = hydra_compose("config", ["lr=${oc.env:NB_SECRET}", "steps=3"], return_hydra_config=True)
    command = study_info.from_config(config)["command"]
    assert SECRET not in command and "lr=${oc.env:NB_SECRET}" in command  # the report's "how to reproduce"


@pytest.mark.slow
def test_a_sweep_with_a_secret_axis_leaks_it_nowhere(cli, tiny_args, monkeypatch, tmp_path):
    monkeypatch.setenv("NB_SECRET", SECRET)
    code, out, err = cli("-m", "lr=${oc.env:NB_SECRET},0.1", *tiny_args, "hydra.sweep.dir=sw")
    assert code == 2 and SECRET not in out + err and (tmp_path / "sw" / "report.html").exists()
    assert not _files_holding(tmp_path / "sw", SECRET)


# -- values OmegaConf or the schema would take silently ---------------------------------------------
# name -> (override, words of the one line): refused before anything runs, exit 2
SILENT_VALUES = {
    "save_model_2": ("save_model=2", "save_model must be true or false"),
    "resume_a_word": ("resume=maybe", "resume"),
    "delete_steps": ("~steps", "~steps cannot delete"),
    "delete_lr": ("~lr", "~lr cannot delete"),
    "csv_file_a_folder": ("logger.csv.file=.", "names a folder"),
    "csv_file_ends_in_slash": ("logger.csv.file=logs/", "names a folder"),
    "csv_file_the_checkpoint": ("logger.csv.file=checkpoint.pt", "record file"),
    "csv_file_the_model": ("logger.csv.file=model_final.pt", "record file"),
    "csv_file_is_the_tb_folder": ("logger=[tensorboard,csv] logger.csv.file=tb", "where logger tensorboard writes"),
    "tb_folder_is_the_csv_file": ("logger=[tensorboard,csv] logger.tensorboard.dir=metrics.csv", "where logger tensorboard"),
    "csv_file_above_the_wandb_folder": ("logger=[wandb,csv] logger.wandb.dir=logs logger.csv.file=logs/wandb",
                                        "where logger wandb writes"),
    "timing_warmup_huge": ("timing_warmup=10000000000", "timing_warmup must be <="),
    "checkpoint_every_huge": ("checkpoint_every=10000000000", "checkpoint_every must be <="),
    "eval_every_huge": ("eval_every=10000000000", "eval_every must be <="),
}


@pytest.mark.parametrize("name", sorted(SILENT_VALUES))
def test_a_value_that_would_be_taken_silently_is_one_line(cli, tiny_args, tmp_path, name):
    override, words = SILENT_VALUES[name]
    code, out, err = cli(*tiny_args, *override.split(" "), "hydra.run.dir=run")
    assert code == 2 and err.count("\n") == 1 and words in err and "Traceback" not in err, err
    assert not (tmp_path / "run" / "metrics.jsonl").exists() or name.startswith(("csv", "tb", "timing", "checkpoint", "eval"))


def test_a_sweep_of_a_billion_jobs_on_the_command_line_is_one_line(cli, tiny_args, tmp_path):
    started = time.monotonic()
    code, out, err = cli("-m", "seed=range(0,1000000000)", *tiny_args, "hydra.sweep.dir=sw")
    assert code == 2 and "1,000,000,000 jobs" in err and err.count("\n") == 1 and time.monotonic() - started < 10
    assert not (tmp_path / "sw").exists()


def test_a_timing_warmup_past_the_steps_is_cut_to_leave_a_step_timed(cli, tiny_args, tmp_path):
    code, out, err = cli(*tiny_args, "steps=3", "probe_every=0", "timing_warmup=10", "hydra.run.dir=run")
    throughput = json.loads((tmp_path / "run" / "summary.json").read_text())["throughput"]
    assert code == 0 and "timing_warmup=10 is not below steps=3" in err
    assert throughput["warmup_steps_excluded"] == 1 and throughput["timed_steps"] >= 1


def test_a_warmup_past_the_steps_is_said(cli, tiny_args, tmp_path):
    """K08: warmup_steps=1000 steps=2 ran with the lr never reaching its value, and said nothing."""
    code, out, err = cli(*tiny_args, "steps=4", "warmup_steps=8", "lr=0.01", "hydra.run.dir=run")
    assert code == 0 and "warmup_steps=8 is above steps=4: the learning rate rises to 0.005, 50% of lr=0.01" in err
    code, out, err = cli(*tiny_args, "steps=4", "warmup_steps=4", "hydra.run.dir=run2")
    assert code == 0 and "warmup_steps" not in err


# -- tune and study: bad numbers refused before any stage or round ----------------------------------
@pytest.mark.parametrize("seeds, overrides", [("0", []), ("100,1", []), ("5", ["seed=range(0,10)"]),
                                              ("7", ["+seed=choice(7,8)"])])
def test_evaluation_seeds_among_the_selection_seeds_are_refused_before_the_selection(seeds, overrides, tmp_path,
                                                                                     monkeypatch, capsys):
    monkeypatch.setattr(tune, "_normbench", lambda args: pytest.fail("a stage ran"))
    started = time.monotonic()
    with pytest.raises(SystemExit) as stop:
        tune.main(["--out", str(tmp_path / "t"), "--evaluation-seeds", seeds, "norm=ln", *overrides])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "are selection seeds too" in err and time.monotonic() - started < 5


PLANTED_PLANS = {
    "link_to_victim": None, "dangling_link": None,
    "an_array": b"[1, 2]", "no_schema": b'{"final_level": 0.45}', "garbage": b"\x00\xff",
    "empty": b"", "nan": b'{"schema": NaN}', "deep": b"[" * 100_000 + b"]" * 100_000,
    "schema_not_a_string": b'{"schema": 7, "study": "x"}', "no_study": b'{"schema": "normbench.sequential/2"}',
}


@pytest.mark.parametrize("name", sorted(PLANTED_PLANS))
def test_a_planted_plan_file_stops_the_study_before_any_round(name, tmp_path, victim, monkeypatch, capsys):
    monkeypatch.setattr(study, "_normbench", lambda *a, **k: pytest.fail("a round ran"))
    out = tmp_path / "out"
    out.mkdir()
    if PLANTED_PLANS[name] is None:
        plant(name, out / "sequential.json", victim)
    else:
        (out / "sequential.json").write_bytes(PLANTED_PLANS[name])
    assert study.main(["norm=ln", "--out", str(out), "--budget", "1s"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"normbench.study: --out {out}: sequential.json") and err.count("\n") == 1
    assert untouched(victim)


def test_another_studys_plan_file_does_not_stop_a_study(tmp_path):
    (tmp_path / "sequential.json").write_text(json.dumps({"schema": "normbench.sequential/1", "study": "other"}))
    study._check_out(tmp_path)  # it writes sequential-<id>.json beside it


def test_a_child_past_its_time_is_stopped_and_out_of_time_raised():
    started = time.monotonic()
    with pytest.raises(children.OutOfTime):
        children.run([sys.executable, "-c", SLEEPER], timeout_s=0.5)
    assert time.monotonic() - started < 10


def test_a_budget_shorter_than_the_pilot_stops_it_in_one_line(tmp_path, monkeypatch, capsys):
    real_start = children.start
    monkeypatch.setattr(children, "start", lambda command, env=None: real_start([sys.executable, "-c", SLEEPER], env))
    started = time.monotonic()
    assert study.main(["norm=ln,rms", "--out", str(tmp_path / "out"), "--budget", "1s"]) == 1
    err = capsys.readouterr().err
    assert "ran out during round 1" in err and err.count("\n") == 1 and time.monotonic() - started < 20
    assert not (tmp_path / "out" / "sequential.json").exists()


# -- compare, rerun and report --out: the user's files and links -----------------------------------
def test_compare_out_never_replaces_a_file_it_did_not_write(tmp_path, victim, capsys):
    factory.write_record(tmp_path / "base", "a")
    runs = [str(tmp_path / "base"), str(tmp_path / "base")]
    assert compare.main([*runs, "--out", str(victim)]) == 2
    err = capsys.readouterr().err
    assert "is not a summary compare wrote" in err and err.count("\n") == 1 and untouched(victim)
    out = tmp_path / "summary.md"
    assert compare.main([*runs, "--out", str(out)]) == 0 and compare.main([*runs, "--out", str(out)]) == 0  # its own
    assert out.read_text().startswith(compare.HEADING)


def test_rerun_and_report_refuse_an_out_that_is_a_link(tmp_path, victim, capsys):
    from normbench.report.__main__ import main as report_main
    from normbench.training import rerun

    run = factory.write_record(tmp_path / "sweep", "a")
    link = tmp_path / "out"
    link.symlink_to(victim.parent, target_is_directory=True)
    assert rerun.main([str(run), "--out", str(link)]) == 2
    assert report_main([str(tmp_path / "sweep"), "--out", str(link)]) == 2
    err = capsys.readouterr().err
    assert err.count("is a symbolic link") == 2 and err.count("\n") == 2
    assert sorted(p.name for p in victim.parent.iterdir()) == ["victim.txt"]


def test_study_and_tune_refuse_an_out_that_is_a_link(tmp_path, victim, capsys):
    """As report and rerun do: a linked --out would carry the study's rounds and report elsewhere."""
    from normbench.studies import study, tune

    link = tmp_path / "out"
    link.symlink_to(victim.parent, target_is_directory=True)
    assert study.main(["--out", str(link), "steps=4"]) == 2
    with pytest.raises(SystemExit) as refused:
        tune.main(["--out", str(link), "steps=4"])
    assert refused.value.code == 2
    err = capsys.readouterr().err
    assert err.count("is a symbolic link") == 2
    assert sorted(p.name for p in victim.parent.iterdir()) == ["victim.txt"]


def test_study_and_tune_never_write_a_round_through_a_link_planted_in_out(tmp_path, victim, capsys):
    # T024/T025: a link named round-1 (study) or selection (tune) took the round's records into its target
    from normbench.studies import study as study_runner

    tiny = ["norm=ln,rms", "task=adding", "task.length=6", "task.n_train=64", "task.n_val=32", "task.n_test=32",
            "steps=6", "batch_size=16", "eval_every=3", "model.hidden=8", "threads=1"]
    (tmp_path / "st").mkdir()
    (tmp_path / "st" / "round-1").symlink_to(victim.parent)
    assert study_runner.main([*tiny, "--budget", "1m", "--pilot", "2", "--max-seeds", "2", "--out", str(tmp_path / "st")]) == 2
    assert "round-1" in capsys.readouterr().err
    (tmp_path / "tu").mkdir()
    (tmp_path / "tu" / "selection").symlink_to(victim.parent)
    with pytest.raises(SystemExit) as stop:
        tune.main(["--out", str(tmp_path / "tu"), "norm=ln,rms", "lr=0.001,0.003", "task=adding", "steps=6"])
    assert stop.value.code == 2 and "selection is a link" in capsys.readouterr().err
    assert sorted(p.name for p in victim.parent.iterdir()) == ["victim.txt"] and victim.read_text() == VICTIM_TEXT


@pytest.mark.parametrize("planted", ["paired-timing.md", "paired-timing.json"])
def test_bench_arms_never_replaces_a_users_file_or_a_link_where_its_output_goes(tmp_path, planted, victim):
    # N076/N077: a user's paired-timing.md was overwritten; a planted link was replaced without a word
    factory.write_record(tmp_path, "a")
    (tmp_path / planted).write_text("mine\n")
    with pytest.raises(arms.ArmsError, match="was not written by a normbench benchmark"):
        arms.run(tmp_path)
    assert (tmp_path / planted).read_text() == "mine\n"
    (tmp_path / planted).unlink()
    (tmp_path / planted).symlink_to(victim)
    with pytest.raises(arms.ArmsError, match="not a regular file"):
        arms.run(tmp_path)
    assert victim.read_text() == VICTIM_TEXT and (tmp_path / planted).is_symlink()
