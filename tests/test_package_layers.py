"""Packages by role import one way: each package's docstring says what it may import, and this holds it.

Read from the code's import statements (top-level and deferred alike), not by importing it.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "normbench"

# package: the packages of normbench it must never import (the ones above it)
ABOVE = {
    # two floors side by side: BatchNorm's masking over real steps is the norms' own (norms/masking.py)
    "tasks": ("norms", "configuration", "records", "models", "training", "bench", "studies", "analysis", "report"),
    "norms": ("tasks", "configuration", "records", "models", "training", "bench", "studies", "analysis", "report"),
    "configuration": ("records", "models", "training", "bench", "studies", "analysis", "report"),
    "records": ("models", "training", "bench", "studies", "analysis", "report"),
    "models": ("records", "training", "bench", "studies", "analysis", "report"),
    "analysis": ("models", "report", "training", "bench", "studies"),
    "report": ("models", "training", "bench", "studies"),
    # a run writes what it measured; verdicts on it are the analysis's, from the records
    "training": ("analysis", "report", "bench", "studies"),
    "bench": ("studies",),
    "page_check": ("configuration", "records", "models", "training", "bench", "studies", "analysis", "norms", "tasks"),
}


def imported_packages(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            if node.module == "normbench":
                names |= {f"normbench.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
    return {n.split(".")[1] for n in names if n.startswith("normbench.")}


@pytest.mark.parametrize("package", sorted(ABOVE))
def test_a_package_imports_nothing_above_it(package):
    wrong = {f"{path.relative_to(PACKAGE)} imports normbench.{above}"
             for path in (PACKAGE / package).rglob("*.py") for above in imported_packages(path) & set(ABOVE[package])}
    assert not wrong, sorted(wrong)


def test_the_report_reads_one_result_and_computes_no_statistics():
    """report/ imports from the analysis only the result object and its types (analysis/result.py),
    top-level and deferred imports alike: every statistic it shows was decided there, once."""
    wrong = set()
    for path in (PACKAGE / "report").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = ([node.module] if node.module != "normbench.analysis"
                         else [f"normbench.analysis.{a.name}" for a in node.names])
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            wrong |= {f"{path.relative_to(PACKAGE)} imports {n}" for n in names
                      if n.startswith("normbench.analysis") and n != "normbench.analysis.result"}
    assert not wrong, sorted(wrong)


def test_the_training_loop_stands_on_the_hook_interface_not_on_the_loggers():
    """train.py and checkpoint.py take Hook from hooks.py: the loop never loads TensorBoard, MLflow or W&B code."""
    for name in ("train.py", "checkpoint.py"):
        imported = {node.module for node in ast.walk(ast.parse((PACKAGE / "training" / name).read_text()))
                    if isinstance(node, ast.ImportFrom)}
        assert "normbench.training.hooks" in imported and "normbench.training.loggers" not in imported, name


def test_the_root_holds_the_package_face_and_the_lowest_floor_only():
    """The face (__init__, __main__), checks.py, and one forwarder per subcommand whose module is not a
    package of that name (`python -m normbench.compare`: the previous release's spelling)."""
    from normbench.__main__ import SUBCOMMANDS

    forwarders = {f"{name}.py" for name in SUBCOMMANDS if not (PACKAGE / name / "__main__.py").exists()}
    assert forwarders == {"compare.py", "study.py", "tune.py", "rerun.py", "evaluate.py"}
    assert sorted(p.name for p in PACKAGE.glob("*.py")) == sorted(["__init__.py", "__main__.py", "checks.py", *forwarders])
    assert imported_packages(PACKAGE / "checks.py") == set()
    for name in forwarders:  # a forwarder hands over to the subcommand and holds nothing else
        tree = ast.parse((PACKAGE / name).read_text())
        assert {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} == {"normbench.__main__"}, name


def _module_graph() -> dict[str, set[str]]:
    """{module: the normbench modules it imports}, top-level and deferred imports alike."""
    modules = {".".join(("normbench", *p.relative_to(PACKAGE).with_suffix("").parts)).removesuffix(".__init__"): p
               for p in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("normbench"):
                for alias in node.names:  # `from normbench.norms import layers` imports the submodule
                    sub = f"{node.module}.{alias.name}"
                    targets.add(sub if sub in modules else node.module)
            elif isinstance(node, ast.Import):
                targets |= {a.name for a in node.names if a.name in modules}
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def test_no_module_imports_one_that_imports_it_back():
    """No circle of imports, inside a package or across packages (a package face is left out: it only hands names on)."""
    graph = {m: {t for t in ts if not PACKAGE.joinpath(*t.split(".")[1:], "__init__.py").exists()}
             for m, ts in _module_graph().items()}
    done, path = set(), []

    def visit(module):
        if module in path:
            raise AssertionError(" -> ".join(path[path.index(module):] + [module]))
        if module in done:
            return
        path.append(module)
        for target in sorted(graph[module]):
            visit(target)
        path.pop()
        done.add(module)

    for module in sorted(graph):
        visit(module)
