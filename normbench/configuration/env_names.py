"""Settings that name things (files, folders, experiments, projects), and what a value read from the
environment (``${oc.env:NAME}``) may do there: one table, which the check and its test both iterate.

Elsewhere a value read from the environment stays in the record as its ``${oc.env:NAME}`` text and is
masked wherever it is shown (normbench/training/tracking.py). A name cannot be masked: it becomes a
file or folder name, a logger's experiment or project, a line in ``normbench.log`` and on the terminal.
So each name-bearing key says what it does with such a value:

- ``REFUSED``: one line, exit 2, before anything is written (nothing to mask then);
- ``PASSED_ON``: taken as the value it reads, shown as it is (docs/offline-and-safety.md says so):
  where a folder from the environment is the point (``hydra.run.dir=${oc.env:SCRATCH}/runs``), or
  where the tool itself treats the value as a secret and masks it (a tracking URI's password).

A REFUSED key may not take its value from a PASSED_ON one either (``logger.mlflow.experiment=${hydra:run.dir}``
carries the environment's value through the folder), and no name-bearing key may hold a control
character (a tab or an escape in a log's or experiment's name garbles every line that shows it).

A new string setting of a logger must appear here or in NOT_NAMES (tests/test_hostile_env_names.py).
"""

from __future__ import annotations

import re
from pathlib import Path

REFUSED, PASSED_ON = "refused", "passed on"
ENV = re.compile(r"oc\.env\s*:")

# key -> (what a value read from the environment does there, why)
NAME_KEYS = {
    "hydra.job.name": (REFUSED, "the log file's name"),
    "hydra.run.dir": (PASSED_ON, "a folder from the environment ($SCRATCH) is what it is for; it is shown as it is"),
    "hydra.sweep.dir": (PASSED_ON, "a folder from the environment ($SCRATCH) is what it is for; it is shown as it is"),
    "hydra.sweep.subdir": (REFUSED, "a job's folder name inside the sweep"),
    "logger.tensorboard.dir": (REFUSED, "a folder name in the run folder"),
    "logger.mlflow.dir": (REFUSED, "a folder name in the run folder"),
    "logger.mlflow.experiment": (REFUSED, "the MLflow experiment's name, in the store and its UI"),
    "logger.mlflow.tracking_uri": (PASSED_ON, "a server's address; its password is masked wherever it is shown"),
    "logger.mlflow.artifact_location": (PASSED_ON, "where artifacts go (s3://...); recorded in the experiment"),
    "logger.wandb.dir": (REFUSED, "a folder name in the run folder"),
    "logger.wandb.project": (REFUSED, "the W&B project's name (leave the default, or type it)"),
    "logger.wandb.entity": (REFUSED, "the W&B entity (leave it null: W&B reads WANDB_ENTITY itself)"),
    "logger.csv.file": (REFUSED, "a file name in the run folder"),
    "tags": (REFUSED, "labels every logger shows"),
}
CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# The name-bearing keys whose value becomes a file or folder in the run folder: key -> the name it becomes ({} the
# value). One the filesystem would refuse as too long is refused before anything is written (too_long_name; hostile
# h16 N12: a 252-byte hydra.job.name left the run without its log, silently; N14: a 300-byte logger.csv.file failed
# the run with a traceback).
IN_RUN_FOLDER = {"hydra.job.name": "{}.log", "logger.tensorboard.dir": "{}", "logger.mlflow.dir": "{}",
                 "logger.wandb.dir": "{}", "logger.csv.file": "{}"}


def _reads_passed_on(text: str) -> str | None:
    """The PASSED_ON key ``text`` interpolates (``${hydra:run.dir}``, ``${logger.mlflow.tracking_uri}``), or None."""
    flat = "".join(text.split())
    for key, (policy, _) in NAME_KEYS.items():
        if policy != PASSED_ON:
            continue
        forms = (f"${{{key}}}", f"${{hydra:{key[len('hydra.'):]}}}") if key.startswith("hydra.") else (f"${{{key}}}",)
        if any(form in flat for form in forms):
            return key
    return None


# String settings of the loggers that name nothing (a choice among fixed words)
NOT_NAMES = {"logger.wandb.mode"}


def refused_env_name(values: dict) -> str | None:
    """The one line for the first key whose value (``values``: dotted key -> the value as written,
    before resolution) holds a control character, or, for a REFUSED key, reads the environment
    directly or through a PASSED_ON key; None when there is none."""
    for key, (policy, why) in NAME_KEYS.items():
        value = values.get(key)
        texts = value if isinstance(value, list) else [value]
        texts = [t for t in texts if isinstance(t, str)]
        if any(CONTROL.search(t) for t in texts):
            return f"{key} holds a control character; it is {why}: type plain text"
        if policy == REFUSED and any(ENV.search(t) for t in texts):
            return (f"{key} reads the environment (${{oc.env:...}}); it is {why}, where a value cannot be masked: "
                    f"type the value itself")
        source = next((found for found in map(_reads_passed_on, texts) if policy == REFUSED and found), None)
        if source:
            return (f"{key} takes {source}'s value, which may be read from the environment; it is {why}, where a "
                    f"value cannot be masked: type the value itself")
    return None


def too_long_name(values: dict, run_dir: Path) -> str | None:
    """The one line for the first IN_RUN_FOLDER key whose file or folder in ``run_dir`` the filesystem would refuse
    as too long (ENAMETOOLONG: checks.name_too_long); ``values``: dotted key -> the resolved value. None when none."""
    from normbench.checks import name_too_long, shown

    for key, name in IN_RUN_FOLDER.items():
        value = values.get(key)
        why = name_too_long(str(run_dir / name.format(value))) if isinstance(value, str) else None
        if why:
            becomes = f" ({name.format(key)})" if name != "{}" else ""
            return f"{key}={shown(value, 60)}: {NAME_KEYS[key][1]}{becomes} would be {why}; choose a shorter one"
    return None
