"""The Trainer's state (``Trainer.state_dict()``, normbench/training/train.py): what it measured so far
(``Measured``), each field with the check a saved copy must pass (``FIELDS``, ``problem``), the fields
earlier versions named otherwise (``renamed``), and whether one fits a trainer as built (``misfit``).

The one statement of the state's layout: a checkpoint (normbench/training/checkpoint.py) is this state
plus its own fields, and checks the state through ``problem`` before the Trainer loads it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields

import torch


@dataclass
class Measured:
    """Everything measured so far; a summary can be made from it at any moment (also mid-crash)."""

    step: int = 0
    train_s: float = 0.0
    losses: list = field(default_factory=list)  # every step's training loss, step 1 first
    evals: list = field(default_factory=list)   # (step, val metric) of every evaluation
    grad_norms: list = field(default_factory=list)
    step_ms: list = field(default_factory=list)  # timed steps only
    best_val: float | None = None
    final_val: float | None = None
    test: float | None = None
    steps_to_target: int | None = None
    seconds_to_target: float | None = None
    diverged_at_step: int | None = None
    last_finite_loss: float | None = None
    last_probe: dict = field(default_factory=dict)
    grad_kurtosis_max: float | None = None
    grad_time_init: list | None = None
    grad_time_final: list | None = None
    layer_grad_norm_init: dict = field(default_factory=dict)
    ffn_w2_grad_norm_init: float | None = None  # Transformers: ‖∂L/∂W^{2,L}‖_F of the last block (Xiong et al. Thm. 1)
    bn_train_eval_gap: float | None = None
    bn_train_eval_gap_running: float | None = None
    hidden_var_init: list | None = None  # per block, the residual stream's variance at init (probes.hidden_variance)
    depth_final: dict = field(default_factory=dict)  # the end-of-training depth probes (probes.Probes._depth)
    skipped_steps: int = 0  # fp16 with a loss scale: steps whose gradients overflowed, not applied


def is_tensor(value, dtype=None, ndim=None) -> bool:
    return isinstance(value, torch.Tensor) and (dtype is None or value.dtype == dtype) \
        and (ndim is None or value.dim() == ndim) and not value.is_sparse


def is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_ANNOTATED = {"int": is_int, "float": is_number, "list": lambda v: isinstance(v, list),
              "dict": lambda v: isinstance(v, dict), "None": lambda v: v is None}


def _weights(value, optional: bool = False) -> bool:
    return (optional and value is None) or (
        isinstance(value, dict) and all(isinstance(k, str) and is_tensor(v) for k, v in value.items()))


def _optimizer(value) -> bool:
    return isinstance(value, dict) and isinstance(value.get("state"), dict) \
        and isinstance(value.get("param_groups"), list) \
        and all(isinstance(g, dict) and isinstance(g.get("params"), list) and all(map(is_int, g["params"]))
                for g in value["param_groups"])


def _batches(value) -> bool:
    return isinstance(value, dict) and is_tensor(value.get("generator"), torch.uint8, 1) \
        and is_tensor(value.get("order"), torch.int64, 1) and is_int(value.get("pos")) \
        and 0 <= value["pos"] <= value["order"].numel()


def _spikes(value) -> bool:
    return isinstance(value, dict) and isinstance(value.get("window"), list) and isinstance(value.get("steps"), list) \
        and all(is_number(v) for v in value["window"]) and all(is_int(v) for v in value["steps"])


def _measured_problem(measured) -> str | None:
    if not isinstance(measured, dict):
        return "measured is not a mapping"
    names = {item.name: item.type for item in fields(Measured)}
    if set(measured) != set(names):
        return "measured holds other fields than this version's"
    for name, annotation in names.items():
        if not any(_ANNOTATED[kind.strip()](measured[name]) for kind in str(annotation).split("|")):
            return f"measured.{name} is not of type {annotation}"
    for name in ("losses", "grad_norms", "step_ms"):
        if not all(is_number(v) for v in measured[name]):
            return f"measured.{name} holds a value that is not a number"
    if not all(isinstance(e, (list, tuple)) and len(e) == 2 and is_int(e[0]) and is_number(e[1]) for e in measured["evals"]):
        return "measured.evals holds an entry that is not (step, value)"
    return None


def _curves_problem(curves) -> str | None:
    if not isinstance(curves, str):
        return "curves is not text"
    for number, line in enumerate(curves.splitlines(), start=1):
        try:
            row = json.loads(line)
        except ValueError:
            return f"curve line {number} is cut or not JSON"
        if not isinstance(row, dict):
            return f"curve line {number} is not an object"
    return None


def _check(test, why: str):
    return lambda value: None if test(value) else why


# field -> why a saved value is not of the form this version writes (None: it is), in the order checked;
# "curves" is the record writer's (recording.RecordHook), merged in by Trainer.state_dict
FIELDS = {
    "model": _check(_weights, "model is not a mapping of names to tensors"),
    "model_half": _check(lambda v: _weights(v, optional=True), "model_half is not a mapping of names to tensors"),
    "optimizer": _check(_optimizer, "optimizer is not an optimizer's state"),
    "scaler": _check(lambda v: v is None or isinstance(v, dict), "scaler is not a loss scaler's state"),
    "batches": _check(_batches, "batches is not the batch sampler's state"),
    "spikes": _check(_spikes, "spikes is not the spike detector's state"),
    "precision": _check(lambda v: v is None or isinstance(v, dict), "precision is not a mapping"),
    "rss_peak_mb": _check(is_number, "rss_peak_mb is not a number"),
    "curves": _curves_problem,
    "measured": _measured_problem,
}
# field as earlier versions named it -> its name now: "progress" until the word was left to the bar and
# the sweep's job lines (issue 47); a checkpoint those versions wrote still resumes
RENAMED = {"progress": "measured"}


def renamed(state: dict) -> dict:
    """``state`` with the fields earlier versions named otherwise under their names now; one that holds
    both names is left as it is (``problem`` then says it holds other fields)."""
    old = [key for key in RENAMED if key in state and RENAMED[key] not in state]
    return {RENAMED.get(key, key) if key in old else key: value for key, value in state.items()}


def problem(state: dict) -> str | None:
    """Why ``state`` (keys beyond FIELDS aside) is not a Trainer state of the form this version writes."""
    for key, check in FIELDS.items():
        why = check(state[key])
        if why is not None:
            return why
    return None


def misfit(state: dict, trainer) -> str | None:
    """Why ``state`` (a ``state_dict()``) does not fit ``trainer`` as built (another model, optimizer,
    precision or task), or None."""
    def shapes(state_dict):
        return {k: (tuple(v.shape), v.dtype) for k, v in state_dict.items()}
    if shapes(state["model"]) != shapes(trainer.master.state_dict()):
        return "its model is not this run's (other parameters or shapes)"
    half = trainer.model is not trainer.master
    if (state["model_half"] is not None) != half or (
            half and shapes(state["model_half"]) != shapes(trainer.model.state_dict())):
        return "its half-precision model is not this run's"
    if (state["scaler"] is not None) != trainer.precision.scales_loss:
        return "its loss scaler is not this run's"
    params = [p for group in trainer.optimizer.param_groups for p in group["params"]]
    saved_ids = [i for group in state["optimizer"]["param_groups"] for i in group["params"]]
    if len(saved_ids) != len(params):
        return "its optimizer is not this run's (another number of parameters)"
    by_id = dict(zip(saved_ids, params))
    for key, entries in state["optimizer"]["state"].items():
        if key not in by_id or not isinstance(entries, dict):
            return "its optimizer state names no parameter of this run"
        for value in entries.values():
            if isinstance(value, torch.Tensor) and value.dim() > 0 and value.shape != by_id[key].shape:
                return "its optimizer state is not of this run's shapes"
    order = state["batches"]["order"]
    if order.numel() and (int(order.min()) < 0 or int(order.max()) >= trainer.train_batches.examples):
        return "its batch order indexes examples this task does not have"
    return None
