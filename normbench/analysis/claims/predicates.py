"""A claim's regime as named predicates on the records: the descriptor table PREDICATES, and Needs, the
way a claim (specs.py, specs_2026.py, a YAML claim file) names the ones that gate its parts.

A paper's claim holds in a regime (BatchNorm over a small batch, an lr at which the unnormalized cell's
gradient grows, runs off the task's trivial solutions, trained to a plateau, equal data). Each
requirement is one entry here: what must hold, a check on the records of the arms a part compares
(their runs frames) that returns why it fails (None when it holds), and the change that would make
the part testable. engine.judge reads a claim's ``needs`` before testing a part; a part whose
predicate fails reads "not testable here: WHY — testable with CHANGE", carries no effect and is never
supported or contradicted. A claim whose regime is prose only (``regime`` text, no ``needs``) cannot
decide: every part reads not testable here.

Imports only records and analysis modules below the claims (regime.py, rules.py): specs import it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np
import pandas as pd

from normbench.analysis import lr_protocol, regime, rules
from normbench.analysis.aggregate import format_value
from normbench.analysis.claims.comparison import task_direction
from normbench.analysis.claims.vocabulary import axis, metric, values_text
from normbench.records.metrics import path

Arms = Mapping[str, pd.DataFrame]
# the signed gradient flow through time at init, over the window past the input's constant prefix
# (analysis/aggregate.py FLOW_WINDOW_START; negative = vanishes going back, positive = grows going back)
FLOW_COLUMN = "profiles.grad_time_flow_init"


@dataclass(frozen=True)
class Predicate:
    """One regime requirement: ``check(arms, runs, args)`` is why it fails on these records, None when it holds."""

    name: str
    holds: str      # what must hold, in words ({n} and the like filled from the claim's arguments)
    check: Callable[[Arms, pd.DataFrame, Mapping[str, object]], str | None]
    remedy: str     # what would make a failing part testable


@dataclass(frozen=True)
class Needs:
    """A claim's use of a predicate: which parts it gates (1-based; () = every part), with its arguments."""

    name: str
    parts: tuple[int, ...] = ()
    args: tuple[tuple[str, object], ...] = ()
    remedy: str = ""  # the claim's own remedy, where it knows a better one than the table's
    # when this use of the check was set or last changed (UTC, "2026-12-03T14:24", from the specs' history): a
    # check that fails on records made before it is disclosed as such (referee 18: six gates added after their
    # studies ran, undisclosed), so a reader can weigh a gate fixed after the data
    added: str = ""

    def covers(self, index: int) -> bool:
        return not self.parts or index in self.parts

    @property
    def arguments(self) -> dict[str, object]:
        return dict(self.args)


def needs(name: str, *parts: int, remedy: str = "", added: str = "", **args) -> Needs:
    if name not in PREDICATES:
        raise KeyError(f"no regime predicate {name!r}; the table has {', '.join(PREDICATES)}")
    return Needs(name, tuple(parts), tuple(sorted(args.items())), remedy, added)


def after_the_records(need: Needs, runs: pd.DataFrame) -> str:
    """" (this check was set or last changed on DATE, after these records were made)" where the check's date is
    later than the earliest record's start; "" where it is not, or where either date is unknown."""
    if not need.added or "time.started" not in runs:
        return ""
    started = pd.to_datetime(runs["time.started"], errors="coerce", utc=True).dropna()
    added = pd.to_datetime(need.added, errors="coerce", utc=True)
    if started.empty or pd.isna(added) or not added > started.min():
        return ""
    return (f" (this check was set or last changed on {need.added.replace('T', ' ')} UTC, after these records were "
            f"made from {started.min():%Y-%m-%d %H:%M} UTC: a check fixed after the data)")


def holds_text(need: Needs) -> str:
    return PREDICATES[need.name].holds.format(**need.arguments)


def failure(need: Needs, arms: Arms, runs: pd.DataFrame) -> str | None:
    """The part's note when the predicate fails ("not testable here: WHY — testable with CHANGE"), else None."""
    entry = PREDICATES[need.name]
    why = entry.check(arms, runs, need.arguments)
    if why is None:
        return None
    remedy = (need.remedy or entry.remedy).format(**need.arguments)
    if isinstance(why, tuple):  # a gate's own remedy, for the plateau it found (regime.TRIVIAL_REMEDY)
        why, remedy = why[0], need.remedy or why[1]
    return (f"not testable here: {why} (the regime needs {holds_text(need)}){after_the_records(need, runs)} — "
            f"testable with {remedy}")


# --- what the checks read -----------------------------------------------------------------------

def _numbers(frame: pd.DataFrame, key: str) -> pd.Series:
    return pd.to_numeric(axis(frame, key), errors="coerce")


def _length(frame: pd.DataFrame) -> pd.Series:
    """Each run's sequence length: the record's task.seq_len, else the task.length setting."""
    recorded = metric(frame, "task.seq_len")
    return recorded.where(recorded.notna(), _numbers(frame, "task.length"))


IN_CELL = ("in_cell",)  # placements whose BatchNorm normalizes each time step over the batch alone


def bn_pool(frame: pd.DataFrame) -> pd.Series:
    """Per run, how many vectors BatchNorm's statistics pool: the batch for per-step BN in the cell; batch ×
    length for BN outside the cell (pre, post, peri: every step of every sequence together); NaN where the
    records cannot say (no batch size, or no length for BN outside the cell)."""
    batch = _numbers(frame, "batch_size")
    placement = axis(frame, "placement").astype(object)
    outside = batch * _length(frame)
    return batch.where(placement.isin(IN_CELL), outside)


def _masked_rows(frame: pd.DataFrame) -> pd.Series:
    """Per run, the fewest real rows masked per-step BN normalizes over: at the last step only sequences of the
    full length are real, on average batch / (length − min_length + 1) with lengths uniform in between."""
    batch, high, low = _numbers(frame, "batch_size"), _numbers(frame, "task.length"), _numbers(frame, "task.min_length")
    spread = (high - low.where(low.notna(), high) + 1).clip(lower=1)
    return batch / spread


def _bn(arms: Arms) -> dict[str, pd.DataFrame]:
    return {n: f for n, f in arms.items() if (axis(f, "norm").astype(str) == "bn").any()}


def _pool_at_most(arms: Arms, runs: pd.DataFrame, args) -> str | None:
    n, found = float(args["n"]), []
    for name, frame in _bn(arms).items():
        frame = frame[axis(frame, "norm").astype(str) == "bn"]
        pool = bn_pool(frame)
        if pool.isna().all():
            return (f"the records of {name} do not say how many vectors BatchNorm pools (batch size "
                    f"{values_text(axis(frame, 'batch_size'))}, placement {values_text(axis(frame, 'placement'))}, "
                    f"length {values_text(_length(frame))})")
        smallest = float(pool.min())
        if smallest > n:
            at = frame[pool == smallest].iloc[0]
            place = str(axis(frame, "placement").loc[at.name])
            how = (f"batch {format_value(_numbers(frame, 'batch_size').loc[at.name])} (per step, in the cell)"
                   if place in IN_CELL else f"batch {format_value(_numbers(frame, 'batch_size').loc[at.name])} × "
                   f"{format_value(_length(frame).loc[at.name])} steps (placement {place}: batch × time)")
            found.append(f"{name}'s BatchNorm pools {format_value(smallest)} vectors at its smallest ({how})")
    return "; ".join(found) or None


def _pool_at_least(arms: Arms, runs: pd.DataFrame, args) -> str | None:
    n, found = float(args["n"]), []
    for name, frame in _bn(arms).items():
        masked = frame[(axis(frame, "norm.bn_mask").astype(str).str.lower() == "true")
                       & axis(frame, "placement").astype(object).isin(IN_CELL)]
        if masked.empty:
            continue
        rows = _masked_rows(masked)
        if rows.isna().all():
            return f"the records of {name} do not say its batch size and lengths"
        if float(rows.min()) < n:
            found.append(f"{name}'s masked per-step BatchNorm normalizes over about {float(rows.min()):.3g} real rows "
                         f"at the last steps (batch / (task.length − task.min_length + 1))")
    return "; ".join(found) or None


def _unnormalized_grows(arms: Arms, runs: pd.DataFrame, args) -> str | None:
    growth = float(args.get("growth", 10))
    plain = {n: f for n, f in arms.items() if (axis(f, "norm").astype(str) == "none").all() and len(f)}
    for name, frame in plain.items():
        top, typical = metric(frame, path("grad_norm_max")), metric(frame, path("grad_norm_median"))
        diverged = int((frame["status"] == "diverged").sum())
        if diverged:
            return None
        ratio = (top / typical.where(typical > 0)).dropna()
        if ratio.empty:
            return f"the records of {name} hold no gradient norms over training (grad_norm_max, grad_norm_median)"
        if float(ratio.max()) >= growth:
            return None
        return (f"{name}'s gradient never grew at this lr: no run diverged and its largest pre-clipping gradient norm "
                f"is at most {float(ratio.max()):.3g}× its median (a growth needs ≥ {growth:g}×)")
    return None


def _equal_data(arms: Arms, runs: pd.DataFrame, args) -> str | None:
    seen = {n: (_numbers(f, "steps") * _numbers(f, "batch_size")).dropna() for n, f in arms.items()}
    if any(s.empty for s in seen.values()):
        return "the records do not say the examples each arm saw (steps × batch_size)"
    levels = {n: sorted(set(s)) for n, s in seen.items()}
    if len({tuple(v) for v in levels.values()}) > 1:
        return "the arms saw different amounts of data (" + "; ".join(
            f"{n}: {', '.join(format_value(x) for x in v)} examples" for n, v in levels.items()) + ")"
    return None


def _gate(kind: str) -> Callable[[Arms, pd.DataFrame, Mapping], tuple[str, str] | None]:
    """A predicate read by one of analysis/regime.py's gates (the same rule the answers use)."""
    def check(arms: Arms, runs: pd.DataFrame, args) -> tuple[str, str] | None:  # (why, the gate's remedy)
        found = regime.check(dict(arms), runs, (kind,))
        return (found.reason, found.remedy) if found is not None else None
    return check


def _recorded(arms: Arms, runs: pd.DataFrame, args) -> str | None:
    column = str(args["column"])
    empty = [n for n, f in arms.items() if metric(f, column).dropna().empty]
    return f"{', '.join(empty)} record{'s' if len(empty) == 1 else ''} no {column}" if empty else None


def _flow_window(arms: Arms, runs: pd.DataFrame, args) -> str | None:
    steps = float(args.get("steps", 8))
    column = f"{FLOW_COLUMN.removesuffix('_init')}_steps"  # the window's length, t = start..T (analysis/aggregate.py)
    short = {n: metric(f, column).dropna() for n, f in arms.items()}
    short = {n: v for n, v in short.items() if not (v >= steps).any()}
    if short:
        return "; ".join(f"{n}'s window past the input's constant prefix spans {values_text(v)} steps" for n, v in short.items())
    return None


def _variable_lengths(arms: Arms, runs: pd.DataFrame, args) -> str | None:
    fixed = [n for n, f in arms.items() if not (_numbers(f, "task.min_length") < _numbers(f, "task.length")).any()]
    return f"{', '.join(fixed)} ran fixed-length sequences (no padding)" if fixed else None


def _some_fail(arms: Arms, runs: pd.DataFrame, args) -> str | None:
    frames = [f for f in arms.values() if len(f)]
    if not frames:
        return None
    together = pd.concat(frames)
    if rules.failed_to_learn(together).any():
        return None
    return (f"no run of {', '.join(arms)} failed to train ({len(together)} runs), so no failure rate can differ")


def _some_train(arms: Arms, runs: pd.DataFrame, args) -> str | None:
    """Some run of the arms trains: where none does (a 20-step initialization study), "did not train" means
    "not trained yet", and a failure rate says nothing about the cause the claim names."""
    frames = [f for f in arms.values() if len(f)]
    if not frames:
        return None
    together = pd.concat(frames)
    # a run trains when it gets beyond every trivial solution of its task (rules.failed_to_learn, the failure
    # rates' own rule: grad_depth's 20-step runs left the chance band but none got beyond mqar's 1/n_pairs)
    if (~rules.failed_to_learn(together)).any():
        return None
    return (f"no run of {', '.join(arms)} trained past its task's chance level and trivial solutions "
            f"({len(together)} runs, {values_text(_numbers(together, 'steps'))} steps)")


def _own_lr(arms: Arms, runs: pd.DataFrame, args) -> str | None:
    """Each arm at its own tuned lr: a final-quality comparison at one lr shared by arms that prefer different
    ones (AdamW and Muon, Pre-LN and a placement that shrinks its branches) measures the lr as much as the
    arm. Records that do not say how their lr was set (single runs, older versions) are not held against."""
    shared = {}
    for name, frame in arms.items():
        protocol = frame.get("study.lr_protocol", pd.Series(dtype=object)).dropna().astype(str)
        if len(protocol) and not (protocol == "tuned").all():
            shared[name] = sorted(set(protocol))
    if not shared:
        return None
    lrs = pd.concat([_numbers(f, "lr") for f in arms.values()]).dropna()
    which = "; ".join(f"{name}: {', '.join(protocols)}" for name, protocols in shared.items())
    return f"the arms ran at an lr not tuned per arm ({which}; lr {values_text(lrs)})"


def _same_lr(arms: Arms, runs: pd.DataFrame, args) -> str | None:
    """Every arm at one lr: a mechanism read at the end of training (the variance a placement's hidden state
    reaches, its gradients' spread) moves with the lr as well as with the arm, so arms tuned to different lrs
    compare the lrs as much as the arms (depth_placements: Peri-LN at 0.003 against Pre-LN at 0.03, where on
    the selection seed Pre-LN's deepest ln Var went from 3.0 to 7.7 over the grid and Peri-LN's barely moved)."""
    chosen = {}
    for name, frame in arms.items():
        column = lr_protocol.CHOSEN_LR if lr_protocol.CHOSEN_LR in frame else "lr"
        values = (pd.to_numeric(frame[column], errors="coerce") if column in frame else _numbers(frame, column)).dropna()
        chosen[name] = tuple(sorted({float(v) for v in values}))
    if len(set(chosen.values())) <= 1:
        return None
    which = "; ".join(f"{name}: {', '.join(format_value(v) for v in lrs) or '—'}" for name, lrs in chosen.items())
    return (f"the arms ran at different lrs ({which}), and what a mechanism reads at the end of training moves with "
            f"the lr as well as with the arm")


def _arm_trains(arms: Arms, runs: pd.DataFrame, args) -> str | None:
    """The arm a part is held against trains in at least half its runs: where it does not, "fails more often
    than it" or "is not worse than it" compares with an arm that did not learn the task (too few steps), not
    the cause the claim names; one run past a trivial solution by a hair does not make the arm one that trains."""
    name, share = str(args["arm"]), float(args.get("share", 0.5))
    frame = arms.get(name)
    if frame is None or not len(frame):
        return None  # an absent arm is the part's own "not testable"
    trains = int((~rules.failed_to_learn(frame)).sum())
    if trains >= share * len(frame):
        return None
    held = rules.plateaus(frame).dropna()
    where = f"; held at: {', '.join(sorted(set(map(str, held))))}" if len(held) else ""
    return (f"{trains} of {len(frame)} runs of {name} trained past its task's chance level and trivial solutions "
            f"({values_text(_numbers(frame, 'steps'))} steps{where})")


def _depth_spread(arms: Arms, runs: pd.DataFrame, args) -> str | None:
    need, factor = int(args.get("levels", 3)), float(args.get("factor", 2))
    for name, frame in arms.items():
        depth = _numbers(frame, "layers").dropna()
        if depth.nunique() < need or depth.max() < factor * depth.min():
            return (f"a slope needs at least {need} values of layers spread over a factor ≥ {factor:g} (two always lie "
                    f"on a line); {name} ran {values_text(depth)}")
    return None


def _grows_in(arm: str, column: str, words: str) -> Callable[[Arms, pd.DataFrame, Mapping], str | None]:
    """The named arm's mean of ``column`` is positive: the phenomenon the claim removes is present."""
    def check(arms: Arms, runs: pd.DataFrame, args) -> str | None:
        name = str(args.get("arm", arm))
        frame = arms.get(name)
        if frame is None:
            return None
        values = metric(frame[frame["status"] == "ok"], column).dropna()
        if values.empty:
            return f"{name} records no {column}"
        return None if values.mean() > 0 else f"{name}'s {words} is {values.mean():.3g} (not positive)"
    return check


def _setting_is(arms: Arms, runs: pd.DataFrame, args) -> str | None:
    """Every run of every arm at ``key`` = ``value``; a record that leaves the key out ran at ``default`` (a
    setting at its default is inert and not recorded as an axis: contract._inert)."""
    key, value, default = str(args["key"]), str(args["value"]), str(args["default"])
    found = {}
    for name, frame in arms.items():
        values = {default if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)
                  for v in axis(frame, key).tolist()}
        if values != {value}:
            found[name] = ", ".join(sorted(values))
    if not found:
        return None
    paper = str(args.get("paper", "")) or f"the paper's {value}"  # what the value stands for, where it is a proxy
    return f"the arms ran at {key} = " + "; ".join(f"{n}: {v}" for n, v in found.items()) + f", not {paper}"


DEEP_OVER_SHALLOW = "profiles.skip_loss_deep_over_shallow"


def _deep_blocks_idle(arms: Arms, runs: pd.DataFrame, args) -> str | None:
    """The named arm's deep blocks matter less than its shallow ones, by the declared share: the pathology
    a claim that a fix "makes the deep layers matter more" cures is present in the baseline."""
    name, share = str(args["arm"]), float(args["share"])
    frame = arms.get(name)
    if frame is None:
        return f"no {name} arm here, whose skipped blocks would show whether its deep blocks matter less"
    values = metric(frame[frame["status"] == "ok"], DEEP_OVER_SHALLOW).dropna()
    if values.empty:
        return f"{name} records no per-block skip losses (profiles.layer_skip_loss_increase, 4 blocks or more)"
    mean = float(values.mean())
    if mean <= share:
        return None
    return (f"{name}'s deep blocks matter about as much as its shallow ones (skipping one costs {mean:.3g}× the loss "
            f"of skipping a shallow one, first block left out; the regime needs ≤ {share:g}×), so there is no curse of "
            f"depth here for a fix to lift")


def _flow_vanishes(arms: Arms, runs: pd.DataFrame, args) -> str | None:
    name, decades = str(args["arm"]), float(args["decades"])
    frame = arms.get(name)
    if frame is None:  # the regime is about this arm: without it nothing shows the regime holds
        return f"no {name} arm here, whose gradient flow would show whether the regime holds"
    values = metric(frame, FLOW_COLUMN).dropna()
    if values.empty:
        return f"{name} records no gradient flow through time ({FLOW_COLUMN})"
    mean = float(values.mean())
    if mean <= -decades:
        return None
    way = "grows going back" if mean > 0 else "barely vanishes"
    return (f"{name}'s gradient {way} through time at init (signed flow {mean:+.3g} decades), so \"keeps more of the "
            f"gradient\" is not the stability the claim is about here")


def _one_device(arms: Arms, runs: pd.DataFrame, args) -> str | None:
    devices = {n: sorted({str(d) for d in f.get("environment.device", pd.Series(dtype=object)).dropna()})
               for n, f in arms.items()}
    every = {d for v in devices.values() for d in v}
    if not every:  # records from before the device was recorded: nothing shows the arms differ
        return None
    if len(every) > 1:
        return "the arms ran on different devices (" + "; ".join(f"{n}: {', '.join(v)}" for n, v in devices.items()) + ")"
    return None


def _timed_as_paper(arms: Arms, runs: pd.DataFrame, args) -> str | None:
    """Every arm ran on the paper's device kind at its precision: a speed claim's ratio is a property of the
    kernels on that hardware (fusion, memory bandwidth, vector units), never carried from another device."""
    device, precision = str(args["device"]), str(args["precision"])
    seen = {}
    for name, frame in arms.items():
        devices = {str(d) for d in frame.get("environment.device", pd.Series(dtype=object)).dropna()}
        precisions = {str(p).removesuffix("_pure") for p in axis(frame, "precision").dropna()}
        if devices != {device} or precisions != {precision}:
            seen[name] = f"{'/'.join(sorted(devices)) or 'device not recorded'} at {'/'.join(sorted(precisions)) or 'precision not recorded'}"
    if not seen:
        return None
    return (f"the arms were timed on {'; '.join(f'{n}: {w}' for n, w in seen.items())}, and the paper's comparison is on "
            f"{device} at {precision}: a step-time ratio is a property of the kernels on one kind of hardware, so one "
            f"measured elsewhere neither supports nor contradicts it")


def _data_regimes(arms: Arms, runs: pd.DataFrame, args) -> str | None:
    repeats = (_numbers(runs, "steps") * _numbers(runs, "batch_size")) / _numbers(runs, "task.n_train")
    n_train = _numbers(runs, "task.n_train")
    if repeats.dropna().empty:
        return "the records do not say the training-set size or the examples seen"
    scarce, rich = repeats[n_train == n_train.min()].min(), repeats[n_train == n_train.max()].max()
    low, high = float(args.get("scarce", 4)), float(args.get("rich", 2))
    if not (scarce >= low and rich <= high):
        return (f"the small training set is seen {scarce:.3g}× and the large one {rich:.3g}× (a scarce level needs ≥ "
                f"{low:g}×, a plentiful one ≤ {high:g}×)")
    return None


def _lr_top_unstable(arms: Arms, runs: pd.DataFrame, args) -> str | None:
    """The top of the grid destabilizes ``arm``: some run fails there, or (unless ``failure`` is asked) its
    final score there is worse than at its best lr by more than δ. A score that only moved at the bottom
    of the grid (a too-low lr) is not instability at the top (the referee's reading of ln_larger_stable_lr)."""
    name = str(args["arm"])
    frame = arms.get(name)
    if frame is None or frame.empty:
        return None
    lr = _numbers(frame, "lr")
    top = frame[lr == lr.max()]
    if rules.failed(top).any():
        return None
    largest = format_value(float(lr.max()))
    if args.get("failure"):
        return f"no run of {name} failed at the largest lr ({largest}): every one trained there"
    score = metric(frame[frame["status"] == "ok"], rules.primary_column(runs))
    sign, metric_name, _ = task_direction(runs)
    if rules.ratio_scale(metric_name):  # MSE: its δ is a log ratio, so the drop is taken on the log scale
        score = np.log(score.where(score > 0))
    means = score.groupby(lr[frame["status"] == "ok"]).mean().dropna()
    if len(means) < 2:
        return f"{name} ran one lr ({values_text(lr)})"
    delta, margin_words = rules.margin(metric_name)
    drop = float(sign * (means.max() if sign > 0 else means.min()) - sign * means.loc[means.index.max()])
    if math.isfinite(delta) and drop > delta:
        return None
    return (f"{name} neither failed at the largest lr ({largest}) nor scored worse there than at its best lr by "
            f"more than δ ({margin_words})")


# The domain each task belongs to, in the words a paper's statement uses: a claim quoted about named domains
# ("visual recognition and generation, speech representation, and DNA sequence modeling") says nothing about a
# task outside them, whichever way the runs come out (referee 19: Derf's sentence read on a character model).
TASK_DOMAINS = {"digits": "visual recognition (8×8 digit images)", "idx": "visual recognition (MNIST-style images)",
                "fortunes_lm": "language modelling (characters)", "text": "language modelling (characters)",
                "fortunes_topic": "text classification", "imdb": "text classification",
                "adding": "a synthetic sequence task", "copy": "a synthetic sequence task",
                "mqar": "a synthetic sequence task (associative recall)"}


def _task_names(frame: pd.DataFrame) -> set[str]:
    recorded = frame["task.name"] if "task.name" in frame else pd.Series(dtype=object)
    named = recorded.where(recorded.notna(), axis(frame, "task")) if len(recorded) else axis(frame, "task")
    return {str(v) for v in named.dropna()}


def _quoted_domain(arms: Arms, runs: pd.DataFrame, args) -> str | None:
    """Every arm ran a task of a domain the quoted statement names (``tasks``: those tasks' names, comma-separated);
    a task outside them is a question the paper's sentence does not ask: neither way can it support or contradict it."""
    inside = {t.strip() for t in str(args["tasks"]).split(",") if t.strip()}
    found = sorted({t for frame in arms.values() for t in _task_names(frame)})
    if not found:
        return "the records do not say which task the arms ran (task.name)"
    outside = [t for t in found if t not in inside]
    if not outside:
        return None
    shown = ", ".join(f"{t} ({TASK_DOMAINS.get(t, 'a domain not in the table')})" for t in outside)
    return (f"the task here is {shown}, outside the domains the quoted statement names ({args['domains']}): the "
            f"sentence says nothing about it either way")


def _output_norm_at_init(arms: Arms, runs: pd.DataFrame, args) -> str | None:
    """The arm with the norm on the output only (``output``) differs from the unnormalized cell in its
    recurrence: at initialization it does not (the output norm acts after the recurrence, whose weights and
    state are the unnormalized cell's), so a flow read at init compares the unnormalized cell again."""
    name = str(args["output"])
    frame = arms.get(name)
    if frame is None or frame.empty:
        return None
    placements = set(axis(frame, "placement").dropna().astype(str))
    if placements & set(IN_CELL) or not placements:
        return None
    shown = ""
    plain = arms.get(str(args.get("arm", "none")))
    if plain is not None and len(plain):
        mine, theirs = metric(frame, FLOW_COLUMN).dropna(), metric(plain, FLOW_COLUMN).dropna()
        if len(mine) and len(theirs):
            shown = (f" (signed flow {name} {float(mine.mean()):+.3g} vs {args.get('arm', 'none')} "
                     f"{float(theirs.mean()):+.3g} decades)")
    return (f"at initialisation the output norm leaves the recurrence unchanged, so {name} equals "
            f"{args.get('arm', 'none')}{shown}: the comparison restates the one with no normalization")


PREDICATES: dict[str, Predicate] = {p.name: p for p in (
    Predicate("bn_pool_at_most", "BatchNorm's statistics to pool at most {n} vectors (the claim's small batch)",
              _pool_at_most, "per-step BatchNorm in the cell (placement=in_cell) at a batch of at most {n}, or a "
              "sequence short enough that batch × length ≤ {n}"),
    Predicate("bn_pool_at_least", "masked per-step BatchNorm to normalize over at least {n} real rows at every step",
              _pool_at_least, "a batch large enough (or lengths close enough) that the last steps keep ≥ {n} real "
              "rows, or BatchNorm outside the cell"),
    Predicate("unnormalized_grad_grows", "the unnormalized arm's gradient to grow at this lr (a divergence, or a "
              "largest pre-clipping gradient norm ≥ {growth}× its median)", _unnormalized_grows,
              "a larger lr or longer sequences, where the unnormalized cell's gradient grows (clipping loose)"),
    Predicate("equal_data", "equal examples seen (steps × batch_size) in the arms compared", _equal_data,
              "steps scaled inversely to the batch size (sweeps/batch_size.yaml)"),
    Predicate("off_trivial", "the arms off the task's trivial solutions (task.trivial)", _gate(regime.ON_PLATEAU),
              "a set-up that takes the arms off the task's trivial solutions (more steps, a larger model or an easier task)"),
    Predicate("off_chance", "an arm off chance", _gate(regime.AT_CHANCE), regime.REMEDY[regime.AT_CHANCE]),
    Predicate("off_ceiling", "the arms off the ceiling", _gate(regime.AT_CEILING), regime.REMEDY[regime.AT_CEILING]),
    Predicate("plateau", "trained to a plateau (no arm still improving at the end)", _gate(regime.STILL_IMPROVING),
              "a learning rate that decays to the end (optim.schedule=cosine), or more steps"),
    Predicate("recorded", "the records to hold {column}", _recorded, "runs recorded with the probe that writes {column}"),
    Predicate("flow_window", "a window of ≥ {steps} time steps past the input's constant prefix", _flow_window,
              "longer sequences (the window starts where the task's constant prefix ends)"),
    Predicate("variable_lengths", "sequences that vary in length (padding in a batch)", _variable_lengths,
              "task.min_length below task.length (sweeps/ln_vs_bn_varlen.yaml)"),
    Predicate("some_fail", "a setting in which some run fails to train", _some_fail,
              "a larger lr or a deeper model, where the failing arm fails in some seeds"),
    Predicate("some_train", "a setting in which some run trains (so a failure is the arm's, not too few steps)",
              _some_train, "more steps, where the arm that should train does"),
    Predicate("own_lr", "each arm at its own tuned lr (study.lr_protocol tuned)", _own_lr,
              "each arm at its own lr, chosen on selection seeds over an lr grid (normbench study --selection-seeds 1, "
              "the sweep's lr grid per arm)"),
    Predicate("same_lr", "every arm at one lr (a mechanism read after training compared at equal lr)", _same_lr,
              "the mechanism read at one lr every arm runs, with seeds there (the lr an axis of the sweep, not tuned "
              "per arm), beside the tuned comparison of the scores"),
    Predicate("arm_trains", "{arm} to train in at least half its runs (beyond every trivial solution of the task)", _arm_trains,
              "more steps or a larger model, where {arm} trains"),
    Predicate("depth_spread", "at least {levels} depths spread over a factor ≥ {factor}", _depth_spread,
              "{levels} or more depths (model.layers) spread over a factor ≥ {factor}"),
    Predicate("pre_variance_grows", "Pre-LN's hidden-state variance to grow with depth (positive slope of ln Var)",
              _grows_in("pre", "metrics.hidden_var_log_slope", "slope of ln Var over the blocks"),
              "a deeper model or more steps, where Pre-LN's variance grows"),
    Predicate("setting_is", "every run at {key} = {value} (the paper's)", _setting_is, "{key}={value}"),
    Predicate("deep_blocks_idle", "{arm}'s deep blocks to matter less than its shallow ones (skipping a deep block "
              "costs at most {share}× the loss of skipping a shallow one)", _deep_blocks_idle,
              "a deeper model (the papers' 12 layers and up: LLaMA 130M and larger) or more steps, where {arm}'s deep "
              "blocks matter less than its shallow ones"),
    Predicate("flow_vanishes", "{arm}'s gradient to vanish going back in time by at least {decades} decade(s) at init",
              _flow_vanishes, "longer sequences or a task whose unnormalized cell loses its gradient through time "
              "(a gradient that grows going back needs the mirrored claim)"),
    Predicate("one_device", "every arm timed on one device", _one_device, "timings of every arm on one device, "
              "interleaved in one process (normbench.bench arms)"),
    Predicate("timed_as_paper", "every arm timed on {device} at {precision} (the paper's hardware)", _timed_as_paper,
              "the arms timed on {device} at precision={precision}, paired and interleaved in one process "
              "(normbench bench arms on that machine; scripts/gpu_check.sh)"),
    Predicate("data_regimes", "a scarce level (the small set seen ≥ {scarce}×) and a plentiful one (≤ {rich}×)",
              _data_regimes, "training sets that differ enough (sweeps/dyt_data_regime.yaml)"),
    Predicate("quoted_domain", "a task from a domain the quoted statement names ({domains})", _quoted_domain,
              "a task from a named domain, e.g. a small vision model on digits (task=digits)"),
    Predicate("output_norm_moves_recurrence", "{output}'s recurrence to differ from {arm}'s where the measure is read "
              "(at initialisation a norm on the output only leaves it as the unnormalized cell has it)",
              _output_norm_at_init, "the flow read after training, or a divergence rate at an lr where {arm} fails"),
    Predicate("lr_top_fails", "some run of {arm} to fail at the top of the lr grid (diverge or not train)",
              lambda arms, runs, args: _lr_top_unstable(arms, runs, {**args, "failure": True}),
              "an lr grid whose top reaches {arm}'s divergence, with clipping off or loose"),
    Predicate("lr_top_unstable", "the top of the lr grid to destabilize {arm} (a failure there, or a final score there "
              "worse than at its best lr by more than δ)", _lr_top_unstable, "an lr grid whose top reaches {arm}'s instability"),
)}


def prose_only(claim) -> str:
    """The note of every part of a claim whose regime is stated in words and checked by nothing."""
    return (f"not testable here: the claim's regime is stated only in prose (\"{claim.regime}\") and no predicate "
            f"checks it on the records — testable with its regime as named predicates (Claim.needs, or "
            f"regime_checks in a claim file; docs/claims.md)")

