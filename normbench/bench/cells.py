"""The in-cell LN-LSTM (LN-GRU) training step against the fused nn.LSTM (nn.GRU), and the bounds between them.

One training step each (forward, MSE on the last output, backward, AdamW step), same sizes, same
data, timed interleaved:

    fused            nn.LSTM: the speed a normalized LSTM is compared against
    fused+norm_calls nn.LSTM plus, alone, the norm calls an in-cell LSTM makes (norm_x once on
                     (batch, time, 4h); per step norm_h on (batch, 4h) and norm_c on (batch, h)):
                     the lower bound PyTorch's fastrnns names for a LayerNorm-LSTM made of a
                     fused cell and separate norm kernels
    loop             InCellLayer with no norm: the same Python time loop, so that loop cost and
                     norm cost separate
    in_cell          InCellLayer with the norm, built as a run builds it (model.cell_kernel=auto:
                     on a CPU the compiled lnlstm.cpp or gru.cpp where it builds), so a faster
                     layer shows up here with no change to this file
    in_cell_python   the same layer with model.cell_kernel=python, what runs where the C++ kernel
                     does not build: an LSTM's hand-written recurrence in Python (lnlstm_python), a
                     GRU's autograd loop
    in_cell_torch_compile
                     the same layer with model.cell_kernel=torch_compile: the autograd loop with its step
                     through torch.compile (compiled during warm-up, which is not timed); on CUDA
                     the alternative to one kernel launch per op per time step (in_cell_compile
                     before issue 47's rename: --candidates still takes that name)
    in_cell_masked   (--masked) the in-cell layer on a variable-length batch: per-example lengths
                     from T/2 to T, padded to T, the loss on each example's last real step; its
                     ratio is to in_cell at fixed length T. Needs the layer's forward to take
                     ``lengths`` (or ``mask``); skipped, with that reason, where it does not

``--grid axes`` walks each axis from (batch 32, T 64, hidden 128) rather than the full product:
hidden 64..1024 at batch 32, T 64; batch 1, 8, 32, 128 at hidden 256; T 64 and 512 at hidden 128;
and one masked variable-length point. Every in-cell ratio is printed beside its target; where a
point misses, the lower bound beside it (the fused cell + the norm calls alone) says how much of
the gap no in-cell kernel built from a fused cell and separate norm kernels could close.

Before any timing the loop layer is checked to compute what nn.LSTM (nn.GRU) computes, as fastrnns
checks each custom LSTM against nn.LSTM before timing it.
"""

from __future__ import annotations

import copy
import inspect
import statistics
import time
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

from normbench.bench.options import CANDIDATES, GRID_CANDIDATES, GRID_HIDDEN, MASKED, TARGET_FAMILIES
from normbench.bench.section import RatioLine, Section, bench_environment, markdown_table
from normbench.bench.timing import clock_for, measure, paired_difference, paired_ratio
from normbench.models import lnlstm_cpu
from normbench.models.kernel_choice import cell_recurrences
from normbench.models.recurrent import GATES, InCellLayer, cell_kernel_in_use
from normbench.models.recurrent import TORCH_CORES as FUSED
from normbench.norms import NormSpec

TARGETS = dict(zip(TARGET_FAMILIES, (1.3, 1.0)))  # in-cell LN-LSTM (LN-GRU) step time / nn.LSTM (nn.GRU) step time
MASKED_TARGET = 1.15  # in-cell step on a variable-length batch / the same at fixed length


def python_kernel(family: str, norm: str = "ln") -> str:
    """What model.cell_kernel=python runs for ``family`` with ``norm`` (kernel_choice.cell_recurrences): the LN-LSTM
    has a hand-written recurrence; the LN-GRU and every other norm's cell run the autograd loop."""
    first = (cell_recurrences(family, norm, "auto", "python") or ("autograd",))[0]
    return "the hand-written Python recurrence" if first == "python" else "the autograd loop"


@dataclass(frozen=True)
class CellShape:
    family: str = "lstm"
    batch: int = 32
    length: int = 64
    input_size: int = 32
    hidden: int = 128


@dataclass(frozen=True)
class NormCall:
    module: str              # the in-cell layer's norm: norm_x, norm_h or norm_c
    dim: int
    shape: tuple[int, ...]
    step: int | None         # the time step passed to a per-step norm, None for whole sequences


def in_cell_norm_calls(shape: CellShape) -> list[NormCall]:
    """The norm calls of the in-cell recurrence (Ba et al. 2016 suppl. eqs. 20-22), in order.

    N_x once over all time steps on (batch, time, gates*h); per step N_h on (batch, gates*h) and,
    for an LSTM, N_c on the cell state (batch, h). Written out rather than observed on the layer,
    so a faster in-cell layer that no longer calls its norm modules one by one keeps the same bound.
    """
    width = GATES[shape.family] * shape.hidden
    calls = [NormCall("norm_x", width, (shape.batch, shape.length, width), None)]
    for t in range(shape.length):
        calls.append(NormCall("norm_h", width, (shape.batch, width), t))
        if shape.family == "lstm":
            calls.append(NormCall("norm_c", shape.hidden, (shape.batch, shape.hidden), t))
    return calls


class FusedLast(nn.Module):
    """nn.LSTM/GRU/RNN; the training signal is the last time step's output."""

    def __init__(self, family: str, input_size: int, hidden: int):
        super().__init__()
        self.core = FUSED[family](input_size, hidden, batch_first=True)

    def forward(self, x):
        return self.core(x)[0][:, -1], []


class LayerLast(nn.Module):
    def __init__(self, layer: nn.Module):
        super().__init__()
        self.layer = layer

    def forward(self, x):
        return self.layer(x)[:, -1], []


class FusedWithNormCalls(FusedLast):
    """The fused core, then the same norm calls on stand-in inputs of the same shapes.

    Each stand-in input is a leaf that requires grad, so backward computes dx of every norm call
    as the in-cell layer's backward must; its .grad is reset each step (nothing accumulates).
    """

    def __init__(self, family: str, input_size: int, hidden: int, norm: NormSpec, calls: list[NormCall],
                 generator: torch.Generator, device: torch.device):
        super().__init__(family, input_size, hidden)
        dims = {c.module: c.dim for c in calls}
        self.norms = nn.ModuleDict({name: norm.build(dim, per_step=True) for name, dim in dims.items()})
        self.calls = calls
        self.inputs = [torch.randn(c.shape, generator=generator).to(device).requires_grad_() for c in calls]

    def forward(self, x):
        last, _ = super().forward(x)
        for t in self.inputs:
            t.grad = None
        extras = [self.norms[c.module](t, c.step) for c, t in zip(self.calls, self.inputs)]
        return last, extras


def mask_keyword(layer: nn.Module) -> str | None:
    """How the layer's forward takes a variable-length batch: "lengths" (per example) or "mask"
    (batch, time); None when it takes neither (models without variable-length support)."""
    parameters = inspect.signature(layer.forward).parameters
    return next((name for name in ("lengths", "mask") if name in parameters), None)


NO_MASK_REASON = ("InCellLayer.forward takes no `lengths` or `mask`: this checkout's models have no "
                  "variable-length support (issue 23), so the masked point is not timed")


class MaskedLast(nn.Module):
    """The layer on a padded variable-length batch; the signal is each example's last real step."""

    def __init__(self, layer: nn.Module, lengths: torch.Tensor, keyword: str):
        super().__init__()
        self.layer, self.keyword = layer, keyword
        self.register_buffer("lengths", lengths)
        steps = torch.arange(int(lengths.max()))
        self.register_buffer("mask", steps[None, :] < lengths[:, None])

    def forward(self, x):
        out = self.layer(x, **{self.keyword: self.lengths if self.keyword == "lengths" else self.mask})
        return out[torch.arange(len(x), device=out.device), self.lengths - 1], []


def variable_lengths(batch: int, length: int, generator: torch.Generator) -> torch.Tensor:
    """Per-example lengths from length // 2 to length, the longest exactly ``length`` (the padded size)."""
    lengths = torch.randint(max(1, length // 2), length + 1, (batch,), generator=generator)
    lengths[0] = length
    return lengths


class TrainStep:
    """One training step of a model returning (last output, extra outputs): forward, loss, backward, AdamW."""

    def __init__(self, model: nn.Module, x: torch.Tensor, target: torch.Tensor, lr: float = 1e-3):
        self.model, self.x, self.target = model, x, target
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
        self.grads: list[torch.Tensor] | None = None

    def __call__(self) -> torch.Tensor:
        self.optimizer.zero_grad(set_to_none=True)
        last, extras = self.model(self.x)
        loss = F.mse_loss(last, self.target)
        if self.grads is None:  # a fixed upstream gradient for each extra output, as if a loss fed it
            generator = torch.Generator().manual_seed(1)
            self.grads = [torch.randn(e.shape, generator=generator).to(e) for e in extras]
        torch.autograd.backward([loss, *extras], [None, *self.grads])
        self.optimizer.step()
        return loss.detach()


def equal_to_fused(loop_layer: InCellLayer, fused: FusedLast, x: torch.Tensor) -> float:
    """Max |difference| of outputs once the fused core holds the loop layer's weights."""
    core = fused.core
    with torch.no_grad():
        core.weight_ih_l0.copy_(loop_layer.weight_ih)
        core.weight_hh_l0.copy_(loop_layer.weight_hh)
        core.bias_ih_l0.copy_(loop_layer.bias_ih)
        core.bias_hh_l0.copy_(loop_layer.bias_hh)
        return float((loop_layer(x) - core(x)[0]).abs().max())


SAME_FUNCTION_ATOL = 1e-8  # in float64, where rounding cannot reach it: in float32 an LSTM's 64 steps
                           # leave every kernel ~1e-4 from float64, and so from each other


def same_function(reference: InCellLayer, variants: dict[str, InCellLayer], x: torch.Tensor) -> dict[str, float]:
    """Max |difference| of each variant's output from the reference's in float64, on copies holding
    the reference's weights (the timed layers keep their own dtype, weights and compiled graphs)."""
    differences = {}
    with torch.no_grad():
        expected = copy.deepcopy(reference).double()(x.double())
        for name, layer in variants.items():
            twin = copy.deepcopy(layer).double()
            twin.load_state_dict(reference.state_dict())
            differences[name] = float((twin(x.double()) - expected).abs().max())
    return differences


def build_steps(shape: CellShape = CellShape(), norm: NormSpec = NormSpec("ln"), device: str = "cpu",
                seed: int = 0, candidates: tuple[str, ...] = CANDIDATES) -> tuple[dict[str, TrainStep], dict]:
    """The training steps of ``candidates``, and facts about them (norm calls replayed, equality to nn.LSTM,
    the in-cell variants' equality to the in-cell layer as a run builds it)."""
    device = torch.device(device)
    if "in_cell_torch_compile" in candidates:  # dynamo's recompile budget is per process, shared by every shape's
        torch._dynamo.reset()            # InCellLayer.step: each shape compiles afresh, as each run does
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(shape.batch, shape.length, shape.input_size, generator=generator)
    target = torch.randn(shape.batch, shape.hidden, generator=generator)
    args = (shape.family, shape.input_size, shape.hidden)
    in_cell = InCellLayer(*args, norm)
    in_cell_python = InCellLayer(*args, norm, kernel="python")
    torch_compiled = InCellLayer(*args, norm, kernel="torch_compile")  # compiles on its first step, if it is timed
    loop = InCellLayer(*args, NormSpec("none"))
    fused = FusedLast(*args)
    calls = in_cell_norm_calls(shape) if norm.active else []
    difference = equal_to_fused(loop, fused, x)
    if difference > 1e-4:
        raise AssertionError(f"the loop {shape.family} differs from nn.{FUSED[shape.family].__name__} "
                             f"by {difference:.3g}: it would not be timing the same computation")
    # Each kernel of the in-cell layer must compute what the one a run picks computes (as fastrnns
    # checks each custom LSTM); only the timed ones are checked, so an untimed compile costs nothing.
    variants = {name: layer for name, layer in (("in_cell_python", in_cell_python),
                                                 ("in_cell_torch_compile", torch_compiled)) if name in candidates}
    in_cell_differences = same_function(in_cell.to(device), {n: v.to(device) for n, v in variants.items()},
                                        x.to(device))
    for name, value in in_cell_differences.items():
        if not value <= SAME_FUNCTION_ATOL:
            raise AssertionError(f"{name} differs from in_cell by {value:.3g}: it would not be timing the same computation")
    fused = FusedLast(*args)  # fresh weights, initialised like the others
    bound = FusedWithNormCalls(*args, norm, calls, generator, device)
    models = {"fused": fused, "fused+norm_calls": bound, "loop": LayerLast(loop), "in_cell": LayerLast(in_cell),
              "in_cell_python": LayerLast(in_cell_python), "in_cell_torch_compile": LayerLast(torch_compiled)}
    skipped = {}
    if MASKED in candidates:
        keyword = mask_keyword(in_cell)
        if keyword is None:
            skipped[MASKED] = NO_MASK_REASON
        else:
            masked = InCellLayer(*args, norm)
            masked.load_state_dict(in_cell.state_dict())
            models[MASKED] = MaskedLast(masked, variable_lengths(shape.batch, shape.length, generator), keyword)
    x, target = x.to(device), target.to(device)
    steps = {name: TrainStep(m.to(device).train(), x, target) for name, m in models.items()
             if (name in candidates or name == "fused") and name not in skipped}
    counts: dict[str, int] = {}
    for c in calls:
        key = f"{c.module} {tuple(c.shape)}"
        counts[key] = counts.get(key, 0) + 1
    facts = {"norm_calls": counts, "norm_calls_total": len(calls), "loop_max_abs_difference_vs_fused": difference,
             "in_cell_variants_max_abs_difference": in_cell_differences,
             "in_cell_kernel": cell_kernel_in_use(in_cell, device), "skipped": skipped}
    return steps, facts


def run(*, family: str | tuple[str, ...] = TARGET_FAMILIES, hidden: int | tuple[int, ...] = GRID_HIDDEN,
        length: int = 64, batch: int = 32, input_size: int = 32, norm: str = "ln", device: str = "cpu",
        quick: bool = False, repeats: int | None = None, candidates: tuple[str, ...] = CANDIDATES,
        clock: str = "wall", command: str = "") -> Section:
    """Each family and hidden size in turn, every one its own set of interleaved rounds."""
    families = (family,) if isinstance(family, str) else tuple(family)
    sizes = (hidden,) if isinstance(hidden, int) else tuple(hidden)
    env = bench_environment(device)
    rows, ratios, parts, shapes = [], [], [], {}
    for name in families:
        fused_name = f"nn.{FUSED[name].__name__}"
        for size in sizes:
            print(f"cells: {name} h{size} ...", flush=True)
            shape = CellShape(name, batch, length, input_size, size)
            shape_rows, facts, decomposition, shape_ratios = measure_shape(shape, NormSpec(norm), device, quick,
                                                                          repeats, candidates, command, clock)
            rows += shape_rows
            ratios += shape_ratios
            parts.append(render_markdown(shape_rows, facts, decomposition, shape_ratios, env, command, fused_name))
            shapes[f"{name} h{size}"] = {"facts": facts, "decomposition": decomposition}
    env["cell_kernel"] = {key: shape["facts"]["in_cell_kernel"] for key, shape in shapes.items()}
    return Section("cells", command, env, rows, "\n\n".join(parts), ratios, {"shapes": shapes})


# --grid axes: each axis walked from one point, (values, the other sizes held fixed); not the full product.
AXES = {"hidden": ((64, 128, 256, 512, 1024), {"batch": 32, "length": 64}),
        "batch": ((1, 8, 32, 128), {"hidden": 256, "length": 64}),
        "length": ((64, 512), {"hidden": 128, "batch": 32})}
MASKED_POINT = {"batch": 32, "length": 64, "hidden": 128}
QUICK_AXES = {"hidden": ((8, 16), {"batch": 4, "length": 4}), "batch": ((1, 4), {"hidden": 8, "length": 4}),
              "length": ((4, 8), {"hidden": 8, "batch": 4})}
QUICK_MASKED_POINT = {"batch": 4, "length": 6, "hidden": 8}


def axis_points(axes: dict = AXES) -> list[tuple[str, dict]]:
    """(axes the point lies on, {batch, length, hidden}) for every point of the walk, each point once."""
    points: dict[tuple, list[str]] = {}
    for axis, (values, fixed) in axes.items():
        for value in values:
            point = {**fixed, axis: value}
            points.setdefault((point["batch"], point["length"], point["hidden"]), []).append(axis)
    return [("+".join(on), {"batch": b, "length": t, "hidden": h}) for (b, t, h), on in points.items()]


def run_grid(*, family: str | tuple[str, ...] = TARGET_FAMILIES, input_size: int = 32, norm: str = "ln",
             device: str = "cpu", quick: bool = False, repeats: int | None = None,
             candidates: tuple[str, ...] = GRID_CANDIDATES, masked: bool = True, axes: dict | None = None,
             masked_point: dict | None = None, clock: str = "wall", command: str = "") -> Section:
    """The fast paths at every shape users run: each axis from the middle point, then the masked point."""
    families = (family,) if isinstance(family, str) else tuple(family)
    axes = axes or (QUICK_AXES if quick else AXES)
    masked_point = masked_point or (QUICK_MASKED_POINT if quick else MASKED_POINT)
    env = bench_environment(device)
    rows, ratios, parts, shapes, grid, skipped_rows = [], [], [], {}, [], []
    points = [(axis, point, tuple(candidates)) for axis, point in axis_points(axes)]
    for name in families:
        fused_name = f"nn.{FUSED[name].__name__}"
        layer = InCellLayer(name, input_size, masked_point["hidden"], NormSpec(norm))
        mine = list(points)
        if masked and mask_keyword(layer) is not None:
            mine.append(("masked", masked_point, ("fused", "in_cell", MASKED)))
        elif masked:
            ratios.append(RatioLine(f"in-cell {norm.upper()}-{name.upper()} on a variable-length batch", None,
                                    "the same layer at fixed length", command, target=f"<= {MASKED_TARGET}",
                                    note=f"skipped: {NO_MASK_REASON}"))
            skipped_rows.append({"family": name, "axis": "masked", **masked_point, "ratio": None,
                                 "target": MASKED_TARGET, "met": None, "lower_bound": None, "skipped": NO_MASK_REASON})
        for axis, point, wanted in mine:
            print(f"cells: {name} {axis} b{point['batch']} T{point['length']} h{point['hidden']} ...", flush=True)
            shape = CellShape(name, point["batch"], point["length"], input_size, point["hidden"])
            shape_rows, facts, decomposition, shape_ratios = measure_shape(shape, NormSpec(norm), device, quick,
                                                                          repeats, wanted, command, clock)
            rows += [{"axis": axis, **r} for r in shape_rows]
            ratios += shape_ratios
            parts.append(render_markdown(shape_rows, facts, decomposition, shape_ratios, env, command, fused_name))
            shapes[f"{name} {axis} b{point['batch']} T{point['length']} h{point['hidden']}"] = {
                "facts": facts, "decomposition": decomposition}
            by = {r["candidate"]: r for r in shape_rows}
            if axis == "masked":
                ratio, target = by[MASKED].get("vs_fixed_length"), MASKED_TARGET
            else:
                ratio, target = by.get("in_cell", {}).get("vs_fused"), TARGETS.get(name)
            bound = by.get("fused+norm_calls", {}).get("vs_fused")
            met = None if ratio is None or target is None else ratio <= target
            grid.append({"family": name, "axis": axis, **point, "ratio": ratio, "target": target, "met": met,
                         "lower_bound": bound if met is False else None, "skipped": None})
    grid += skipped_rows
    table = render_grid(grid)
    markdown = "\n\n".join([f"## Recurrent cells at every shape users run\n\n`{command}`\n\n"
                             f"{env['device']} ({env['device_name']}), torch {env['torch']}, {env['threads']} "
                             f"threads, CPU capability {env.get('cpu_capability')}. Each axis walked from "
                             "(batch 32, T 64, hidden 128); ratio = in-cell step / fused step (masked: variable-"
                             "length step / the same at fixed length); where a point misses its target, the "
                             "lower bound (fused cell + the norm calls alone) is shown.", table, *parts])
    return Section("cells-grid", command, env, rows, markdown, ratios, {"grid": grid, "shapes": shapes})


def render_grid(grid: list[dict]) -> str:
    def num(v):
        return "—" if v is None else f"{v:.2f}"
    return markdown_table(
        ["family", "axis", "batch", "T", "hidden", "ratio", "target", "met", "lower bound (miss)"],
        [[g["family"], g["axis"], g["batch"], g["length"], g["hidden"],
          num(g["ratio"]) if not g["skipped"] else "skipped", f"<= {g['target']}" if g["target"] else "—",
          {True: "yes", False: "NO", None: "—"}[g["met"]], num(g["lower_bound"])] for g in grid])


SPLIT = {"input_products": "input products x W_ih^T (fwd+bwd)", "forward_products": "recurrent products fwd",
         "backward_products": "recurrent products bwd (dh per step, dW_hh)", "forward_cell": "cell fwd (norms, gates, state)",
         "backward_cell": "cell bwd", "rest": "rest of the step (loss, AdamW, autograd, allocation)"}


def in_cell_split(step: TrainStep, rounds: int) -> dict | None:
    """Where one in-cell LN-LSTM training step's time goes, by lnlstm.cpp's own clocks (gemm.h): the
    median over ``rounds`` steps of each phase and of the rest of the step (ms of the process's CPU
    time, which other processes on a busy machine inflate far less than the wall time; summed over
    threads, as the kernel's clocks are), and the products' share of the step. None where the step did
    not run the compiled kernel."""
    lnlstm_cpu.phases(on=True)  # zeroed, and running
    walls, laps = [], []
    try:
        for _ in range(rounds):
            start = time.process_time()
            step()
            walls.append(time.process_time() - start)
            laps.append(lnlstm_cpu.phases(on=True))
    finally:
        lnlstm_cpu.phases(on=False)
    if not any(laps[-1].values()):
        return None
    split = {name: statistics.median(lap[name] for lap in laps) * 1e3 for name in lnlstm_cpu.PHASES}
    split["rest"] = statistics.median(w - sum(lap.values()) for w, lap in zip(walls, laps)) * 1e3
    split["step"] = statistics.median(walls) * 1e3
    products = sum(split[k] for k in ("input_products", "forward_products", "backward_products"))
    split["products_share"] = products / split["step"]
    split["onednn"] = lnlstm_cpu.onednn_products(torch.float32)
    split["tiled_up_to"] = lnlstm_cpu.KERNEL.module.TILED_UP_TO
    return split


def render_split(split: dict) -> str:
    library = "oneDNN" if split["onednn"] else "at::mm"
    return (f"Where an in-cell step's {split['step']:.2f} ms go (lnlstm.cpp's clocks, CPU time, medians, ms; "
            f"a step's products up to {split['tiled_up_to'] / 2**20:g}M multiply-adds by the tiled gemm::step_product, "
            f"larger ones by {library}): " + "; ".join(f"{SPLIT[k]} {split[k]:.2f}" for k in SPLIT)
            + f". Products: {100 * split['products_share']:.0f}% of the step.")


def measure_shape(shape: CellShape, spec: NormSpec, device: str, quick: bool, repeats: int | None,
                  candidates: tuple[str, ...], command: str, clock: str = "wall"):
    """(rows, facts, decomposition, ratios) of one shape; candidates left out are absent from all four."""
    steps, facts = build_steps(shape, spec, device, candidates=candidates)
    repeats = repeats or (5 if quick else 25)
    timings = measure(steps, repeats=repeats, warmup=2 if quick else 5, timer=clock_for(device, clock))
    facts["clock"] = clock
    kernel = facts["in_cell_kernel"] or ""
    if "in_cell" in steps and shape.family == "lstm" and kernel.startswith("compiled"):
        facts["in_cell_split_ms"] = in_cell_split(steps["in_cell"], repeats)
    fused = timings["fused"]
    capability = torch.backends.cpu.get_cpu_capability()
    rows = []
    for name, timing in timings.items():
        ratio = paired_ratio(timing, fused)
        rows.append({"candidate": name, **asdict(shape), "norm": spec.kind, "device": torch.device(device).type,
                     "cpu_capability": capability, **timing.to_dict(), "vs_fused": ratio.median,
                     "vs_fused_q1": ratio.q1, "vs_fused_q3": ratio.q3})
    by = {r["candidate"]: r for r in rows}
    decomposition = {key: paired_difference(timings[name], fused) * 1e3 for key, name in (
        ("loop_overhead_ms", "loop"), ("in_cell_extra_ms", "in_cell"), ("in_cell_python_extra_ms", "in_cell_python"),
        ("in_cell_torch_compile_extra_ms", "in_cell_torch_compile"), ("in_cell_masked_extra_ms", MASKED),
        ("norm_cost_lower_bound_ms", "fused+norm_calls")) if name in timings}
    family = shape.family
    fused_name = f"nn.{FUSED[family].__name__}"
    label = f"{family} b{shape.batch} T{shape.length} in{shape.input_size} h{shape.hidden}, {capability}"
    ratios = []
    if "in_cell" in by:
        in_cell = by["in_cell"]
        line = RatioLine(
            f"in-cell {spec.kind.upper()}-{family.upper()} training step ({label})", in_cell["vs_fused"], fused_name,
            command, target=f"<= {TARGETS[family]}" if family in TARGETS else None,
            note=f"{facts['in_cell_kernel'] or 'autograd'} recurrence; "
                 f"IQR {in_cell['vs_fused_q1']:.2f}-{in_cell['vs_fused_q3']:.2f}")
        if line.met is False and "fused+norm_calls" in by:  # a miss: how far a fused cell + norms could go
            line.note += f"; lower bound ({fused_name} + norm calls alone) {by['fused+norm_calls']['vs_fused']:.2f}x"
        split = facts.get("in_cell_split_ms")
        if line.met is False and split:  # a miss: what the step spends on products, on the cell and on the rest
            products = sum(split[k] for k in ("input_products", "forward_products", "backward_products"))
            line.note += (f"; split {products:.2f} ms products, {split['forward_cell'] + split['backward_cell']:.2f} ms "
                          f"cell, {split['rest']:.2f} ms rest")
        ratios.append(line)
    if MASKED in by and "in_cell" in timings:
        masked = paired_ratio(timings[MASKED], timings["in_cell"])
        by[MASKED]["vs_fixed_length"] = masked.median
        ratios.append(RatioLine(f"in-cell {spec.kind.upper()}-{family.upper()} on a variable-length batch "
                                f"(lengths T/2..T, masked; {label})", masked.median,
                                "the same layer at fixed length", command, target=f"<= {MASKED_TARGET}",
                                note=f"IQR {masked.q1:.2f}-{masked.q3:.2f}"))
    for name, why in facts["skipped"].items():
        ratios.append(RatioLine(f"{name} ({label})", None, "the same layer at fixed length", command,
                                note=f"skipped: {why}"))
    others = (("in_cell_python", f"the same with model.cell_kernel=python: {python_kernel(family, spec.kind)}"),
              ("in_cell_torch_compile", "the same with model.cell_kernel=torch_compile: the step through torch.compile"),
              ("fused+norm_calls", f"lower bound: {fused_name} + the {facts['norm_calls_total']} norm calls alone"),
              ("loop", f"python-loop {family.upper()}, no norm"))
    ratios += [RatioLine(f"{what} ({label})", by[name]["vs_fused"], fused_name, command)
               for name, what in others if name in by]
    return rows, facts, decomposition, ratios


DECOMPOSITION = {"loop_overhead_ms": "a Python time loop without norms", "norm_cost_lower_bound_ms": "the norm calls alone",
                 "in_cell_extra_ms": "the in-cell layer",
                 "in_cell_python_extra_ms": "the in-cell layer with model.cell_kernel=python",
                 "in_cell_torch_compile_extra_ms": "the in-cell layer with model.cell_kernel=torch_compile",
                 "in_cell_masked_extra_ms": "the in-cell layer on a variable-length batch"}


def render_markdown(rows, facts, decomposition, ratios, env, command, fused_name) -> str:
    norm, family = rows[0]["norm"], rows[0]["family"]
    what = {"fused": fused_name, "fused+norm_calls": f"{fused_name} + the {facts['norm_calls_total']} norm calls alone",
            "loop": "InCellLayer without norm (Python time loop)",
            "in_cell": f"InCellLayer with {norm} ({facts['in_cell_kernel'] or 'autograd'} recurrence)",
            "in_cell_python": f"InCellLayer with {norm}, model.cell_kernel=python ({python_kernel(family, norm)})",
            "in_cell_torch_compile": f"InCellLayer with {norm}, model.cell_kernel=torch_compile "
                                     "(torch.compile of the step)",
            MASKED: f"InCellLayer with {norm} on a variable-length batch (lengths T/2..T, masked)"}
    table = markdown_table(
        ["candidate", "what", "ms / step", "IQR ms", f"x {fused_name}", "ratio IQR"],
        [[r["candidate"], what[r["candidate"]], f"{r['median_ms']:.2f}", f"{r['iqr_ms']:.2f}", f"{r['vs_fused']:.2f}",
          f"{r['vs_fused_q1']:.2f}-{r['vs_fused_q3']:.2f}"] for r in rows])
    calls = ", ".join(f"{k} x{v}" for k, v in facts["norm_calls"].items())
    d = decomposition
    s = rows[0]
    return "\n\n".join([
        f"## Recurrent cell: in-cell norm vs {fused_name}, {s['family']} b{s['batch']} T{s['length']} "
        f"in{s['input_size']} h{s['hidden']}, torch CPU capability {s['cpu_capability']}\n\n`{command}`\n\n"
        f"{env['device']} ({env['device_name']}), "
        f"torch {env['torch']}, {env['threads']} threads. "
        "One training step each (forward, MSE on the last output, backward, AdamW), interleaved, timed by "
        + ("the process's CPU time" if facts.get("clock") == "cpu" else "the wall clock")
        + "; ratios are medians of per-round ratios.",
        table,
        f"Norm calls replayed for the lower bound: {calls}. "
        f"The loop layer matches {fused_name} to {facts['loop_max_abs_difference_vs_fused']:.1e}"
        + "".join(f"; {name} matches in_cell to {value:.1e}"
                  for name, value in facts["in_cell_variants_max_abs_difference"].items()) + ".",
        f"Where the time goes (medians of per-round differences from {fused_name}, ms): "
        + "; ".join(f"{DECOMPOSITION[key]} {value:+.2f}" for key, value in d.items()) + ".",
        *([render_split(facts["in_cell_split_ms"])] if facts.get("in_cell_split_ms") else []),
        "\n".join(f"- {r}" for r in ratios),
    ])


if __name__ == "__main__":
    from normbench.bench import as_command

    as_command("cells")
