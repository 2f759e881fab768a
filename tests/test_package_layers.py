"""Packages by role import one way: each package's docstring says what it may import, and this holds it.

Read from the code's import statements (top-level and deferred alike), not by importing it.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "normbench"

# package: the packages of normbench it must never import (the ones above it)
ABOVE = {
    "tasks": ("configuration", "records", "models", "training", "bench", "studies", "analysis", "report"),
    "norms": ("configuration", "records", "models", "training", "bench", "studies", "analysis", "report"),
    "configuration": ("records", "models", "training", "bench", "studies", "analysis", "report"),
    "records": ("models", "training", "bench", "studies", "analysis", "report"),
    "models": ("records", "training", "bench", "studies", "analysis", "report"),
    "analysis": ("models", "report", "training", "bench", "studies"),
    "report": ("models", "training", "bench", "studies"),
    "training": ("report", "bench", "studies"),
    "bench": ("studies",),
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


def test_the_root_holds_the_package_face_and_the_lowest_floor_only():
    assert sorted(p.name for p in PACKAGE.glob("*.py")) == ["__init__.py", "__main__.py", "checks.py"]
    assert imported_packages(PACKAGE / "checks.py") == set()
