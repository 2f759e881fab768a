"""The crafted-record factory of tests/report/conftest.py, for the statistics' tests."""

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("record_factory", Path(__file__).parent.parent / "report" / "conftest.py")
_factory = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_factory)

write_record_fixture = _factory.write_record_fixture
runs_of_fixture = _factory.runs_of_fixture
