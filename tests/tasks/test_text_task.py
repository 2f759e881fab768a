"""Character-level text from a file the test writes: windows, splits, chance, errors."""

import math
from collections import Counter

import numpy as np
import pytest
import torch

from normbench.tasks import TaskDataError, TextConfig
from normbench.tasks.tensors import load_task

ALPHABET = list("abcdefghijklmnop é\n")
SMALL = dict(length=16, n_train=100, n_val=20, n_test=20)


@pytest.fixture
def text_file(tmp_path):
    # Random characters, so a window of 17 occurs in the file only where it was cut from.
    text = "".join(np.random.default_rng(0).choice(ALPHABET, 4000))
    path = tmp_path / "corpus.txt"
    path.write_text(text, encoding="utf-8")
    return path, text


def segments(text):
    """The train, val and test stretches of the text: 90/5/5, in order."""
    first, second = round(0.9 * len(text)), round(0.95 * len(text))
    return text[:first], text[first:second], text[second:]


def test_windows_shapes_shift_and_vocabulary(text_file):
    path, text = text_file
    data = load_task(TextConfig(path=str(path), **SMALL), seed=0)
    for split, n in zip((data.train, data.val, data.test), (100, 20, 20)):
        assert split.x.shape == split.y.shape == (n, 16)
        assert split.x.dtype == split.y.dtype == torch.int64
        assert torch.equal(split.y[:, :-1], split.x[:, 1:])
        assert split.x.min() >= 0 and split.x.max() < data.input_dim
    assert data.input_dim == data.n_outputs == len(set(text))
    assert (data.input_kind, data.readout, data.loss, data.metric) == ("tokens", "every_step", "cross_entropy", "bpc")
    assert not data.higher_is_better and data.seq_len == 16 and data.target == 2.5


def test_each_split_samples_only_its_own_stretch_of_the_file(text_file):
    path, text = text_file
    data = load_task(TextConfig(path=str(path), **SMALL), seed=0)
    characters = sorted(set(text))
    train_text, val_text, test_text = segments(text)
    own_and_others = {
        "train": (train_text, (val_text, test_text)),
        "val": (val_text, (train_text, test_text)),
        "test": (test_text, (train_text, val_text)),
    }
    for split_name, (own, others) in own_and_others.items():
        split = getattr(data, split_name)
        for x, y in zip(split.x.tolist(), split.y.tolist()):
            window = "".join(characters[i] for i in x + y[-1:])
            assert window in own and not any(window in other for other in others)


def test_chance_is_the_unigram_entropy_of_the_training_characters(text_file):
    path, text = text_file
    counts = Counter(segments(text)[0])
    total = sum(counts.values())
    entropy = -sum(count / total * math.log2(count / total) for count in counts.values())
    assert load_task(TextConfig(path=str(path), **SMALL), seed=0).chance == pytest.approx(entropy)


def test_same_seed_same_windows_other_seed_other_windows(text_file):
    path, _ = text_file
    first, again, other = (load_task(TextConfig(path=str(path), **SMALL), seed=seed) for seed in (1, 1, 2))
    assert torch.equal(first.train.x, again.train.x) and torch.equal(first.test.y, again.test.y)
    assert not torch.equal(first.train.x, other.train.x)


def test_byte_order_mark_is_not_a_character(tmp_path):
    path = tmp_path / "bom.txt"
    path.write_bytes("\ufeff".encode() + b"ab" * 500)
    assert load_task(TextConfig(path=str(path), **SMALL), seed=0).input_dim == 2


def assert_one_line_naming(error, path):
    message = str(error.value)
    assert str(path) in message and "\n" not in message


def test_missing_file(tmp_path):
    path = tmp_path / "nothing.txt"
    with pytest.raises(TaskDataError) as caught:
        load_task(TextConfig(path=str(path)), seed=0)
    assert_one_line_naming(caught, path)


def test_folder_instead_of_file(tmp_path):
    with pytest.raises(TaskDataError, match="not a file") as caught:
        load_task(TextConfig(path=str(tmp_path)), seed=0)
    assert_one_line_naming(caught, tmp_path)


def test_empty_file(tmp_path):
    path = tmp_path / "empty.txt"
    path.write_bytes(b"")
    with pytest.raises(TaskDataError, match="empty") as caught:
        load_task(TextConfig(path=str(path)), seed=0)
    assert_one_line_naming(caught, path)


def test_file_that_is_not_utf8(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("café au lait ".encode("latin-1") * 100)
    with pytest.raises(TaskDataError, match="not UTF-8.*0xe9 at offset 3") as caught:
        load_task(TextConfig(path=str(path)), seed=0)
    assert_one_line_naming(caught, path)


def test_file_too_short_for_a_window_in_every_split(tmp_path):
    path = tmp_path / "short.txt"
    path.write_text("x" * 500, encoding="utf-8")
    with pytest.raises(TaskDataError, match="task.length") as caught:
        load_task(TextConfig(path=str(path), length=64), seed=0)
    assert_one_line_naming(caught, path)


def test_unset_path_says_which_key_to_set():
    with pytest.raises(TaskDataError, match="set task.path"):
        load_task(TextConfig(), seed=0)
