"""Which recurrence an in-cell layer runs: decided once (kernel_choice.cell_recurrences), asked of the device
(models/kernel_choice.py), and run by the layer's methods."""

import pytest
import torch

from normbench.configuration.families import RECURRENT, described
from normbench.models import lnlstm_cpu
from normbench.models.kernel_choice import cell_recurrences, recorded_name, recurrence_on
from normbench.models.recurrent import GATES, InCellLayer
from normbench.norms import NormSpec

META = torch.device("meta")  # no compiled kernel runs there


def test_each_hand_written_recurrence_the_schema_names_is_a_method_of_the_layer():
    for family in (f for f in RECURRENT if f in GATES):  # the cells with an in-cell layer (not minGRU/minLSTM)
        assert tuple(InCellLayer(family, 3, 4, NormSpec("ln")).recurrences()) == described(family).hand_written


def test_what_each_setting_may_run_preferred_first():
    assert cell_recurrences("lstm", "ln", "native", "auto") == ("compiled", "python", "autograd")
    assert cell_recurrences("gru", "ln", "native", "auto") == ("compiled", "autograd")
    assert cell_recurrences("lstm", "ln", "native", "python") == ("python", "autograd")
    assert cell_recurrences("gru", "ln", "native", "python") == ("autograd",)
    assert cell_recurrences("gru", "ln", "native", "compiled") == ("compiled",)  # no fall-back: refused where it cannot run
    assert cell_recurrences("lstm", "ln", "native", "compiled", full_precision=False) == ("autograd",)
    # norm.impl=auto, the default, builds native LayerNorm (LN has no other kernel): the LN kernels run
    assert cell_recurrences("lstm", "ln", "auto", "auto") == ("compiled", "python", "autograd")
    assert cell_recurrences("gru", "ln", "auto", "compiled") == ("compiled",)
    # RMSNorm: the compiled kernels (lnlstm.cpp, gru.cpp, not centred) by every impl but reference; no Python
    # recurrence
    for family in ("lstm", "gru"):
        for impl in ("auto", "native", "compiled"):
            assert cell_recurrences(family, "rms", impl, "auto") == ("compiled", "autograd")
            assert cell_recurrences(family, "rms", impl, "python") == ("autograd",)
            assert cell_recurrences(family, "rms", impl, "compiled") == ("compiled",)
        assert InCellLayer(family, 3, 4, NormSpec("rms")).hand_written
        assert not InCellLayer(family, 3, 4, NormSpec("rms", groups=2)).hand_written  # per group: not the kernel's RMSNorm
    for family, kind, impl in (("rnn", "ln", "native"), ("rnn", "rms", "native"), ("gru", "rms", "reference"),
                               ("lstm", "rms", "reference"), ("lstm", "ln", "reference"), ("lstm", "bn", "native")):
        assert cell_recurrences(family, kind, impl, "compiled") == ()  # no hand-written one: compiled is inert
        assert cell_recurrences(family, kind, impl, "torch_compile") == ("torch_compile",)


def test_the_device_picks_the_first_it_offers_and_cpp_alone_is_refused_elsewhere(monkeypatch):
    assert recurrence_on("lstm", "ln", "native", "auto", META) == "python"
    assert recurrence_on("gru", "ln", "native", "auto", META) == "autograd"
    assert recurrence_on("gru", "dyt", "native", "compiled", META) is None
    assert recurrence_on("gru", "rms", "native", "auto", META) == "autograd"  # no Python recurrence for RMSNorm
    assert recurrence_on("lstm", "rms", "native", "auto", META) == "autograd"  # no Python recurrence for RMSNorm
    with pytest.raises(ValueError, match="model.cell_kernel=compiled runs on a CPU only, not meta"):
        recurrence_on("gru", "ln", "native", "compiled", META)
    assert recurrence_on("gru", "ln", "native", "compiled", META, full_precision=False) == "autograd"  # autocast: no kernel
    monkeypatch.setattr(lnlstm_cpu.KERNEL, "module", None)
    monkeypatch.setattr(lnlstm_cpu.KERNEL, "unavailable", "RuntimeError: no compiler (test)")
    assert recurrence_on("lstm", "ln", "native", "auto", torch.device("cpu")) == "python"
    with pytest.raises(ValueError, match="the compiled kernel is unavailable: RuntimeError: no compiler"):
        recurrence_on("lstm", "ln", "native", "compiled", torch.device("cpu"))


def test_the_recorded_names():
    assert recorded_name("compiled", "lstm") == lnlstm_cpu.KERNEL.name() and recorded_name("compiled", "lstm").startswith("compiled-")
    assert recorded_name("torch_compile", "gru", padded=True) == "autograd-padded"
    assert [recorded_name(n, "lstm", padded=True) for n in ("python", "autograd", None)] == ["python", "autograd", None]


def test_a_compiled_kernel_asked_for_by_name_says_only_the_refusal(monkeypatch, caplog):
    """Hostile h21 B9 (N181, N182, N196): 'compiled LN-LSTM kernel unavailable, using the Python recurrence'
    then the refusal; the fallback's line belongs to auto, which runs the fallback."""
    from normbench.native import cpu_build

    def no_build(*_args):
        raise RuntimeError("no folder for the build (test)")
    monkeypatch.setattr(cpu_build, "build", no_build)
    for name, value in (("module", None), ("unavailable", None), ("fallback_said", False)):
        monkeypatch.setattr(lnlstm_cpu.KERNEL, name, value)
    with pytest.raises(ValueError, match="the compiled kernel is unavailable: RuntimeError: no folder"):
        recurrence_on("lstm", "ln", "native", "compiled", torch.device("cpu"))
    assert "using the Python recurrence" not in caplog.text
    assert recurrence_on("lstm", "ln", "native", "auto", torch.device("cpu")) == "python"
    assert recurrence_on("lstm", "ln", "native", "auto", torch.device("cpu")) == "python"
    assert caplog.text.count("compiled LN-LSTM kernel unavailable, using the Python recurrence (LayerNorm) or the "
                             "autograd loop (RMSNorm): RuntimeError") == 1
