"""The suite's check before each test (tests/conftest.py): register() runs again wherever anything it adds is
missing, as a launcher's in-process job leaves Hydra's singletons, and only there."""

import pytest
from hydra._internal.core_plugins.structured_config_source import StructuredConfigSource
from hydra._internal.sources_registry import SourcesRegistry
from hydra.core.config_store import ConfigStore
from hydra.core.plugins import Plugins
from hydra.core.singleton import Singleton
from hydra.plugins.search_path_plugin import SearchPathPlugin
from omegaconf import OmegaConf

from normbench.configuration.config import CheckedFileSource, SharedStoreSource, SweepSearchPath, SweepSource, register
from normbench.norms import user as user_norms
from tests.conftest import _registered


@pytest.fixture
def singletons():
    """Hydra's singletons as they were, back after the test."""
    state = Singleton.get_state()
    yield
    Singleton.set_state(state)
    register()


def test_registered_after_register_and_not_in_a_fresh_process_state(singletons):
    register()
    assert _registered()
    Singleton._instances = {}  # what a launcher's job restores from a copy taken before register()
    assert not _registered()
    register()
    assert _registered()


@pytest.mark.parametrize("missing", ["node", "task_schema", "replaced_node", "search_path", "resolver", "file_source",
                                     "sweep_source", "store_source", "user_norm"])
def test_each_thing_register_adds_is_checked(singletons, monkeypatch, missing):
    register()
    if missing == "node":
        del ConfigStore.instance().repo["base_config.yaml"]
    elif missing == "task_schema":
        del ConfigStore.instance().repo["task_digits_schema.yaml"]
    elif missing == "search_path":
        Plugins.instance().plugin_type_to_subclass_list[SearchPathPlugin].remove(SweepSearchPath)
    elif missing == "resolver":
        OmegaConf.clear_resolver("ceil_div")
    elif missing == "file_source":
        del SourcesRegistry.instance().types[CheckedFileSource.scheme()]
    elif missing == "sweep_source":
        del SourcesRegistry.instance().types[SweepSource.scheme()]
    elif missing == "store_source":  # Hydra's own, as a fresh registry has it
        SourcesRegistry.instance().types[SharedStoreSource.scheme()] = StructuredConfigSource
    elif missing == "replaced_node":  # the name stored again with another node: register() puts its own back
        ConfigStore.instance().store(name="base_config", node={"something": "else"})
    else:  # a user norm registered after the last register(): norm=NAME must be offered
        monkeypatch.setattr(user_norms, "sources", lambda: {"my_norm_for_a_check": "pkg:MyNorm"})
    assert not _registered()
    register()
    assert _registered()
