"""The configs a runner's jobs would run (normbench study's rounds, normbench tune's stages), composed from
its overrides and checked as a run checks its own (config.to_config), before any job starts.

A setting no job can take (``norm.eps=0``, ``lr=${oc.env:NAME}`` holding a word) is then one line and exit 2
from the runner, as it is from ``normbench``, not a stage of invalid runs ending in an unrelated reason
(hostile case T18). A sweep only some of whose cells are invalid (the smoke sweep's impossible ones) runs:
its invalid cells are recorded as such.
"""

from __future__ import annotations

import itertools

from normbench.checks import ConfigError

MAX_JOBS_CHECKED = 64  # a sweep of at most 64 jobs, every one refusing its settings, is refused as a whole


def _hydra_key(override: str) -> bool:
    return override.lstrip("+~").split("=", 1)[0].startswith(("hydra.", "hydra/"))


def job_overrides(overrides: list[str], params: dict[str, str] | None = None) -> list[list[str]] | None:
    """Each job's overrides, sweeps expanded, the sweep file's ``params`` where the command line does not set
    the key (as Hydra's sweeper takes them), at most MAX_JOBS_CHECKED + 1 of them, and no more than that many
    values of any one sweep read (a range of 10^8 values is never listed); Hydra's own keys left out
    (where the jobs go, not what they run). None when they cannot be listed here (an interval or glob sweep,
    a grammar error: the child says so in its own line)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    given = {o.lstrip("+~").split("=", 1)[0] for o in overrides}
    texts = [f"{k}={v}" for k, v in (params or {}).items() if k.lstrip("+~") not in given]
    texts += [o for o in overrides if not _hydra_key(o)]
    choices = []
    try:
        for parsed, text in zip(OverridesParser.create().parse_overrides(texts), texts):
            if parsed.is_sweep_override():
                prefix = {"ADD": "+", "FORCE_ADD": "++", "DEL": "~"}.get(parsed.type.name, "")
                values = itertools.islice(parsed.sweep_string_iterator(), MAX_JOBS_CHECKED + 1)
                choices.append([f"{prefix}{parsed.get_key_element()}={value}" for value in values])
            else:
                choices.append([text])
    except Exception:
        return None
    return [list(job) for job in itertools.islice(itertools.product(*choices), MAX_JOBS_CHECKED + 1)]


def _refusals(jobs: list[list[str]], secrets: list[str]):
    """(job, the one line refusing it, or None where it could run) for each job in turn, composed and checked as a
    run is (config.to_config, its task's target, its family-norm-placement combination); stops early at an error
    Hydra's own (an unknown option), which the child reports as exit 2."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from normbench.configuration.config import config_dir, register, to_config
    from normbench.configuration.validity import check_combination
    from normbench.studies.app import check_target, message_text
    from normbench.training.tracking import interpolated_secrets

    register()
    with initialize_config_dir(str(config_dir()), version_base="1.3"):  # as bench's harness composes
        for job in jobs:
            try:
                node = compose("config", overrides=job)
            except HydraException:
                return
            except (OmegaConfBaseException, ValueError, TypeError) as error:
                yield job, message_text(error, secrets, 300)
                continue
            try:
                config = to_config(node)
                check_target(node)
                check_combination(config.model.family, config.norm.kind, config.placement, config.model.bidirectional)
                yield job, None
            except (OmegaConfBaseException, ValueError, TypeError) as error:  # ConfigError is a ValueError
                masked = sorted({*secrets, *interpolated_secrets(node)}, key=len, reverse=True)
                yield job, message_text(error, masked, 300)


def check_jobs(overrides: list[str], params: dict[str, str] | None = None) -> None:
    """ConfigError, one line with any value read from the environment masked, when no job of these overrides
    could run: each is composed and checked as a run is (_refusals), and the first refusal is the
    reason. Returns at the first job that could run, and when the sweep has more jobs than are checked (a
    later one may run: its invalid cells are recorded, as a multirun records them; hostile case U06).
    Hydra's own refusals (an unknown option) are left to the child, which reports them as exit 2."""
    from normbench.training.tracking import env_secrets

    jobs = job_overrides(overrides, params)
    if not jobs:
        return
    first, checked = None, 0
    for _, refusal in _refusals(jobs[:MAX_JOBS_CHECKED], env_secrets(overrides)):
        if refusal is None:
            return
        first, checked = first or refusal, checked + 1
    if len(jobs) > MAX_JOBS_CHECKED or checked < len(jobs):
        return
    where = "" if len(jobs) == 1 else f" in any of the {len(jobs)} jobs of the sweep"
    raise ConfigError(f"the config cannot run{where}: {first}")


def check_every_job(overrides: list[str], params: dict[str, str] | None = None) -> None:
    """ConfigError, one line, at the first job of these overrides that could not run (check_jobs' checks), named by
    the swept values that make it: a study compares every arm, and an arm no run of could build would cost a
    round, then leave nothing compared (hostile h18 H3: ``model=rnn placement=gate,pre``). Returns where the jobs
    cannot be listed here or are more than MAX_JOBS_CHECKED."""
    from normbench.training.tracking import env_secrets

    jobs = job_overrides(overrides, params)
    if not jobs or len(jobs) > MAX_JOBS_CHECKED:
        return
    swept = [i for i in range(len(jobs[0])) if len({job[i] for job in jobs}) > 1]
    for job, refusal in _refusals(jobs, env_secrets(overrides)):
        if refusal is not None:
            arm = " ".join(job[i] for i in swept) or " ".join(job)
            raise ConfigError(f"the arm {arm} cannot run: {refusal}")
