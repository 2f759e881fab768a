"""Normalization kernels alone: forward and forward+backward time, bandwidth, fraction of a copy.

Every norm kind x impl x (rows, hidden) x dtype, timed interleaved with a device copy of the same
tensor. A row-wise norm is memory-bound, so bandwidth is the figure of merit; the byte count is the
standard one (parameters and per-row statistics are O(hidden) and left out):

    forward    read x, write y            2 * numel * elem_size
    backward   read x, read dy, write dx  3 * numel * elem_size
    fwd+bwd                               5 * numel * elem_size
    copy       y.copy_(x)                 2 * numel * elem_size

Modules come straight from the norm table (norms/kinds.py), parameters cast to the dtype and *without* the fp32
policy wrapper (``Fp32Norm``), so the kernel that runs is the one for that dtype. Forward is timed
under ``torch.no_grad()``; forward+backward as ``torch.autograd.grad`` of the output against x and
the parameters with a fixed dy, so no gradient accumulates between calls. BatchNorm is in training
mode (batch statistics, running averages updated), as in a training step.

impls: ``native`` and ``reference`` from the norm table; ``compiled`` = normbench's own kernel where
a kind has one (RMSNorm on CPU: ``norm.impl=compiled``); ``auto`` = what ``build_norm`` builds by
default (``norm.impl=auto``; its rows say which kernel it ran); ``torch_compile`` = torch.compile of
the reference module (with ``--compile``); on CUDA, apex's and Liger's fused LN/RMSNorm if installed.

Every kind is held two ways, per dtype and pass: its default (auto) against the fastest other impl
measured beside it (per-round ratio), and its fastest impl against LayerNorm's fastest ("best
against best"); RMSNorm's default is also held against LayerNorm's default at every width. In bf16
and fp16 the reference and torch_compile rows compute in the input's dtype, another arithmetic
than native's, which auto never runs (normbench/norms/dispatch.py): the default is held to the
fastest of the rest there.

On a GPU each tensor of the grid is sized to at least four times the L2 cache
(``torch.cuda.get_device_properties().L2_cache_size``), so no timed call finds its input left in
L2 by the previous one, and every GB/s figure is also given as a fraction of the device's
datasheet peak (``DATASHEET_PEAK_GBPS``) beside the fraction of a measured copy.
"""

from __future__ import annotations

import io
import statistics
from collections import defaultdict
from typing import Iterable, Mapping

import torch
from torch import nn

from normbench.bench.options import DEFAULT_HIDDEN, HEADLINE_SHAPE, KERNEL_DTYPES, KERNEL_KINDS
from normbench.bench.section import RatioLine, Section, bench_environment, markdown_table
from normbench.bench.timing import Timing, clock_for, keep_freed_memory, measure, paired_ratio
from normbench.norms import AutoImpl, kind_of, norm_class

RULE_IMPLS = ("native", "reference")    # every kind has both; the bench's rule adds the kinds' own kernels
VENDOR_IMPLS = ("apex", "liger")  # other libraries' LN/RMSNorm kernels, CUDA only ("fused" in their names)
BYTES_PER_ELEMENT = {"fwd": 2, "bwd": 3, "fwd+bwd": 5, "copy": 2}
PASSES = ("fwd", "fwd+bwd")
TORCH_DTYPES = {name: getattr(torch, dtype) for name, dtype in KERNEL_DTYPES.items()}  # precision name -> tensor dtype
# fp32 size of each grid tensor (bf16: half): x and y together outgrow a 32 MiB last-level cache,
# so the copy and the norms stream from memory rather than cache
TARGET_BYTES = 32 * 2**20
QUICK_SHAPES = ((256, 64), (64, 256), (32, 1024))
HALF_DTYPES = ("bf16", "fp16")
OWN_DTYPE_IMPLS = ("reference", "torch_compile")  # in bf16/fp16 they compute in it: not auto's rivals there
# (kind, impl) that compute bf16/fp16 in fp32 and round once where the kind's formula rounds after each op:
# another arithmetic there, not auto's rivals either (DynamicTanhCompiled.runs_on says why auto runs the formula)
ROUNDS_ONCE = {("dyt", "compiled"), ("derf", "compiled")}
DEFAULT_WIDTHS = (64, 1024)  # RMSNorm's default is held to LayerNorm's at widths in this range
# the elementwise kinds' defaults (their compiled kernel on a CPU) are held to LayerNorm's default at the same widths
# (issue 48: an elementwise norm should not cost more than a LayerNorm of its width); the table sets DyT beside RMSNorm
ELEMENTWISE_TARGETS = {"dyt": "<= 1.10", "derf": "<= 1.10"}
# Datasheet peak memory bandwidth, GB/s, by a name fragment of torch.cuda.get_device_name (the
# first match wins, so the more specific names come first). NVIDIA's product pages.
DATASHEET_PEAK_GBPS = (
    ("H200", 4800), ("H100 NVL", 3900), ("H100 PCIe", 2000), ("H100", 3350), ("GH200", 4000),
    ("A100-SXM4-80GB", 2039), ("A100 80GB PCIe", 1935), ("A100", 1555), ("L40S", 864), ("L40", 864),
    ("L4", 300), ("A10G", 600), ("A10", 600), ("V100", 900), ("T4", 320), ("RTX 4090", 1008), ("RTX 3090", 936),
)
L2_MULTIPLE = 4  # a GPU tensor of the grid is at least this many times the L2 cache
RULE_MARGIN = 0.05  # another impl replaces native only when at least this much faster: smaller is noise


def bytes_moved(numel: int, elem_size: int, pass_: str) -> int:
    """Bytes a memory-bound norm must move: fwd 2, bwd 3, fwd+bwd 5, copy 2 x numel x elem_size."""
    return BYTES_PER_ELEMENT[pass_] * numel * elem_size


def grid_shapes(hidden_sizes: Iterable[int], target_bytes: int = TARGET_BYTES) -> list[tuple[int, int]]:
    """(rows, hidden) with rows chosen so an fp32 tensor is about ``target_bytes``."""
    return [(max(1, round(target_bytes / (4 * hidden))), hidden) for hidden in hidden_sizes]


def datasheet_peak_gbps(device_name: str) -> float | None:
    return next((gbps for fragment, gbps in DATASHEET_PEAK_GBPS if fragment.lower() in device_name.lower()), None)


def target_bytes_for(device: torch.device) -> tuple[int, int | None]:
    """(bytes per grid tensor, L2 bytes): on a GPU at least L2_MULTIPLE x its L2, else TARGET_BYTES."""
    if device.type != "cuda":
        return TARGET_BYTES, None
    l2 = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 0)
    return max(TARGET_BYTES, L2_MULTIPLE * l2), l2 or None


def default_dtypes(device: torch.device) -> tuple[str, ...]:
    return ("fp32", "bf16", "fp16") if device.type == "cuda" else ("fp32", "bf16")


# -- building the candidates ----------------------------------------------------------------------
def _vendor_module(impl: str, kind: str, hidden: int) -> nn.Module:
    if impl == "apex":
        from apex.normalization import FusedLayerNorm, FusedRMSNorm
        return {"ln": FusedLayerNorm, "rms": FusedRMSNorm}[kind](hidden, eps=1e-5)
    from liger_kernel.transformers import LigerLayerNorm, LigerRMSNorm
    if kind == "ln":
        return LigerLayerNorm(hidden, eps=1e-5)
    return LigerRMSNorm(hidden, eps=1e-5, in_place=False)  # in place would overwrite our fixed dy


def vendor_status(device: torch.device) -> dict[str, str | None]:
    """None for a vendor kernel library (apex, Liger: CUDA only) usable here, else why not."""
    status = {}
    for impl, module in (("apex", "apex.normalization"), ("liger", "liger_kernel.transformers")):
        if device.type != "cuda":
            status[impl] = "unavailable: CUDA only"
            continue
        try:
            __import__(module)
            status[impl] = None
        except Exception as err:  # ImportError, or a build against another CUDA raising anything
            status[impl] = "not installed" if isinstance(err, ImportError) else f"unavailable: {_first_line(err)}"
    return status


def build_kernel(kind: str, impl: str, hidden: int, device: torch.device, dtype: torch.dtype) -> nn.Module | str:
    """The module to time, or a string saying why this (kind, impl) has none here."""
    if impl in VENDOR_IMPLS:
        if kind not in ("ln", "rms"):
            return "unavailable: no vendor kernel for this kind"
        try:
            module = _vendor_module(impl, kind, hidden)
        except Exception as err:
            return f"unavailable: {_first_line(err)}"
    elif impl == "auto":  # exactly what build_norm builds by default, without the precision wrapper
        module = norm_class(kind, "auto")(hidden)
    else:
        chosen = "reference" if impl == "torch_compile" else impl
        if chosen not in kind_of(kind).classes:
            return "unavailable: no such impl for this kind"
        module = norm_class(kind, chosen)(hidden)
    module = module.to(device=device, dtype=dtype).train()
    if impl == "torch_compile":
        module = torch.compile(module)
    return module


def forward_call(module: nn.Module, x: torch.Tensor):
    def run():
        with torch.no_grad():
            return module(x)
    return run


def train_call(module: nn.Module, x: torch.Tensor, dy: torch.Tensor):
    x = x.detach().requires_grad_()
    leaves = [x, *(p for p in module.parameters() if p.requires_grad)]

    def run():
        return torch.autograd.grad(module(x), leaves, dy)
    return run


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return (text.splitlines()[0] if text else type(err).__name__)[:200]


# -- measuring -------------------------------------------------------------------------------------
def measure_shape(rows: int, hidden: int, dtype_name: str, device: torch.device, *, kinds=KERNEL_KINDS,
                  impls=RULE_IMPLS, repeats: int = 5, warmup: int = 1, min_loop_s: float = 5e-3,
                  unavailable: Mapping[str, str | None] | None = None) -> list[dict]:
    """One (rows, hidden, dtype): every kind x impl x pass and a copy, interleaved in the same rounds."""
    dtype = TORCH_DTYPES[dtype_name]
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(rows, hidden, generator=generator).to(device, dtype)
    dy = torch.randn(rows, hidden, generator=generator).to(device, dtype)
    copy_out = torch.empty_like(x)
    if "torch_compile" in impls:
        torch._dynamo.reset()  # every shape its own graphs; stale ones would count against the recompile limit
    candidates = {("copy", "copy", "copy"): lambda: copy_out.copy_(x)}
    skipped: dict[tuple[str, str, str], str] = {}
    ran: dict[str, str] = {}  # kind -> the impl its default ran
    for kind in kinds:
        for impl in impls:
            if impl == "compiled" and impl not in kind_of(kind).classes:
                continue  # no such kernel for this kind: not a row
            reason = (unavailable or {}).get(impl)
            module = reason or build_kernel(kind, impl, hidden, device, dtype)
            for pass_, make in (("fwd", forward_call), ("fwd+bwd", train_call)):
                key = (kind, impl, pass_)
                if isinstance(module, str):
                    skipped[key] = module
                    continue
                fn = make(module, x) if pass_ == "fwd" else make(module, x, dy)
                try:
                    fn()  # first call: compiles, and proves the kernel exists for this dtype
                except Exception as err:
                    skipped[key] = f"unavailable: {_first_line(err)}"
                else:
                    candidates[key] = fn
            if impl == "auto" and not isinstance(module, str):
                ran[kind] = module.chosen if isinstance(module, AutoImpl) else "native"
    timings = measure(candidates, repeats=repeats, warmup=warmup, min_loop_s=min_loop_s, timer=clock_for(device))
    base = {"device": device.type, "dtype": dtype_name, "rows": rows, "hidden": hidden, "numel": x.numel(),
            "elem_size": x.element_size(), "mib": x.numel() * x.element_size() / 2**20,
            "peak_gbps": _peak(device)}
    out = _rows(base, timings, skipped)
    for row in out:
        if row["impl"] == "auto":
            row["auto_ran"] = ran.get(row["kind"])
    return out


def _peak(device: torch.device) -> float | None:
    return datasheet_peak_gbps(torch.cuda.get_device_name(device)) if device.type == "cuda" else None


def _rows(base: dict, timings: dict[tuple, Timing], skipped: dict[tuple, str]) -> list[dict]:
    """One row per candidate; every ratio in it is per round (load common to a round cancels)."""
    copy = timings[("copy", "copy", "copy")]
    copied = bytes_moved(base["numel"], base["elem_size"], "copy")
    out = []
    for (kind, impl, pass_), timing in timings.items():
        moved = bytes_moved(base["numel"], base["elem_size"], pass_)
        native, ln = timings.get((kind, "native", pass_)), timings.get(("ln", "native", pass_))
        ln_default, rms_default = timings.get(("ln", "auto", pass_)), timings.get(("rms", "auto", pass_))
        # auto runs native's arithmetic: in bf16/fp16 it is not held to impls that compute in that dtype
        rivals = [i for (k, i, p) in timings if (k, p) == (kind, pass_) and i not in (impl, "copy")
                  and not (impl == "auto" and base["dtype"] in HALF_DTYPES
                           and (i in OWN_DTYPE_IMPLS or (kind, i) in ROUNDS_ONCE))]
        fastest_name = min(rivals, key=lambda i: timings[(kind, i, pass_)].median, default=None)
        fastest = timings[(kind, fastest_name, pass_)] if fastest_name else None
        peak = base.get("peak_gbps")
        out.append({**base, "kind": kind, "impl": impl, "pass": pass_, "status": "ok", **timing.to_dict(),
                    "bytes": moved, "gbps": moved / timing.median / 1e9, "copy_gbps": copied / copy.median / 1e9,
                    "peak_fraction": moved / timing.median / 1e9 / peak if peak else None,
                    "copy_fraction": (moved / copied) / paired_ratio(timing, copy).median,
                    "time_vs_native": paired_ratio(timing, native).median if native and kind != "copy" else None,
                    "time_vs_native_ln": paired_ratio(timing, ln).median if ln and kind != "copy" else None,
                    "time_vs_default_ln": paired_ratio(timing, ln_default).median if ln_default and kind != "copy"
                    else None,
                    "time_vs_default_rms": paired_ratio(timing, rms_default).median if rms_default and kind != "copy"
                    else None,
                    "fastest_other": fastest_name,
                    "time_vs_fastest_other": paired_ratio(timing, fastest).median if fastest else None})
    return out + [{**base, "kind": k, "impl": i, "pass": p, "status": why} for (k, i, p), why in skipped.items()]


def measure_headline(device: torch.device, compiled: bool, repeats: int = 5) -> list[dict]:
    """fp32 forward at 8192 x 4096: copy, native LN, native and reference (and compiled) RMSNorm."""
    rows, hidden = HEADLINE_SHAPE
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(rows, hidden, generator=generator).to(device)
    copy_out = torch.empty_like(x)
    candidates = {("copy", "copy", "copy"): lambda: copy_out.copy_(x)}
    chosen = [("ln", "native"), ("rms", "native"), ("rms", "reference"), ("rms", "compiled")] \
        + ([("rms", "torch_compile")] if compiled else [])
    skipped = {}
    if compiled:
        torch._dynamo.reset()
    for kind, impl in chosen:
        fn = forward_call(build_kernel(kind, impl, hidden, device, torch.float32), x)
        try:
            fn()
        except Exception as err:
            skipped[(kind, impl, "fwd")] = f"unavailable: {_first_line(err)}"
        else:
            candidates[(kind, impl, "fwd")] = fn
    timings = measure(candidates, repeats=repeats, warmup=1, timer=clock_for(device))
    base = {"device": device.type, "dtype": "fp32", "rows": rows, "hidden": hidden, "numel": x.numel(),
            "elem_size": 4, "mib": x.numel() * 4 / 2**20, "peak_gbps": _peak(device)}
    return _rows(base, timings, skipped)


# -- reducing --------------------------------------------------------------------------------------
def _rows_of(results) -> list[dict]:
    return list(results["rows"] if isinstance(results, Mapping) else results)


def impl_rule(results, impls: Iterable[str] = RULE_IMPLS) -> list[dict]:
    """Per (kind, device, dtype): which impl is fastest at forward+backward, over the shapes measured.

    At each shape every impl's time is divided by the fastest one's there; the impl whose median
    of that relative time over the shapes (measured for every impl) is lowest wins -- but native
    stays unless the winner is at least ``RULE_MARGIN`` faster than it. Relative times keep a large
    shape from outweighing the rest.
    """
    impls = tuple(impls)
    times: dict[tuple, dict[str, dict[tuple, float]]] = defaultdict(lambda: defaultdict(dict))
    for r in _rows_of(results):
        if r.get("pass") == "fwd+bwd" and r.get("status") == "ok" and r.get("impl") in impls:
            times[(r["kind"], r["device"], r["dtype"])][r["impl"]][(r["rows"], r["hidden"])] = r["median_ms"]
    rule = []
    for key, by_impl in sorted(times.items()):
        shapes = set.intersection(*(set(s) for s in by_impl.values()))
        if not shapes:
            continue
        best = {s: min(t[s] for t in by_impl.values()) for s in shapes}
        relative = {impl: statistics.median(t[s] / best[s] for s in shapes) for impl, t in by_impl.items()}
        def time_ratio(a, b):  # median over shapes of a's time / b's
            return statistics.median(by_impl[a][s] / by_impl[b][s] for s in shapes)

        winner = min(relative, key=lambda impl: (relative[impl], impl != "native"))
        if winner != "native" and "native" in by_impl and time_ratio("native", winner) < 1 + RULE_MARGIN:
            winner = "native"
        slower = min((time_ratio(i, winner) for i in by_impl if i != winner), default=None)
        kind, device, dtype = key
        rule.append({"kind": kind, "device": device, "dtype": dtype, "impl": winner, "runner_up_time_ratio": slower,
                     "shapes": len(shapes)})
    return rule


def fastest_impls(results) -> dict[tuple[str, str, str], str]:
    """{(kind, device_type, dtype): impl} -- native vs reference, by median fwd+bwd time over shapes."""
    return {(r["kind"], r["device"], r["dtype"]): r["impl"] for r in impl_rule(results)}


# -- the subcommand --------------------------------------------------------------------------------
def run(*, device: str = "cpu", quick: bool = False, compile_: bool = False, dtypes: Iterable[str] | None = None,
        hidden: Iterable[int] | None = None, kinds: Iterable[str] = KERNEL_KINDS, repeats: int | None = None,
        headline: bool | None = None, figure: bool = False, command: str = "",
        default_malloc: bool = False) -> Section:
    device = torch.device(device)
    allocator = "default" if default_malloc or device.type != "cpu" else keep_freed_memory()
    dtypes = tuple(dtypes or default_dtypes(device))
    target_bytes, l2_bytes = target_bytes_for(device)
    shapes = list(QUICK_SHAPES) if quick and hidden is None else grid_shapes(hidden or DEFAULT_HIDDEN, target_bytes)
    repeats = repeats or (3 if quick else 5)
    impls = RULE_IMPLS + ("auto", "compiled") + (("torch_compile",) if compile_ else ()) \
        + (VENDOR_IMPLS if device.type == "cuda" else ())
    unavailable = {impl: why for impl, why in vendor_status(device).items() if why and impl in impls}
    environment = {**bench_environment(device), "allocator": allocator, "grid_tensor_bytes": target_bytes,
                   "l2_bytes": l2_bytes, "datasheet_peak_gbps": _peak(device)}
    rows: list[dict] = []
    for dtype in dtypes:
        for r, h in shapes:
            print(f"kernels: {dtype} {r}x{h} ...", flush=True)
            rows += measure_shape(r, h, dtype, device, kinds=tuple(kinds), impls=impls, repeats=repeats,
                                  unavailable=unavailable)
    headline = not quick if headline is None else headline
    headline_rows = measure_headline(device, compile_, repeats) if headline else []
    rule = impl_rule(rows, RULE_IMPLS + ("compiled",))  # the evidence for norm.impl=auto's table (kinds.py: fastest)
    ratios = headline_ratios(headline_rows, command) + grid_ratios(rows, command) + best_ratios(rows, command) \
        + auto_ratios(rows, command) + default_ratios(rows, command) + elementwise_ratios(rows, command)
    not_measured = {impl: why for impl, why in vendor_status(device).items() if why}
    if not compile_:
        not_measured["torch_compile"] = "not requested (--compile)"
    markdown = render_markdown(rows, headline_rows, rule, environment, command, not_measured,
                               [r for r in ratios if r.target is not None])
    extra = {"headline": headline_rows, "rule": rule, "not_measured": not_measured,
             "shapes": [list(s) for s in shapes], "dtypes": list(dtypes), "impls": list(impls)}
    png = plot_bandwidth(rows) if figure else None
    return Section("kernels", command, environment, rows, markdown, ratios, extra,
                   figures={FIGURE: png} if png else {})


def headline_ratios(rows: list[dict], command: str) -> list[RatioLine]:
    ok = {(r["kind"], r["impl"]): r for r in rows if r.get("status") == "ok"}
    if ("rms", "native") not in ok or ("ln", "native") not in ok:
        return []
    ln, rms = ok[("ln", "native")], ok[("rms", "native")]
    shape = f"{ln['rows']}x{ln['hidden']} fp32 forward"
    lines = [RatioLine(f"native RMSNorm time, {shape}", rms["time_vs_native_ln"], "native LayerNorm", command,
                       note=f"LN {ln['gbps']:.1f} GB/s = {ln['copy_fraction']:.2f} of copy "
                            f"({ln['copy_gbps']:.1f} GB/s); "
                            f"RMS {rms['gbps']:.1f} GB/s = {rms['copy_fraction']:.2f} of copy")]
    for impl in ("reference", "compiled", "torch_compile"):
        if ("rms", impl) in ok:
            r = ok[("rms", impl)]
            lines.append(RatioLine(f"{impl} RMSNorm time, {shape}", r["time_vs_native"], "native RMSNorm", command,
                                   note=f"{r['gbps']:.1f} GB/s = {r['copy_fraction']:.2f} of copy"))
    return lines


def grid_ratios(rows: list[dict], command: str) -> list[RatioLine]:
    """Per dtype: native RMSNorm against native LayerNorm, forward+backward, median over the grid's shapes."""
    lines = []
    for dtype in dict.fromkeys(r["dtype"] for r in rows):
        ratios = [r["time_vs_native_ln"] for r in rows if r["dtype"] == dtype and r["pass"] == "fwd+bwd"
                  and (r["kind"], r["impl"]) == ("rms", "native") and r.get("time_vs_native_ln")]
        if ratios:
            lines.append(RatioLine(f"native RMSNorm time, {dtype} forward+backward", statistics.median(ratios),
                                   "native LayerNorm", command, note=f"median over {len(ratios)} shapes"))
    return lines


def _best(rows: list[dict], dtype: str, pass_: str) -> dict[tuple, dict[str, dict]]:
    """{shape: {kind: the row of its fastest impl}} (auto left out: it runs one of the others)."""
    best: dict[tuple, dict[str, dict]] = defaultdict(dict)
    for r in rows:
        if (r["dtype"], r["pass"], r.get("status")) == (dtype, pass_, "ok") and r["kind"] != "copy" \
                and r["impl"] != "auto":
            shape, held = (r["rows"], r["hidden"]), best[(r["rows"], r["hidden"])].get(r["kind"])
            if held is None or r["median_ms"] < held["median_ms"]:
                best[shape][r["kind"]] = r
    return best


def best_ratios(rows: list[dict], command: str) -> list[RatioLine]:
    """Per dtype, pass and kind: the kind's fastest impl against LayerNorm's fastest at each shape (ratio
    of median times), median over shapes: best against best."""
    lines = []
    for dtype in dict.fromkeys(r["dtype"] for r in rows):
        for pass_ in PASSES:
            best = _best(rows, dtype, pass_)
            for kind in dict.fromkeys(k for b in best.values() for k in b if k != "ln"):
                pairs = [(b[kind], b["ln"]) for b in best.values() if kind in b and "ln" in b]
                if not pairs:
                    continue
                winners = ", ".join(f"{r['hidden']}: {kind} {r['impl']} / ln {ln['impl']}" for r, ln in pairs)
                lines.append(RatioLine(f"fastest {kind} time, {dtype} {_pass_name(pass_)} (median over shapes)",
                                       statistics.median(r["median_ms"] / ln["median_ms"] for r, ln in pairs),
                                       "fastest LayerNorm", command, note=f"best against best: {winners}"))
    return lines


def auto_ratios(rows: list[dict], command: str) -> list[RatioLine]:
    """Per dtype and pass: the default impl (norm.impl=auto) over the fastest other impl measured beside it
    (per-round ratio, so load common to a round cancels), the median over shapes for each kind, and the
    worst kind; held to 1.10 forward+backward. A single cell of the grid is noisier than 10% on a CPU
    (allocator, page faults), so "every norm within 10%" is judged per norm."""
    lines = []
    for dtype in dict.fromkeys(r["dtype"] for r in rows):
        for pass_ in PASSES:
            per_kind: dict[str, list[float]] = {}
            for r in rows:
                if (r["dtype"], r["impl"], r["pass"], r.get("status")) == (dtype, "auto", pass_, "ok") \
                        and r.get("time_vs_fastest_other") is not None:
                    per_kind.setdefault(r["kind"], []).append(r["time_vs_fastest_other"])
            if per_kind:
                medians = {kind: statistics.median(v) for kind, v in per_kind.items()}
                worst = max(medians, key=medians.get)
                rivals = "the fastest other impl" + (" of native's arithmetic" if dtype in HALF_DTYPES else "")
                lines.append(RatioLine(f"default impl (norm.impl=auto) time, {dtype} {_pass_name(pass_)}, worst norm "
                                       "(median over shapes)", medians[worst], rivals, command,
                                       target="<= 1.10" if pass_ == "fwd+bwd" else None,
                                       note=f"worst: {worst}; per norm: "
                                            + ", ".join(f"{k} {v:.2f}" for k, v in medians.items())))
    return lines


def default_ratios(rows: list[dict], command: str) -> list[RatioLine]:
    """Per dtype and pass: RMSNorm's default against LayerNorm's default (per-round ratio) at every width
    of DEFAULT_WIDTHS measured, the worst width; held to 1.00 forward+backward."""
    lines = []
    low, high = DEFAULT_WIDTHS
    for dtype in dict.fromkeys(r["dtype"] for r in rows):
        for pass_ in PASSES:
            by_width = {r["hidden"]: r["time_vs_default_ln"] for r in rows
                        if (r["dtype"], r["kind"], r["impl"], r["pass"], r.get("status")) == (dtype, "rms", "auto", pass_, "ok")
                        and low <= r["hidden"] <= high and r.get("time_vs_default_ln") is not None}
            if by_width:
                worst = max(by_width, key=by_width.get)
                lines.append(RatioLine(f"default RMSNorm time, {dtype} {_pass_name(pass_)}, worst width {low}-{high}",
                                       by_width[worst], "default LayerNorm", command,
                                       target="<= 1.00" if pass_ == "fwd+bwd" else None,
                                       note=f"worst: {worst}; per width: "
                                            + ", ".join(f"{h} {v:.2f}" for h, v in sorted(by_width.items()))))
    return lines


def elementwise_ratios(rows: list[dict], command: str) -> list[RatioLine]:
    """Per elementwise kind (ELEMENTWISE_TARGETS), dtype and pass: its default against LayerNorm's default
    (per-round ratio) at every width of DEFAULT_WIDTHS measured, the worst width; held to its target
    forward+backward. (Within 10% of the kind's fastest impl: auto_ratios.)"""
    lines = []
    low, high = DEFAULT_WIDTHS
    for kind, target in ELEMENTWISE_TARGETS.items():
        for dtype in dict.fromkeys(r["dtype"] for r in rows):
            for pass_ in PASSES:
                by_width = {r["hidden"]: r["time_vs_default_ln"] for r in rows
                            if (r["dtype"], r["kind"], r["impl"], r["pass"], r.get("status")) == (dtype, kind, "auto", pass_, "ok")
                            and low <= r["hidden"] <= high and r.get("time_vs_default_ln") is not None}
                compiled = {r["hidden"]: r["time_vs_default_ln"] for r in rows
                            if (r["dtype"], r["kind"], r["impl"], r["pass"], r.get("status")) == (dtype, kind, "compiled", pass_, "ok")
                            and low <= r["hidden"] <= high and r.get("time_vs_default_ln") is not None}
                if by_width:
                    worst = max(by_width, key=by_width.get)
                    also = ("; norm.impl=compiled (fp32 arithmetic, rounded once): "
                            + ", ".join(f"{h} {v:.2f}" for h, v in sorted(compiled.items()))) \
                        if dtype in HALF_DTYPES and compiled else ""
                    lines.append(RatioLine(f"default {kind} time, {dtype} {_pass_name(pass_)}, worst width {low}-{high}",
                                           by_width[worst], "default LayerNorm", command,
                                           target=target if pass_ == "fwd+bwd" else None,
                                           note=f"worst: {worst}; per width: "
                                                + ", ".join(f"{h} {v:.2f}" for h, v in sorted(by_width.items())) + also))
    return lines


def dyt_against_rms_table(rows: list[dict]) -> str:
    """Per dtype, pass and width: DyT's default over RMSNorm's default, per round (measured side by side in the
    same rounds, so load common to a round cancels), and which is faster: a tie where neither is ``RULE_MARGIN``
    faster than the other (a ratio of 0.99 is the noise between rounds, not a winner)."""
    lines = [[r["dtype"], _pass_name(r["pass"]), r["hidden"], r.get("auto_ran") or "-", _times(r["time_vs_default_rms"]),
              _faster("DyT", "RMSNorm", r["time_vs_default_rms"])]
             for r in rows if (r["kind"], r["impl"], r.get("status")) == ("dyt", "auto", "ok")
             and r.get("time_vs_default_rms") is not None]
    if not lines:
        return ""
    return ("### DyT against RMSNorm, each at its default (norm.impl=auto), side by side\n\n"
            + markdown_table(["dtype", "pass", "hidden", "DyT ran", "DyT / RMSNorm (per round)", "faster"], lines))


def _faster(a: str, b: str, a_over_b: float) -> str:
    """Which of a and b is faster given a's time over b's: a tie unless one is at least RULE_MARGIN faster."""
    if a_over_b * (1 + RULE_MARGIN) <= 1:
        return a
    if a_over_b >= 1 + RULE_MARGIN:
        return b
    return f"tie (within {RULE_MARGIN:.0%})"


def _pass_name(pass_: str) -> str:
    return "forward" if pass_ == "fwd" else "forward+backward"


def defaults_table(rows: list[dict]) -> str:
    """Per dtype: for each kind, pass and width, what the default ran, its time over the fastest other
    impl's, the kind's best over LayerNorm's best, and the default over LayerNorm's default."""
    parts = []
    for dtype in dict.fromkeys(r["dtype"] for r in rows):
        lines = []
        for pass_ in PASSES:
            best = _best(rows, dtype, pass_)
            for r in rows:
                if (r["dtype"], r["impl"], r["pass"], r.get("status")) != (dtype, "auto", pass_, "ok"):
                    continue
                shape = best.get((r["rows"], r["hidden"]), {})
                ratio = (shape[r["kind"]]["median_ms"] / shape["ln"]["median_ms"]) if {r["kind"], "ln"} <= set(shape) else None
                lines.append([r["kind"], _pass_name(pass_), r["hidden"], r.get("auto_ran") or "-", f"{r['median_ms']:.3f}",
                              r.get("fastest_other") or "-", _times(r.get("time_vs_fastest_other")),
                              _times(ratio), _times(r.get("time_vs_default_ln"))])
        if lines:
            parts.append(f"### {dtype}: the default impl (norm.impl=auto), each kind against its fastest and LayerNorm\n\n"
                         + markdown_table(["kind", "pass", "hidden", "default ran", "ms", "fastest other",
                                           "default / fastest other", "best / LN best", "default / LN default"], lines))
    return "\n\n".join(parts)


def _times(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _fmt_cell(row: dict | None) -> str:
    if row is None:
        return "-"
    if row.get("status") != "ok":
        return "n/a"
    peak = f", {row['peak_fraction']:.2f} of peak" if row.get("peak_fraction") else ""
    return f"{row['gbps']:.1f} ({row['copy_fraction']:.2f}{peak})"


def bandwidth_tables(rows: list[dict]) -> str:
    """One table per (dtype, pass): GB/s (fraction of copy) for every kind/impl against hidden size."""
    parts = []
    for dtype in dict.fromkeys(r["dtype"] for r in rows):
        chosen = [r for r in rows if r["dtype"] == dtype]
        hiddens = sorted({r["hidden"] for r in chosen})
        shape_of = {r["hidden"]: f"{r['rows']}x{r['hidden']}" for r in chosen}
        for pass_ in PASSES:
            cells = {(r["kind"], r["impl"], r["hidden"]): r for r in chosen if r["pass"] in (pass_, "copy")}
            lines = [["copy", "-", *(_fmt_cell(cells.get(("copy", "copy", h))) for h in hiddens)]]
            keys = dict.fromkeys((r["kind"], r["impl"]) for r in chosen if r["pass"] == pass_)
            lines += [[k, i, *(_fmt_cell(cells.get((k, i, h))) for h in hiddens)] for k, i in keys]
            title = f"### {dtype}, {'forward' if pass_ == 'fwd' else 'forward+backward'}: GB/s (fraction of copy" \
                + (f", of the datasheet's {chosen[0]['peak_gbps']:.0f} GB/s)" if chosen[0].get("peak_gbps") else ")")
            parts.append(title + "\n\n" + markdown_table(["kind", "impl", *(shape_of[h] for h in hiddens)], lines))
    return "\n\n".join(parts)


def targets_block(targets: list[RatioLine]) -> str:
    """The last lines: issues 37's and 48's kernel targets (every ratio line held to one) and whether each is met."""
    met = sum(bool(t.met) for t in targets)
    lines = [f"- {'met' if t.met else 'NOT met' if t.met is False else 'n/a'}: {t}" for t in targets]
    return (f"### Kernel targets (issues 37 and 48): {met} of {len(targets)} met\n\n" + "\n".join(lines)) if targets else ""


def render_markdown(rows, headline_rows, rule, environment, command, not_measured, targets=()) -> str:
    env = environment
    text = [f"## Norm kernels\n\n`{command}`\n\n{env['device']} ({env['device_name']}), torch {env['torch']}, "
            f"{env['threads']} threads, "
            f"allocator: {env.get('allocator', 'default')}. Bytes: forward 2, forward+backward 5, copy (`y.copy_(x)`) 2 x numel x elem_size. The copy is timed "
            "in the same rounds at the same size; fraction of copy is the per-round ratio's median."]
    if headline_rows:
        ok = [r for r in headline_rows if r.get("status") == "ok"]
        lines = [[r["kind"], r["impl"], f"{r['median_ms']:.2f}", f"{r['gbps']:.1f}", f"{r['copy_fraction']:.2f}",
                  "-" if r.get("time_vs_native_ln") is None else f"{r['time_vs_native_ln']:.2f}"] for r in ok]
        text.append(f"### Headline: fp32 forward, {HEADLINE_SHAPE[0]}x{HEADLINE_SHAPE[1]}\n\n"
                    + markdown_table(["kind", "impl", "ms", "GB/s", "of copy", "time / native LN"], lines))
    text.append(bandwidth_tables(rows))
    if any(r["impl"] == "auto" for r in rows):
        text.append(defaults_table(rows))
        text.append(dyt_against_rms_table(rows))
    if rule:
        lines = [[r["kind"], r["device"], r["dtype"], r["impl"],
                  "-" if r["runner_up_time_ratio"] is None else f"{r['runner_up_time_ratio']:.2f}x", r["shapes"]]
                 for r in rule]
        text.append("### Fastest impl (forward+backward, median over shapes)\n\n"
                    + markdown_table(["kind", "device", "dtype", "fastest", "other takes", "shapes"], lines))
    if not_measured:
        text.append("Not measured: " + "; ".join(f"{k}: {v}" for k, v in not_measured.items()) + ".")
    text.append(f"![GB/s vs hidden, fp32 forward]({FIGURE})")
    text.append(targets_block(list(targets)))
    return "\n\n".join(t for t in text if t)


FIGURE = "kernels.png"  # the section's one figure, beside kernels.md


def plot_bandwidth(rows: list[dict]) -> bytes | None:
    """GB/s against hidden size (log x), fp32 forward, as PNG: a colour per kind, a line style per impl, the
    copy grey."""
    import normbench.report.mplconfig  # noqa: F401  (before matplotlib: its cache stays out of $HOME)

    # isort: split
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    chosen = [r for r in rows if r["dtype"] == "fp32" and r["pass"] in ("fwd", "copy") and r.get("status") == "ok"]
    if not chosen:
        return None
    fig = Figure(figsize=(8.5, 4.5))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    from normbench.report.figures.drawing import PALETTE

    colors = dict(zip(KERNEL_KINDS, PALETTE))
    styles = {"native": "-", "reference": "--", "auto": (0, (1, 1)), "compiled": ":", "torch_compile": (0, (5, 1)), "apex": "-.", "liger": (0, (3, 1, 1, 1, 1, 1))}
    series = defaultdict(list)
    for r in chosen:
        series[(r["kind"], r["impl"])].append((r["hidden"], r["gbps"]))
    for (kind, impl), points in series.items():
        points.sort()
        xs, ys = zip(*points)
        if kind == "copy":
            ax.plot(xs, ys, color="0.2", linewidth=2.5, alpha=0.6, label="copy (y.copy_(x))")
        else:
            ax.plot(xs, ys, color=colors[kind], linestyle=styles.get(impl, "-"), marker="o", markersize=3,
                    label=f"{kind} {impl}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")  # the copy runs several times faster than any norm: log y keeps the norms apart
    hiddens = sorted({r["hidden"] for r in chosen})
    ax.set_xticks(hiddens, [str(h) for h in hiddens])
    ax.set_xlabel("hidden size")
    ax.set_ylabel("GB/s (forward: 2 x numel x bytes / time)")
    ax.set_title("Norm kernels, fp32 forward")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=120)
    return png.getvalue()


if __name__ == "__main__":
    from normbench.bench import as_command

    as_command("kernels")
