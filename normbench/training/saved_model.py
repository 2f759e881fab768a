"""Trained models kept on request (``save_model=true``), and read back (``normbench.load_model``).

A run with ``save_model=true`` keeps, in its folder, the weights its test metric measured
(``model_final.pt``, when the run ends ok) and the weights of its best evaluation
(``model_best.pt``, whenever an evaluation set a new best, diverged runs included). Each file is
``torch.save`` of the model's state dict alone: a dict of plain CPU tensors, which
``torch.load(..., weights_only=True)`` reads without running any pickled code, so a model file
is data like every other run file. The config that builds the model is the record's own
(``summary.json``: its resolved config); the record's ``saved_model`` says which files were kept,
after which step, and the validation metric of the best one.

The weights are those of the module that computed the metrics: in a pure mode (``bf16_pure``,
``fp16_pure``) the half copy, whose values an fp32 model holds exactly; with
``norm.bn_reestimate`` the population statistics the evaluation used.
"""

from __future__ import annotations

from pathlib import Path

import torch

from normbench.configuration.schema import SAVED_MODELS
from normbench.records.record import RunRecord, Unreadable, interpolation_in, read_summary, write_atomic
from normbench.training import probes
from normbench.training.checkpoint import load_tensor_file, save_tensors
from normbench.training.hooks import Hook


def _weights(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: value.detach().to("cpu", copy=True) for name, value in model.state_dict().items()}


def _write(path: Path, weights: dict[str, torch.Tensor]) -> None:
    write_atomic(path, lambda out: save_tensors(weights, out, path), binary=True)


class ModelSaver(Hook):
    """A hook on the training loop: each evaluation that sets a new best writes ``model_best.pt``;
    ``finish`` writes ``model_final.pt`` and says what was kept."""

    def __init__(self, run_dir: Path):
        self.run_dir = Path(run_dir)
        self.best: dict | None = None
        self.seen_best: float | None = None
        self.started = False

    def on_step_start(self, trainer, step: int) -> None:
        if not self.started:  # a resumed run's best so far came back with its checkpoint
            self.started = True
            self.seen_best = trainer.measured.best_val

    def on_eval(self, trainer, step: int, **scalars: float) -> None:
        best = trainer.measured.best_val
        if best is None or best == self.seen_best:
            return
        self.seen_best = best
        if trainer.bn_population is not None:  # the statistics that evaluation used, not the running ones
            with probes.buffers_preserved(trainer.model):
                trainer.reestimate_bn()
                weights = _weights(trainer.model)
        else:
            weights = _weights(trainer.model)
        _write(self.run_dir / SAVED_MODELS["best"], weights)
        self.best = {"file": SAVED_MODELS["best"], "step": step, "val_metric": best}

    def finish(self, trainer, ended_ok: bool) -> dict:
        """The record's ``saved_model``: the final weights only when the run ended ok (the test measured them)."""
        kept = {}
        if ended_ok:
            _write(self.run_dir / SAVED_MODELS["final"], _weights(trainer.model))
            kept["final"] = {"file": SAVED_MODELS["final"], "step": trainer.measured.step,
                             "test": trainer.measured.test}
        best_file = self.run_dir / SAVED_MODELS["best"]
        if self.best is None and best_file.is_file() and trainer.measured.best_val is not None:
            # resumed: the best was set (and written) by the attempt before the checkpoint
            self.best = {"file": SAVED_MODELS["best"], "step": None, "val_metric": trainer.measured.best_val}
        if self.best is not None:
            kept["best"] = self.best
        return kept


class NoSavedModel(ValueError):
    """A run folder without the weights asked for, or with a file that is not a state dict; one line."""


def read_weights(path: Path) -> dict[str, torch.Tensor]:
    """A model file, read as data by the checkpoints' loader (regular file, no link, no FIFO,
    ``weights_only=True``); only a dict of tensors is accepted."""
    try:
        weights = load_tensor_file(path)
    except Unreadable as err:
        raise NoSavedModel(f"{path}: {err}") from None
    if not isinstance(weights, dict) or not all(isinstance(k, str) and isinstance(v, torch.Tensor)
                                                for k, v in weights.items()):
        raise NoSavedModel(f"{path}: not a state dict of tensors")
    return weights


def run_record(run_dir: Path) -> RunRecord:
    """The record whose config rebuilds the model. Its values are data: a config holding ``${...}``
    (which OmegaConf would resolve, ``${oc.env:SECRET}`` included) or ``???`` anywhere is refused
    here, before anything is composed from it, as rerun, tune and bench arms refuse it."""
    found = read_summary(Path(run_dir) / "summary.json")
    if not isinstance(found, RunRecord) or not isinstance(found.config, dict):
        why = getattr(found, "why", "no config")
        raise NoSavedModel(f"{run_dir}: no readable normbench record ({why})")
    where = interpolation_in(found.config)
    if where:
        raise NoSavedModel(f"{run_dir}: {where[:200]} holds an interpolation (${{...}}) or ???; "
                           f"a record is data and is never resolved")
    return found


def model_file(run_dir: Path, which: str) -> Path:
    if which not in SAVED_MODELS:
        raise NoSavedModel(f"which={which!r} is not valid; valid: {', '.join(SAVED_MODELS)}")
    path = Path(run_dir) / SAVED_MODELS[which]
    if not path.exists() and not path.is_symlink():
        hint = " (the run was not run with save_model=true)" if not any(
            (Path(run_dir) / name).exists() for name in SAVED_MODELS.values()) else ""
        raise NoSavedModel(f"{run_dir}: no {SAVED_MODELS[which]}{hint}")
    return path


def build_recorded(config: dict, device: torch.device | str = "cpu"):
    """(cfg, task, model) as the record's config builds them; the model's weights are a fresh init."""
    from omegaconf import OmegaConf

    from normbench.configuration.config import to_config
    from normbench.models import build_model
    from normbench.tasks.tensors import load_task

    cfg = to_config(OmegaConf.create(config))
    task = load_task(cfg.task, cfg.seed)
    model = build_model(cfg.model, cfg.norm, cfg.placement, input_kind=task.input_kind, input_dim=task.input_dim,
                        n_outputs=task.n_outputs, readout=task.readout, max_len=max(task.seq_len, 1))
    return cfg, task, model.to(device)


def load_model(run_dir, which: str = "final", device: torch.device | str = "cpu") -> torch.nn.Module:
    """The model a run kept with ``save_model=true``, rebuilt from its record's config and loaded with
    the weights ``which`` names (``final``: those its test metric measured; ``best``: those of its best
    evaluation), in eval mode on ``device``. Raises NoSavedModel (a ValueError) with one line otherwise.
    """
    run_dir = Path(run_dir)
    path = model_file(run_dir, which)
    record = run_record(run_dir)
    weights = read_weights(path)
    _, _, model = build_recorded(record.config, device)
    load_weights(model, weights, path)
    return model.eval()


def load_weights(model: torch.nn.Module, weights: dict, path: Path) -> None:
    """``weights`` into ``model``. Per-step BatchNorm statistics grow with the steps a model has seen
    (StepBatchNorm starts with none), so a buffer takes the saved shape; parameters must fit as built."""
    for name, buffer in list(model.named_buffers()):
        saved = weights.get(name)
        if saved is not None and saved.shape != buffer.shape and buffer.dim() == saved.dim():
            module_name, _, attr = name.rpartition(".")
            setattr(model.get_submodule(module_name) if module_name else model, attr,
                    torch.empty(saved.shape, dtype=buffer.dtype, device=buffer.device))
    try:
        model.load_state_dict(weights)
    except RuntimeError as err:
        raise NoSavedModel(f"{path}: does not fit the model the record's config builds "
                           f"({' '.join(str(err).split())[:300]})") from None
