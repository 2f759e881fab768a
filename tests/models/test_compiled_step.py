"""model.cell_kernel=torch_compile: the in-cell recurrence with its step through torch.compile, against eager."""

import copy
import json
from pathlib import Path

import pytest
import torch
from torch._dynamo.utils import counters

from normbench.models import cell_kernel_in_use
from normbench.models.recurrent import InCellLayer, _CellLayer
from normbench.norms import NormSpec

CPU = torch.device("cpu")


@pytest.fixture(autouse=True)
def fresh_dynamo():
    """Each test starts with dynamo's caches empty, as each run does (run.py resets them)."""
    torch._dynamo.reset()


def outputs_and_grads(forward, layer, x):
    y = forward(x)
    upstream = torch.linspace(-1, 1, y.numel(), dtype=y.dtype).view_as(y)
    return [y.detach(), *torch.autograd.grad(y, list(layer.parameters()), upstream)]


# bn: per-step statistics, so the step's t reaches the graph, as a tensor: one graph serves t = 0, the steps
# between and the last (an int t was a guard on each: three graphs, and more in a run; each costs ~15 s here)
@pytest.mark.parametrize("family,kind", [("lstm", "ln"), ("lstm", "bn"),
                                         pytest.param("gru", "bn", marks=pytest.mark.slow)])
def test_the_compiled_step_computes_what_the_eager_loop_computes_in_float64(family, kind):
    torch.manual_seed(5)
    layer = InCellLayer(family, 4, 12, NormSpec(kind), kernel="torch_compile").double()
    with torch.no_grad():
        for name, p in layer.named_parameters():
            if "norm" in name:
                p.add_(0.3 * torch.randn_like(p))
    eager = copy.deepcopy(layer)
    x = torch.randn(6, 5, 4, dtype=torch.double)
    counters.clear()
    compiled = outputs_and_grads(layer, layer, x)
    assert counters["stats"]["unique_graphs"] == 1  # dynamo compiled the step (not so with TORCH_COMPILE_DISABLE=1)
    expected = outputs_and_grads(lambda inp: _CellLayer.forward(eager, inp), eager, x)
    for a, b in zip(compiled, expected):
        torch.testing.assert_close(a, b, atol=1e-10, rtol=0)
    for a, b in zip(layer.buffers(), eager.buffers(), strict=True):  # per-step BatchNorm: each step's statistics
        torch.testing.assert_close(a, b, atol=1e-12, rtol=0)
    with torch.no_grad():  # evaluation: the running statistics, steps past the longest seen at the last one's
        longer = torch.randn(3, 7, 4, dtype=torch.double)
        torch.testing.assert_close(layer.eval()(longer), _CellLayer.forward(eager.eval(), longer), atol=1e-10, rtol=0)
    assert copy.deepcopy(layer)._compiled_step is None  # a copy compiles its own step, bound to itself


def test_a_pass_with_hooks_on_the_norms_runs_the_step_eagerly():
    """Probes and loggers hook the norms for one pass; compiling that pass would cost a graph per probe."""
    layer = InCellLayer("gru", 3, 4, NormSpec("ln"), kernel="torch_compile")
    x = torch.randn(2, 3, 3)
    seen = []
    handle = layer.norm_h.register_forward_hook(lambda module, args, out: seen.append(out.shape))
    counters.clear()
    with torch.no_grad():
        hooked = layer(x)
    handle.remove()
    assert len(seen) == 3 and "unique_graphs" not in counters["stats"] and layer._compiled_step is None
    torch.testing.assert_close(layer(x).detach(), hooked, atol=1e-6, rtol=0)


def test_a_pass_with_hooks_gives_per_step_batchnorm_its_step_as_an_int():
    """The eager step of a hooked pass is the eager loop's: its norms get t as the loop counts it, not a tensor."""
    layer = InCellLayer("lstm", 3, 4, NormSpec("bn"), kernel="torch_compile")
    steps = []
    handle = layer.norm_h.register_forward_pre_hook(lambda module, args: steps.append(args[1]))
    layer(torch.randn(2, 3, 3))
    handle.remove()
    assert steps == [0, 1, 2] and all(type(t) is int for t in steps)


def test_the_record_names_the_compiled_step():
    assert cell_kernel_in_use(InCellLayer("rnn", 3, 4, NormSpec("rms"), kernel="torch_compile"), CPU) == "torch_compile"
    assert cell_kernel_in_use(InCellLayer("lstm", 3, 4, NormSpec("ln"), kernel="torch_compile"), CPU) == "torch_compile"


def test_a_run_with_the_compiled_step_records_it_within_dynamos_recompile_limit(cli, tiny_args):
    """Two layers, evaluations (no grad, another batch size) and probes (hooks on the norms): each a
    variant of the step; past torch._dynamo's recompile limit the rest would silently run eager.
    Per-step BatchNorm: its step index and norm.bn_reestimate's momentum per batch (an eager pass)
    would be guards too; this LSTM failed with FailOnRecompileLimitHit when either was."""
    counters.clear()
    code, out, err = cli(*tiny_args, "model=lstm", "model.layers=2", "placement=in_cell", "norm=bn",
                         "model.cell_kernel=torch_compile", "hydra.run.dir=run")
    assert code == 0, err[-2000:]
    assert 0 < counters["stats"]["unique_graphs"] <= 4 < torch._dynamo.config.recompile_limit
    summary = json.loads(Path("run/summary.json").read_text())
    assert summary["status"] == "ok" and summary["environment"]["cell_kernel"] == "torch_compile"
    assert summary["config"]["model"]["cell_kernel"] == "torch_compile"


def test_each_run_of_a_sweep_in_one_process_compiles_afresh(cli, tiny_args):
    """The basic launcher runs a sweep's jobs in one process: without a reset at each run, dynamo's
    recompile budget, shared by every InCellLayer.step, runs out a few runs in (then: a hard failure)."""
    code, out, err = cli("-m", *tiny_args, "model=gru", "placement=in_cell", "norm=rms,dyt,scale,bn,ln",
                         "model.cell_kernel=torch_compile", "steps=2", "eval_every=2", "hydra.sweep.dir=sweep", "report=false")
    assert code == 0, err[-3000:]
    records = [json.loads(p.read_text()) for p in Path("sweep").rglob("summary.json")]
    assert sorted((r["axes"]["norm"], r["status"], r["environment"]["cell_kernel"]) for r in records) == [
        (norm, "ok", "torch_compile") for norm in sorted(["rms", "dyt", "scale", "bn", "ln"])]


def test_the_cpp_kernels_refuse_another_device():
    layer = InCellLayer("gru", 3, 4, NormSpec("ln"), kernel="compiled")
    with pytest.raises(ValueError, match="model.cell_kernel=compiled runs on a CPU only, not meta"):
        cell_kernel_in_use(layer, torch.device("meta"))
