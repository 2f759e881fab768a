"""A task.path that is not what the task expects fails with one line naming it, never hangs or fills memory.

Each case is a real hazard: a symlink to /dev/zero (reads forever), a FIFO with no writer (blocks
forever), a folder named like a file, a gzip bomb, a file larger than the task's cap.
"""

import gzip
import os
import signal
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from test_idx_task import write_idx, write_mnist
from test_imdb_task import write_acl_imdb

from normbench.tasks import IdxConfig, ImdbConfig, TaskDataError, TextConfig, idx, imdb, text
from normbench.tasks.tensors import load_task
from tests.waiting import HANG_S  # waits end on a hang, never on a slow machine

needs_dev_zero = pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")


@contextmanager
def deadline(seconds: int = int(HANG_S)):
    """Fail instead of hanging the suite when a read blocks (the FIFO case, before the fix)."""
    def expired(signum, frame):
        raise TimeoutError(f"still reading after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def load_fails(config, path: Path, match: str) -> str:
    with deadline(), pytest.raises(TaskDataError, match=match) as caught:
        load_task(config, seed=0)
    message = str(caught.value)
    assert isinstance(caught.value, ValueError)
    assert str(path) in message and "\n" not in message, message
    return message


def symlink_to_dev_zero(path: Path) -> Path:
    path.unlink(missing_ok=True)
    path.symlink_to("/dev/zero")
    return path


def fifo(path: Path) -> Path:
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    return path


# text


@needs_dev_zero
def test_text_symlink_to_dev_zero(tmp_path):
    path = symlink_to_dev_zero(tmp_path / "book.txt")
    assert "character device" in load_fails(TextConfig(path=str(path)), path, "not a file")


@needs_fifo
def test_text_fifo(tmp_path):
    path = fifo(tmp_path / "book.txt")
    assert "FIFO" in load_fails(TextConfig(path=str(path)), path, "not a file")


def test_text_larger_than_the_cap(tmp_path, monkeypatch):
    monkeypatch.setattr(text, "MAX_BYTES", 1000)
    path = tmp_path / "book.txt"
    path.write_text("a" * 1001)
    load_fails(TextConfig(path=str(path)), path, "too large")


def test_text_at_the_cap_still_loads(tmp_path, monkeypatch):
    monkeypatch.setattr(text, "MAX_BYTES", 1000)
    path = tmp_path / "book.txt"
    path.write_text("ab" * 500)
    assert load_task(TextConfig(path=str(path), length=8, n_train=4, n_val=2, n_test=2), seed=0).input_dim == 2


# imdb


@pytest.fixture
def acl_imdb(tmp_path):
    return write_acl_imdb(tmp_path / "aclImdb")


def test_imdb_review_that_is_a_folder(acl_imdb):
    path = acl_imdb / "train" / "pos" / "0_8.txt"
    path.unlink()
    path.mkdir()
    assert "folder" in load_fails(ImdbConfig(path=str(acl_imdb)), path, "not a file")


@needs_dev_zero
def test_imdb_review_symlinked_to_dev_zero(acl_imdb):
    path = symlink_to_dev_zero(acl_imdb / "test" / "neg" / "3_3.txt")
    load_fails(ImdbConfig(path=str(acl_imdb)), path, "not a file")


@needs_fifo
def test_imdb_review_that_is_a_fifo(acl_imdb):
    path = fifo(acl_imdb / "train" / "neg" / "1_3.txt")
    load_fails(ImdbConfig(path=str(acl_imdb)), path, "FIFO")


def test_imdb_review_larger_than_the_cap(acl_imdb, monkeypatch):
    monkeypatch.setattr(imdb, "MAX_REVIEW_BYTES", 200)
    path = acl_imdb / "train" / "pos" / "2_8.txt"
    path.write_text("great " * 50)
    load_fails(ImdbConfig(path=str(acl_imdb)), path, "too large")


def test_imdb_many_small_reviews_add_up_to_the_total_cap(acl_imdb, monkeypatch):
    total = sum(p.stat().st_size for p in acl_imdb.rglob("*.txt"))
    monkeypatch.setattr(imdb, "MAX_TOTAL_BYTES", total - 1)
    load_fails(ImdbConfig(path=str(acl_imdb)), acl_imdb, "too large")
    monkeypatch.setattr(imdb, "MAX_TOTAL_BYTES", total)
    assert len(load_task(ImdbConfig(path=str(acl_imdb)), seed=0).test.y) == 10


# idx


def test_idx_images_of_zero_by_zero_pixels(tmp_path):
    write_mnist(tmp_path, gz=False)
    path = write_idx(tmp_path / "train-images-idx3-ubyte", np.zeros((40, 0, 0)), idx.IMAGES_MAGIC, gz=False)
    assert "0x0" in load_fails(IdxConfig(path=str(tmp_path)), path, "images")


def test_idx_images_of_zero_columns(tmp_path):
    write_mnist(tmp_path, gz=False)
    path = write_idx(tmp_path / "t10k-images-idx3-ubyte", np.zeros((12, 28, 0)), idx.IMAGES_MAGIC, gz=False)
    assert "28x0" in load_fails(IdxConfig(path=str(tmp_path)), path, "images")


@needs_dev_zero
def test_idx_symlink_to_dev_zero(tmp_path):
    write_mnist(tmp_path, gz=False)
    path = symlink_to_dev_zero(tmp_path / "train-images-idx3-ubyte")
    load_fails(IdxConfig(path=str(tmp_path)), path, "not a file")


@needs_fifo
def test_idx_fifo(tmp_path):
    write_mnist(tmp_path, gz=True)
    path = fifo(tmp_path / "t10k-labels-idx1-ubyte.gz")
    load_fails(IdxConfig(path=str(tmp_path)), path, "FIFO")


def test_idx_file_that_is_a_folder(tmp_path):
    write_mnist(tmp_path, gz=False)
    path = tmp_path / "train-labels-idx1-ubyte"
    path.unlink()
    path.mkdir()
    load_fails(IdxConfig(path=str(tmp_path)), path, "not a file")


def test_idx_gzip_that_expands_past_the_cap(tmp_path, monkeypatch):
    write_mnist(tmp_path, gz=False)
    (tmp_path / "train-images-idx3-ubyte").unlink()
    path = tmp_path / "train-images-idx3-ubyte.gz"
    path.write_bytes(gzip.compress(bytes(200_000)))  # 200 kB of zeros, a few hundred bytes on disk
    monkeypatch.setattr(idx, "MAX_BYTES", 100_000)
    assert path.stat().st_size < 100_000
    load_fails(IdxConfig(path=str(tmp_path)), path, "decompresses to more than")
