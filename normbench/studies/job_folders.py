"""A sweep job's folder outside the sweep folder, refused before any job starts.

Hydra's ``run_job`` makes a job's whole folder (``mkdir(parents=True)``) before it calls the job, so a
subdir that climbs out (``a/../../X``, or ``${hydra.job.override_dirname}`` with a value holding ``..``)
had made folders outside the sweep by the time the job refused it (hostile h19 J1, Y06). Here the
launchers' ``launch`` is wrapped: each job's folder is composed as the launcher will compose it, and the
first one outside the sweep folder ends the sweep in main's one line, before any folder is made.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from normbench.configuration.hydra_files import Refused
from normbench.report.output import inside

_DEFAULT_SUBDIR = "${hydra.job.num}"  # a job number: never outside


def outside(sweep_dir: str, folder: str) -> str | None:
    """Why a job may not have ``folder`` (its sweep dir joined with its subdir, as Hydra joins them), or None."""
    if inside(Path(sweep_dir), os.path.abspath(folder)) or os.path.realpath(folder) == os.path.realpath(sweep_dir):
        return None  # the sweep folder itself (subdir '' or '.'): the job's own line says so, and Hydra makes nothing
    return f"hydra.sweep.subdir puts the job in {os.path.abspath(folder)}, outside the sweep directory {sweep_dir}"


def _job_folder(launcher, overrides, num: int) -> tuple[str, str] | None:
    """Job ``num``'s (sweep dir, folder) as run_job composes them; None when its config does not compose
    or its folder cannot be named (the launcher then says why in its own error)."""
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import OmegaConf, open_dict

    before = HydraConfig.instance().cfg
    try:
        config = launcher.hydra_context.config_loader.load_sweep_config(launcher.config, list(overrides))
        with open_dict(config):
            config.hydra.job.id = config.hydra.job.num = num
        HydraConfig.instance().set_config(config)
        sweep_dir = str(OmegaConf.select(config, "hydra.sweep.dir"))
        return sweep_dir, os.path.join(sweep_dir, str(OmegaConf.select(config, "hydra.sweep.subdir")))
    except Exception:  # noqa: BLE001 - the job's own composition fails the same way, in the launcher's line
        return None
    finally:
        if before is not None:
            HydraConfig.instance().set_config(before)


def refuse_outside(launcher, job_overrides, initial_job_idx: int) -> None:
    """Raises Refused for the first job whose folder would lie outside the sweep folder."""
    from omegaconf import OmegaConf

    if OmegaConf.to_container(launcher.config.hydra.sweep, resolve=False).get("subdir") == _DEFAULT_SUBDIR:
        return
    for i, overrides in enumerate(job_overrides):
        named = _job_folder(launcher, overrides, initial_job_idx + i)
        refused = named and outside(*named)
        if refused:
            raise Refused(refused)


def checking_folders(original):
    """``original`` (a launcher's launch) with refuse_outside first."""

    @functools.wraps(original)  # keeps the marks of other wrappers (lost_workers' keeps_sweep)
    def launch(launcher, job_overrides, initial_job_idx):
        refuse_outside(launcher, job_overrides, initial_job_idx)
        return original(launcher, job_overrides=job_overrides, initial_job_idx=initial_job_idx)

    launch.checks_folders = True
    return launch


def install() -> None:
    """Wraps Hydra's basic launcher's launch and the joblib launcher's (once each)."""
    from hydra._internal.core_plugins.basic_launcher import BasicLauncher

    if not getattr(BasicLauncher.launch, "checks_folders", False):
        BasicLauncher.launch = checking_folders(BasicLauncher.launch)
    try:
        from hydra_plugins.hydra_joblib_launcher import _core
    except ImportError:
        return
    if not getattr(_core.launch, "checks_folders", False):
        _core.launch = checking_folders(_core.launch)
