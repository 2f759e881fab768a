"""norm.gain_offset inside the recurrent cells, whose fused paths read the norm's gain directly."""

import pytest
import torch

from normbench.models import ModelShape, build_model
from normbench.norms import NormSpec


@pytest.mark.parametrize("family,placement,kernel", [("lstm", "in_cell", "python"), ("lstm", "in_cell", "auto"),
                                                     ("gru", "in_cell", "auto"), ("gru", "gate", "auto"),
                                                     ("rnn", "pre", "auto")])
def test_gain_offset_cells_equal_the_plain_cells_and_train_the_offset(family, placement, kernel):
    outputs, grads = [], []
    for gain_offset in (False, True):
        torch.manual_seed(5)
        model = build_model(ModelShape(family, hidden=8, embed=8, cell_kernel=kernel),
                            NormSpec("ln", gamma_init=0.3, gain_offset=gain_offset), placement,
                            input_kind="features", input_dim=3, n_outputs=2, readout="last")
        x = torch.randn(4, 7, 3)
        out = model(x)
        out.sum().backward()
        outputs.append(out.detach())
        gains = sorted((n, p.grad) for n, p in model.named_parameters() if n.endswith(("weight_offset", "norm.weight")))
        assert gains and all(g is not None for _, g in gains)
        grads.append([g for _, g in gains])
    torch.testing.assert_close(outputs[1], outputs[0], rtol=1e-5, atol=1e-6)
    for plain, offset in zip(*grads):
        torch.testing.assert_close(offset, plain, rtol=1e-4, atol=1e-6)
