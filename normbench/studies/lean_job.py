"""Hydra's ``run_job`` with two copies of a job's hydra node where Hydra 1.3 makes four (issue 48).

For every job, Hydra's run_job (hydra/core/utils.py) copies the composed config four times before the task runs:
``HydraConfig.set_config`` twice (each a masked deep copy of the hydra node: once so that the job's folder can be
named, once more after ``hydra.runtime.output_dir`` is set), a deep copy of the whole config of which it then deletes
the hydra node (the task's config), and a deep copy of HydraConfig's copy (the JobReturn's ``hydra_cfg``). The hydra
node is about half of a job's config (Hydra's help texts, logging, launcher and sweeper settings). Here:

- HydraConfig takes one copy; ``output_dir`` is set on the job's config and on that copy, which is what the second
  copy held;
- the task's config is a deep copy of the config made with its hydra node set aside, not copied and then deleted;
- the JobReturn's ``hydra_cfg`` is a deep copy of HydraConfig's, as Hydra's, read for ``chdir``, ``env_set`` and the
  ``.hydra`` files: its own root, so an interpolation there from the hydra node into the user's config fails as it
  fails under Hydra (a hostile review found ``env_set: {X: ${a}}`` running here where Hydra refuses it, when the
  JobReturn shared HydraConfig's copy, whose parent is the job's whole config).

Both copies are made by pickling (``configuration.templates.copied``, 2-3x faster than OmegaConf's deep copy), each
the deep copy's tree: the same nodes, values and metadata, each child's parent its container (HydraConfig's copy
points its child to the job's config; the deep copy, and so this one, re-parents it), the root's parent kept.

Everything else is Hydra's, in Hydra's order: the job's folder, ``hydra.job.chdir``, logging, the ``.hydra`` files,
``env_set``, the callbacks, the task's status and exception, and the caller's HydraConfig and working folder put
back. The basic launcher (jobs in this process) and a joblib worker call it (``install``); a submitit job keeps
Hydra's, its queue being longer than any copy.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from textwrap import dedent

from normbench.configuration.templates import copied

_CHDIR_URL = "https://hydra.cc/docs/1.2/upgrades/1.1_to_1.2/changes_to_job_working_dir/"


def without_hydra(config):
    """A deep copy of ``config`` without its hydra node, equal to Hydra's deep copy with ``hydra`` deleted after (same
    keys in the same order, flags and metadata), made without copying the hydra node. ``config`` is left as it was."""
    content = config.__dict__["_content"]
    kept = dict(content)
    try:
        content.pop("hydra", None)
        return copied(config)
    finally:
        content.clear()
        content.update(kept)


def run_job(task_function, config, job_dir_key: str, job_subdir_key: str | None, hydra_context,
            configure_logging: bool = True):
    """hydra.core.utils.run_job (Hydra 1.3), with two copies of the hydra node instead of four (module docstring)."""
    from hydra import version
    from hydra.core import utils as hydra_utils
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import OmegaConf, open_dict, read_write

    hydra_utils._check_hydra_context(hydra_context)
    callbacks = hydra_context.callbacks
    old_cwd = os.getcwd()
    orig_hydra_cfg = HydraConfig.instance().cfg
    HydraConfig.instance().set_config(config)  # for ${hydra:...} in the job's folder; the job's one copy
    output_dir = str(OmegaConf.select(config, job_dir_key))
    if job_subdir_key is not None:
        output_dir = os.path.join(output_dir, str(OmegaConf.select(config, job_subdir_key)))
    for holder in (config, HydraConfig.instance().cfg):  # Hydra sets it on the config, then copies the node again
        with read_write(holder.hydra.runtime), open_dict(holder.hydra.runtime):
            holder.hydra.runtime.output_dir = os.path.abspath(output_dir)

    _chdir = None
    try:
        ret = hydra_utils.JobReturn()
        task_cfg = without_hydra(config)
        ret.cfg = task_cfg
        hydra_cfg = copied(HydraConfig.instance().cfg)
        ret.hydra_cfg = hydra_cfg
        overrides = OmegaConf.to_container(config.hydra.overrides.task)
        assert isinstance(overrides, list)
        ret.overrides = overrides
        Path(str(output_dir)).mkdir(parents=True, exist_ok=True)

        _chdir = hydra_cfg.hydra.job.chdir
        if _chdir is None and version.base_at_least("1.2"):
            _chdir = False
        if _chdir is None:
            hydra_utils.deprecation_warning(message=dedent(f"""\
                Future Hydra versions will no longer change working directory at job runtime by default.
                See {_CHDIR_URL} for more information."""), stacklevel=2)
            _chdir = True
        if _chdir:
            os.chdir(output_dir)
            ret.working_dir = output_dir
        else:
            ret.working_dir = os.getcwd()

        if configure_logging:
            hydra_utils.configure_log(config.hydra.job_logging, config.hydra.verbose)

        if config.hydra.output_subdir is not None:
            hydra_output = Path(config.hydra.runtime.output_dir) / Path(config.hydra.output_subdir)
            hydra_utils._save_config(task_cfg, "config.yaml", hydra_output)
            hydra_utils._save_config(hydra_cfg, "hydra.yaml", hydra_output)
            hydra_utils._save_config(config.hydra.overrides.task, "overrides.yaml", hydra_output)

        with hydra_utils.env_override(hydra_cfg.hydra.job.env_set):
            callbacks.on_job_start(config=config, task_function=task_function)
            try:
                ret.return_value = task_function(task_cfg)
                ret.status = hydra_utils.JobStatus.COMPLETED
            except Exception as e:  # noqa: BLE001 - Hydra's: the job's exception is its return value
                ret.return_value = e
                ret.status = hydra_utils.JobStatus.FAILED

        ret.task_name = hydra_utils.JobRuntime.instance().get("name")
        hydra_utils._flush_loggers()
        callbacks.on_job_end(config=config, job_return=ret)
        return ret
    finally:
        HydraConfig.instance().cfg = orig_hydra_cfg
        if _chdir:
            os.chdir(old_cwd)


def install() -> None:
    """Hydra's basic launcher calls run_job above, and so does the joblib launcher where it is loaded: in a worker,
    which loads it to unpickle its job before this module's importer (the task function); never loaded from here,
    as joblib's import warns when it cannot write its temporary files (tests/studies/test_app.py)."""
    from hydra._internal.core_plugins import basic_launcher

    basic_launcher.run_job = run_job
    joblib_core = sys.modules.get("hydra_plugins.hydra_joblib_launcher._core")
    if joblib_core is not None:
        joblib_core.run_job = run_job
