import os

import pytest
import torch


@pytest.fixture(autouse=True)
def keep_torch_threads():
    """The bench CLI sets torch's thread count for its run; give the rest of the suite its own back."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def rising_load(monkeypatch):
    """The 1-minute load reads 1.25 at its first reading and 8.75 at every later one: a section that printed
    a load it read after its start as the load at start would say 8.75."""
    readings = iter([(1.25, 1.0, 1.0)])
    monkeypatch.setattr(os, "getloadavg", lambda: next(readings, (8.75, 1.0, 1.0)))
