import pytest

from normbench.config import to_config
from normbench.train import learning_rate


@pytest.mark.parametrize("schedule", ["constant", "cosine"])
def test_warmup_then_schedule(compose, schedule):
    cfg = to_config(compose("lr=1.0", "steps=100", "warmup_steps=10", f"optim.schedule={schedule}"))
    assert learning_rate(cfg, 1) == pytest.approx(0.1)
    assert learning_rate(cfg, 10) == pytest.approx(1.0)
    if schedule == "constant":
        assert learning_rate(cfg, 100) == 1.0
    else:
        assert learning_rate(cfg, 55) == pytest.approx(0.5) and learning_rate(cfg, 100) == pytest.approx(0.0)
