import contextlib
import importlib.util
import os
import signal
import sys

import pytest
from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from hydra._internal.sources_registry import SourcesRegistry
from hydra.core.config_store import ConfigStore
from hydra.core.global_hydra import GlobalHydra
from hydra.core.plugins import Plugins
from hydra.plugins.config_source import ConfigSource
from hydra.plugins.search_path_plugin import SearchPathPlugin
from omegaconf import OmegaConf

from normbench.configuration.config import (
    TASK_CONFIGS,
    CheckedFileSource,
    Config,
    SharedStoreSource,
    SweepSearchPath,
    SweepSource,
    config_dir,
    register,
)
from normbench.norms import user as user_norms
from tests.waiting import HANG_S  # waits end on a hang, never on a slow machine


def normbench(*args: str) -> int:
    """`normbench ARGS` in this process (the console script's own main: subcommands dispatched as typed)."""
    from normbench.__main__ import main

    argv = sys.argv
    sys.argv = ["normbench", *args]
    try:
        main()
        return 0
    except SystemExit as exit_:
        return exit_.code or 0
    finally:
        sys.argv = argv
        GlobalHydra.instance().clear()

register()
OPTUNA_SWEEPER = importlib.util.find_spec("hydra_plugins.hydra_optuna_sweeper") is not None


def _registered() -> bool:
    """Whether everything register() adds is in this process's Hydra singletons and OmegaConf's resolvers: its
    resolvers, its ConfigStore nodes (the user norms' included), its plugins and its config source."""
    repo = ConfigStore.instance().repo
    plugins = Plugins.instance()
    norms = repo.get("norm", {})
    schemas = {"base_config.yaml": Config, **{f"task_{name}_schema.yaml": node for name, node in TASK_CONFIGS.items()}}
    sources = SourcesRegistry.instance().types
    return (all(OmegaConf.has_resolver(name) for name in ("ceil_div", "normbench.job_folder"))
            and all(name in repo and OmegaConf.get_type(repo[name].node) is node for name, node in schemas.items())
            and (not OPTUNA_SWEEPER or "optuna_lr.yaml" in repo.get("hydra", {}).get("sweeper", {}))
            and all(f"{name}.yaml" in norms or (config_dir() / "norm" / f"{name}.yaml").is_file()
                    for name in user_norms.sources())
            and all(cls in plugins.plugin_type_to_subclass_list[kind]
                    for cls, kind in ((SweepSource, ConfigSource), (SweepSearchPath, SearchPathPlugin)))
            and all(sources.get(cls.scheme()) is cls for cls in (CheckedFileSource, SweepSource, SharedStoreSource)))


@pytest.fixture(autouse=True)
def _normbench_configs_registered():
    """Hydra's launchers restore its singletons from a copy in each job (Singleton.set_state), which in an
    in-process job (joblib cut to one worker, the local launcher) drops the sweeps' search path that
    register() added: register again before a test where anything register() adds is missing, as a fresh
    process would have it. (Not before every test: register() takes about 33 ms, 2 minutes over the suite.)"""
    if not _registered():
        register()

# A run that trains for real but takes well under a second.
TINY_TASK = ["task=adding", "task.length=6", "task.n_train=64", "task.n_val=32", "task.n_test=32"]
TINY = ["steps=6", "batch_size=16", "eval_every=3", "log_every=1", "probe_every=3", "timing_warmup=1", "model.hidden=8",
        "model.embed=8", "model.heads=2", "threads=1"]


@pytest.fixture
def compose():
    """The real conf/ tree, composed as Hydra does, with TINY then the given overrides applied."""
    def _compose(*overrides, tiny=True):
        with initialize_config_dir(str(config_dir()), version_base="1.3"):
            own_task = any(o.startswith("task=") for o in overrides)
            small = [*TINY, *([] if own_task else TINY_TASK)] if tiny else []
            return hydra_compose("config", overrides=[*small, *overrides])
    return _compose


@contextlib.contextmanager
def registered_norm(name: str, cls):
    """``cls`` registered as the norm ``name`` (normbench.register_norm) while the block runs, unregistered after."""
    from normbench.norms import kinds

    user_norms.register_norm(name, cls)
    try:
        yield name
    finally:
        kinds.unregister(name)
        user_norms._registered.pop(name, None)


@pytest.fixture
def forwards(monkeypatch):
    """The number of examples of every SequenceModel forward while the test runs, in order (the list is the test's
    to clear)."""
    from normbench.models import SequenceModel

    seen, forward = [], SequenceModel.forward

    def counted(self, x, *args, **kwargs):
        seen.append(len(x))
        return forward(self, x, *args, **kwargs)
    monkeypatch.setattr(SequenceModel, "forward", counted)
    return seen


@pytest.fixture
def tiny_args():
    """TINY plus the tiny adding task, as command-line overrides."""
    return [*TINY, *TINY_TASK]


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys):
    """`python -m normbench ARGS` in this process, from tmp_path: (exit status, stdout, stderr)."""
    from normbench.studies import app

    monkeypatch.chdir(tmp_path)

    def _run(*args):
        monkeypatch.setattr(sys, "argv", ["normbench", *args])
        try:
            app.main()
            code = 0
        except SystemExit as exit_:
            code = exit_.code or 0
        finally:
            GlobalHydra.instance().clear()
        return code, *capsys.readouterr()
    return _run


@pytest.fixture
def no_hang():
    """A record reader or writer that blocks (a FIFO, a lock) or reads without end fails its test
    after HANG_S instead of stalling the suite (not 60 s: a report test on a loaded machine took longer)."""
    def stuck(signum, frame):
        raise TimeoutError("a record reader or writer blocked")
    previous = signal.signal(signal.SIGALRM, stuck)
    signal.alarm(int(HANG_S))
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def quick_sqlite():
    """A new MLflow database runs ~50 migrations, each a committed transaction: on this disk ~9 s of
    fsync, ~2 s without. The durability of a test's throwaway database is not what is tested."""
    pytest.importorskip("sqlalchemy", reason='a database store needs pip install -e ".[mlflow]"')
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    def no_fsync(connection, _record):
        if type(connection).__module__.startswith("sqlite3"):
            connection.execute("PRAGMA synchronous=OFF")
    event.listen(Engine, "connect", no_fsync)
    yield
    event.remove(Engine, "connect", no_fsync)


STOPS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


@contextlib.contextmanager
def stop_dispositions_kept():
    """The stop signals' dispositions as they were on entry, put back on leaving where something changed them (and
    Python can put them back: a handler installed outside Python reads None and stays as it is)."""
    before = {signum: signal.getsignal(signum) for signum in STOPS}
    try:
        yield
    finally:
        for signum, handler in before.items():
            if handler is not None and signal.getsignal(signum) is not handler:
                signal.signal(signum, handler)


@pytest.fixture(autouse=True)
def _stops_not_left_ignored():
    """A command run in this process (normbench's, report's, bench's main) sets its stop handlers for the life of a
    process, and ignores stops once its outcome is decided (normbench/__main__.py): in a test's process that
    outlived the test, so the tests after it in that worker had SIGTERM, SIGHUP and SIGINT ignored, and so did every
    child they started (an ignored signal stays ignored across exec). Each test gets the dispositions back."""
    with stop_dispositions_kept():
        yield


@pytest.fixture(autouse=True)
def _no_study_left_in_the_environment():
    """A multirun run in this process (a test's in-process sweep, tune) names its study and progress in
    os.environ for its jobs; one that stops early leaves them there, and the next test's runs would
    carry that study (an MLflow experiment, a W&B group). A CLI process ends; a test must not leak. The names
    are those app.main puts back after a command, but for --allow-code's opt-in, which a test sets itself."""
    from normbench.configuration.config import ALLOW_CODE_ENV
    from normbench.studies.app import COMMAND_ENVIRONMENT

    yield
    for name in COMMAND_ENVIRONMENT:
        if name != ALLOW_CODE_ENV:
            os.environ.pop(name, None)


VICTIM_TEXT = "the user's own file\n"


@pytest.fixture
def victim(tmp_path):
    """A file of the user's outside the folder under test; the hostile tables check it is untouched."""
    path = tmp_path / "outside" / "victim.txt"
    path.parent.mkdir()
    path.write_text(VICTIM_TEXT)
    return path


def plant(kind: str, path, victim) -> None:
    """Put a hostile thing where the suite will read or write ``path``."""
    if kind == "link_to_victim":
        path.symlink_to(victim)
    elif kind == "dangling_link":  # following it would create a file outside
        path.symlink_to(victim.parent / "created-through-a-link")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "dev_zero":
        path.symlink_to("/dev/zero")
