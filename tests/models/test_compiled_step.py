"""model.cell_kernel=compile: the in-cell recurrence with its step through torch.compile, against eager."""

import copy
import json
from pathlib import Path

import pytest
import torch

from normbench.models import cell_kernel_in_use
from normbench.models.recurrent import InCellLayer, _CellLayer
from normbench.norms import NormSpec

CPU = torch.device("cpu")


def outputs_and_grads(forward, layer, x):
    y = forward(x)
    upstream = torch.linspace(-1, 1, y.numel(), dtype=y.dtype).view_as(y)
    return [y.detach(), *torch.autograd.grad(y, list(layer.parameters()), upstream)]


# bn: per-step statistics, so the step's t reaches the graph (each compile costs ~15 s on a small CPU)
@pytest.mark.parametrize("family,kind", [("lstm", "ln"), pytest.param("gru", "bn", marks=pytest.mark.slow)])
def test_the_compiled_step_computes_what_the_eager_loop_computes_in_float64(family, kind):
    torch.manual_seed(5)
    layer = InCellLayer(family, 4, 12, NormSpec(kind), kernel="compile").double()
    with torch.no_grad():
        for name, p in layer.named_parameters():
            if "norm" in name:
                p.add_(0.3 * torch.randn_like(p))
    eager = copy.deepcopy(layer)
    x = torch.randn(6, 5, 4, dtype=torch.double)
    compiled = outputs_and_grads(layer, layer, x)
    expected = outputs_and_grads(lambda inp: _CellLayer.forward(eager, inp), eager, x)
    assert layer._compiled_step is not None and eager._compiled_step is None  # the compiled path ran, once
    for a, b in zip(compiled, expected):
        torch.testing.assert_close(a, b, atol=1e-10, rtol=0)
    assert copy.deepcopy(layer)._compiled_step is None  # a copy compiles its own step, bound to itself


def test_the_record_names_the_compiled_step():
    assert cell_kernel_in_use(InCellLayer("rnn", 3, 4, NormSpec("rms"), kernel="compile"), CPU) == "compile"
    assert cell_kernel_in_use(InCellLayer("lstm", 3, 4, NormSpec("ln"), kernel="compile"), CPU) == "compile"


def test_a_run_with_the_compiled_step_records_it_within_dynamos_recompile_limit(cli, tiny_args):
    """Two layers, evaluations (no grad, another batch size) and probes (hooks on the norms): each a
    variant of the step; past torch._dynamo's recompile limit the rest would silently run eager."""
    from torch._dynamo.utils import counters

    counters.clear()
    code, out, err = cli(*tiny_args, "model=gru", "model.layers=2", "placement=in_cell", "norm=rms",
                         "model.cell_kernel=compile", "hydra.run.dir=run")
    assert code == 0, err[-2000:]
    assert 0 < counters["stats"]["unique_graphs"] <= 4 < torch._dynamo.config.recompile_limit
    summary = json.loads(Path("run/summary.json").read_text())
    assert summary["status"] == "ok" and summary["environment"]["cell_kernel"] == "compile"
    assert summary["config"]["model"]["cell_kernel"] == "compile"
