"""A C++ kernel's build never waits forever on a build killed mid-way (hostile X01, X21), and never goes to
the filesystem's root when the home folder is empty or ``/`` (X22).

Builds are stood in for by a fake ``torch.utils.cpp_extension.load`` that does what torch's does with its
``lock`` file (take it, or report that torch would wait on it), so no compiler runs."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch.utils.cpp_extension
from torch.utils.file_baton import FileBaton

from normbench.native import cpu_build
from normbench.norms import rmsnorm_cpu

SOURCE = rmsnorm_cpu.KERNEL.source
HOLD = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(3600)
"""


@pytest.fixture
def extensions(tmp_path, monkeypatch) -> Path:
    """TORCH_EXTENSIONS_DIR in tmp_path, and torch's load faked: it fails where torch would wait on its lock."""
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "te"))

    def load(name, sources, build_directory, **_):
        baton = FileBaton(os.path.join(build_directory, "lock"))
        assert baton.try_acquire(), "torch would wait forever on the lock in the build folder"
        baton.release()
        return "built"

    monkeypatch.setattr(torch.utils.cpp_extension, "load", load)
    return tmp_path / "te"


@pytest.fixture
def holder():
    """Starts a child process that holds an flock on a path until it is killed."""
    children = []

    def start(path: Path) -> subprocess.Popen:
        child = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE, text=True)
        children.append(child)
        assert child.stdout.readline() == "held\n"
        return child

    yield start
    for child in children:
        if child.poll() is None:
            child.kill()
        child.wait()
        child.stdout.close()


def staged_folder() -> Path:
    return cpu_build._staged_source(SOURCE, "default").parent


def test_a_lock_left_by_a_killed_build_is_taken_over_at_once(extensions):
    folder = staged_folder()
    (folder / "lock").touch()  # as a build killed a moment ago leaves it: under any age limit
    assert cpu_build.build(SOURCE, "default") == "built"
    assert not (folder / "lock").exists()


def test_a_build_in_progress_is_waited_for_then_the_fallback_runs(extensions, holder, monkeypatch, caplog):
    folder = staged_folder()
    holder(folder / "normbench-build.flock")
    monkeypatch.setattr(cpu_build, "BUILD_WAIT_S", 0.5)
    kernel = cpu_build.Kernel(SOURCE, "compiled RMSNorm", "the native one")
    monkeypatch.setattr(cpu_build, "capability", lambda: "default")
    start = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="normbench"):
        assert kernel.load() is None
    assert time.monotonic() - start >= 0.5
    assert kernel.unavailable.startswith("TimeoutError: another process has been building rmsnorm_default_")
    said = [r.getMessage() for r in caplog.records]
    # the wait is said before it starts (a silent wait of minutes read as a hang), then the fallback
    assert len(said) == 2 and said[0].startswith("waiting for another process that is building rmsnorm_default_")
    assert said[1].startswith("compiled RMSNorm unavailable, using the native one: TimeoutError")


def test_the_build_lock_dies_with_its_holder(tmp_path, holder, monkeypatch):
    child = holder(tmp_path / "normbench-build.flock")
    monkeypatch.setattr(cpu_build, "BUILD_WAIT_S", 0)
    with pytest.raises(TimeoutError):
        with cpu_build.build_lock(tmp_path):
            pass
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    with cpu_build.build_lock(tmp_path):  # at once: no wait is allowed
        pass


def builds_nothing(tmp_path, monkeypatch, caplog) -> str:
    """Loads the kernel with torch's default build root pointed into tmp_path (were the rule broken, the build
    would go there, never to /): no module, one fallback line (returned), nothing built."""
    monkeypatch.setattr(torch.utils.cpp_extension, "get_default_build_root", lambda: str(tmp_path / "root"))
    kernel = cpu_build.Kernel(SOURCE, "compiled RMSNorm", "the native one")
    with caplog.at_level(logging.WARNING, logger="normbench"):
        assert kernel.load() is None
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and said[0].startswith("compiled RMSNorm unavailable, using the native one: RuntimeError")
    assert not (tmp_path / "root").exists()
    return said[0]


@pytest.mark.parametrize("home", ["", "/", "relative/home", "{tmp}/missing"])
def test_without_a_home_folder_nothing_is_built(home, tmp_path, monkeypatch, caplog):
    monkeypatch.delenv("TORCH_EXTENSIONS_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", home.format(tmp=tmp_path))
    with pytest.raises(RuntimeError, match=r"HOME is .*; set TORCH_EXTENSIONS_DIR or HOME$"):
        cpu_build.build_root()
    assert builds_nothing(tmp_path, monkeypatch, caplog).endswith("set TORCH_EXTENSIONS_DIR or HOME")


def test_a_home_folder_or_torch_extensions_dir_is_where_builds_go(tmp_path, monkeypatch):
    monkeypatch.delenv("TORCH_EXTENSIONS_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cpu_build.build_root().is_relative_to(tmp_path.resolve())
    monkeypatch.setenv("HOME", "")
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "te"))
    assert cpu_build.build_root() == tmp_path / "te"


@pytest.mark.parametrize("name, value", [
    ("XDG_CACHE_HOME", "/"), ("XDG_CACHE_HOME", "//"), ("XDG_CACHE_HOME", "/tmp/.."), ("XDG_CACHE_HOME", "xc"),
    ("XDG_CACHE_HOME", ""), ("TORCH_EXTENSIONS_DIR", "/"), ("TORCH_EXTENSIONS_DIR", "te"),
    ("TORCH_EXTENSIONS_DIR", "/.."),
])
def test_a_cache_folder_at_the_root_or_relative_builds_nothing(name, value, tmp_path, monkeypatch, caplog):
    """h15 B2: XDG_CACHE_HOME=/ built at /torch_extensions (O01, O05), a relative one under the cwd (X13),
    TORCH_EXTENSIONS_DIR=/ at the root (O06)."""
    monkeypatch.delenv("TORCH_EXTENSIONS_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # a good home does not excuse the folder torch would use
    monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(RuntimeError, match=rf"^no folder for the build: {name} is "):
        cpu_build.build_root()
    builds_nothing(tmp_path, monkeypatch, caplog)
    assert list(tmp_path.iterdir()) == []


def test_an_absolute_xdg_cache_home_is_where_builds_go(tmp_path, monkeypatch):
    monkeypatch.delenv("TORCH_EXTENSIONS_DIR", raising=False)
    monkeypatch.setenv("HOME", "/")  # XDG_CACHE_HOME decides, as it does for torch
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert cpu_build.build_root() == (tmp_path / "cache" / "torch_extensions").resolve()
