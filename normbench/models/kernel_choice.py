"""Which recurrence an in-cell layer runs on a device: cell_recurrences says what the layer may run,
preferred first (from its family's descriptor, normbench/configuration/families.py: which hand-written
recurrences it has); recurrence_on asks the device which of them it offers. InCellLayer holds the cell's
arithmetic (its step and the hand-written recurrences, tested equal); it asks here which one to run.
"""

from __future__ import annotations

import torch

from normbench.configuration.families import described
from normbench.configuration.schema import cell_kernel_named
from normbench.models import gru_cpu, lnlstm_cpu

COMPILED = {"lstm": lnlstm_cpu, "gru": gru_cpu}  # family -> its compiled in-cell LN/RMSNorm recurrence (CPU)


def cell_recurrences(family: str, norm_kind: str, impl: str, cell_kernel: str,
                     full_precision: bool = True) -> tuple[str, ...]:
    """What a per-term in-cell layer may run, preferred first: the layer runs the first its device
    offers (compiled where the kernel builds on a CPU; the others anywhere), and refuses to run
    when the only one is compiled and it does not build (recurrence_on).

        torch_compile  the autograd loop with its step through torch.compile: any family and norm
        compiled       lnlstm.cpp or gru.cpp (LayerNorm or RMSNorm), normbench's own C++
        python         the LSTM's hand-written Python recurrence
        autograd       the autograd loop of the cell's step

    () for a layer with no hand-written recurrence (Family.hand_written_cell): the autograd loop, whatever
    auto, compiled, python say. ``cell_kernel`` may be spelled as before (cpp, compile: schema.EARLIER_CELL_KERNELS)."""
    cell_kernel = cell_kernel_named(cell_kernel)
    if cell_kernel == "torch_compile":
        return ("torch_compile",)
    own = described(family).hand_written_for(norm_kind, impl)  # auto: all of them; python: those not compiled
    if not own:
        return ()
    if not full_precision:
        return ("autograd",)
    if cell_kernel == "compiled":
        return ("compiled",)
    return (*(own if cell_kernel == "auto" else tuple(k for k in own if k != "compiled")), "autograd")


def compiled_runs(family: str, device: torch.device, required: bool = False) -> bool:
    """Whether lnlstm.cpp or gru.cpp runs on ``device`` (built now if it has not been). ``required``
    (model.cell_kernel=compiled): a device it cannot run on is an error, not a fall-back."""
    if device.type != "cpu":
        if required:
            raise ValueError(f"model.cell_kernel=compiled runs on a CPU only, not {device.type}: use auto, python "
                             f"or torch_compile")
        return False
    kernel = COMPILED[family].KERNEL
    if kernel.load(required) is None and required:
        raise ValueError(f"model.cell_kernel=compiled, but the compiled kernel is unavailable: {kernel.unavailable}")
    return kernel.unavailable is None


def recurrence_on(family: str, norm_kind: str, impl: str, cell_kernel: str, device: torch.device,
                  full_precision: bool = True) -> str | None:
    """The recurrence a per-term in-cell layer runs on ``device`` (a name of cell_recurrences),
    or None where it has no hand-written one (the autograd loop, whatever cell_kernel says)."""
    wanted = cell_recurrences(family, norm_kind, impl, cell_kernel, full_precision)
    for name in wanted:
        if name != "compiled" or compiled_runs(family, device, required=wanted == ("compiled",)):
            return name
    return None


def recorded_name(name: str | None, family: str, padded: bool = False) -> str | None:
    """environment.cell_kernel for a recurrence of recurrence_on: compiled is named for its build
    (compiled-avx512, ...); with variable lengths torch.compile's step gives way to the eager loop."""
    if name == "compiled":
        return COMPILED[family].KERNEL.name()
    if name == "torch_compile" and padded:
        return "autograd-padded"
    return name
