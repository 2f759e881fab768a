"""The statistics import no presentation: normbench.analysis reads records (normbench.records.reading), the report shows."""

import subprocess
import sys
from pathlib import Path

from tests.waiting import HANG_S  # waits end on a hang, never on a slow machine


def test_analysis_imports_nothing_shown():
    root = Path(__file__).resolve().parents[2]
    modules = sorted("normbench.analysis." + ".".join(p.relative_to(root / "normbench" / "analysis").with_suffix("").parts)
                     for p in (root / "normbench" / "analysis").rglob("*.py") if p.name != "__init__.py")
    code = ("import importlib, sys\n"
            f"for name in {modules!r}: importlib.import_module(name)\n"
            "print(sorted(m for m in sys.modules if m.startswith('normbench.report')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, timeout=HANG_S)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
