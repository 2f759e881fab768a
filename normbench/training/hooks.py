"""The training loop's hooks (``Hook``), below the loggers that implement them; the record writer and the
progress bar are hooks too (normbench/training/recording.py).

normbench/training/loggers.py explains what each logger keeps; the base lives here so that a logger in its
own module (mlflow_logger.py) and the module that picks one (loggers.build_logger) need not import
each other.
"""

from __future__ import annotations

from normbench.training.tracking import eval_scalars, probe_scalars, train_scalars


class Hook:
    """The training loop's hooks, each a no-op (``logger=none``): the base of every object the loop calls
    back, the loggers among them and the checkpointer, the model saver and the bench's lockstep clock."""

    def on_fit_start(self, trainer) -> None:
        """Once as ``fit`` begins (after any checkpoint was loaded), before the initial probes."""

    def on_step_start(self, trainer, step: int) -> None:
        """Before each training step draws its batch."""

    def on_log(self, trainer, step: int, **scalars: float) -> None:
        """Every ``log_every`` steps: loss, lr, grad_norm (as metrics.jsonl's train line)."""

    def on_eval(self, trainer, step: int, **scalars: float) -> None:
        """Every ``eval_every`` steps: val_metric, val_loss."""

    def on_probe_start(self, trainer, step: int) -> None:
        """At probe steps, after the optimizer step, before the probe's readings are kept and logged."""

    def on_probe(self, trainer, step: int, stats: dict, activations: dict) -> None:
        """At probe steps, after the optimizer step: the gradient and activation statistics just measured."""

    def on_step_end(self, trainer, step: int) -> None:
        """After each step's log line and probe, before any evaluation (which is the run's measurement)."""

    def on_diverge(self, trainer, step: int, **scalars: float) -> None:
        """At the step whose loss or gradient was not finite (the run's last): loss, lr, grad_norm."""

    def on_fit_end(self, trainer) -> None:
        """Once as ``fit`` leaves its loop, diverged or not, before the final probes."""

    def state_dict(self) -> dict:
        """What this hook holds that the rest of the run depends on, merged into ``Trainer.state_dict()``
        (its keys are the hook's own); most hold nothing."""
        return {}

    def load_state_dict(self, state: dict) -> None:
        """Takes back what ``state_dict`` gave, from a whole ``Trainer.state_dict()``."""

    def on_end(self, summary: dict) -> None:
        """Once, with the finished record (status, axes, metrics, throughput); then release files."""


class ScalarLogger(Hook):
    """A logger of named scalars: the hooks' values under normbench/training/tracking.py's names, to ``scalars``."""

    def scalars(self, step: int, values: dict[str, float]) -> None:
        raise NotImplementedError

    def on_log(self, trainer, step, **scalars):
        self.scalars(step, train_scalars(scalars))

    def on_eval(self, trainer, step, **scalars):
        self.scalars(step, eval_scalars(trainer.task.metric, scalars))

    def on_probe(self, trainer, step, stats, activations):
        self.scalars(step, probe_scalars(stats, activations))
