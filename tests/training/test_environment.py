"""The environment block of a record: what it reads, and where it stands in the house."""

from pathlib import Path

import tomllib

import normbench
from normbench.training import environment

ROOT = Path(__file__).resolve().parents[2]


def test_the_version_is_written_once_and_read_without_the_package_face():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert environment.installed_version() == normbench.__version__ == declared
    assert "import normbench\n" not in (ROOT / "normbench" / "training" / "environment.py").read_text()  # below the package face
    assert "__version__ =" not in (ROOT / "normbench" / "__init__.py").read_text()  # pyproject.toml holds it
