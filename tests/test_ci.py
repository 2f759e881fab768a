"""CI: .ci/run's compare step passes on two sweeps of the same code, and docs/ci.md's workflow is valid YAML."""

import re
import shlex
from pathlib import Path

import yaml

from normbench.studies.compare import main as compare

ROOT = Path(__file__).resolve().parent.parent


def ci_run_smoke_args() -> list[str]:
    """The smoke sweep's arguments as .ci/run gives them (its `smoke=(...)` array)."""
    (args,) = re.findall(r"^smoke=\((.*)\)$", (ROOT / ".ci" / "run").read_text(), re.M)
    return shlex.split(args)


def test_ci_run_compares_a_baseline_it_makes_with_the_same_code_exactly():
    script = (ROOT / ".ci" / "run").read_text()
    assert re.search(r'^python -m normbench compare "\$baseline_dir" "\$sweep_dir" --exact', script, re.M)
    assert script.count('normbench "${smoke[@]}"') == 2
    assert {"+sweep=smoke", "deterministic=true", "threads=1"} <= set(ci_run_smoke_args())


def test_the_compare_step_passes_on_two_sweeps_of_the_same_code(cli, tmp_path):
    # .ci/run's smoke sweep narrowed to four runs (command-line values replace the sweep's lists)
    narrow = ["model=lstm,transformer", "placement=pre", "+smoke=ln_fp32,bn_bf16", "report=false"]
    for name in ("baseline", "new"):
        code, _, err = cli(*ci_run_smoke_args(), *narrow, f"hydra.sweep.dir={name}")
        assert code == 0, err
    assert compare([str(tmp_path / "baseline"), str(tmp_path / "new"), "--exact"]) == 0
    # the README's compare line (tests/test_readme.py): the same code passes the tolerance gate too
    assert compare(["baseline", "new", "--tolerance", "0.01", "--out", "summary.md"]) == 0
    assert (tmp_path / "summary.md").read_text().startswith("## normbench compare: ")


def test_the_workflow_in_docs_ci_parses_and_runs_smoke_compare_and_posts():
    (block,) = re.findall(r"```yaml\n(.*?)```", (ROOT / "docs" / "ci.md").read_text(), re.S)
    workflow = yaml.safe_load(block)
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert set(triggers) == {"push", "pull_request"}
    steps = workflow["jobs"]["gate"]["steps"]
    commands = "\n".join(step.get("run", "") for step in steps)
    assert "normbench +sweep=smoke" in commands and "python -m normbench compare runs-main runs" in commands
    assert "gh pr comment" in commands and "GITHUB_STEP_SUMMARY" in commands
    uses = [step.get("uses", "") for step in steps]
    assert "actions/cache/save@v4" in uses and "actions/cache/restore@v4" in uses
    restore = next(step for step in steps if step.get("uses") == "actions/cache/restore@v4")
    assert "pull_request.base.sha" in restore["with"]["key"]


def test_every_readme_section_the_docs_cite_exists():
    headings = {line.lstrip("#").strip() for line in (ROOT / "README.md").read_text().splitlines() if line.startswith("#")}
    cited = {m for doc in (ROOT / "docs").glob("*.md") for m in re.findall(r'README: "([^"]+)"', doc.read_text())}
    assert cited and cited <= headings, cited - headings


def fortunes_block() -> str:
    """.ci/run's install of the fortunes corpus: from its comment to its `fi`."""
    (block,) = re.findall(r"^# The fortunes corpus.*?^fi$", (ROOT / ".ci" / "run").read_text(), re.S | re.M)
    return block


def test_ci_run_installs_the_fortunes_corpus_and_fails_when_it_cannot(tmp_path):
    import subprocess

    block = fortunes_block()
    assert "apt-get install -y fortunes -qq" in block
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("apt-get", "sudo"):  # an apt-get that cannot install anything
        (bin_dir / tool).write_text("#!/bin/sh\nexit 100\n")
        (bin_dir / tool).chmod(0o755)
    script = "set -euo pipefail\n" + block.replace("/usr/share/games/fortunes", str(tmp_path / "absent")) + "\necho went-on\n"
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    failed = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env)
    assert failed.returncode == 1 and "went-on" not in failed.stdout
    assert "could not install the fortunes corpus" in failed.stderr
    (tmp_path / "absent").mkdir()  # installed already: apt-get is not asked, CI goes on
    present = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env)
    assert present.returncode == 0 and "went-on" in present.stdout
