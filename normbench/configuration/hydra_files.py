"""The files Hydra itself writes into a sweep or run folder: the sweep's ``multirun.yaml`` (its
sweeper) and, where ``hydra.output_subdir`` is set, each job's ``.hydra/config.yaml``,
``hydra.yaml`` and ``overrides.yaml``. Hydra opens them with open(..., "w"): a link planted under
one of these names would be written through (a file outside the folder replaced or created), a FIFO
would block the run forever. Each name is checked with os.lstat (never opened) just before Hydra
writes it, and a name that is anything but a regular file (a link, dangling or not, a FIFO, socket,
device or folder) ends the command with one line and exit status 2: nothing is deleted.

``CheckHydraFiles`` (a Hydra callback, conf/config.yaml) checks multirun.yaml at the start of a
multirun, before the sweeper writes it; ``install()`` (normbench/studies/app.py, in the launcher and in each
joblib worker) puts the check in front of Hydra's writer of the ``.hydra/`` files.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
from pathlib import Path

from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from omegaconf import OmegaConf, open_dict, read_write
from omegaconf.errors import OmegaConfBaseException

KINDS = ((stat.S_ISLNK, "a link"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
         (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"), (stat.S_ISDIR, "a folder"))


class Refused(BaseException):
    """A name Hydra would write is not a regular file. A BaseException: Hydra's callbacks turn an
    Exception into a warning and go on; this one reaches normbench.studies.app.main, which prints it."""


def job_folder(hc) -> Path:
    """The folder Hydra made for this job (``hydra.runtime.output_dir``), read as the text Hydra stored.
    Hydra stores the absolute path, the current folder's included; read through the config, a
    ``${...}`` in that path (a folder named ``p${oc.env:X}``) would be resolved as an interpolation and
    name another folder. A folder's name is data, never config."""
    return Path(OmegaConf.to_container(hc.runtime, resolve=False)["output_dir"])


def register_job_folder() -> None:
    """``${normbench.job_folder:}``: job_folder for a config Hydra resolves itself (the job's log file,
    conf/hydra/job_logging/normbench.yaml); ``${hydra.runtime.output_dir}`` would resolve the path's text."""
    if not OmegaConf.has_resolver("normbench.job_folder"):
        OmegaConf.register_new_resolver("normbench.job_folder", lambda: str(job_folder(HydraConfig.get())))


def unstorable_cwd() -> str | None:
    """Why Hydra cannot start from the current folder, or None. Hydra stores the folder's path in its
    config (``hydra.runtime.cwd``), where a ``${`` that does not close (``p${x``) fails to parse; and a folder
    deleted while a shell stood in it has no path at all (a 23-44 line traceback, hostile h31 e16/e27)."""
    try:
        cwd = os.getcwd()
    except OSError as err:
        return (f"the current folder cannot be read ({err.strerror}): it was deleted or moved while this shell "
                "stood in it; cd to an existing folder and run again")
    probe = OmegaConf.create({"cwd": ""})
    try:
        probe.cwd = cwd
    except OmegaConfBaseException:
        return (f"the current folder {cwd!r} holds '${{' that does not close, which Hydra cannot store "
                "(it reads ${...} as an interpolation); run from a folder whose path has no unclosed '${'")
    return None


def what_is(path: Path, folder_ok: bool = False) -> str | None:
    """None if ``path`` is absent or a regular file (a folder too, with ``folder_ok``); else what it is."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as err:
        return f"unreadable ({err.strerror})"
    if stat.S_ISREG(mode) or (folder_ok and stat.S_ISDIR(mode)):
        return None
    return next((name for test, name in KINDS if test(mode)), "not a regular file")


def check(path: Path, folder_ok: bool = False) -> None:
    kind = what_is(path, folder_ok)
    if kind is not None:
        raise Refused(f"{path} is {kind}: Hydra would write its {path.name} there; "
                      f"move it away or choose another output folder")


# What a sweep writes at its folder's top level: Hydra's multirun.yaml, and normbench's (records/
# sweep_time.py, training/environment.py, training/run.py, bench/arms.py; a test holds them equal).
SWEEP_FILES = ("multirun.yaml", "efficiency.json", ".timing", ".environment.json", ".claims", "paired-timing.json")


def _hydra_wrote(path: Path) -> bool:
    """Whether ``path`` reads as Hydra's multirun.yaml: a mapping whose ``hydra`` block names a sweep."""
    import yaml

    try:
        with open(path, "rb") as handle:
            found = yaml.safe_load(handle.read(1 << 24))
    except (OSError, ValueError, yaml.YAMLError):
        return False
    return isinstance(found, dict) and isinstance(found.get("hydra"), dict) and "sweep" in found["hydra"]


def foreign_sweep_file(sweep_dir: Path) -> str | None:
    """The first of SWEEP_FILES in ``sweep_dir`` that this sweep did not write, or None. A folder with
    Hydra's multirun.yaml is a sweep's (run again, it resumes: finished runs are skipped); one
    without holds none of these names but someone's. Other names (a study's plan, job folders) are
    left to their own checks: a job's folder is refused when it holds files and no record."""
    if _hydra_wrote(sweep_dir / "multirun.yaml"):
        return None
    return next((name for name in SWEEP_FILES if os.path.lexists(sweep_dir / name)), None)


SWEEP_DIR: Path | None = None  # set in the launcher when its multirun starts
# what this command's sweep will have made when the sweeper writes multirun.yaml: the folders of hydra.sweep.dir
# that did not exist (deepest first) and, if it was not there, multirun.yaml; undone by a refused sweep (unmake_sweep)
SWEEP_MADE: list[Path] = []
SWEEP_HELD: list[str] = []  # and the names the folder held then


def folders_to_make(path: Path) -> list[Path]:
    """The folders of ``path`` that do not exist yet, deepest first: what making it creates, and all a refusal
    afterwards may remove (remove_made)."""
    missing = []
    for folder in (path, *path.parents):
        if os.path.lexists(folder):
            break
        missing.append(folder)
    return missing


def remove_made(paths: list[Path]) -> None:
    """Removes what a refused command made, deepest first: a file it wrote, then each folder it made while the folder
    is empty. The first that cannot go (a folder something else has written into since) ends it: what holds
    anything else was not this command's alone (hostile h25 a013, g011)."""
    for path in paths:
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                os.rmdir(path)
            else:
                os.unlink(path)
        except OSError:
            return


def unmake_sweep() -> None:
    """A sweep refused once its sweeper had written multirun.yaml (an unknown key in a sweep file, refused by the
    launcher as it composes the first job, or every job's config failing to resolve): its jobs' folders that hold
    nothing, then its multirun.yaml and the folders it made go when it wrote nothing else there, so a refused sweep
    leaves no folder behind. What a folder held before the sweep stays."""
    made, SWEEP_MADE[:] = list(SWEEP_MADE), []
    if not made:  # multirun.yaml was there before: the folder is an earlier sweep's
        return
    sweep = made[0].parent
    for name in set(_names(sweep)) - {*SWEEP_HELD, "multirun.yaml"}:  # a refused job's folder, which Hydra made
        if name.isdigit() and os.path.isdir(sweep / name) and not os.path.islink(sweep / name):  # before calling it
            with contextlib.suppress(OSError):  # and nothing wrote into (hostile h26 w16): rmdir takes only an empty one
                os.rmdir(sweep / name)
    written = set(_names(sweep)) - {*SWEEP_HELD, "multirun.yaml"}
    if not written:  # a job's folder or a record written: the sweep ran, and its multirun.yaml stays with them
        remove_made(made)


def _names(folder: Path) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:  # not there (yet), or not listable
        return []


def _blank_path(config, key: str) -> None:
    """paths.outputs / paths.multirun blank: the run's folder would be /DATE/TIME, at the filesystem's root
    (hostile N12b, N13, N21: the job was refused, but only after Hydra had made that folder and the sweep had
    written its files there). Refused before Hydra names any folder."""
    from omegaconf import OmegaConf

    value = OmegaConf.select(config, f"paths.{key}", default=None, throw_on_resolution_failure=False)
    if value is not None and not str(value).strip():
        raise Refused(f"paths.{key} is empty: its folders would be made at the filesystem's root; name a folder")


def _resolved(config, key: str):
    """``key``'s value as the composed config resolves it; an interpolation that fails is one line (Refused),
    not Hydra's warning about a callback that raised (hostile h13 E08)."""
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    if not HydraConfig.initialized() and "hydra" in config:  # Hydra sets it after the run-start callbacks only:
        try:                                                     # ${hydra:...} in a folder's value needs it (h14 H23)
            HydraConfig.instance().set_config(config)
        except (AssertionError, ValueError, TypeError):  # a config Hydra did not compose (a plain dict): no resolver
            pass
    try:
        return OmegaConf.select(config, key, default=None)
    except OmegaConfBaseException as err:
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise Refused(f"{key} does not resolve: {first[:200]}") from None


def _root_or_home(config, keys: tuple[str, ...]) -> None:
    """A run's or sweep's folder, or the paths.* folder it is made in, that resolves to the filesystem's root or
    your home folder itself (``paths.outputs=/``, ``${oc.env:EMPTY}/``, ``../..`` up to /, ``hydra.sweep.dir=$HOME``:
    hostile h13 O01-O10): refused as an ``--out`` there is (checks.out_folder_problem), before Hydra makes a folder."""
    from normbench.checks import out_folder_problem

    for key in keys:
        value = _resolved(config, key)
        problem = out_folder_problem(str(value), key) if value is not None and str(value).strip() else None
        if problem:
            raise Refused(problem)


def _current_folder(config, key: str, what: str) -> None:
    """A folder that names the current one by a detour (``hydra.run.dir=r/./../r2/..``): refused as an empty one is,
    before Hydra's makedirs leaves r and r2 behind and the folder is refused for holding them (hostile h18 H8)."""
    value = _resolved(config, key)
    if value is not None and str(value).strip() and os.path.abspath(str(value)) == os.path.abspath(os.curdir):
        raise Refused(f"{key}={str(value)[:200]!r} is the current folder: the {what} would be written into it; "
                      f"name a folder")


def literal_cwd(config) -> None:
    """Stores ``hydra.runtime.cwd`` escaped, so that ``${hydra:runtime.cwd}`` (in hydra.run.dir, hydra.sweep.dir
    or a user's config) gives the folder's path as it is: Hydra stores it as plain text, where a ``${...}`` in
    a folder's name (``p${oc.env:X}``) would be resolved, and the run's folder made where that text leads."""
    cwd = OmegaConf.to_container(config.hydra.runtime, resolve=False).get("cwd")
    if isinstance(cwd, str) and "${" in cwd:
        with read_write(config.hydra.runtime), open_dict(config.hydra.runtime):
            config.hydra.runtime.cwd = escaped(cwd)


def escaped(text: str) -> str:
    """``text`` as OmegaConf reads it back literally: each ``${`` escaped, and the backslashes before it
    doubled (a folder named ``p\\${oc.env:X}`` had its backslash read as the escape and the rest resolved;
    hostile h16 N1)."""
    return re.sub(r"(\\*)\$\{", lambda found: found.group(1) * 2 + "\\${", text)


def job_name_problem(name: str) -> str | None:
    """Why ``hydra.job.name`` cannot name the job's log, or None: the log is a file in the run folder."""
    from normbench.configuration.env_names import CONTROL

    if CONTROL.search(name):
        return f"hydra.job.name={name!r} holds a control character: it must be a plain file name (the log is written in the run folder)"
    if not name or name in (".", "..") or "/" in name or os.sep in name:
        return f"hydra.job.name={name!r} must be a plain file name: the log is written in the run folder"
    return None


def _job_name(config) -> None:
    """The job name refused before Hydra makes a folder: ``hydra.run.dir=${hydra.job.name}`` with a name holding
    ``..`` had its folder made outside by the time the job refused the name (hostile h21 N262)."""
    name = _resolved(config, "hydra.job.name")
    problem = job_name_problem(str(name)) if name is not None else None
    if problem:
        raise Refused(problem)


class CheckHydraFiles(Callback):
    def on_run_start(self, config, **kwargs) -> None:
        _job_name(config)
        _blank_path(config, "outputs")
        _root_or_home(config, ("paths.outputs", "hydra.run.dir"))
        _current_folder(config, "hydra.run.dir", "record")

    def on_multirun_start(self, config, **kwargs) -> None:
        _job_name(config)
        _blank_path(config, "multirun")
        _root_or_home(config, ("paths.multirun", "hydra.sweep.dir"))
        global SWEEP_DIR
        SWEEP_DIR = Path(str(config.hydra.sweep.dir))  # the launcher's sweep, for a stop (studies/app.py)
        sweep = SWEEP_DIR.absolute()
        SWEEP_MADE[:] = [] if os.path.lexists(sweep / "multirun.yaml") else [sweep / "multirun.yaml"]
        SWEEP_MADE.extend(folders_to_make(sweep))
        SWEEP_HELD[:] = _names(sweep)
        # before Hydra names any job's folder: a name read from the environment is refused up front
        from omegaconf import OmegaConf

        from normbench.configuration.env_names import NAME_KEYS, refused_env_name

        written = {}
        for key in (k for k in NAME_KEYS if k.startswith("hydra.")):
            parent, _, leaf = key.rpartition(".")
            holder = OmegaConf.select(config, parent, default=None)
            written[key] = OmegaConf.to_container(holder, resolve=False).get(leaf) if OmegaConf.is_dict(holder) else None
        refused = refused_env_name(written)
        if refused:
            raise Refused(refused)
        if not str(config.hydra.sweep.dir).strip():
            raise Refused("hydra.sweep.dir is empty: the sweep would be written into the current folder; "
                          "name a folder for it")
        batch = OmegaConf.select(config, "hydra.sweeper.max_batch_size", default=None)
        if batch is not None and (isinstance(batch, bool) or not isinstance(batch, int) or batch < 1):
            # Hydra's basic sweeper asserts it: a traceback, not a line
            raise Refused(f"hydra.sweeper.max_batch_size must be a whole number >= 1 (or null: all jobs at "
                          f"once), got {str(batch)[:40]}")
        from normbench.configuration.launcher_settings import joblib_setting_problem

        refused = joblib_setting_problem(OmegaConf.select(config, "hydra.launcher", default=None))
        if refused:  # a setting the joblib launcher would drop, or joblib refuse once jobs run (hostile h25 xe004)
            raise Refused(refused)
        target = str(OmegaConf.select(config, "hydra.launcher._target_", default="") or "")
        if target.endswith("SlurmLauncher") and shutil.which("srun") is None:
            # submitit raises from inside Hydra's launch, which prints a traceback: said here, in one line
            raise Refused("hydra/launcher=submitit_slurm needs a SLURM cluster (no `srun` on PATH here); "
                          "hydra/launcher=submitit_local or joblib run the same sweep on this machine")
        check(Path(str(config.hydra.sweep.dir)) / "multirun.yaml")
        foreign = foreign_sweep_file(Path(str(config.hydra.sweep.dir)))
        if foreign:
            raise Refused(f"{config.hydra.sweep.dir} holds {foreign} that is not this sweep's (no Hydra "
                          f"multirun.yaml beside it); a sweep never writes over files it did not write: "
                          f"choose another hydra.sweep.dir")
        blocked = job_folder_blocked(Path(str(config.hydra.sweep.dir)), config.hydra.sweep)
        if blocked:
            raise Refused(f"{config.hydra.sweep.dir} holds {blocked}, which is not a folder, where job {blocked}'s "
                          f"run folder goes: move it away or choose another hydra.sweep.dir")


def job_folder_blocked(sweep_dir: Path, sweep) -> str | None:
    """The first name in ``sweep_dir`` where a job's folder goes that is not a folder (a file, a link, a
    FIFO): Hydra's mkdir would fail on it after multirun.yaml is written, ending the sweep at that job
    (O14). Checkable up front for the default subdir, ``${hydra.job.num}`` (a job number names the
    folder); other subdir templates name folders only as each job starts, and such a job's line is
    Hydra's "cannot write output" then."""
    from omegaconf import OmegaConf

    if OmegaConf.to_container(sweep, resolve=False).get("subdir") != "${hydra.job.num}":
        return None
    try:
        with os.scandir(sweep_dir) as entries:
            return next((e.name for e in entries if e.name.isascii() and e.name.isdigit()
                         and not e.is_dir(follow_symlinks=False)), None)
    except OSError:  # absent, or not listable: the sweep's own checks and writes say so
        return None


def install() -> None:
    """Hydra's _save_config (hydra.core.utils, the .hydra/ files of a job), checked before it writes; and
    every config Hydra composes (the command's, each sweep job's) with its cwd stored literally (literal_cwd)."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra.core import utils

    load = ConfigLoaderImpl.load_configuration
    if not getattr(load, "literal_cwd", False):
        def load_configuration(self, *args, **kwargs):
            config = load(self, *args, **kwargs)
            literal_cwd(config)
            return config
        load_configuration.literal_cwd = True
        ConfigLoaderImpl.load_configuration = load_configuration

    original = utils._save_config
    if getattr(original, "checks_names", False):
        return

    def save_config(cfg, filename: str, output_dir: Path) -> None:
        check(Path(output_dir), folder_ok=True)
        check(Path(output_dir) / filename)
        original(cfg, filename, output_dir)
    save_config.checks_names = True
    utils._save_config = save_config
