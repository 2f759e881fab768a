"""The typed config schema: every key a run is configured by, its type, default and valid range.

Imports neither torch nor Hydra, so the runner, the report and the record contract all read the
same definitions (normbench/configuration/contract.py derives a run's identity from them). Hydra composes the
YAML in ``conf/`` onto these dataclasses (normbench/configuration/config.py registers them); their
``__post_init__`` checks ranges, so a bad value fails before any data is loaded or model built.

A field whose metadata carries ``harness`` says how a run is executed, not what is trained; it
stays out of the run's identity (docs/run-record.md lists them with the reason).
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import PurePosixPath
from typing import Any, List, Optional
from urllib.parse import urlsplit

from normbench.checks import ConfigError, require_at_least, require_name, require_positive  # noqa: F401 - re-exported
from normbench.checks import cores as _cores
from normbench.checks import one_of as _one_of
from normbench.checks import require as _require
from normbench.configuration.families import FAMILIES, RECURRENT, family_names  # noqa: F401 - the families' descriptors
from normbench.configuration.placements import described, placement_names  # the placements' descriptors
from normbench.norms.kinds import IMPLS, KINDS, builds_native, kind_of, require_eps  # noqa: F401 - the norm kinds' descriptors
from normbench.norms.spec import NormSpec

# The task group: its one table, each config beside its loader (normbench/tasks/)
from normbench.tasks import TASK_CONFIGS, TaskConfig  # noqa: F401 - re-exported

# model.cell_kernel: how an in-cell layer runs its recurrence (models/kernel_choice.py). One word, one idea:
# "compiled" is normbench's own C++, built on first use, here the in-cell LN-LSTM/GRU and RMSNorm-LSTM/GRU recurrence (models/lnlstm.cpp,
# models/gru.cpp) as in norm.impl=compiled (RMSNorm, DyT, Derf: norms/rmsnorm.cpp, elementwise.cpp);
# torch_compile is torch.compile (inductor) of the autograd loop's step, no C++ of ours.
CELL_KERNELS = ("auto", "compiled", "python", "torch_compile")
# The earlier spellings, still accepted wherever a config is read and read as the name they have now. A run's
# hash keeps seeing the earlier one (contract.HASHED_CELL_KERNELS), so no record's identity changed.
EARLIER_CELL_KERNELS = {"cpp": "compiled", "compile": "torch_compile"}
DROPOUT_AT = ("before_norm", "after_norm")
# a recurrent layer's W_hh at init: uniform(±1/√hidden), PyTorch's (every earlier record's), or orthogonal per gate
# block (Saxe et al. 2014; Cooijmans et al. 2016 initialize W_h so, and their gradient-flow figure is measured there)
RECURRENT_INITS = ("uniform", "orthogonal")
DTYPES = ("fp32", "bf16", "fp16", "bf16_pure", "fp16_pure")  # normbench/training/precision.py says what each means
OPTIMIZERS = ("adamw", "sgd", "muon")  # muon: torch.optim.Muon's step on hidden matrices, AdamW on the rest
ROLES = ("single", "selection", "evaluation")  # a tuned study's stages (normbench/studies/tune.py)
SCHEDULES = ("constant", "cosine")
DEVICES = ("auto", "cpu", "cuda")


# save_model=true's files (normbench/training/saved_model.py): the weights `normbench evaluate --which` names
SAVED_MODELS = {"final": "model_final.pt", "best": "model_best.pt"}
RECORD_FILES = ("summary.json", "metrics.jsonl", "traceback.txt", "normbench.log", ".normbench.lock", "checkpoint.pt",
                *SAVED_MODELS.values(), ".hydra")


def _short(value: object, limit: int = 80) -> str:
    """A value as an error line shows it: at most ``limit`` characters."""
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _positive(key: str, value: float) -> None:
    require_positive(key, value)




def harness(why: str, default):
    """A field that changes how a run executes, not what it trains: outside the run's identity."""
    return field(default=default, metadata={"harness": why})


# --- the groups -----------------------------------------------------------------------------------

@dataclass
class PlacementConfig:
    name: str = "pre"
    cell_norm: bool = True     # in_cell LSTM: also normalize c_t before its tanh
    summed: bool = False       # in_cell: one norm on W·x + U·h instead of one on each
    post_fraction: float = 0.25  # mix: the first floor(post_fraction * layers) layers Post-LN, the rest Pre-LN

    def __post_init__(self):
        _one_of("placement.name", self.name, placement_names())
        _require(0 <= self.post_fraction <= 1, f"placement.post_fraction must be in [0, 1], got {self.post_fraction}")


# The deepest model a run builds: DeepNet's 1000 layers (Wang et al. 2022), the deepest a norm study
# reports. Building one is a Python loop per layer (1000 layers of width 8 took minutes here), so
# model.layers=100000 sat for hours with no line before this bound; the memory check cannot see it.
MAX_LAYERS = 1000


@dataclass
class ModelShape:
    """A model's shape: the ``model`` config group, and what the library's build_model takes."""

    family: str = "lstm"
    hidden: int = 64           # the hidden size: a recurrent layer's h_t width, a Transformer's d_model
    layers: int = 1
    embed: int = 32            # input projection width of recurrent models
    heads: int = 4             # Transformer only
    ff_mult: int = 4           # Transformer only
    # in_cell: auto (LN-LSTM/GRU: our C++ kernel on a CPU where it builds) | compiled (our C++ kernel, lnlstm.cpp, gru.cpp)
    # | python (our Python recurrence, lnlstm_python.py) | torch_compile (torch.compile of the autograd loop; no C++ of ours);
    # cpp and compile, the earlier names of compiled and torch_compile, are read as them
    cell_kernel: str = "auto"
    qk_norm: bool = False      # Transformer only: the run's norm on queries and keys, per head
    bidirectional: bool = False  # rnn, lstm, gru: a second layer reads each sequence backward, own norms
    dropout: float = 0.0       # rate; recurrent: layer outputs (between layers, before the readout);
                               # Transformer: residual branches before the add, and attention weights
    dropout_at: str = "after_norm"  # before_norm | after_norm: where on a layer output the norm meets (pre, post, peri)
    dropout_recurrent: bool = False  # recurrent: one mask per sequence, the same at every step (variational)
    recurrent_init: str = "uniform"  # rnn, lstm, gru: W_hh at init, RECURRENT_INITS

    def __post_init__(self):
        _one_of("model.family", self.family, family_names())
        self.cell_kernel = cell_kernel_named(self.cell_kernel)
        _one_of("model.cell_kernel", self.cell_kernel, CELL_KERNELS)
        _one_of("model.dropout_at", self.dropout_at, DROPOUT_AT)
        _one_of("model.recurrent_init", self.recurrent_init, RECURRENT_INITS)
        _require(0 <= self.dropout < 1, f"model.dropout must be in [0, 1), got {self.dropout}")
        for key in ("hidden", "layers", "embed", "heads", "ff_mult"):
            _require(getattr(self, key) >= 1, f"model.{key} must be >= 1, got {getattr(self, key)}")
        _require(self.layers <= MAX_LAYERS, f"model.layers must be <= {MAX_LAYERS}, got {self.layers}: a deeper "
                 f"model takes longer to build than any run here should take")


def cell_kernel_named(value):
    """A model.cell_kernel value by its present name: an earlier spelling (EARLIER_CELL_KERNELS) as the name it has now."""
    return EARLIER_CELL_KERNELS.get(value, value) if isinstance(value, str) else value


def with_present_names(config: dict, names: dict = EARLIER_CELL_KERNELS) -> dict:
    """A plain config (a composition's, a record's) with model.cell_kernel renamed by ``names`` (by default
    an earlier spelling to its present name); the rest as it is."""
    model = config.get("model")
    if not isinstance(model, dict) or model.get("cell_kernel") not in names:
        return config
    return {**config, "model": {**model, "cell_kernel": names[model["cell_kernel"]]}}


def per_term_in_cell(placement: str, summed: bool, norm_kind: str) -> bool:
    """Whether the layers are per-term in-cell ones (N(Wx) + N(Uh) + b), the ones model.cell_kernel acts on."""
    return described(placement).cell_kernel and not summed and norm_kind != "none"


@dataclass
class PrecisionConfig:
    # fp32 | bf16, fp16: autocast (fp16 adds a GradScaler on CUDA) | bf16_pure, fp16_pure: weights and
    # activations in half, fp32 master weights, fp16 with a dynamic loss scale (normbench/training/precision.py)
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
    momentum: float = 0.9            # sgd; muon (its conf: 0.95, torch.optim.Muon's default)
    schedule: str = "constant"       # after warm-up: constant | cosine (to 0 at the last step)

    def __post_init__(self):
        _one_of("optim.name", self.name, OPTIMIZERS)
        _one_of("optim.schedule", self.schedule, SCHEDULES)
        for key in ("weight_decay", "norm_weight_decay"):  # inf would end every run as `diverged`, a false result
            value = getattr(self, key)
            _require(math.isfinite(value) and value >= 0, f"optim.{key} must be finite and >= 0, got {value}")
        for key in ("beta1", "beta2", "momentum"):
            _require(0 <= getattr(self, key) < 1, f"optim.{key} must be in [0, 1), got {getattr(self, key)}")


def _inside_run(key: str, value: str) -> None:
    """A path a logger writes under the run directory: relative, no '..', not a record file."""
    _require(bool(value), f"{key} must not be empty")
    parts = PurePosixPath(str(value)).parts
    _require(not os.path.isabs(str(value)) and ".." not in parts,
             f"{key}={_short(value)!r} must stay inside the run directory (relative, no '..')")
    _require(not parts or parts[0] not in RECORD_FILES,
             f"{key}={_short(value)!r} is the name of a record file ({', '.join(RECORD_FILES)})")


# logger.mlflow.tracking_uri: the schemes MLflow's own stores answer (a database URI may name its
# driver, postgresql+psycopg2://); a plain path is a local file store. Anything else would fail
# every run at its first step, so it is refused with the key instead.
TRACKING_SCHEMES = ("http", "https", "file", "sqlite", "postgresql", "mysql", "mssql", "databricks")


def uri_scheme(uri: str) -> str:
    """``sqlite`` for ``sqlite:///m.db``, ``postgresql`` for ``postgresql+psycopg2://...``, ``""`` for a path."""
    match = re.match(r"([A-Za-z][A-Za-z0-9+.-]*):", str(uri))
    if match is None or len(match.group(1)) == 1:  # C:\mlruns is a path, not a scheme
        return ""
    return match.group(1).split("+")[0].lower()


def require_server_url(key: str, url: str) -> None:
    """An ``http(s)://`` URL that names a host and, if any, a port in range (the message shows neither)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(str(url))
        parts.port  # noqa: B018 - raises ValueError when out of range or not a number
    except ValueError as err:
        raise ConfigError(f"{key} is not a valid URL ({_short(err, 60)})") from None
    _require(bool(parts.hostname), f"{key} names no host (http://HOST:PORT)")


@dataclass
class TensorBoardLog:
    """logger=tensorboard: event files in <run_dir>/<dir>/ (pip install -e ".[tensorboard]")."""

    enabled: bool = False      # set by logger=tensorboard
    dir: str = "tb"            # relative to the run directory
    histograms: bool = True    # at probe steps: gradients and the outputs of every norm

    def __post_init__(self):
        _inside_run("logger.tensorboard.dir", self.dir)


@dataclass
class MLflowLog:
    """logger=mlflow: one MLflow run per normbench run (pip install -e ".[mlflow]")."""

    enabled: bool = False      # set by logger=mlflow
    dir: str = "mlruns"        # the file store, relative to the run directory, when tracking_uri is null
    tracking_uri: Optional[str] = None       # a server or store (http://host:5000, sqlite:///m.db, file:///x)
    artifact_location: Optional[str] = None  # a new experiment's artifact root; null: inside the run (or sweep) folder
    experiment: Optional[str] = None         # null: the study's name ("normbench" for a run outside a study)
    # A server's time bounds: seconds a request may wait for its answer, and retries after a failed one.
    # A server that dies mid-run costs at most about (retries + 1) x timeout, then the logger is dropped.
    timeout: int = 5
    retries: int = 2

    def __post_init__(self):
        _inside_run("logger.mlflow.dir", self.dir)
        _require(1 <= self.timeout <= 600, f"logger.mlflow.timeout must be 1-600 seconds, got {_short(self.timeout)}")
        _require(0 <= self.retries <= 10, f"logger.mlflow.retries must be 0-10, got {_short(self.retries)}")
        if self.tracking_uri is not None:
            scheme = uri_scheme(self.tracking_uri)
            _require(bool(str(self.tracking_uri).strip()), "logger.mlflow.tracking_uri must not be empty (null: the "
                                                            "file store in the run folder)")
            _require(scheme in ("", *TRACKING_SCHEMES),
                     f"logger.mlflow.tracking_uri has the scheme {_short(scheme, 20)!r}; valid: "
                     f"{', '.join(TRACKING_SCHEMES)}, or a local path")
            if scheme in ("http", "https"):
                require_server_url("logger.mlflow.tracking_uri", self.tracking_uri)
            if scheme == "file":  # file:// names no folder: MLflow failed at the run's start and was dropped (h13 L11)
                _require(bool(urlsplit(str(self.tracking_uri)).path.strip()),
                         f"logger.mlflow.tracking_uri={_short(self.tracking_uri)!r} names no folder (file:///PATH)")
        for key in ("artifact_location", "experiment"):
            _require(getattr(self, key) is None or bool(str(getattr(self, key)).strip()),
                     f"logger.mlflow.{key} must not be empty (null: the default)")


WANDB_MODES = ("offline", "online")


@dataclass
class WandbLog:
    """logger=wandb: a Weights & Biases run, offline by default (pip install -e ".[wandb]")."""

    enabled: bool = False      # set by logger=wandb
    dir: str = "."             # wandb writes <run_dir>/<dir>/wandb/ (offline-run-*; `wandb sync` uploads one)
    mode: str = "offline"      # offline: no account, no network | online: to the W&B server now
    project: str = "normbench"
    entity: Optional[str] = None

    def __post_init__(self):
        _inside_run("logger.wandb.dir", self.dir)
        _one_of("logger.wandb.mode", self.mode, WANDB_MODES)
        _require(bool(self.project) and not set(self.project) & set("/\\#?%:") and len(self.project) <= 128,
                 f"logger.wandb.project={_short(self.project)!r} must be 1-128 characters without / \\ # ? % :")


@dataclass
class CsvLog:
    """logger=csv: one CSV file of every scalar the loggers see (step, metric, value)."""

    enabled: bool = False      # set by logger=csv
    file: str = "metrics.csv"  # relative to the run directory

    def __post_init__(self):
        _inside_run("logger.csv.file", self.file)
        name = PurePosixPath(str(self.file)).name
        _require(name not in ("", ".", "..") and not str(self.file).endswith("/"),
                 f"logger.csv.file={_short(self.file)!r} names a folder, not a file (e.g. metrics.csv)")


LOGGER_KINDS = {"tensorboard": TensorBoardLog, "mlflow": MLflowLog, "wandb": WandbLog, "csv": CsvLog}


@dataclass
class LoggerConfig:
    """Where a run's curves go besides its record: the record is always written, each logger only adds.

    One entry per logger kind, each with ``enabled``, which the ``logger`` group sets: ``logger=tensorboard``
    enables ``tensorboard``, ``logger=[tensorboard,mlflow]`` both (Hydra merges the group's options),
    ``logger=none`` none. A kind's settings changed while it is not enabled (``logger.mlflow.tracking_uri=...``
    without ``logger=mlflow``) are refused: they would silently do nothing.
    """

    tensorboard: TensorBoardLog = field(default_factory=TensorBoardLog)
    mlflow: MLflowLog = field(default_factory=MLflowLog)
    wandb: WandbLog = field(default_factory=WandbLog)
    csv: CsvLog = field(default_factory=CsvLog)

    def __post_init__(self):
        for key, cls in LOGGER_KINDS.items():
            value = getattr(self, key)
            if value is None:
                value = {}
            if isinstance(value, dict):
                unknown = sorted(set(value) - {f.name for f in fields(cls)})
                _require(not unknown, f"unknown key logger.{key}.{unknown[0] if unknown else ''}")
                value = cls(**value)
                setattr(self, key, value)
            changed = [f.name for f in fields(cls) if getattr(value, f.name) != getattr(cls(), f.name)]
            _require(value.enabled or not changed,
                     f"logger.{key}.{changed[0] if changed else ''} is set but {key} is not a logger of this run; "
                     f"choose it: logger={key}, or several: 'logger=[tensorboard,{key}]'")
        if self.csv.enabled:  # the CSV file may not be where another logger's folder goes (nor above one)
            csv_file = PurePosixPath(os.path.normpath(str(self.csv.file)))
            folders = {"tensorboard": self.tensorboard.dir, "mlflow": self.mlflow.dir,
                       "wandb": str(PurePosixPath(str(self.wandb.dir)) / "wandb")}
            for kind, folder in folders.items():
                folder = PurePosixPath(os.path.normpath(str(folder)))
                _require(not getattr(self, kind).enabled or not (folder == csv_file or csv_file in folder.parents),
                         f"logger.csv.file={_short(self.csv.file)!r} is where logger {kind} writes its folder "
                         f"({folder}); choose another file name")

    @classmethod
    def from_plain(cls, plain: dict | None) -> "LoggerConfig":
        """From a record's or a composition's plain dict; a record of an earlier version names one
        logger as ``{name, dir, histograms, tracking_uri}``, read as the same logger."""
        plain = dict(plain or {})
        if "name" in plain:  # the earlier form: one logger
            name = plain.pop("name")
            _one_of("logger.name", name, ("none", *LOGGER_KINDS))
            if name == "none":
                return cls()
            keep = {f.name for f in fields(LOGGER_KINDS[name])}
            return cls(**{name: {**{k: v for k, v in plain.items() if k in keep and v is not None}, "enabled": True}})
        unknown = sorted(set(plain) - set(LOGGER_KINDS))
        _require(not unknown, f"unknown logger {unknown[0] if unknown else ''}; valid: {', '.join(LOGGER_KINDS)}")
        return cls(**plain)

    def chosen(self) -> dict:
        """The loggers this run writes, by kind: ``{"tensorboard": TensorBoardLog(...)}``."""
        return {key: getattr(self, key) for key in LOGGER_KINDS if getattr(self, key).enabled}


@dataclass
class PathsConfig:
    """Where files are read and written (the ``paths`` group; lightning-hydra-template's ``paths.*``).
    conf/config.yaml puts single runs under ``outputs`` and sweeps under ``multirun``; ``data`` is a root
    a config or command line can name (``task.path=${paths.data}/aclImdb``: the record keeps the
    resolved path, which is what the run's identity holds). Where files go changes nothing trained."""

    data: str = "data"
    outputs: str = "outputs"
    multirun: str = "multirun"

    def __post_init__(self):
        for key in ("data", "outputs", "multirun"):
            _require(isinstance(getattr(self, key), str) and getattr(self, key).strip() != "",
                     f"paths.{key} must name a folder, got {_short(getattr(self, key))!r}")


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
    # seeds. Part of identity, so a group never pools the two (normbench/studies/tune.py).
    role: str = "single"
    lr: float = 3e-3
    batch_size: int = 32
    steps: int = 600
    # >0: train on the first N batches of the training split only, over and over (debug=overfit_batch,
    # lightning's overfit_batches): can the model fit them at all? 0 (every earlier record): the whole split
    overfit_batches: int = 0
    warmup_steps: int = 0
    grad_clip: Optional[float] = 1.0  # max global grad norm; null = no clipping
    # where, not what: a run keeps its identity on any machine (the record says where it ran)
    device: str = harness("where it runs; environment.device records it", "auto")  # auto: cuda when available; cuda:N
    # CPU results depend on the thread count (reduction order), but a thread count is not a
    # setting to compare: environment.threads records it and rerun uses the recorded one
    threads: int = harness("environment.threads records the count used", 0)  # 0: free cores (less the load) / parallel jobs
    # On a CPU an attention model's evaluation batch runs its forward this many positions (examples x steps) at a
    # time, and is scored whole (training/train.py, rows_per_part); 0: whole batches, how records without the key
    # were evaluated (rerun and `normbench evaluate` read them so). Products over fewer rows may round otherwise:
    # the same class of difference as the thread count, so not a setting to compare
    eval_positions: int = harness("how evaluation batches are cut, not what is trained; the config records it", 8192)
    eval_every: int = 100
    log_every: int = 10
    probe_every: int = 50             # gradient/activation probes; 0 = only at init and at the end
    timing_warmup: int = 10           # steps excluded from the step-time median
    resume: bool = harness("what to run, not how", False)     # skip finished jobs, continue interrupted ones from a checkpoint
    # steps between checkpoints (normbench/training/checkpoint.py); 0 = none. Saving the state changes nothing trained.
    checkpoint_every: int = harness("how a run survives preemption, not what is trained", 0)
    # keep the trained weights in the run folder (normbench/training/saved_model.py); saving them changes nothing trained
    save_model: bool = harness("what is kept, not what is trained", False)
    # multirun: write the sweep's report (report.md, report.html, figures: normbench/report/) into the sweep dir at its end;
    # the terminal's progress bar is `progress`
    report: bool = harness("output only", True)
    # multirun: "paired" times the sweep's own arms side by side at its end (normbench/bench/arms.py),
    # before the report, which then states speed from that timing; its seconds are reported apart
    sweep_timing: str = harness("output only", "none")
    progress: bool = harness("output only", True)            # on a terminal: a run's bar (train.py), a sweep's job lines (studies/progress.py)
    # The primary score every summary ranks on (normbench/analysis/rules.py); what is trained is the same
    optimized_metric: str = harness("what the summaries rank on, not what is trained", "final_val")
    # Deterministic kernels compute the same functions in a fixed reduction order: the same class
    # of difference as the thread count or the device, and both are harness. environment.deterministic
    # records it, and rerun uses the recorded config.
    deterministic: bool = harness("selects kernels, not what is trained; environment records it", False)
    # A logger reads what the run measures and writes a copy elsewhere; it changes nothing measured.
    logger: LoggerConfig = field(default_factory=LoggerConfig, metadata={"harness": "output only"})
    paths: PathsConfig = field(default_factory=PathsConfig, metadata={"harness": "where files are read and written"})
    # The user's labels for the run (tags=[baseline,v2]): kept in the record and given to every logger.
    tags: List[str] = field(default_factory=list, metadata={"harness": "labels, not what is trained"})

    def __post_init__(self):
        _positive("lr", self.lr)
        _require(0 <= self.seed < 2**63, f"seed must be in [0, 2**63), got {self.seed}")  # torch's generator range
        for key in ("batch_size", "steps", "eval_every", "log_every"):
            _require(getattr(self, key) >= 1, f"{key} must be >= 1, got {_short(getattr(self, key))}")
        # A billion steps is over a day at the fastest step any task here takes (~0.1 ms) and weeks at
        # a typical one: beyond it steps= is a typo (an extra digit group), not a run to start.
        _require(self.steps <= MAX_STEPS, f"steps must be <= {MAX_STEPS:.0e}, got {_short(self.steps)}")
        for key in ("warmup_steps", "threads", "probe_every", "timing_warmup", "checkpoint_every", "overfit_batches",
                    "eval_positions"):
            _require(getattr(self, key) >= 0, f"{key} must be >= 0, got {_short(getattr(self, key))}")
        for key in ("warmup_steps", "eval_every", "log_every", "probe_every", "timing_warmup", "checkpoint_every",
                    "overfit_batches"):
            _require(getattr(self, key) <= MAX_STEPS, f"{key} must be <= {MAX_STEPS:.0e} (a count of steps), "
                                                      f"got {_short(getattr(self, key))}")
        here = _cores()  # far more threads than cores only slows a run down (thousands of times at threads=999)
        _require(self.threads <= 4 * here, f"threads must be <= {4 * here} (4 x the {here} cores here), got {self.threads}")
        if self.grad_clip is not None:  # clip_grad_norm_ scales by it in float32: 1e-50 would zero every gradient
            require_positive("grad_clip", self.grad_clip)
        _require(self.device in DEVICES or re.fullmatch(r"cuda:(0|[1-9][0-9]{0,3})", str(self.device)) is not None,
                 f"device={_short(self.device)!r} is not valid; valid: {', '.join(DEVICES)}, cuda:N (N the GPU's index)")
        _one_of("role", self.role, ROLES)
        _one_of("optimized_metric", self.optimized_metric, ("final_val", "best_val", "final_val_smoothed"))
        _one_of("sweep_timing", self.sweep_timing, ("none", "paired"))
        _require(self.task is not None and hasattr(self.task, "name"), "task is not set; choose one with task=NAME")
        _require(math.isfinite(self.task.target), f"task.target must be a finite number, got {self.task.target}")
        # BatchNorm of one example has no batch statistics (zero variance everywhere)
        _require(not kind_of(self.norm.kind).batch_stats or self.batch_size >= 2,
                 f"norm={self.norm.kind} needs batch_size >= 2, got {self.batch_size}")
        # torch.compile traces the step: impl=compiled is a C++ extension dynamo cannot look into (auto
        # runs native's ops while it traces, normbench/norms/dispatch.py)
        compiled_cell = self.model.cell_kernel == "torch_compile" \
            and per_term_in_cell(self.placement.name, self.placement.summed, self.norm.kind)
        _require(not compiled_cell or self.norm.impl in ("auto", "native", "reference"),
                 f"model.cell_kernel=torch_compile needs norm.impl=auto, native or reference, got {self.norm.impl} "
                 "(compiled is a C++ extension torch.compile cannot trace)")
        _require(not (self.model.bidirectional and getattr(self.task, "name", None) == "text"),
                 "model.bidirectional=true cannot run task=text: its backward direction reads the next "
                 "character each step must predict; valid for text: bidirectional=false")
        _require(isinstance(self.tags, (list, tuple)) and all(isinstance(t, str) and TAG.fullmatch(t) for t in self.tags)
                 and len(self.tags) <= 32,
                 f"tags must be a list of at most 32 labels of 1-64 letters, digits, _ - . / or spaces "
                 f"(tags=[baseline,v2]), got {_short(self.tags)}")
        if isinstance(self.logger, dict) or self.logger is None:  # to_config builds the groups it knows; this one here
            self.logger = LoggerConfig.from_plain(self.logger)
        if isinstance(self.paths, dict) or self.paths is None:  # a record's or a composition's plain dict
            unknown = sorted(set(self.paths or {}) - {f.name for f in fields(PathsConfig)})
            _require(not unknown, f"unknown key paths.{unknown[0] if unknown else ''}; paths keys are: data, multirun, outputs")
            self.paths = PathsConfig(**(self.paths or {}))
        _require_int64(self)  # before anything compares a huge int to a float or hands it to torch
        _require_float32(self)


TAG = re.compile(r"[\w.\-/ ]{1,64}")  # what MLflow takes as a tag's key and W&B as a tag
FLOAT32_MAX = 3.4028234663852886e38
MAX_STEPS = 10**9
INT64 = (-(2**63), 2**63 - 1)


def _require_int64(config, prefix: str = "") -> None:
    """Every int setting of ``config`` and its groups must fit in int64: torch, numpy and the record's
    readers hold them there, and steps=99999999999999999999 (which YAML and OmegaConf accept) would
    otherwise fail deep in a run, or be read back as a float, instead of being refused here with its key."""
    for item in fields(config):
        value = getattr(config, item.name)
        key = f"{prefix}{item.name}"
        if is_dataclass(value):
            _require_int64(value, f"{key}.")
        elif isinstance(value, int) and not isinstance(value, bool):
            _require(INT64[0] <= value <= INT64[1], f"{key} must fit in int64 (|x| < 9.2e18), got {_short(value)}")


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
