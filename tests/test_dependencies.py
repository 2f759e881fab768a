"""What normbench imports is what it declares: each third-party module belongs to a dependency in
pyproject.toml, or to an extra (imported where its feature runs), or to an optional vendor kernel."""

import ast
import re
import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11's tomllib")

ROOT = Path(__file__).resolve().parent.parent

# imported module -> the distribution that provides it
PROVIDED_BY = {"PIL": "pillow", "hydra": "hydra-core", "jinja2": "jinja2", "matplotlib": "matplotlib", "numpy": "numpy",
               "omegaconf": "omegaconf", "pandas": "pandas", "scipy": "scipy", "torch": "torch", "tqdm": "tqdm",
               "yaml": "pyyaml", "filelock": "filelock", "mlflow": "mlflow-skinny", "wandb": "wandb", "sklearn": "scikit-learn",
               "joblib": "joblib", "hydra_plugins": "hydra-joblib-launcher"}
VENDOR_KERNELS = {"apex", "liger_kernel"}  # timed by bench kernels where installed (bench/kernels.py VENDOR_IMPLS)


def imported() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in (ROOT / "normbench").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else []
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "normbench":
                    found.setdefault(top, set()).add(path.relative_to(ROOT).as_posix())
    return found


def declared() -> tuple[set[str], dict[str, set[str]]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    name = lambda spec: re.match(r"[A-Za-z0-9_.-]+", spec).group(0).lower()  # noqa: E731
    extras = {extra: {name(s) for s in specs} for extra, specs in project["optional-dependencies"].items()}
    return {name(s) for s in project["dependencies"]}, extras


def test_every_import_is_a_declared_dependency_or_an_extras():
    required, extras = declared()
    optional = set().union(*extras.values())
    modules = imported()
    assert set(modules) - VENDOR_KERNELS <= set(PROVIDED_BY), set(modules) - VENDOR_KERNELS - set(PROVIDED_BY)
    for module, files in modules.items():
        if module in VENDOR_KERNELS:
            continue
        assert PROVIDED_BY[module] in required | optional, (module, files)


def test_seaborn_is_gone_and_scikit_learn_is_the_digits_fallback_alone():
    required, extras = declared()
    modules = imported()
    assert "seaborn" not in modules and "seaborn" not in required | set().union(*extras.values())
    assert "scikit-learn" not in required and "scikit-learn" in extras["dev"]
    assert modules["sklearn"] == {"normbench/tasks/digits.py"}
