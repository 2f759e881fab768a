"""The cell benchmark's candidates: built as described, equal where they must be, one step each runs."""

import json
import math

import pytest
import torch

from normbench.bench import cells
from normbench.bench.__main__ import main
from normbench.models import cell_kernel_in_use, gru_cpu, lnlstm_cpu
from normbench.models.recurrent import InCellLayer
from normbench.norms import NormSpec

SMALL = cells.CellShape(family="lstm", batch=4, length=5, input_size=3, hidden=8)


def test_norm_calls_are_those_of_the_in_cell_recurrence():
    calls = cells.in_cell_norm_calls(SMALL)
    shapes = [(c.module, c.shape) for c in calls]
    assert shapes[0] == ("norm_x", (4, 5, 32))
    assert shapes.count(("norm_h", (4, 32))) == 5 and shapes.count(("norm_c", (4, 8))) == 5
    assert [c.step for c in calls if c.module == "norm_h"] == list(range(5))
    gru = cells.in_cell_norm_calls(cells.CellShape("gru", 4, 5, 3, 8))
    assert len(gru) == 1 + 5 and gru[1].shape == (4, 24)  # no cell state, so no norm_c


def test_norm_calls_match_the_layer_in_its_autograd_loop():
    """The replayed calls are the ones InCellLayer's step-by-step path makes (its norm modules, hooked)."""
    layer = InCellLayer("lstm", 3, 8, NormSpec("ln"))
    seen = []
    hooks = [getattr(layer, name).register_forward_pre_hook(lambda m, args, name=name: seen.append(
        (name, tuple(args[0].shape)))) for name in ("norm_x", "norm_h", "norm_c")]
    with torch.no_grad():
        layer(torch.randn(4, 5, 3), trace=[])  # a trace asks for the step-by-step path
    for h in hooks:
        h.remove()
    assert seen == [(c.module, c.shape) for c in cells.in_cell_norm_calls(SMALL)]


def test_every_candidate_takes_a_training_step():
    steps, facts = cells.build_steps(SMALL, NormSpec("ln"))
    assert list(steps) == list(cells.CANDIDATES)
    assert facts["norm_calls_total"] == 11 and facts["loop_max_abs_difference_vs_fused"] < 1e-5
    assert set(facts["in_cell_variants_max_abs_difference"]) == {"in_cell_python", "in_cell_torch_compile"}
    assert max(facts["in_cell_variants_max_abs_difference"].values()) < 1e-10  # float64
    assert facts["in_cell_kernel"] == ("python" if lnlstm_cpu.KERNEL.load() is None else lnlstm_cpu.KERNEL.name())
    for name, step in steps.items():
        before = [p.detach().clone() for p in step.model.parameters()]
        loss = float(step())
        assert math.isfinite(loss), name
        assert any(not torch.equal(a, b) for a, b in zip(before, step.model.parameters())), name


def test_a_gru_names_its_kernel_and_its_python_candidate_truly():
    """A GRU's in_cell runs gru.cpp where it builds; its cell_kernel=python is the autograd loop."""
    gru = cells.CellShape("gru", 4, 5, 3, 8)
    steps, facts = cells.build_steps(gru, NormSpec("ln"))
    assert facts["in_cell_kernel"] == ("autograd" if gru_cpu.KERNEL.load() is None else gru_cpu.KERNEL.name())
    assert cell_kernel_in_use(steps["in_cell_python"].model.layer, torch.device("cpu")) == "autograd"
    section = cells.run(family="gru", hidden=8, length=5, batch=4, input_size=3, quick=True, repeats=1,
                        candidates=("in_cell", "in_cell_python"))
    assert "model.cell_kernel=python (the autograd loop)" in section.markdown
    assert any(r.name.startswith("the same with model.cell_kernel=python: the autograd loop") for r in section.ratios)


def test_lower_bound_backpropagates_into_every_norm_call():
    steps, _ = cells.build_steps(SMALL, NormSpec("ln"))
    bound = steps["fused+norm_calls"]
    bound()
    bound()  # a second step must not accumulate onto the first step's input gradients
    assert all(t.grad is not None for t in bound.model.inputs)


def test_quick_cells_cli_writes_its_section(tmp_path, rising_load):
    assert main(["cells", "--quick", "--repeats", "2", "--hidden", "8", "--length", "4", "--batch", "4",
                 "--input-size", "3", "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "cells.json").read_text())
    assert [(r["family"], r["candidate"]) for r in data["rows"]] == [
        (family, name) for family in ("lstm", "gru") for name in cells.CANDIDATES]  # both families by default
    targets = [r for r in data["ratios"] if r["target"]]
    assert [r["target"] for r in targets] == ["<= 1.3", "<= 1.0"] and all(r["value"] > 0 for r in targets)
    assert [t["name"].startswith(f"in-cell LN-{family}") for t, family in zip(targets, ("LSTM", "GRU"))] == [True] * 2
    assert "--hidden 8" in data["command"]
    markdown = (tmp_path / "cells.md").read_text()  # the load is the CLI's, read around the whole section, said once
    assert "Machine: 1-minute load 1.25 at start, 8.75 at the end;" in markdown and markdown.count("load") == 1


def test_the_environment_names_every_isa_limit_set(monkeypatch):
    """ATEN_CPU_CAPABILITY alone leaves MKL's matrix products (nn.LSTM's) at the CPU's widest ISA."""
    from normbench.bench.section import bench_environment

    monkeypatch.delenv("ATEN_CPU_CAPABILITY", raising=False)
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    monkeypatch.setenv("MKL_ENABLE_INSTRUCTIONS", "AVX2")
    env = bench_environment("cpu")
    assert env["isa_limits"] == {"MKL_ENABLE_INSTRUCTIONS": "AVX2"} and env["cpu_capability"]


def test_an_unknown_family_is_one_line_and_exit_2(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["cells", "--family", "lstm,lnlstm"])
    assert exit_.value.code == 2 and "'lnlstm': valid families are rnn, lstm, gru" in capsys.readouterr().err


def test_an_in_cell_variant_computing_something_else_is_not_timed(monkeypatch):
    """As fastrnns checks each custom LSTM before timing it: a wrong kernel stops the benchmark."""
    real_forward = InCellLayer.forward

    def off_by_a_little(self, x, trace=None):
        out = real_forward(self, x, trace)
        return out + 1e-6 if self.kernel == "python" else out
    monkeypatch.setattr(InCellLayer, "forward", off_by_a_little)
    with pytest.raises(AssertionError, match="in_cell_python differs from in_cell by 1e-06"):
        cells.build_steps(SMALL, NormSpec("ln"), candidates=("in_cell", "in_cell_python"))


@pytest.mark.skipif(lnlstm_cpu.KERNEL.load() is None, reason="the compiled LN-LSTM kernel does not build here")
def test_cells_prints_where_an_in_cell_step_goes_and_times_cpu_time(tmp_path):
    """The split comes from lnlstm.cpp's own clocks: every phase counted, the phases within the step's CPU time."""
    assert main(["cells", "--quick", "--repeats", "3", "--family", "lstm", "--hidden", "8", "--length", "4",
                 "--batch", "4", "--input-size", "3", "--candidates", "fused,in_cell", "--clock", "cpu",
                 "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "cells.json").read_text())
    assert "--clock cpu" in data["command"]
    facts = data["shapes"]["lstm h8"]["facts"]
    split = facts["in_cell_split_ms"]
    assert facts["clock"] == "cpu" and all(split[p] > 0 for p in lnlstm_cpu.PHASES)
    assert sum(split[p] for p in lnlstm_cpu.PHASES) <= 1.05 * split["step"]
    assert "Where an in-cell step's" in (tmp_path / "cells.md").read_text()
    assert "the process's CPU time" in (tmp_path / "cells.md").read_text()


def test_a_cpu_clock_on_cuda_is_one_line_and_exit_2(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["cells", "--clock", "cpu", "--device", "cuda"])
    assert exit_.value.code == 2 and "error:" in capsys.readouterr().err


def test_candidates_takes_the_torch_compile_candidates_earlier_name():
    """in_cell_compile, in_cell_torch_compile's name before issue 47's rename, is still a candidate, by its present name."""
    import argparse

    from normbench.bench.options import _candidates

    assert _candidates("fused,in_cell_compile,in_cell_torch_compile") == ("fused", "in_cell_torch_compile")
    with pytest.raises(argparse.ArgumentTypeError, match="valid: "):
        _candidates("in_cell_compiled")


def test_the_python_candidate_is_named_for_what_it_runs():
    """model.cell_kernel=python: the LN-LSTM's hand-written recurrence; every other cell (the LN-GRU, the RMSNorm
    LSTM, whose compiled kernel has no Python twin) the autograd loop."""
    from normbench.bench.cells import python_kernel

    assert python_kernel("lstm", "ln") == "the hand-written Python recurrence"
    assert python_kernel("gru", "ln") == python_kernel("lstm", "rms") == python_kernel("lstm", "bn") == "the autograd loop"
