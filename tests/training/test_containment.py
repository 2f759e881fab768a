"""Every path the suite writes or deletes stays inside its folder, and no planted file is written through.

One table of planted files (links to a victim outside, a link to /dev/null, a FIFO) drives every
writer of a run folder; one table of escaping paths drives the report's manifest, logger.dir and
the sweep's subdir. The victim must come through unchanged every time.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from pathlib import Path

import pytest

from normbench.configuration.schema import RECORD_FILES, ConfigError, CsvLog, MLflowLog, TensorBoardLog, WandbLog
from normbench.records import record
from normbench.report import build_report
from normbench.report.output import MANIFEST, REPORT_FILES_FORMAT, inside
from tests.conftest import VICTIM_TEXT, plant

_spec = importlib.util.spec_from_file_location("record_factory", Path(__file__).parents[1] / "report" / "conftest.py")
factory = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(factory)


@pytest.fixture
def write_record():
    return factory.write_record


pytestmark = pytest.mark.usefixtures("no_hang")  # tests/conftest.py: a writer that blocks fails its test




PLANTS = ["link_to_victim", "dangling_link", "fifo", "folder"]
RUN_FILES = ["summary.json", "metrics.jsonl", "traceback.txt", ".normbench.lock"]


@pytest.mark.parametrize("kind", PLANTS)
@pytest.mark.parametrize("name", RUN_FILES)
def test_a_run_never_writes_through_a_planted_file(tmp_path, victim, kind, name):
    preferred = tmp_path / "sweep" / "0"
    preferred.mkdir(parents=True)
    plant(kind, preferred / name, victim)
    run = record.RecordWriter.claim(preferred, "0123456789abcdef")
    assert run.run_dir != preferred  # a folder with a planted run file is not claimed
    run.start(config={}, overrides=[])
    run.log({"kind": "train", "step": 1, "loss": 1.0})
    record.write_run_text(run.run_dir / "traceback.txt", "trace")
    run.finish("failed", "a test")
    assert victim.read_text() == VICTIM_TEXT
    assert sorted(p.name for p in victim.parent.iterdir()) == ["victim.txt"]
    assert json.loads((run.run_dir / "summary.json").read_text())["status"] == "failed"


@pytest.mark.parametrize("kind", ["link_to_victim", "dangling_link", "fifo"])
def test_open_run_file_refuses_what_is_not_a_regular_file(tmp_path, victim, kind):
    plant(kind, tmp_path / "metrics.jsonl", victim)
    with pytest.raises(OSError):
        os.close(record.open_run_file(tmp_path / "metrics.jsonl"))
    assert victim.read_text() == VICTIM_TEXT


def test_summary_json_replaces_a_planted_link_instead_of_writing_through_it(tmp_path, victim):
    (tmp_path / "summary.json").symlink_to(victim)
    record.write_json_atomic(tmp_path / "summary.json", {"a": 1})
    assert victim.read_text() == VICTIM_TEXT and not (tmp_path / "summary.json").is_symlink()


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


ESCAPES = ["../outside/victim.txt", "{victim}", "figures/../../outside/victim.txt", "./../outside/victim.txt"]


@pytest.mark.parametrize("entry", ESCAPES)
def test_a_crafted_manifest_cannot_make_the_report_delete_outside_out(tmp_path, victim, write_record, entry):
    write_record(tmp_path / "sweep", "a")
    out = tmp_path / "report"
    out.mkdir()
    entry = entry.format(victim=victim)
    (out / MANIFEST).write_text(json.dumps({"schema": REPORT_FILES_FORMAT, "files": {entry: _sha(victim)}}))
    build_report([tmp_path / "sweep"], out)
    assert victim.read_text() == VICTIM_TEXT
    assert entry not in json.loads((out / MANIFEST).read_text())["files"]


def test_a_figures_link_in_out_is_not_written_through(tmp_path, write_record):
    write_record(tmp_path / "sweep", "a")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "report"
    out.mkdir()
    (out / "figures").symlink_to(elsewhere)
    with pytest.raises(Exception, match="figures is a symbolic link, where the report puts a folder of its own"):
        build_report([tmp_path / "sweep"], out)
    assert list(elsewhere.iterdir()) == []


INSIDE = [("a", True), ("a/b", True), ("a/../b", True), ("..", False), ("../x", False), ("/etc/passwd", False),
          ("", False), (".", False), ("a/../../x", False)]


@pytest.mark.parametrize(("path", "expected"), INSIDE)
def test_inside(tmp_path, path, expected):
    assert inside(tmp_path, path) is expected


def test_inside_sees_through_links(tmp_path):
    (tmp_path / "link").symlink_to("/etc")
    assert not inside(tmp_path, "link/passwd")


LOGGER_DIRS = ["../tb", "../../..", "/tmp/tb", "a/../../b", *RECORD_FILES, "summary.json/x"]


LOGGER_PATHS = [(TensorBoardLog, "dir"), (MLflowLog, "dir"), (WandbLog, "dir"), (CsvLog, "file")]


@pytest.mark.parametrize("value", LOGGER_DIRS)
@pytest.mark.parametrize(("kind", "key"), LOGGER_PATHS, ids=[k.__name__ for k, _ in LOGGER_PATHS])
def test_logger_dir_stays_inside_the_run_and_off_the_record_files(kind, key, value):
    with pytest.raises(ConfigError, match=rf"logger\.\w+\.{key}"):
        kind(**{key: value})


@pytest.mark.parametrize("value", ["tb", "logs/tb", "a/./b"])
@pytest.mark.parametrize(("kind", "key"), LOGGER_PATHS, ids=[k.__name__ for k, _ in LOGGER_PATHS])
def test_plain_logger_dirs_pass(kind, key, value):
    kind(**{key: value})


def test_a_sweep_subdir_outside_the_sweep_is_refused(cli, tiny_args, tmp_path):
    code, out, err = cli("-m", *tiny_args, "hydra.sweep.dir=sweep/in", "hydra.sweep.subdir=../../escaped",
                         "report=false")
    assert code == 2 and "outside the sweep directory" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "escaped").exists()


@pytest.mark.parametrize("launcher", [[], ["hydra/launcher=joblib", "hydra.launcher.n_jobs=1"]])
def test_a_sweep_subdir_that_climbs_out_makes_no_folder_outside(cli, tiny_args, tmp_path, launcher):
    """Hostile h19 J1 (Y06, Q02): Hydra made the job's parent folders outside the sweep before the job refused
    them, and only the empty leaf was removed. Now refused before any job's folder is made."""
    code, out, err = cli("-m", *tiny_args, *launcher, "norm=ln,rms", "hydra.sweep.dir=sweep/in",
                         "hydra.sweep.subdir=x/../../../escaped/a/b", "report=false")
    assert code == 2 and "outside the sweep directory" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "escaped").exists()
    assert not (tmp_path / "sweep").exists()  # a refused sweep writes nothing, multirun.yaml included (h25 g011)


@pytest.mark.parametrize("launcher", [[], ["hydra/launcher=joblib", "hydra.launcher.n_jobs=1"]])
def test_a_job_id_subdir_that_climbs_out_through_the_job_name_makes_no_folder_outside(cli, tiny_args, tmp_path,
                                                                                       launcher):
    """Hostile h19 J1, its last form: joblib names a job ``{hydra.job.name}_{num}``, so a job name holding ``..``
    under ``subdir=${hydra.job.id}`` climbed out; the job name is now refused before any launch
    (hydra_files.job_name_problem), so no job folder can be named through it."""
    code, out, err = cli("-m", *tiny_args, *launcher, "norm=ln,rms", "hydra.sweep.dir=sweep/in",
                         "hydra.job.name=../../escaped/j", "hydra.sweep.subdir=${hydra.job.id}", "report=false")
    assert not (tmp_path / "escaped").exists()
    assert code == 2 and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("multirun", [[], ["-m", "norm=ln,rms"]])
def test_a_job_name_that_is_not_a_plain_name_makes_no_folder(cli, tiny_args, tmp_path, monkeypatch, multirun):
    """Hostile h21 N262: ``hydra.run.dir=${hydra.job.name}`` with a name holding ``..`` was refused by the job,
    after Hydra had made the folder the name led to, outside. Now refused before Hydra makes any folder."""
    (tmp_path / "in").mkdir()
    monkeypatch.chdir(tmp_path / "in")
    code, out, err = cli(*multirun, *tiny_args, "hydra.job.name=../esc", "hydra.run.dir=${hydra.job.name}",
                         "hydra.sweep.dir=${hydra.job.name}", "report=false")
    assert code == 2 and "must be a plain file name" in err and len(err.strip().splitlines()) == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"] and list((tmp_path / "in").iterdir()) == []


def test_a_job_folder_is_outside_when_it_resolves_out_of_the_sweep(tmp_path):
    from normbench.studies.job_folders import outside

    sweep = str(tmp_path / "s")
    assert outside(sweep, f"{sweep}/0") is None and outside(sweep, f"{sweep}/a/../b") is None
    assert outside(sweep, f"{sweep}/.") is None  # the sweep itself: the job says so in its own line
    assert "outside the sweep directory" in outside(sweep, f"{sweep}/a/../../x")
    assert outside(sweep, f"{sweep}/tags=[../../../x]") is not None


@pytest.mark.parametrize("subdir", ["", "."])
def test_a_sweep_subdir_naming_the_sweep_itself_says_so(cli, tiny_args, tmp_path, subdir):
    """Hostile h13 H03: an empty subdir was called "outside the sweep directory", naming the sweep directory twice."""
    code, out, err = cli("-m", *tiny_args, "hydra.sweep.dir=sweep", f"hydra.sweep.subdir={subdir}", "report=false")
    assert code == 2 and "the sweep directory itself" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "sweep" / "summary.json").exists()


@pytest.mark.parametrize("kind", ["file", "fifo", "link_to_folder"])
def test_a_job_folder_name_that_is_not_a_folder_refuses_the_sweep_before_it_writes(cli, tiny_args, tmp_path, kind):
    # O14: a file named 0 in the sweep folder let Hydra write multirun.yaml, then its mkdir for job 0
    # failed and the sweep stopped there; refused up front now, in one line, with nothing written
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    planted = sweep / "0"
    if kind == "file":
        planted.write_text("mine\n")
    elif kind == "fifo":
        os.mkfifo(planted)
    else:
        (tmp_path / "elsewhere").mkdir()
        planted.symlink_to(tmp_path / "elsewhere")
    code, out, err = cli("-m", *tiny_args, "norm=ln,rms", "hydra.sweep.dir=sweep", "report=false")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "holds 0, which is not a folder" in err, err
    assert sorted(p.name for p in sweep.iterdir()) == ["0"]
    assert kind != "file" or planted.read_text() == "mine\n"


def test_numbered_files_are_left_alone_where_the_job_folders_are_named_otherwise(cli, tiny_args, tmp_path):
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "0").write_text("mine\n")
    code, out, err = cli("-m", *tiny_args, "norm=ln", "hydra.sweep.dir=sweep", "hydra.sweep.subdir=job_${hydra.job.num}",
                         "report=false")
    assert code == 0, err
    assert (sweep / "job_0" / "summary.json").exists() and (sweep / "0").read_text() == "mine\n"


# The files Hydra writes itself (normbench/configuration/hydra_files.py): a planted name is refused in one line,
# exit 2, before anything is written through it; (where it is planted, the overrides that make Hydra write it).
HYDRA_FILES = {
    "sweep_multirun_yaml": ("sweep/multirun.yaml", ["-m", "hydra.sweep.dir=sweep"]),
    "run_hydra_config_yaml": ("run/.hydra/config.yaml", ["hydra.run.dir=run", "hydra.output_subdir=.hydra"]),
    "run_hydra_folder": ("run/.hydra", ["hydra.run.dir=run", "hydra.output_subdir=.hydra"]),
    "sweep_job_overrides_yaml": ("sweep/0/.hydra/overrides.yaml", ["-m", "hydra.sweep.dir=sweep",
                                                                   "hydra.output_subdir=.hydra"]),
}


@pytest.mark.parametrize(("where", "kind"), [(w, k) for w in HYDRA_FILES for k in ("link_to_victim", "dangling_link", "fifo")
                                             if w != "run_hydra_folder" or k == "link_to_victim"])
def test_a_file_hydra_writes_is_never_written_through_a_planted_one(cli, tiny_args, tmp_path, victim, where, kind):
    name, overrides = HYDRA_FILES[where]
    planted = tmp_path / name
    planted.parent.mkdir(parents=True, exist_ok=True)
    plant(kind, planted, victim.parent if where == "run_hydra_folder" else victim)
    code, out, err = cli(*overrides, *tiny_args, "steps=2", "eval_every=1", "report=false")
    assert code == 2 and len(err.strip().splitlines()) == 1 and name.rpartition("/")[2] in err, err
    assert victim.read_text() == VICTIM_TEXT
    assert sorted(p.name for p in victim.parent.iterdir()) == ["victim.txt"]
    assert os.path.lexists(planted) and not (planted.parent / "summary.json").exists()


@pytest.mark.parametrize("kind", ["link_to_victim", "dangling_link", "fifo", "folder"])
def test_the_run_log_writes_beside_a_planted_file(tmp_path, victim, kind):
    import logging

    from normbench.training.logfile import RunLogHandler

    plant(kind, tmp_path / "normbench.log", victim)
    handler = RunLogHandler(tmp_path / "normbench.log", delay=True)
    handler.setFormatter(logging.Formatter("[x] %(message)s"))
    handler.emit(logging.LogRecord("normbench", logging.INFO, __file__, 1, "a line", None, None))
    handler.close()
    assert victim.read_text() == VICTIM_TEXT and handler.path == tmp_path / "normbench-1.log"
    assert (tmp_path / "normbench-1.log").read_text() == "[x] a line\n"
    assert sorted(p.name for p in victim.parent.iterdir()) == ["victim.txt"]


@pytest.mark.parametrize("kind", ["link_to_victim", "dangling_link", "fifo"])
@pytest.mark.parametrize("mode", ["run", "sweep"])
def test_a_planted_normbench_log_is_left_and_the_log_goes_beside_it(cli, tiny_args, tmp_path, victim, mode, kind):
    folder = tmp_path / ("run" if mode == "run" else "sweep/0")
    folder.mkdir(parents=True)
    plant(kind, folder / "normbench.log", victim)
    where = ["hydra.run.dir=run"] if mode == "run" else ["-m", "hydra.sweep.dir=sweep"]
    code, out, err = cli(*where, *tiny_args, "steps=2", "eval_every=1", "report=false")
    assert code == 0, err
    assert victim.read_text() == VICTIM_TEXT
    assert sorted(p.name for p in victim.parent.iterdir()) == ["victim.txt"]
    assert "step 2/2" in (folder / "normbench-1.log").read_text()
