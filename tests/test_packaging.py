"""The configs travel with the wheel: build it, install it in a fresh venv, run one tiny job elsewhere."""

import json
import os
import site
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

from normbench.models import lnlstm_cpu
from tests.waiting import HANG_S  # waits end on a hang, never on a slow machine

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_contains_configs_and_runs_outside_the_checkout(tmp_path, tiny_args):
    dist = tmp_path / "dist"
    build = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist), str(ROOT)],
                           capture_output=True, text=True, timeout=HANG_S)
    assert build.returncode == 0, build.stderr[-2000:]
    (wheel,) = dist.glob("normbench-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())  # the C++ kernels are compiled where they run
    assert {"normbench/models/lnlstm.cpp", "normbench/models/gru.cpp", "normbench/norms/rmsnorm.cpp",
            "normbench/norms/elementwise.cpp",
            "normbench/native/rows.h", "normbench/native/row_blocks.h", "normbench/tasks/digits.csv.gz"} <= names
    # every package of the tree is in the wheel (a hand-kept list in pyproject.toml once left page_check out)
    packages = {str(init.relative_to(ROOT)) for init in (ROOT / "normbench").rglob("__init__.py")}
    assert packages <= names, sorted(packages - names)
    # Dependencies (torch, hydra, ...) come from this interpreter's site-packages; normbench from the wheel.
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    see_site_packages_of_this_interpreter(python)
    install = subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
                             capture_output=True, text=True, timeout=HANG_S)
    assert install.returncode == 0, install.stderr[-2000:]
    work = tmp_path / "elsewhere"
    work.mkdir()
    where = subprocess.run([python, "-c", "import normbench.configuration.config as c; print(c.config_dir())"], cwd=work,
                           capture_output=True, text=True, timeout=HANG_S)
    assert str(env_dir) in where.stdout, (where.stdout, where.stderr)  # the wheel's copy, not the checkout's
    script = env_dir / "bin" / "normbench"
    run = subprocess.run([script, *tiny_args, "placement=in_cell", "norm=ln", "hydra.run.dir=run"], cwd=work,
                         capture_output=True, text=True, timeout=HANG_S)
    assert run.returncode == 0, run.stderr[-2000:]
    summary = json.loads((work / "run" / "summary.json").read_text())
    assert summary["status"] == "ok"
    kernel = summary["environment"]["cell_kernel"]  # compiled-<capability> (compiled-avx512, compiled-avx2, compiled-default)
    assert kernel == "python" if lnlstm_cpu.KERNEL.load() is None else kernel.startswith("compiled-")
    assert {"normbench/sweeps/smoke.yaml", "normbench/sweeps/smoke/ln_fp32.yaml", "normbench/optional/optuna_lr.yaml"} <= names
    sweeps = subprocess.run([python, "-c", "import normbench.configuration.config as c; print(*c.sweep_dirs())"], cwd=work,
                            capture_output=True, text=True, timeout=HANG_S)
    assert sweeps.stdout.split() == [str(Path(where.stdout.strip()).parent / "sweeps")], sweeps.stderr
    helped = subprocess.run([script, "--help"], cwd=work, capture_output=True, text=True, timeout=HANG_S)
    assert "sweep: batch_size, " in helped.stdout and "eps_fp16, " in helped.stdout, helped.stderr[-2000:]
    # +sweep=NAME from the wheel, without -m: a user's sweep of two jobs over a shipped sweep's group
    (work / "mine").mkdir()
    (work / "mine" / "two.yaml").write_text("# @package _global_\nhydra:\n  mode: MULTIRUN\n  sweeper:\n"
                                            "    params:\n      +smoke: ln_fp32,rms_bf16\n")
    swept = subprocess.run([script, "+sweep=two", *tiny_args, "report=false", "hydra.sweep.dir=sw"],
                           cwd=work, capture_output=True, text=True, timeout=HANG_S, env={**os.environ, "NORMBENCH_SWEEPS": "mine"})
    assert swept.returncode == 0, swept.stderr[-2000:]
    assert len(list((work / "sw").rglob("summary.json"))) == 2


def see_site_packages_of_this_interpreter(python: Path) -> None:
    """Appends this interpreter's site-packages to the new venv's sys.path, after its own.

    venv's system_site_packages=True would give the *base* interpreter's, which in a virtual
    environment is not where the dependencies were installed. A .pth line appends a directory
    without processing the .pth files in it, so normbench's own editable install stays out and
    the import comes from the wheel.
    """
    own = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True).stdout.strip()
    ours = [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], *site.getsitepackages()]
    if site.ENABLE_USER_SITE:
        ours.append(site.getusersitepackages())
    dirs = [d for d in dict.fromkeys(ours) if Path(d).is_dir()]
    (Path(own) / "normbench-test-deps.pth").write_text("".join(f"{d}\n" for d in dirs))


# Imported only where a user opts in (a benchmark of GPU kernels), each behind a guard with its reason.
UNDECLARED_OPTIONAL = {"apex", "liger_kernel"}  # normbench/bench/kernels.py: compared only when installed


def test_every_direct_import_is_declared_in_pyproject():
    import ast
    import importlib.metadata
    import re

    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = [*project["dependencies"], *(d for extra in project["optional-dependencies"].values() for d in extra)]
    names = {re.split(r"[<>=!~\[ ;]", d, maxsplit=1)[0].lower().replace("_", "-") for d in declared}
    imported = set()
    for path in (ROOT / "normbench").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    third_party = imported - set(sys.stdlib_module_names) - {"normbench", "hydra_plugins"} - UNDECLARED_OPTIONAL
    # an extra that is not installed has no distribution to ask: the modules whose package name differs
    providers = {"mlflow": ["mlflow-skinny", "mlflow"], **importlib.metadata.packages_distributions()}
    missing = {m: providers.get(m) for m in sorted(third_party)
               if not {p.lower().replace("_", "-") for p in providers.get(m, [m])} & names}
    assert not missing, f"imported but not declared in pyproject.toml: {missing}"
