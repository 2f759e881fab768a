"""Tasks with real length variation: the variable-length adding problem, text by lines or
paragraphs, and batches bucketed by length."""

import numpy as np
import pytest
import torch

from normbench.configuration.schema import ConfigError
from normbench.tasks import AddingConfig, TextConfig
from normbench.tasks.batching import epoch_order
from normbench.tasks.padding import lengths_from_input
from normbench.tasks.tensors import load_task


def test_variable_length_adding_draws_each_examples_length_and_marks_in_its_own_halves():
    data = load_task(AddingConfig(length=12, min_length=4, n_train=400, n_val=8, n_test=8), seed=0)
    x, y, lengths = data.train.x, data.train.y, data.train.lengths
    assert data.variable_length and data.seq_len == 12 and x.shape == (400, 12, 2)
    assert set(lengths.tolist()) == set(range(4, 13))  # every length in the range turns up
    assert torch.equal(lengths_from_input(x), lengths)  # padding marked exactly past each end
    for row, n in zip(x, lengths.tolist()):
        marked = torch.nonzero(row[:n, 1]).flatten().tolist()
        assert len(marked) == 2 and marked[0] < n // 2 <= marked[1] < n
    total = (torch.nan_to_num(x[..., 0]) * torch.nan_to_num(x[..., 1])).sum(1)
    torch.testing.assert_close(total, y)


def test_adding_without_min_length_or_at_full_length_is_the_fixed_length_task():
    fixed = load_task(AddingConfig(length=10, n_train=16, n_val=4, n_test=4), seed=1)
    same = load_task(AddingConfig(length=10, min_length=10, n_train=16, n_val=4, n_test=4), seed=1)
    assert not fixed.variable_length and torch.equal(fixed.train.x, same.train.x)
    with pytest.raises(ConfigError, match="task.min_length must be <= task.length"):
        AddingConfig(length=10, min_length=11)


@pytest.fixture
def poem(tmp_path):
    path = tmp_path / "poem.txt"
    lines = [("abcdefghij"[: 2 + i % 8]) for i in range(60)]
    path.write_text("\n".join(lines[:30]) + "\n\n\n" + "\n".join(lines[30:]) + "\nx\n", encoding="utf-8")
    return path


def test_text_lines_are_examples_as_long_as_they_are(poem):
    data = load_task(TextConfig(path=str(poem), examples="lines", length=5, n_train=50, n_val=5, n_test=5), seed=0)
    assert data.variable_length and data.readout == "every_step"
    for split in (data.train, data.val, data.test):
        assert split.lengths.max() <= 5 and split.lengths.min() >= 1  # a line of n chars predicts n - 1
        real = torch.arange(split.x.shape[1]) < split.lengths[:, None]
        assert ((split.x == -1) == ~real).all() and ((split.y == -100) == ~real).all()
        assert torch.equal(split.x[:, 1:][real[:, 1:]], split.y[:, :-1][real[:, 1:]])  # y is x shifted by one
    assert set(data.train.lengths.tolist()) == {1, 2, 3, 4, 5}  # the one-character line "x" is dropped, cut at 5


def test_text_paragraphs_are_split_at_blank_lines(poem, tmp_path):
    with pytest.raises(ValueError, match="too few for train, val and test"):  # the poem has two paragraphs
        load_task(TextConfig(path=str(poem), examples="paragraphs", n_train=4, n_val=2, n_test=2), seed=0)
    prose = tmp_path / "prose.txt"
    prose.write_text("\n\n".join(f"para {i}\nline two" + "!" * i for i in range(40)), encoding="utf-8")
    data = load_task(TextConfig(path=str(prose), examples="paragraphs", length=64, n_train=20, n_val=2, n_test=2),
                     seed=0)
    first = data.train.x[0, : data.train.lengths[0]]
    assert (first == -1).sum() == 0 and data.train.lengths.min() >= len("para 0\nline two") - 1
    assert data.variable_length and data.train.lengths.unique().numel() > 1  # a line break inside is kept


def test_bucketed_epochs_hold_batches_of_about_one_length_and_visit_every_example():
    lengths = torch.tensor(np.random.default_rng(0).integers(1, 50, 103))
    order = epoch_order(103, 10, torch.Generator().manual_seed(0), lengths)
    assert sorted(order.tolist()) == list(range(103))
    batches = lengths[order[:100]].view(10, 10)
    assert (batches.max(1).values - batches.min(1).values).float().mean() < 10  # shuffled: about 40
    starts = batches[:, 0].tolist()
    assert starts != sorted(starts)  # the batches themselves in random order
    seen = set()
    for seed in range(30):  # no example always sits out: the remainder is drawn at random
        seen |= set(epoch_order(103, 10, torch.Generator().manual_seed(seed), lengths)[:100].tolist())
    assert seen == set(range(103))
    plain = epoch_order(103, 10, torch.Generator().manual_seed(0))
    assert torch.equal(plain, torch.randperm(103, generator=torch.Generator().manual_seed(0)))
