"""logger=wandb: the run as a Weights & Biases run, offline by default (normbench/training/hooks.py's hooks).

Offline (``logger.wandb.mode=offline``, the default) needs no account and no network: W&B writes
``<run_dir>/<logger.wandb.dir>/wandb/offline-run-<time>-<id>/`` (its ``run-<id>.wandb`` holds every
record), which ``wandb sync <that folder>`` uploads later. ``mode=online`` logs to the server now
(``WANDB_BASE_URL``, default https://api.wandb.ai), which must answer within seconds, else the run
is refused with one line. Named as every logger names it (normbench/training/tracking.py): the run's name,
the study as W&B's group, the resolved config (dotted keys) and the ``normbench.*`` tags as its
config, the seed and arm as W&B tags; the same scalars at each step, the final metrics and the
status in its summary. W&B's service log goes into the run's wandb folder too (WANDB_CACHE_DIR,
when unset), and the service stops with the run: nothing is written outside the run folder and
nothing keeps running. System metrics sampling is off (it would load the CPU the steps are timed
on), and so is W&B's metadata (it copies the command line, passwords typed there included).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from normbench.training.hooks import ScalarLogger
from normbench.training.tracking import RunNames, final_scalars, logger_folder, require_package, require_reachable

log = logging.getLogger("normbench")
DEFAULT_SERVER = "https://api.wandb.ai"
# W&B reports its own errors to its servers (Sentry) unless told not to, even offline; and keeps its
# settings, data and artifacts under $HOME (HOME_FOLDERS, moved into the run's wandb folder instead).
OFFLINE = {"WANDB_ERROR_REPORTING": "false", "WANDB_DISABLE_GIT": "true"}
HOME_FOLDERS = {"WANDB_CACHE_DIR": "cache", "WANDB_CONFIG_DIR": "config", "WANDB_DATA_DIR": "data",
                "WANDB_ARTIFACT_DIR": "artifacts"}
MAX_TAG = 64  # W&B's limit on a tag's length


def preflight(settings, secrets: tuple[str, ...] = ()) -> None:
    """Before anything is written: wandb is installed and, online, its server answers (ConfigError)."""
    if settings.mode == "online":
        require_reachable(os.environ.get("WANDB_BASE_URL") or DEFAULT_SERVER, "WANDB_BASE_URL (logger.wandb.mode=online)",
                          secrets)
    require_package("wandb", "logger=wandb", "wandb")


def _known(settings_class, **wanted) -> dict:
    """The settings this wandb version has (their names change between versions; all are niceties)."""
    fields = getattr(settings_class, "model_fields", None)
    return wanted if fields is None else {k: v for k, v in wanted.items() if k in fields}


class WandbLogger(ScalarLogger):
    kind = "wandb"

    def __init__(self, settings, run_dir: Path, names: RunNames):
        import wandb

        root = logger_folder(Path(run_dir), settings.dir)
        own = logger_folder(root, "wandb")  # where W&B writes: made here, so a planted link is refused
        tags = [t for t in (f"seed={names.tags.get('normbench.seed')}", names.arm, *names.labels)
                if t and len(t) <= MAX_TAG]
        # the service's own log (core-debug-*.log) would go to ~/.cache/wandb, its settings to ~/.config/wandb
        placed = [name for name in HOME_FOLDERS if os.environ.get(name) is None]
        for name in placed:
            os.environ[name] = str(logger_folder(own, HOME_FOLDERS[name]))
        try:
            self.run = wandb.init(
                dir=str(root), mode=settings.mode, project=settings.project, entity=settings.entity,
                name=names.name, group=names.experiment, job_type="train", tags=tags,
                config={**names.params, **names.tags}, reinit="create_new",
                # no system metrics (they would load the CPU the steps are timed on), no metadata (it
                # copies the command line, where a typed password would leave the masks behind)
                settings=wandb.Settings(**_known(wandb.Settings, silent=True, console="off", x_disable_stats=True,
                                                 x_disable_meta=True, save_code=False, symlink=False,
                                                 use_dot_wandb=False)))
        finally:
            for name in placed:
                os.environ.pop(name, None)

    def scalars(self, step: int, values: dict[str, float]) -> None:
        if values:
            self.run.log(values, step=step)

    def on_end(self, summary):
        try:
            self.run.summary.update({**final_scalars(summary), "normbench.status": str(summary.get("status"))})
        except Exception as err:  # the record is written already: a logger must not turn a result into a crash
            log.warning("wandb: could not write the summary: %s", err)
        finally:
            self.close(0 if summary.get("status") in ("ok", "diverged") else 1)  # a diverged run is a result

    def close(self, exit_code: int = 1) -> None:
        import wandb

        try:
            self.run.finish(exit_code=exit_code)
        finally:
            wandb.teardown()  # the service process ends with the run
