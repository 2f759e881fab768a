"""The typed config schema: every key a run is configured by, its type, default and valid range.

Imports neither torch nor Hydra, so the runner, the report and the record contract all read the
same definitions (normbench/contract.py derives a run's identity from them). Hydra composes the
YAML in ``conf/`` onto these dataclasses (normbench/config.py registers them); their
``__post_init__`` checks ranges, so a bad value fails before any data is loaded or model built.

A field whose metadata carries ``harness`` says how a run is executed, not what is trained; it
stays out of the run's identity (docs/run-record.md lists them with the reason).
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from pathlib import PurePosixPath
from typing import Any, Optional

KINDS = ("none", "bn", "ln", "rms", "scale", "dyt")
IMPLS = ("native", "reference", "auto", "compiled")  # compiled: rms only (normbench/models/rmsnorm.cpp)
FAMILIES = ("rnn", "lstm", "gru", "transformer")
RECURRENT = ("rnn", "lstm", "gru")
CELL_KERNELS = ("auto", "cpp", "python", "compile")  # model.cell_kernel: how an in-cell layer runs (cell_recurrences)
PLACEMENTS = ("pre", "post", "in_cell", "gate", "peri")
DROPOUT_AT = ("before_norm", "after_norm")
TEXT_EXAMPLES = ("windows", "lines", "paragraphs")  # what one example of task=text is
DTYPES = ("fp32", "bf16", "fp16", "bf16_pure", "fp16_pure")  # normbench/precision.py says what each means
OPTIMIZERS = ("adamw", "sgd")
ROLES = ("single", "selection", "evaluation")  # a tuned study's stages (normbench/tune.py)
SCHEDULES = ("constant", "cosine")
DEVICES = ("auto", "cpu", "cuda")
LOGGERS = ("none", "tensorboard", "mlflow")
PIXELS = 64  # an 8x8 scikit-learn digit


class ConfigError(ValueError):
    """A config value out of range; the message is one line naming the key."""


RECORD_FILES = ("summary.json", "metrics.jsonl", "traceback.txt", "normbench.log", ".normbench.lock")


def _short(value: object, limit: int = 80) -> str:
    """A value as an error line shows it: at most ``limit`` characters."""
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise ConfigError(message)


def _one_of(key: str, value: str, valid: tuple[str, ...]) -> None:
    _require(value in valid, f"{key}={value!r} is not valid; valid: {', '.join(valid)}")


def _positive(key: str, value: float) -> None:
    _require(isinstance(value, (int, float)) and math.isfinite(value) and value > 0, f"{key} must be > 0, got {value}")


def require_eps(kind: str, eps: float, key: str = "norm.eps") -> None:
    """The one eps rule, for the config and the library alike: positive and finite wherever the norm
    uses it (not without a norm, not in DyT's elementwise tanh)."""
    if kind not in ("none", "dyt"):
        _positive(key, eps)


def require_at_least(key: str, value: int, minimum: int) -> None:
    """Reject a task config value below `minimum`, naming the user's Hydra key."""
    if value < minimum:
        raise ConfigError(f"task.{key} must be >= {minimum}, got {value}")


def require_name(name: str, expected: str) -> None:
    """Reject a task config whose `name` is not its own task: load_task dispatches on the name."""
    if name != expected:
        raise ConfigError(f"task.name must be {expected!r} for this config, got {name!r}")


def _require_split_sizes(config) -> None:
    for key in ("n_train", "n_val", "n_test"):
        require_at_least(key, getattr(config, key), 1)


def harness(why: str, default):
    """A field that changes how a run executes, not what it trains: outside the run's identity."""
    return field(default=default, metadata={"harness": why})


# --- the groups -----------------------------------------------------------------------------------

@dataclass
class NormSpec:
    """Everything needed to build one kind of norm at any width: the ``norm`` config group, and what
    the library's models take (``NormSpec("rms").build(dim)``)."""

    kind: str = "ln"
    eps: float = 1e-5
    gamma_init: float = 1.0
    affine: bool = True
    impl: str = "native"
    fp32: bool = True          # compute the norm in fp32 under bf16/fp16 autocast
    alpha_init: float = 0.5    # DyT only
    gain_offset: bool = False  # store gamma - 1 (Gemma's RMSNorm): weight decay pulls the gain toward 1
    # bn only: before every evaluation, population statistics from the current weights (a pass over
    # bn_reestimate_batches batches of 512 training examples, cumulative average) replace the running ones
    bn_reestimate: bool = False
    bn_reestimate_batches: int = 8
    bn_mask: bool = True       # BatchNorm: statistics over the real steps of a padded batch; false: over padding too

    def __post_init__(self):
        _one_of("norm.kind", self.kind, KINDS)
        _one_of("norm.impl", self.impl, IMPLS)
        require_eps(self.kind, self.eps)
        _require(math.isfinite(self.gamma_init), f"norm.gamma_init must be finite, got {self.gamma_init}")
        _require(math.isfinite(self.alpha_init), f"norm.alpha_init must be finite, got {self.alpha_init}")
        _require(self.bn_reestimate_batches >= 1,
                 f"norm.bn_reestimate_batches must be >= 1, got {self.bn_reestimate_batches}")

    def build(self, dim: int, per_step: bool = False):
        from normbench.norms import build_norm  # torch only when a model is built: this module stays torch-free

        layer = {k: v for k, v in asdict(self).items() if not k.startswith("bn_reestimate")}  # the trainer's
        return build_norm(dim=dim, per_step=per_step, **layer)

    @property
    def active(self) -> bool:
        return self.kind != "none"


@dataclass
class PlacementConfig:
    name: str = "pre"
    cell_norm: bool = True     # in_cell LSTM: also normalize c_t before its tanh
    summed: bool = False       # in_cell: one norm on W·x + U·h instead of one on each

    def __post_init__(self):
        _one_of("placement.name", self.name, PLACEMENTS)


@dataclass
class ModelShape:
    """A model's shape: the ``model`` config group, and what the library's build_model takes."""

    family: str = "lstm"
    hidden: int = 64           # recurrent hidden size, or Transformer d_model
    layers: int = 1
    embed: int = 32            # input projection width of recurrent models
    heads: int = 4             # Transformer only
    ff_mult: int = 4           # Transformer only
    cell_kernel: str = "auto"  # in_cell: auto (LN-LSTM/GRU: C++ on CPU where built) | cpp | python | compile (torch.compile)
    qk_norm: bool = False      # Transformer only: the run's norm on queries and keys, per head
    bidirectional: bool = False  # rnn, lstm, gru: a second layer reads each sequence backward, own norms
    dropout: float = 0.0       # rate; recurrent: layer outputs (between layers, before the readout);
                               # Transformer: residual branches before the add, and attention weights
    dropout_at: str = "after_norm"  # before_norm | after_norm: where on a layer output the norm meets (pre, post, peri)
    dropout_recurrent: bool = False  # recurrent: one mask per sequence, the same at every step (variational)

    def __post_init__(self):
        _one_of("model.family", self.family, FAMILIES)
        _one_of("model.cell_kernel", self.cell_kernel, CELL_KERNELS)
        _one_of("model.dropout_at", self.dropout_at, DROPOUT_AT)
        _require(0 <= self.dropout < 1, f"model.dropout must be in [0, 1), got {self.dropout}")
        for key in ("hidden", "layers", "embed", "heads", "ff_mult"):
            _require(getattr(self, key) >= 1, f"model.{key} must be >= 1, got {getattr(self, key)}")


# family -> the in-cell LayerNorm recurrences with a hand-written backward it has: cpp (models/lnlstm.cpp,
# models/gru.cpp, built on a CPU) and python (the LSTM's models/fused_lstm.py), each tested equal to the loop
HAND_WRITTEN_CELLS = {"lstm": ("cpp", "python"), "gru": ("cpp",)}


def per_term_in_cell(placement: str, summed: bool, norm_kind: str) -> bool:
    """Whether the layers are per-term in-cell ones (N(Wx) + N(Uh) + b), the ones model.cell_kernel acts on."""
    return placement == "in_cell" and not summed and norm_kind != "none"


def hand_written_cell(family: str, norm_kind: str, impl: str, full_precision: bool = True) -> bool:
    """Whether a per-term in-cell layer can run a hand-written recurrence: native LayerNorm in an LSTM
    or GRU, in float32 or float64 without autocast (the kernels compute in their input's dtype, outside
    the norms' precision policy). Only there do model.cell_kernel auto, cpp and python differ."""
    return family in HAND_WRITTEN_CELLS and norm_kind == "ln" and impl == "native" and full_precision


def cell_recurrences(family: str, norm_kind: str, impl: str, cell_kernel: str,
                     full_precision: bool = True) -> tuple[str, ...]:
    """What a per-term in-cell layer may run, preferred first: the layer runs the first its device
    offers (cpp where the compiled kernel builds on a CPU; the others anywhere), and refuses to run
    when the only one is cpp and it does not build (models/kernel_choice.py: recurrence_on).

        compile   the autograd loop with its step through torch.compile: any family and norm
        cpp       lnlstm.cpp or gru.cpp
        python    the LSTM's hand-written Python recurrence
        autograd  the autograd loop of the cell's step

    () for a layer with no hand-written recurrence: the autograd loop, whatever auto, cpp, python say."""
    if cell_kernel == "compile":
        return ("compile",)
    if not hand_written_cell(family, norm_kind, impl):
        return ()
    if not full_precision:
        return ("autograd",)
    if cell_kernel == "cpp":
        return ("cpp",)
    own = HAND_WRITTEN_CELLS[family]  # auto: all of them; python: those that are not compiled
    return (*(own if cell_kernel == "auto" else tuple(k for k in own if k != "cpp")), "autograd")


@dataclass
class PrecisionConfig:
    # fp32 | bf16, fp16: autocast (fp16 adds a GradScaler on CUDA) | bf16_pure, fp16_pure: weights and
    # activations in half, fp32 master weights, fp16 with a dynamic loss scale (normbench/precision.py)
    dtype: str = "fp32"

    def __post_init__(self):
        _one_of("precision.dtype", self.dtype, DTYPES)


@dataclass
class OptimConfig:
    name: str = "adamw"
    weight_decay: float = 0.01
    norm_weight_decay: float = 0.0   # decaying gamma toward 0 would measure the optimizer, not the norm
    beta1: float = 0.9
    beta2: float = 0.999
    momentum: float = 0.9            # sgd only
    schedule: str = "constant"       # after warm-up: constant | cosine (to 0 at the last step)

    def __post_init__(self):
        _one_of("optim.name", self.name, OPTIMIZERS)
        _one_of("optim.schedule", self.schedule, SCHEDULES)
        for key in ("weight_decay", "norm_weight_decay"):  # inf would end every run as `diverged`, a false result
            value = getattr(self, key)
            _require(math.isfinite(value) and value >= 0, f"optim.{key} must be finite and >= 0, got {value}")
        for key in ("beta1", "beta2", "momentum"):
            _require(0 <= getattr(self, key) < 1, f"optim.{key} must be in [0, 1), got {getattr(self, key)}")


@dataclass
class LoggerConfig:
    """Where a run's curves go besides its record: the record is always written, this only adds."""

    name: str = "none"         # none | tensorboard (<run_dir>/<dir>/, pip install -e ".[tensorboard]")
    dir: str = "tb"            # relative to the run directory
    histograms: bool = True    # at probe steps: gradients and the outputs of every norm
    tracking_uri: Optional[str] = None  # mlflow: a tracking server or store; null = file store in <run_dir>/<dir>

    def __post_init__(self):
        _one_of("logger.name", self.name, LOGGERS)
        _require(bool(self.dir), "logger.dir must not be empty")
        parts = PurePosixPath(str(self.dir)).parts
        _require(not os.path.isabs(str(self.dir)) and ".." not in parts,
                 f"logger.dir={_short(self.dir)!r} must stay inside the run directory (relative, no '..')")
        _require(not parts or parts[0] not in RECORD_FILES,
                 f"logger.dir={_short(self.dir)!r} is the name of a record file ({', '.join(RECORD_FILES)})")


@dataclass
class Config:
    model: ModelShape = field(default_factory=ModelShape)
    norm: NormSpec = field(default_factory=NormSpec)
    placement: PlacementConfig = field(default_factory=PlacementConfig)
    precision: PrecisionConfig = field(default_factory=PrecisionConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    task: Any = None                 # one of normbench.tasks.TASK_CONFIGS, chosen by the task group
    seed: int = 0
    # What the run is for in a tuned study: lr selection, or evaluation at the chosen lr on fresh
    # seeds. Part of identity, so a group never pools the two (normbench/tune.py).
    role: str = "single"
    lr: float = 3e-3
    batch_size: int = 32
    steps: int = 600
    warmup_steps: int = 0
    grad_clip: Optional[float] = 1.0  # max global grad norm; null = no clipping
    # where, not what: a run keeps its identity on any machine (the record says where it ran)
    device: str = harness("where it runs; environment.device records it", "auto")  # auto: cuda when available
    # CPU results depend on the thread count (reduction order), but a thread count is not a
    # setting to compare: environment.threads records it and rerun uses the recorded one
    threads: int = harness("environment.threads records the count used", 0)  # 0: cores / parallel jobs
    eval_every: int = 100
    log_every: int = 10
    probe_every: int = 50             # gradient/activation probes; 0 = only at init and at the end
    timing_warmup: int = 10           # steps excluded from the step-time median
    resume: bool = harness("what to run, not how", False)     # skip finished jobs, continue interrupted ones from a checkpoint
    # steps between checkpoints (normbench/checkpoint.py); 0 = none. Saving the state changes nothing trained.
    checkpoint_every: int = harness("how a run survives preemption, not what is trained", 0)
    report: bool = harness("output only", True)              # multirun: write the report into the sweep dir at the end
    progress: bool = harness("output only", True)            # progress bar on a terminal
    # Deterministic kernels compute the same functions in a fixed reduction order: the same class
    # of difference as the thread count or the device, and both are harness. environment.deterministic
    # records it, and rerun uses the recorded config.
    deterministic: bool = harness("selects kernels, not what is trained; environment records it", False)
    # A logger reads what the run measures and writes a copy elsewhere; it changes nothing measured.
    logger: LoggerConfig = field(default_factory=LoggerConfig, metadata={"harness": "output only"})

    def __post_init__(self):
        _positive("lr", self.lr)
        _require(0 <= self.seed < 2**63, f"seed must be in [0, 2**63), got {self.seed}")  # torch's generator range
        for key in ("batch_size", "steps", "eval_every", "log_every"):
            _require(getattr(self, key) >= 1, f"{key} must be >= 1, got {getattr(self, key)}")
        for key in ("warmup_steps", "threads", "probe_every", "timing_warmup", "checkpoint_every"):
            _require(getattr(self, key) >= 0, f"{key} must be >= 0, got {getattr(self, key)}")
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        # far more threads than cores only slows a run down (thousands of times at threads=999)
        _require(self.threads <= 4 * cores, f"threads must be <= {4 * cores} (4 x the {cores} cores here), got {self.threads}")
        _require(self.grad_clip is None or (math.isfinite(self.grad_clip) and self.grad_clip > 0),
                 f"grad_clip must be > 0 and finite, or null, got {self.grad_clip}")
        _one_of("device", self.device, DEVICES)
        _one_of("role", self.role, ROLES)
        _require(self.task is not None and hasattr(self.task, "name"), "task is not set; choose one with task=NAME")
        _require(math.isfinite(self.task.target), f"task.target must be a finite number, got {self.task.target}")
        # BatchNorm of one example has no batch statistics (zero variance everywhere)
        _require(self.norm.kind != "bn" or self.batch_size >= 2, f"norm=bn needs batch_size >= 2, got {self.batch_size}")
        # torch.compile traces the step: impl=auto times native against reference in Python on its first
        # calls, and impl=compiled is a C++ extension dynamo cannot look into
        compiled_cell = self.model.cell_kernel == "compile" \
            and per_term_in_cell(self.placement.name, self.placement.summed, self.norm.kind)
        _require(not compiled_cell or self.norm.impl in ("native", "reference"),
                 f"model.cell_kernel=compile needs norm.impl=native or reference, got {self.norm.impl} "
                 "(auto measures both eagerly; compiled is a C++ extension torch.compile cannot trace)")
        _require(not (self.model.bidirectional and getattr(self.task, "name", None) == "text"),
                 "model.bidirectional=true cannot run task=text: its backward direction reads the next "
                 "character each step must predict; valid for text: bidirectional=false")
        if isinstance(self.logger, dict):  # to_config builds the groups it knows; the logger group is built here
            self.logger = LoggerConfig(**self.logger)
        _require_float32(self)


FLOAT32_MAX = 3.4028234663852886e38


def _require_float32(config, prefix: str = "") -> None:
    """Every float setting of ``config`` and its groups must be a finite number float32 can hold:
    the model holds them as float32 tensors, and a larger one (gamma_init=1e308) ends the run in an
    overflow error instead of being refused here with its key."""
    for item in fields(config):
        value = getattr(config, item.name)
        key = f"{prefix}{item.name}"
        if is_dataclass(value):
            _require_float32(value, f"{key}.")
        elif isinstance(value, float):
            _require(math.isfinite(value) and abs(value) <= FLOAT32_MAX,
                     f"{key} must be a finite number within float32's range (|x| <= 3.4e38), got {_short(value)}")

# --- tasks: one dataclass each, chosen by the task group ------------------------------------------

@dataclass
class AddingConfig:
    name: str = "adding"
    length: int = 50  # sequence length T; one marker falls in each half
    n_train: int = 10000
    n_val: int = 1000
    n_test: int = 1000
    target: float = 0.01  # val MSE that counts as solved
    min_length: Optional[int] = None  # variable lengths: each example's T drawn from [min_length, length]; null: all T
    bucket: bool = False  # variable lengths: train batches of examples of about one length

    def __post_init__(self):
        require_name(self.name, "adding")
        require_at_least("length", self.length, 2)
        if self.min_length is not None:
            require_at_least("min_length", self.min_length, 2)
            _require(self.min_length <= self.length,
                     f"task.min_length must be <= task.length ({self.length}), got {self.min_length}")
        _require_split_sizes(self)


@dataclass
class CopyConfig:
    name: str = "copy"
    n_symbols: int = 8  # data symbols to choose from
    length: int = 10  # symbols to memorise
    delay: int = 20  # blanks between the last symbol and the delimiter
    n_train: int = 10000
    n_val: int = 1000
    n_test: int = 1000
    target: float = 0.9  # val accuracy over the output positions that counts as solved

    def __post_init__(self):
        require_name(self.name, "copy")
        require_at_least("n_symbols", self.n_symbols, 2)
        require_at_least("length", self.length, 1)
        require_at_least("delay", self.delay, 0)
        _require_split_sizes(self)


@dataclass
class DigitsConfig:
    name: str = "digits"
    pixels_per_step: int = 1  # 1: 64 steps of one pixel; 8: 8 rows of 8 pixels; must divide 64
    permute: bool = False  # read the pixels in one fixed random order instead of row by row
    permutation_seed: int = 0  # draws that order; apart from the run seed, so all runs share it
    target: float = 0.9  # val accuracy that counts as solved

    def __post_init__(self):
        require_name(self.name, "digits")
        if self.pixels_per_step < 1 or PIXELS % self.pixels_per_step:
            raise ValueError(
                f"task.pixels_per_step must divide {PIXELS} (1, 2, 4, 8, 16, 32, 64), got {self.pixels_per_step}"
            )
        if self.permutation_seed < 0:
            raise ValueError(f"task.permutation_seed must be >= 0, got {self.permutation_seed}")


@dataclass
class IdxConfig:
    name: str = "idx"
    path: Optional[str] = None  # folder with the four IDX files, each plain or .gz; required
    limit_train: Optional[int] = None  # use only the first N training images (quick runs)
    target: float = 0.9  # val accuracy that counts as solved

    def __post_init__(self):
        require_name(self.name, "idx")
        if self.limit_train is not None:
            require_at_least("limit_train", self.limit_train, 2)  # one to train on, one to validate


@dataclass
class ImdbConfig:
    name: str = "imdb"
    path: Optional[str] = None  # the aclImdb folder; required
    max_vocab: int = 20000  # most frequent training words kept; the rest read as "unknown"
    max_len: int = 256  # tokens kept per review: its last ones
    max_files_per_class: Optional[int] = None  # read only the first N reviews of each folder (quick runs)
    target: float = 0.85  # val accuracy that counts as solved
    variable_length: bool = True  # each review as long as it is (padding masked); false: left-padded to max_len
    bucket: bool = False  # variable_length: train batches of reviews of about one length

    def __post_init__(self):
        require_name(self.name, "imdb")
        require_at_least("max_vocab", self.max_vocab, 1)
        require_at_least("max_len", self.max_len, 1)
        if self.max_files_per_class is not None:
            require_at_least("max_files_per_class", self.max_files_per_class, 1)


@dataclass
class MqarConfig:
    name: str = "mqar"
    n_pairs: int = 8  # key-value pairs to memorise per sequence
    n_keys: int = 64  # size of the key vocabulary
    n_values: int = 64  # size of the value vocabulary, disjoint from the keys
    n_queries: Optional[int] = None  # keys asked for after the pairs, each once; None = all of them
    n_train: int = 10000
    n_val: int = 1000
    n_test: int = 1000
    target: float = 0.9  # val accuracy over the query positions that counts as solved

    def __post_init__(self):
        require_name(self.name, "mqar")
        require_at_least("n_pairs", self.n_pairs, 1)
        # Keys and values are drawn without replacement within a sequence, as in Zoology.
        if self.n_keys < self.n_pairs:
            raise ValueError(f"task.n_keys must be >= task.n_pairs ({self.n_pairs}), got {self.n_keys}")
        if self.n_values < self.n_pairs:
            raise ValueError(f"task.n_values must be >= task.n_pairs ({self.n_pairs}), got {self.n_values}")
        if self.n_queries is not None and not 1 <= self.n_queries <= self.n_pairs:
            raise ValueError(
                f"task.n_queries must be null or between 1 and task.n_pairs ({self.n_pairs}), got {self.n_queries}"
            )
        _require_split_sizes(self)


@dataclass
class TextConfig:
    name: str = "text"
    path: Optional[str] = None  # a UTF-8 text file; required
    length: int = 64  # characters per input window (each predicts its next character)
    n_train: int = 10000  # windows sampled from the first 90% of the file
    n_val: int = 1000  # windows sampled from the next 5%
    n_test: int = 1000  # windows sampled from the last 5%
    target: float = 2.5  # val bits per character that counts as solved
    examples: str = "windows"  # windows (fixed length) | lines | paragraphs: one example each, as long as it is (up to length)
    bucket: bool = False  # lines, paragraphs: train batches of examples of about one length

    def __post_init__(self):
        require_name(self.name, "text")
        require_at_least("length", self.length, 1)
        _one_of("task.examples", self.examples, TEXT_EXAMPLES)
        for key in ("n_train", "n_val", "n_test"):
            require_at_least(key, getattr(self, key), 1)

TASK_CONFIGS: dict[str, type] = {cls.name: cls for cls in (AddingConfig, CopyConfig, DigitsConfig, IdxConfig,
                                                          ImdbConfig, MqarConfig, TextConfig)}
