"""Adding, copy and MQAR: layouts, targets, determinism, chance levels."""

import numpy as np
import pytest
import torch

from normbench.tasks import AddingConfig, CopyConfig, MqarConfig
from normbench.tasks.synthetic import adding_examples
from normbench.tasks.tensors import load_task

SMALL = dict(n_train=200, n_val=50, n_test=40)
SPLITS = ("train", "val", "test")


def test_adding_shapes_ranges_and_markers():
    data = load_task(AddingConfig(length=7, **SMALL), seed=0)
    for split_name, n in zip(SPLITS, (200, 50, 40)):
        split = getattr(data, split_name)
        assert split.x.shape == (n, 7, 2) and split.x.dtype == torch.float32
        assert split.y.shape == (n,) and split.y.dtype == torch.float32
        values, markers = split.x[..., 0], split.x[..., 1]
        assert values.min() >= 0 and values.max() < 1
        assert set(markers.unique().tolist()) == {0.0, 1.0}
        # One marker in each half: positions 0..2 and 3..6.
        assert (markers[:, :3].sum(1) == 1).all() and (markers[:, 3:].sum(1) == 1).all()
    assert (data.input_kind, data.input_dim, data.n_outputs) == ("features", 2, 1)
    assert (data.readout, data.loss, data.metric, data.higher_is_better) == ("last", "mse", "mse", False)
    assert (data.seq_len, data.target) == (7, 0.01)


def test_adding_shortest_sequence_marks_both_steps():
    markers = load_task(AddingConfig(length=2, **SMALL), seed=0).train.x[..., 1]
    assert (markers == 1).all()


def test_adding_target_is_the_sum_of_the_marked_values():
    split = load_task(AddingConfig(length=30, **SMALL), seed=3).train
    marked = [row_x[row_x[:, 1] == 1, 0] for row_x in split.x]
    assert all(len(values) == 2 for values in marked)
    torch.testing.assert_close(split.y, torch.stack([values.sum() for values in marked]))


def test_adding_chance_is_the_mse_of_always_predicting_one():
    chance = load_task(AddingConfig(**SMALL), seed=0).chance
    y = adding_examples(200_000, 10, np.random.default_rng(0)).y
    assert y.mean().item() == pytest.approx(1.0, abs=0.005)
    assert ((y - 1) ** 2).mean().item() == pytest.approx(chance, abs=0.003)
    assert chance == pytest.approx(1 / 6)


def test_copy_layout_and_targets_are_the_memorised_symbols():
    data = load_task(CopyConfig(n_symbols=5, length=4, delay=3, **SMALL), seed=0)
    x, y = data.train.x, data.train.y
    assert x.shape == y.shape == (200, 12) and x.dtype == y.dtype == torch.int64
    blank, delimiter = 5, 6
    assert x[:, :4].min() >= 0 and x[:, :4].max() < 5
    assert (x[:, 4:7] == blank).all() and (x[:, 7] == delimiter).all() and (x[:, 8:] == blank).all()
    assert (y[:, :8] == -100).all()
    assert torch.equal(y[:, 8:], x[:, :4])
    assert (data.input_kind, data.input_dim, data.n_outputs, data.seq_len) == ("tokens", 7, 5, 12)
    assert (data.readout, data.loss, data.metric, data.higher_is_better) == (
        "every_step",
        "cross_entropy",
        "accuracy",
        True,
    )


def test_copy_without_delay_puts_the_delimiter_right_after_the_symbols():
    x = load_task(CopyConfig(length=3, delay=0, **SMALL), seed=0).train.x
    assert x.shape[1] == 7 and (x[:, 3] == 9).all()


def test_mqar_query_targets_are_the_bound_values():
    data = load_task(MqarConfig(n_pairs=6, n_keys=10, n_values=7, n_queries=4, **SMALL), seed=0)
    x, y = data.train.x, data.train.y
    assert x.shape == y.shape == (200, 16) and x.dtype == y.dtype == torch.int64
    for row_x, row_y in zip(x.tolist(), y.tolist()):
        keys, values, queries = row_x[0:12:2], row_x[1:12:2], row_x[12:]
        assert len(set(keys)) == 6 and all(0 <= key < 10 for key in keys)
        assert len(set(values)) == 6 and all(10 <= value < 17 for value in values)
        assert len(set(queries)) == 4 and set(queries) <= set(keys)
        bound = dict(zip(keys, values))
        assert row_y[:12] == [-100] * 12
        assert [10 + target for target in row_y[12:]] == [bound[query] for query in queries]
    assert (data.input_dim, data.n_outputs, data.seq_len) == (17, 7, 16)


def test_mqar_asks_for_every_key_by_default_in_shuffled_order():
    x = load_task(MqarConfig(n_pairs=5, **SMALL), seed=0).train.x
    keys, queries = x[:, 0:10:2], x[:, 10:]
    assert torch.equal(keys.sort(1).values, queries.sort(1).values)
    assert not torch.equal(keys, queries)


@pytest.mark.parametrize(
    "config, scored_classes",
    [(CopyConfig(n_train=5000), 8), (MqarConfig(n_values=16, n_train=5000), 16)],
    ids=["copy", "mqar"],
)
def test_chance_is_the_accuracy_of_the_most_frequent_target(config, scored_classes):
    data = load_task(config, seed=0)
    targets = data.train.y[data.train.y != -100]
    frequencies = torch.bincount(targets, minlength=scored_classes).double() / len(targets)
    assert data.chance == pytest.approx(1 / scored_classes)
    assert frequencies.max().item() == pytest.approx(data.chance, abs=0.01)


SYNTHETIC = [AddingConfig(**SMALL), CopyConfig(**SMALL), MqarConfig(**SMALL)]


@pytest.mark.parametrize("config", SYNTHETIC, ids=lambda config: config.name)
def test_same_seed_same_tensors_other_seed_other_tensors(config):
    first, again, other = load_task(config, seed=5), load_task(config, seed=5), load_task(config, seed=6)
    for split_name in SPLITS:
        for field in ("x", "y"):
            assert torch.equal(getattr(getattr(first, split_name), field), getattr(getattr(again, split_name), field))
        assert not torch.equal(getattr(first, split_name).x, getattr(other, split_name).x)


@pytest.mark.parametrize("config", SYNTHETIC, ids=lambda config: config.name)
def test_no_val_or_test_sequence_appears_in_train(config):
    data = load_task(config, seed=0)
    train_rows = {tuple(row.flatten().tolist()) for row in data.train.x}
    for split in (data.val, data.test):
        assert not any(tuple(row.flatten().tolist()) in train_rows for row in split.x)


def test_resizing_one_split_leaves_the_others_unchanged():
    smaller = load_task(AddingConfig(n_train=100, n_val=20, n_test=30), seed=0)
    larger = load_task(AddingConfig(n_train=100, n_val=60, n_test=30), seed=0)
    assert torch.equal(smaller.train.x, larger.train.x)
    assert torch.equal(smaller.test.y, larger.test.y)
