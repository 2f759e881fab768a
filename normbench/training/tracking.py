"""What every logger reports, named one way: the run's name, params, tags and scalars.

TensorBoard, MLflow, W&B and the CSV file (normbench/training/loggers.py, mlflow_logger.py, wandb_logger.py)
all take their names from here, so a run looks the same in each:

    run name    the study's arm, the seed and the run's config hash: ``norm=rms, placement=pre seed=0 3f2a9c1e``
    experiment  the study (MLflow's experiment, W&B's group): its sweep file's name, or ``command line [<id>]``
                for a sweep typed on the command line; ``normbench`` outside a study
    params      the resolved config, dotted (``norm.kind``, ``model.hidden``), as TensorBoard's hparams too
    tags        ``normbench.study``, ``.study_id``, ``.arm``, ``.seed``, ``.group_hash``, ``.config_hash``,
                ``.commit``, ``.version``, ``.run_dir`` (and ``.status`` at the end)
    labels      the user's ``tags=[a,b]``: MLflow tags (``a``, ``b``, and ``normbench.tags`` "a,b"), W&B
                tags, a TensorBoard text ``tags``
    scalars     ``train/loss`` ``train/lr`` ``train/grad_norm``, ``val/<metric>`` ``val/loss``, at probes
                ``grad/std`` ``grad/kurtosis`` ``grad_norm/<layer>`` ``act_rms/<layer>`` ``act_max_abs/<layer>``,
                at the end ``final/<key>`` (metrics.VIEWS' "final") and ``final/diverged``

A value the config read from the environment (``${oc.env:TOKEN}``) and the password of a URI
(``http://user:pw@host``) never reach a logger: params and tags carry a mark in their place.

Below every logger (they import it); imports neither torch nor the loggers' libraries.
"""

from __future__ import annotations

import errno
import math
import os
import re
import socket
import stat
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from normbench.checks import ConfigError
from normbench.configuration.contract import ALIASES
from normbench.records.metrics import viewed

FINAL_METRICS = viewed("final")  # the record's values a logger keeps as the run's final metrics
NO_STUDY = "normbench"           # the experiment of runs outside a study
MASK = "***"
# A value this short is no secret worth hiding, and masking it would garble every line: each "1" or "a"
# in a run's output would become *** (a 1-character WORLD_SIZE read through oc.env did exactly that).
MIN_SECRET = 4
_ENV = re.compile(r"oc\.env\s*:\s*['\"]?([A-Za-z_][A-Za-z0-9_]*)")


# --- secrets -----------------------------------------------------------------------------------------

def env_secrets(texts) -> list[str]:
    """The values of the environment variables that ``texts`` (overrides as typed, config strings) read
    through ``${oc.env:NAME}``, longest first: what every printed line and logged value masks. Values
    shorter than MIN_SECRET are left out (shown as they are)."""
    names = {name for text in texts for name in _ENV.findall(str(text))}
    return sorted((os.environ[n] for n in names if len(os.environ.get(n) or "") >= MIN_SECRET), key=len, reverse=True)


def interpolated_secrets(node) -> tuple[str, ...]:
    """The values of the environment variables that ``node`` (a config before resolution, a DictConfig
    or a plain container) reads through ``${oc.env:NAME}``, longest first."""
    from omegaconf import DictConfig, ListConfig, OmegaConf

    plain = OmegaConf.to_container(node, resolve=False) if isinstance(node, (DictConfig, ListConfig)) else node
    texts: list[str] = []

    def walk(value) -> None:
        if isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, str):
            texts.append(value)
    walk(plain)
    return tuple(env_secrets(texts))


def masked(value, secrets: tuple[str, ...] = ()):
    """``value`` with every secret and any URI password replaced by ``***`` (non-strings as they are)."""
    if not isinstance(value, str):
        return value
    for secret in secrets:
        value = value.replace(secret, MASK)
    # a password written as ${oc.env:NAME} names where it comes from, not the value: kept as written
    return re.sub(r"(://[^/@:\s]*:)(?!\$\{)[^/@\s]+@", rf"\g<1>{MASK}@", value)


def as_recorded(resolved, written, secrets: tuple[str, ...] = ()):
    """What a record keeps of a value read from the environment: ``resolved`` (the config as the run
    uses it) with every string whose ``written`` form (the config before resolution) reads
    ``${oc.env:NAME}`` kept as that text, and any other string holding a secret masked: the record
    names where the value came from, never the value. A number or a bool stays as it is: the run's
    identity, its curves (``lr`` at every step) and the record's types depend on it."""
    if isinstance(written, str) and _ENV.search(written) and isinstance(resolved, str):
        return written
    if isinstance(resolved, dict):
        return {k: as_recorded(v, written.get(k) if isinstance(written, dict) else None, secrets)
                for k, v in resolved.items()}
    if isinstance(resolved, list):
        texts = written if isinstance(written, list) and len(written) == len(resolved) else [None] * len(resolved)
        return [as_recorded(v, w, secrets) for v, w in zip(resolved, texts)]
    return hidden(resolved, secrets)


def hidden(value, secrets: tuple[str, ...] = ()):
    """``value`` with every secret and any URI password replaced by ``***`` (a string; anything else as
    it is): what a record keeps. A password typed in a URI (``logger.mlflow.tracking_uri=http://bob:pw@host``)
    is masked in the record's config and overrides as on the terminal (hostile cases L12, Z02)."""
    return masked(value, secrets)


def public_uri(uri: str, secrets: tuple[str, ...] = ()) -> str:
    """A tracking URI as an error line shows it: no password, no secret, no query string."""
    return masked(str(uri).split("?")[0], secrets)[:200]


# --- names, params, tags -------------------------------------------------------------------------------

def flat(config: dict, prefix: str = "") -> dict:
    """``{"norm": {"kind": "ln"}}`` -> ``{"norm.kind": "ln"}``; a list becomes its text."""
    out: dict = {}
    for key, value in (config or {}).items():
        if isinstance(value, dict):
            out.update(flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value if isinstance(value, (str, int, float, bool)) or value is None else str(value)
    return out


def arm_of(summary: dict) -> str:
    """The run's arm in its study: the study's arm settings with this run's values (``norm=rms, lr=0.01``)."""
    study = summary.get("study") if isinstance(summary.get("study"), dict) else {}
    arms = study.get("arms") if isinstance(study.get("arms"), list) else []
    axes = summary.get("axes") if isinstance(summary.get("axes"), dict) else {}
    config = flat(summary.get("config") if isinstance(summary.get("config"), dict) else {})
    parts = []
    for key in map(str, arms):
        for name in (key, ALIASES.get(key), f"{key}.name", f"{key}.kind"):
            if name in axes:
                parts.append(f"{key}={axes[name]}")
                break
            if name in config:
                parts.append(f"{key}={config[name]}")
                break
    return ", ".join(parts)


def experiment_of(study: dict) -> str:
    """A study's experiment name: its sweep file's name; a sweep typed on the command line (study_info
    names every one "command line") adds its id, so that two such sweeps are two experiments."""
    name, study_id = str(study.get("name")), str(study.get("id") or "")
    return f"{name} [{study_id[:6]}]" if name == "command line" and study_id else name


@dataclass(frozen=True)
class RunNames:
    """How one run is named in every logger (the module's docstring lists each part)."""

    name: str
    experiment: str
    arm: str
    params: dict = field(default_factory=dict)
    tags: dict = field(default_factory=dict)
    secrets: tuple = ()
    labels: tuple = ()  # the user's own tags (config ``tags=[a,b]``): MLflow tags, W&B tags, a TensorBoard text


def run_names(summary: dict, secrets: tuple[str, ...] = ()) -> RunNames:
    """The names of the run a record (its summary as started) describes."""
    study = summary.get("study") if isinstance(summary.get("study"), dict) else None
    environment = summary.get("environment") if isinstance(summary.get("environment"), dict) else {}
    commit = environment.get("git_commit")
    if "git_commit" not in environment:
        from normbench.records.record import git_commit

        commit = git_commit()
    arm = arm_of(summary)
    config = summary.get("config") if isinstance(summary.get("config"), dict) else {}
    labels = config.get("tags") if isinstance(config.get("tags"), list) else []
    seed, config_hash = summary.get("seed"), str(summary.get("config_hash") or "")
    name = " ".join(part for part in (arm, f"seed={seed}", config_hash[:8]) if part)
    tags = {"normbench.study": study.get("name") if study else None, "normbench.study_id": study.get("id") if study else None,
            "normbench.arm": arm or None, "normbench.seed": seed, "normbench.group_hash": summary.get("group_hash"),
            "normbench.config_hash": config_hash or None, "normbench.commit": commit,
            "normbench.version": environment.get("normbench_version"), "normbench.run_dir": summary.get("run_dir")}
    # a record keeps a value read from the environment as its ${oc.env:...} text (as_recorded): a logger, the mark
    params = {k: MASK if isinstance(v, str) and _ENV.search(v) else masked(v, secrets)
              for k, v in flat(summary.get("config") or {}).items()}
    return RunNames(name=masked(name, secrets), experiment=masked(experiment_of(study), secrets) if study else NO_STUDY,
                    arm=masked(arm, secrets),
                    params=params, tags={k: masked(str(v), secrets) for k, v in tags.items() if v is not None},
                    secrets=tuple(secrets), labels=tuple(masked(str(t), secrets) for t in labels))


# --- scalars -------------------------------------------------------------------------------------------

def number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _numbers(prefix: str, values: dict) -> dict[str, float]:
    return {f"{prefix}/{k}": float(v) for k, v in (values or {}).items() if number(v)}


def train_scalars(scalars: dict) -> dict[str, float]:
    """metrics.jsonl's train line: ``train/loss``, ``train/lr``, ``train/grad_norm``."""
    return _numbers("train", scalars)


def eval_scalars(metric: str, scalars: dict) -> dict[str, float]:
    """An evaluation: ``val/<metric>`` (the task's metric) and ``val/loss``."""
    return _numbers("val", {metric if k == "val_metric" else k.removeprefix("val_"): v for k, v in scalars.items()})


def probe_scalars(stats: dict, activations: dict) -> dict[str, float]:
    """A probe: the gradient's std and kurtosis, per-layer gradient norms, activation RMS and max."""
    return {**_numbers("grad", {"std": stats.get("grad_std"), "kurtosis": stats.get("grad_kurtosis")}),
            **_numbers("grad_norm", stats.get("layer_grad_norm") or {}),
            **_numbers("act_rms", activations.get("act_rms") or {}),
            **_numbers("act_max_abs", activations.get("act_max_abs") or {})}


def final_scalars(summary: dict) -> dict[str, float]:
    """The finished record's final metrics (``final/<key>``) and whether it diverged (``final/diverged``)."""
    finals = {**(summary.get("metrics") or {}), **(summary.get("throughput") or {})}
    return {**_numbers("final", {k: v for k, v in finals.items() if k in FINAL_METRICS}),
            "final/diverged": float(summary.get("status") == "diverged")}


# --- where a library writes, and whether its server answers -------------------------------------------

def logger_folder(run_dir: Path, relative: str) -> Path:
    """``run_dir/relative``, made by the project before a library writes into it: each part a real
    folder inside the run directory, never a link (a planted ``tb -> /elsewhere`` is refused, not
    followed) nor a file. OSError names the part otherwise."""
    run_dir = Path(run_dir)
    folder = run_dir
    for part in Path(relative).parts:
        if part in ("", "."):
            continue
        if part == "..":
            raise OSError(errno.EINVAL, "a logger folder must stay inside the run directory", str(folder / part))
        folder = folder / part
        try:
            os.mkdir(folder)
        except FileExistsError:
            pass
        mode = os.lstat(folder).st_mode
        if stat.S_ISLNK(mode):
            raise OSError(errno.ELOOP, "a logger folder is a link, not followed", str(folder))
        if not stat.S_ISDIR(mode):
            raise OSError(errno.ENOTDIR, "a logger folder is not a folder", str(folder))
    return folder


def require_package(module: str, what: str, extra: str) -> None:
    """ConfigError (one line, exit 2) when ``module`` is not installed: ``what`` needs its extra."""
    import importlib.util

    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise ConfigError(f'{what} needs the {module} package: pip install -e ".[{extra}]"')


def resolved(host: str, port: int, timeout: float):
    """``socket.getaddrinfo(host, port)`` bounded by ``timeout``: its list, the OSError it raised, or
    None when it has not answered in time. A socket's timeout does not cover name resolution, which
    with no network can wait on each DNS server in turn (90 s for W&B's host, hostile pass 2)."""
    answer: list = []

    def ask() -> None:
        try:
            answer.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except OSError as err:
            answer.append(err)
    asking = threading.Thread(target=ask, daemon=True)  # a resolver that never answers is left behind
    asking.start()
    asking.join(timeout)
    return answer[0] if answer else None


def require_reachable(uri: str, key: str, secrets: tuple[str, ...] = (), timeout: float = 3.0) -> None:
    """ConfigError (one line, exit 2) unless the server of an ``http(s)://`` URI accepts a connection
    within ``timeout`` seconds: a client that retries an unreachable server would stall the run for
    minutes before its first step."""
    try:
        parts = urlsplit(str(uri))
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise ConfigError(f"{key}={public_uri(uri, secrets)!r} is not a valid URL") from None
    if parts.scheme not in ("http", "https"):
        return
    if not parts.hostname:
        raise ConfigError(f"{key}={public_uri(uri, secrets)!r} names no host")
    started = time.monotonic()
    addresses = resolved(parts.hostname, port, timeout)
    if addresses is None:
        raise ConfigError(f"{key}={public_uri(uri, secrets)!r}: its host name is not resolved within {timeout:g} s "
                          "(no network, or no DNS?); connect, or choose another")
    try:
        if isinstance(addresses, OSError):
            raise addresses
        left = max(0.1, timeout - (time.monotonic() - started))
        with socket.create_connection((addresses[0][4][0], port), timeout=left):
            pass
    except OSError as err:
        why = f"no answer within {timeout:g} s" if isinstance(err, TimeoutError) else (err.strerror or type(err).__name__)
        raise ConfigError(f"{key}={public_uri(uri, secrets)!r}: the server does not answer ({why.lower()}); "
                          "start it, or choose another") from None
