import pytest
import torch


@pytest.fixture(autouse=True)
def keep_torch_threads():
    """The bench CLI sets torch's thread count for its run; give the rest of the suite its own back."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)
