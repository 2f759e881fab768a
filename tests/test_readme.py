"""Every command the README shows is run: by .ci/run, here (tiny), or by the tests named beside it.

A command added to the README without an entry in RUN_BY fails the first test, so the README cannot
grow a command nothing runs. Tiny here means the README's own arguments plus the suite's tiny
settings (a few steps of a small model); a sweep's axes narrowed to one value where that is all
that changes (`norm=ln` for the sweep file's `ln,bn`).
"""

import ast
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TINY, TINY_TASK, normbench
from tests.waiting import HANG_S

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
CI = ".ci/run"
HERE = "tests/test_readme.py"


def readme_commands() -> list[str]:
    """The commands of the README's bash blocks: continuation lines joined, comments dropped."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", README.read_text(), re.S):
        for line in block.replace("\\\n", " ").splitlines():
            command = re.sub(r"\s+#\s.*$", "", line).strip()
            if command:
                commands.append(" ".join(command.split()))
    return commands


# README command (as readme_commands gives it) -> where it is run: CI, or "FILE::TEST" names whose
# bodies hold every listed word (the command's form, checked below), here or in the package's tests.
RUN_BY = {
    'pip install torch==2.13.0 -e ".[dev,tensorboard,parquet,mlflow,wandb]"': {CI: []},
    "python -m pytest -q": {CI: []},
    "apt-get install -y fortunes": {CI: []},
    "python -m normbench": {f"{HERE}::test_the_run_commands_run": []},
    "python -m normbench norm=rms placement=in_cell model=gru task=adding seed=3": {f"{HERE}::test_the_run_commands_run": []},
    "python -m normbench --help": {f"{HERE}::test_every_documented_entry_point_answers_help": []},
    # the headline sweep (between the README's "headline sweep" marks): a sweep of arms and seeds that
    # times its own arms at its end
    "python -m normbench -m norm=ln,bn placement=in_cell model.hidden=32 task=adding task.length=24 task.min_length=4 "
    "optim.schedule=cosine steps=400 eval_every=50 seed=0,1,2": {
        "tests/studies/test_headline_sweep.py::test_the_headline_sweep_ends_with_the_answer_its_report_gives": ["_tiny_command"]},
    "normbench +sweep=batch_size": {f"{HERE}::test_a_sweep_file_its_resume_and_its_report_run": []},
    "normbench +sweep=smoke": {CI: [], "tests/test_ci.py::test_the_compare_step_passes_on_two_sweeps_of_the_same_code": ["ci_run_smoke_args"]},
    "normbench report multirun/2026-11-29/10-00-00 [more sweep or run dirs ...] [--out DIR] [--jobs N]": {
        f"{HERE}::test_a_sweep_file_its_resume_and_its_report_run": [],
        "tests/report/test_report_arguments.py::test_jobs_reach_the_report": ["--jobs"]},
    "python -m normbench study +sweep=batch_size --budget 30m": {
        "tests/studies/test_study.py::test_a_tiny_study_runs_rounds_and_writes_its_plan_and_report": ["--max-seeds", "report.html"],
        "tests/studies/test_study.py::test_a_study_of_a_sweep_file_is_described_as_its_multirun_describes_itself": ["+sweep=batch_size"],
        "tests/studies/test_study.py::test_budget_units": ["\"2m\""]},
    "python -m normbench tune --out multirun/tuned-lstm model=lstm task=digits_rows norm=none,ln,bn "
    "placement=pre,post,in_cell,gate hydra/launcher=local hydra.launcher.n_jobs=2": {f"{HERE}::test_the_tune_command_runs_both_stages": []},
    "python -m normbench logger=tensorboard model=transformer": {
        "tests/training/test_loggers.py::test_tensorboard_writes_scalars_histograms_and_hparams": ['"logger=tensorboard"', '"model=transformer"']},
    "python -m normbench 'logger=[tensorboard,mlflow,wandb,csv]'": {
        "tests/training/test_loggers.py::test_the_logger_group_selects_several_at_once": ["logger=[tensorboard,mlflow,wandb,csv]"],
        "tests/training/test_wandb_logger.py::test_several_loggers_read_back_hold_the_same_run_under_the_same_names": ["logger=[tensorboard,mlflow,wandb]"],
        "tests/training/test_csv_logger.py::test_csv_and_tensorboard_hold_the_same_scalars_under_the_same_names": ["logger=[csv,tensorboard]"]},
    "python -m normbench -m +sweep=batch_size hydra.sweep.dir=multirun/bs": {f"{HERE}::test_a_sweep_file_its_resume_and_its_report_run": []},
    "python -m normbench -m +sweep=batch_size hydra.sweep.dir=multirun/bs resume=true": {
        f"{HERE}::test_a_sweep_file_its_resume_and_its_report_run": []},
    "python -m normbench -m +sweep=smoke seed=0,1,2 hydra.sweep.dir=baseline": {
        "tests/test_ci.py::test_the_compare_step_passes_on_two_sweeps_of_the_same_code": ['"baseline"']},
    "python -m normbench -m +sweep=smoke seed=0,1,2 hydra.sweep.dir=new": {
        "tests/test_ci.py::test_the_compare_step_passes_on_two_sweeps_of_the_same_code": ['"new"']},
    "python -m normbench compare baseline new --tolerance 0.01 --out summary.md": {
        "tests/test_ci.py::test_the_compare_step_passes_on_two_sweeps_of_the_same_code": ['"--tolerance", "0.01", "--out"']},
}


def _test_source(node_id: str) -> str:
    path, name = node_id.split("::")
    tree = ast.parse((ROOT / path).read_text())
    (func,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name] or [None]
    assert func is not None, f"{node_id}: no such test"
    return ast.get_source_segment((ROOT / path).read_text(), func)


def test_every_readme_command_is_run_somewhere():
    commands = readme_commands()
    assert len(commands) > 10
    assert set(commands) == set(RUN_BY), {"not run": set(commands) - set(RUN_BY), "not in the README": set(RUN_BY) - set(commands)}
    ci = (ROOT / CI).read_text()
    for command, where in RUN_BY.items():
        assert where, command
        for node_id, words in where.items():
            if node_id == CI:  # .ci/run runs the command itself (python -m pip, quiet)
                args = command.replace("pip install", "python -m pip install -q").replace("normbench +sweep=smoke", 'normbench "${smoke[@]}"')
                assert args in ci, command
                continue
            source = _test_source(node_id)
            assert all(word in source for word in words), (command, node_id)


def test_the_headline_sweep_is_the_marked_one():
    text = README.read_text()
    marked = text.split("<!-- headline sweep:")[1].split("<!-- headline sweep: end -->")[0]
    (block,) = re.findall(r"```bash\n(.*?)```", marked, re.S)
    assert re.sub(r"\s+#\s.*$", "", block.strip()) in RUN_BY


def _args_of(command: str) -> list[str]:
    words = shlex.split(command)
    start = 3 if words[:3] == ["python", "-m", "normbench"] else 1
    return words[start:]


def test_the_run_commands_run(tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    runs = [c for c in readme_commands() if c.startswith("python -m normbench") and "-m" not in _args_of(c)
            and not any(a.startswith(("--", "logger=")) for a in _args_of(c)) and "study" not in c and "tune" not in c]
    assert runs == ["python -m normbench", "python -m normbench norm=rms placement=in_cell model=gru task=adding seed=3"]
    for i, command in enumerate(runs):
        small_task = TINY_TASK[1:] if "task=adding" in _args_of(command) else []  # the adding task, short
        assert normbench(*_args_of(command), *TINY, *small_task, f"hydra.run.dir=run{i}") == 0, command
        shown = capfd.readouterr()
        assert "ok | final val " in shown.out + shown.err  # the line the README shows


def test_a_sweep_file_its_resume_and_its_report_run(tmp_path, monkeypatch, capsys):
    """The sweep file, its resume and the report, narrowed to one job of batch_size's 54 (norm=ln, lr 0.003,
    batch 16, seed 0) and tiny; the resume runs nothing again."""
    monkeypatch.chdir(tmp_path)
    narrow = ["norm=ln", "batch_size=16", "lr=0.003", "seed=0", *[a for a in TINY if not a.startswith("batch_size=")], "report=false"]
    sweep, resume = [c for c in readme_commands() if "hydra.sweep.dir=multirun/bs" in c]
    assert normbench(*_args_of("normbench +sweep=batch_size"), *narrow, "hydra.sweep.dir=first") == 0
    assert len(list((tmp_path / "first").rglob("summary.json"))) == 1
    assert normbench(*_args_of(sweep), *narrow) == 0
    record = next((tmp_path / "multirun" / "bs").rglob("summary.json"))
    before = record.read_text()
    capsys.readouterr()
    assert normbench(*_args_of(resume), *narrow) == 0
    assert record.read_text() == before and len(list((tmp_path / "multirun" / "bs").rglob("summary.json"))) == 1
    (report,) = [c for c in readme_commands() if c.startswith("normbench report ")]
    assert _args_of(report)[0] == "report"
    assert normbench("report", "multirun/bs", "--out", "rep") == 0
    assert {"report.md", "report.html", "runs.csv", "summary.csv", "claims.csv"} <= {p.name for p in (tmp_path / "rep").iterdir()}


@pytest.mark.slow  # two child sweeps and their workers start torch: ~45 s on a loaded 2-core machine
def test_the_tune_command_runs_both_stages(tmp_path, monkeypatch):
    """The README's tune line, narrowed to one arm (norm=ln placement=pre) on one worker, tiny:
    selection over the lr grid on 2 seeds, then evaluation at the chosen lr on 3 fresh seeds."""
    monkeypatch.chdir(tmp_path)
    (command,) = [c for c in readme_commands() if " tune " in c]
    args = [a for a in _args_of(command) if not a.startswith(("norm=", "placement=", "hydra.launcher.n_jobs="))]
    assert normbench(*args, "norm=ln", "placement=pre", "hydra.launcher.n_jobs=1", *TINY, "steps=4") == 0
    out = tmp_path / "multirun" / "tuned-lstm"
    assert len(list((out / "evaluation").rglob("summary.json"))) == 3 and (out / "report.html").is_file()


@pytest.mark.filterwarnings("ignore:'normbench.*__main__' found in sys.modules:RuntimeWarning")  # the suite imported it already
@pytest.mark.parametrize("name", ["compare", "study", "tune", "rerun", "evaluate", "report", "bench"])
def test_every_documented_entry_point_answers_help(name, capsys):
    """`normbench NAME --help`, `python -m normbench NAME --help` and the previous release's
    `python -m normbench.NAME --help` (normbench/NAME.py or the package's __main__) all exit 0."""
    import runpy

    from normbench.__main__ import SUBCOMMANDS

    assert set(SUBCOMMANDS) == {"compare", "study", "tune", "rerun", "evaluate", "report", "bench"}
    assert normbench(name, "--help") == 0 and "usage:" in capsys.readouterr().out
    argv = sys.argv
    sys.argv = [f"normbench.{name}", "--help"]
    try:
        with pytest.raises(SystemExit) as exit_:
            runpy.run_module(f"normbench.{name}", run_name="__main__", alter_sys=True)
    finally:
        sys.argv = argv
    assert exit_.value.code in (0, None) and "usage:" in capsys.readouterr().out


def test_the_old_spelling_and_the_readmes_help_answer_as_processes(tmp_path):
    """As the shell runs them, from another folder: `python -m normbench.compare --help` (the issue's
    example of a spelling that had gone) and the README's `python -m normbench --help`."""
    for args, says in ((["-m", "normbench.compare", "--help"], "usage: "), (["-m", "normbench", "--help"], "== Commands ==")):
        done = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=HANG_S, cwd=tmp_path)
        assert done.returncode == 0 and says in done.stdout, done.stderr[-2000:]


def test_the_docs_name_the_metric_compare_compares():
    """README and docs/ci.md say which score the gate compares; it is compare's default, the report's primary."""
    from normbench.analysis import rules
    from normbench.studies import compare

    assert rules.PRIMARY == "final_val" and compare.SCORE_COLUMNS[rules.PRIMARY]
    for page in (README, ROOT / "docs" / "ci.md"):
        text = " ".join(page.read_text().split())
        assert "(`metrics.final_val`, the last validation value" in text, page
        assert "`metrics.best_val`, the best validation value" not in text and "change of X in `best_val`" not in text


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors of a Markdown page's headings: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#+ (.+)$", page.read_text(), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def test_every_link_between_the_readme_and_the_docs_resolves():
    """The README's sections moved to docs/: every relative link of the README and the docs pages
    names a file that exists and, for a page#anchor, a heading of that page."""
    broken = []
    for page in [README, *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if re.match(r"[a-z]+://", target) or target.startswith("mailto:"):
                continue
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            if not file.exists() or (anchor and file.suffix == ".md" and anchor not in _anchors(file)):
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, broken
