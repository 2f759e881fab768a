"""scikit-learn digits as a pixel sequence: shapes, stratified split, fixed permutation, chance."""

import subprocess
import sys

import numpy as np
import pytest
import torch

from normbench.tasks import DigitsConfig
from normbench.tasks.digits import pixel_order
from normbench.tasks.splits import stratified_split
from normbench.tasks.tensors import load_task
from tests.waiting import HANG_S

N_IMAGES = 1797


def test_pixel_sequence_shapes_ranges_and_metadata():
    data = load_task(DigitsConfig(), seed=0)
    splits = (data.train, data.val, data.test)
    assert sum(len(split.y) for split in splits) == N_IMAGES
    for split in splits:
        assert split.x.shape[1:] == (64, 1) and split.x.dtype == torch.float32
        assert split.y.dtype == torch.int64 and set(split.y.tolist()) == set(range(10))
        assert split.x.min() >= 0 and split.x.max() <= 1
    assert data.train.x.max() == 1
    assert (data.input_kind, data.input_dim, data.n_outputs, data.seq_len) == ("features", 1, 10, 64)
    assert (data.readout, data.loss, data.metric, data.higher_is_better) == (
        "last",
        "cross_entropy",
        "accuracy",
        True,
    )


def test_the_shipped_file_is_read_as_scikit_learn_reads_it():
    datasets = pytest.importorskip("sklearn.datasets", reason="the comparison needs scikit-learn (the [dev] extra)")
    from normbench.tasks.digits import bundled_digits

    images, labels = bundled_digits()
    expected_images, expected_labels = datasets.load_digits(return_X_y=True)
    assert images.dtype == expected_images.dtype and labels.dtype == expected_labels.dtype
    assert np.array_equal(images, expected_images) and np.array_equal(labels, expected_labels)


def test_the_digits_need_no_scikit_learn():
    probe = ("import sys; from normbench.tasks.digits import bundled_digits; images, labels = bundled_digits(); "
             "print(images.shape, sorted(m for m in sys.modules if m.split('.')[0] == 'sklearn'))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=HANG_S)
    assert done.stdout.split("\n")[0] == "(1797, 64) []", done.stderr[-2000:]


def test_a_damaged_shipped_file_gives_way_to_scikit_learns_and_without_it_is_one_line(tmp_path, monkeypatch):
    import importlib.util

    from normbench.tasks import digits
    from normbench.tasks.data import TaskDataError

    damaged = tmp_path / "digits.csv.gz"
    damaged.write_bytes(digits.SHIPPED.read_bytes()[:-10])
    expected = digits.bundled_digits()
    monkeypatch.setattr(digits, "SHIPPED", damaged)
    if importlib.util.find_spec("sklearn") is not None:
        images, labels = digits.bundled_digits()  # scikit-learn's copy
        assert np.array_equal(images, expected[0]) and np.array_equal(labels, expected[1])
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(TaskDataError, match="missing or damaged and scikit-learn, which also has it, is not installed"):
        digits.bundled_digits()


def test_rows_of_eight_are_the_same_pixels_regrouped():
    one = load_task(DigitsConfig(pixels_per_step=1), seed=2)
    rows = load_task(DigitsConfig(pixels_per_step=8), seed=2)
    assert rows.train.x.shape[1:] == (8, 8) and (rows.seq_len, rows.input_dim) == (8, 8)
    assert torch.equal(rows.train.x.reshape(-1, 64, 1), one.train.x)
    assert torch.equal(rows.test.y, one.test.y)


def test_stratified_split_is_disjoint_complete_and_proportional():
    from normbench.tasks.digits import bundled_digits

    labels = bundled_digits()[1]
    train, val, test = stratified_split(labels, (0.7, 0.15, 0.15), np.random.default_rng(0))
    assert len(np.intersect1d(train, val)) == len(np.intersect1d(train, test)) == len(np.intersect1d(val, test)) == 0
    assert np.array_equal(np.sort(np.concatenate([train, val, test])), np.arange(len(labels)))
    for label in range(10):
        in_class = np.sum(labels == label)
        assert abs(np.sum(labels[val] == label) - 0.15 * in_class) <= 1
        assert abs(np.sum(labels[test] == label) - 0.15 * in_class) <= 1


def test_permutation_is_fixed_across_run_seeds_and_set_by_permutation_seed():
    order = pixel_order(DigitsConfig(permute=True))
    assert sorted(order.tolist()) == list(range(64)) and not np.array_equal(order, np.arange(64))
    for seed in (0, 1):
        plain = load_task(DigitsConfig(), seed=seed)
        permuted = load_task(DigitsConfig(permute=True), seed=seed)
        assert torch.equal(permuted.train.x[:, :, 0], plain.train.x[:, order, 0])
        assert torch.equal(permuted.train.y, plain.train.y)
    assert not np.array_equal(pixel_order(DigitsConfig(permute=True, permutation_seed=1)), order)
    assert np.array_equal(pixel_order(DigitsConfig(permute=False, permutation_seed=1)), np.arange(64))


def test_chance_is_the_test_accuracy_of_the_training_majority_class():
    data = load_task(DigitsConfig(), seed=0)
    majority = torch.bincount(data.train.y).argmax()
    assert data.chance == pytest.approx((data.test.y == majority).double().mean().item())
    assert 0.08 < data.chance < 0.12


def test_same_seed_same_split_other_seed_other_split():
    first, again, other = (load_task(DigitsConfig(), seed=seed) for seed in (3, 3, 4))
    assert torch.equal(first.train.x, again.train.x) and torch.equal(first.val.y, again.val.y)
    assert not torch.equal(first.val.x, other.val.x)
