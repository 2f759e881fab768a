"""What a study is: the runs of one sweep, the question they answer, and the settings they vary.

A *study* is one research question: the jobs of one multirun (a sweep file, a command-line sweep,
or the rounds of `python -m normbench study` and the two stages of `python -m normbench tune`).
Its *arms* are the settings the sweep varies; its *setup* is everything else. The report compares,
ranks and stars groups only within one study, and labels them by their arm settings alone.

How a study is recognised: when a multirun starts, `StudyStart` (a Hydra callback) reads the
sweep's command-line overrides and its sweep file's `hydra.sweeper.params`, names the keys that
are swept (a comma list, `range(...)`, `choice(...)`...), and puts that description in the
environment (`NORMBENCH_STUDY`), where every job, in this process or a launcher's worker, finds it
and copies it into its record as `study`. A caller that runs several multiruns as one study
(the study runner, tune) sets `NORMBENCH_STUDY` itself; the callback then keeps it. A run outside
a multirun has no study (`study: null`); the report puts such runs together in one comparison.

Torch-free: the report and the callback import it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from normbench.configuration.contract import HARNESS  # where and how runs execute is not part of a study's question

STUDY_ENV_VAR = "NORMBENCH_STUDY"
STUDY_FORMAT = "normbench.study/1"
NOT_ARMS = ("seed",)  # swept to replicate, not to compare


def swept_keys(overrides: list[str], params: dict[str, str] | None) -> list[str]:
    """Keys whose values a multirun sweeps: the sweep file's params, then the command line, which
    overrides them (a key fixed on the command line is no longer swept)."""
    parser = OverridesParser.create()
    swept: dict[str, bool] = {}
    for key, value in (params or {}).items():
        override = parser.parse_override(f"{key}={value}")
        swept[override.get_key_element().lstrip("+~")] = override.is_sweep_override()
    for override in parser.parse_overrides(list(overrides)):
        swept[override.get_key_element().lstrip("+~")] = override.is_sweep_override()
    return [k for k, is_swept in swept.items() if is_swept]


def purpose_of(sweep_file: Path | None) -> str:
    """The sweep file's question: its first sentence, from the comment lines after `# @package`."""
    if sweep_file is None or not sweep_file.is_file():
        return ""
    words: list[str] = []
    for line in sweep_file.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.startswith("#"):
            break
        text = line.lstrip("#")
        if text.strip().startswith("@package"):
            continue
        if not text.strip() or text.startswith("   ") or text.strip().startswith(("python ", "normbench ")):
            if words:
                break
            continue
        words.append(text.strip())
    prose = " ".join(words)
    end = re.search(r"(?<!al\.)(?<!e\.g\.)(?<=[.?])\s", prose)  # "Ba et al. 2016" ends no sentence
    return (prose[:end.start()] if end else prose)[:300]


def describe(name: str | None, overrides: list[str], params: dict[str, str] | None,
             purpose: str = "") -> dict:
    """The study's description. Its id hashes the question (name, command, params) without the seeds
    and the harness keys, not the folder: the same sweep run again with more seeds, on other threads
    or into another folder is one study (its runs count once each)."""
    swept = swept_keys(overrides, params)
    parser = OverridesParser.create()
    asked = sorted(o for o, parsed in zip(overrides, parser.parse_overrides(list(overrides)))
                   if parsed.get_key_element().lstrip("+~") not in (*HARNESS, *NOT_ARMS))
    asked_params = {k: v for k, v in (params or {}).items() if k not in NOT_ARMS}
    question = {"name": name, "overrides": asked, "params": asked_params}
    digest = hashlib.sha256(json.dumps(question, sort_keys=True).encode()).hexdigest()[:12]
    command = "python -m normbench -m " + " ".join(overrides)
    return {"schema": STUDY_FORMAT, "id": digest, "name": name or "command line", "purpose": purpose,
            "swept": swept, "arms": [k for k in swept if k not in NOT_ARMS], "command": command.strip()}


def sweep_file(name: str | None) -> Path | None:
    """The sweep file of that name in the sweeps folders (normbench.configuration.config.sweep_dirs), or None."""
    if not name:
        return None
    from normbench.configuration.config import sweep_dirs

    try:
        folders = sweep_dirs()
    except ValueError:  # a NORMBENCH_SWEEPS folder that does not exist: the run itself says so
        return None
    return next((f / f"{name}.yaml" for f in folders if (f / f"{name}.yaml").is_file()), None)


def _sweep_file(config: DictConfig) -> tuple[str | None, Path | None]:
    name = (config.hydra.runtime.get("choices") or {}).get("sweep")
    return (str(name), sweep_file(str(name))) if name else (None, None)


def from_config(config: DictConfig) -> dict:
    """The study a multirun's config describes (called at the multirun's start)."""
    params = config.hydra.sweeper.get("params")
    params = {str(k): str(v) for k, v in OmegaConf.to_container(params).items()} if params else None
    name, path = _sweep_file(config)
    overrides = OmegaConf.to_container(config.hydra.overrides.task, resolve=False)  # ${oc.env:...} as typed
    return describe(name, [str(o) for o in overrides], params, purpose_of(path))


def current() -> dict | None:
    """The study of the job running now (from the environment), or None outside a multirun."""
    text = os.environ.get(STUDY_ENV_VAR)
    if not text:
        return None
    try:
        study = json.loads(text)
    except ValueError:
        return None
    return study if isinstance(study, dict) and study.get("schema") == STUDY_FORMAT else None


class StudyStart(Callback):
    """Puts the multirun's study into the environment for its jobs, and takes it out at the end."""

    def __init__(self) -> None:
        self._mine = False

    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        if current() is not None:  # a study runner or tune set it: these jobs are rounds of that study
            return
        try:
            study = from_config(config)
        except (HydraException, OmegaConfBaseException, ValueError):
            # a sweep value that cannot be evaluated (an empty choice()): Hydra would say it in a warning of
            # its own before the sweeper fails on the same value in main's one line (hostile h19 W02)
            return
        os.environ[STUDY_ENV_VAR] = json.dumps(study)
        self._mine = True

    def on_multirun_end(self, config: DictConfig, **kwargs) -> None:
        if self._mine:
            os.environ.pop(STUDY_ENV_VAR, None)
            self._mine = False
