"""MNIST-style IDX loader on tiny files the test writes, plain and gzipped, and corrupt ones."""

import gzip

import numpy as np
import pytest
import torch

from normbench.tasks import IdxConfig, TaskDataError
from normbench.tasks.idx import IMAGES_MAGIC, LABELS_MAGIC, read_idx
from normbench.tasks.tensors import load_task

N_TRAIN, N_TEST = 40, 12


def idx_bytes(array: np.ndarray, magic: int) -> bytes:
    """The IDX format: magic number, then each size as big-endian uint32, then the bytes."""
    sizes = b"".join(size.to_bytes(4, "big") for size in array.shape)
    return magic.to_bytes(4, "big") + sizes + array.astype(np.uint8).tobytes()


def write_idx(path, array, magic, gz):
    raw = idx_bytes(array, magic)
    if gz:
        path = path.with_name(path.name + ".gz")
        raw = gzip.compress(raw)
    path.write_bytes(raw)
    return path


def write_mnist(folder, gz):
    """Random 28x28 images (so every image is unique) and labels 0..9; returns the arrays."""
    rng = np.random.default_rng(0)
    arrays = {
        "train-images-idx3-ubyte": (rng.integers(0, 256, (N_TRAIN, 28, 28)), IMAGES_MAGIC),
        "train-labels-idx1-ubyte": (np.arange(N_TRAIN) % 10, LABELS_MAGIC),
        "t10k-images-idx3-ubyte": (rng.integers(0, 256, (N_TEST, 28, 28)), IMAGES_MAGIC),
        "t10k-labels-idx1-ubyte": (np.arange(N_TEST) % 10, LABELS_MAGIC),
    }
    for stem, (array, magic) in arrays.items():
        write_idx(folder / stem, array, magic, gz)
    return {stem: array for stem, (array, _) in arrays.items()}


@pytest.fixture(params=[False, True], ids=["plain", "gz"])
def mnist(tmp_path, request):
    return tmp_path, write_mnist(tmp_path, gz=request.param)


def test_rows_as_steps_scaled_to_unit_range(mnist):
    folder, arrays = mnist
    data = load_task(IdxConfig(path=str(folder)), seed=0)
    assert (len(data.train.y), len(data.val.y), len(data.test.y)) == (36, 4, 12)
    for split in (data.train, data.val, data.test):
        assert split.x.shape[1:] == (28, 28) and split.x.dtype == torch.float32
        assert split.x.min() >= 0 and split.x.max() <= 1 and split.y.dtype == torch.int64
    expected = torch.from_numpy(arrays["t10k-images-idx3-ubyte"] / 255).float()
    torch.testing.assert_close(data.test.x, expected)
    assert data.test.y.tolist() == arrays["t10k-labels-idx1-ubyte"].tolist()
    assert (data.input_kind, data.input_dim, data.n_outputs, data.seq_len) == ("features", 28, 10, 28)
    assert (data.readout, data.loss, data.metric, data.higher_is_better) == (
        "last",
        "cross_entropy",
        "accuracy",
        True,
    )


def test_pixels_per_step_reads_the_image_in_reading_order(mnist):
    """task.pixels_per_step=1: Cooijmans et al.'s sequential MNIST, 784 steps of one pixel; 7: 112 steps of 7."""
    folder, arrays = mnist
    one = load_task(IdxConfig(path=str(folder), pixels_per_step=1), seed=0)
    assert one.test.x.shape[1:] == (784, 1) and (one.input_dim, one.seq_len) == (1, 784)
    image = arrays["t10k-images-idx3-ubyte"][3]
    torch.testing.assert_close(one.test.x[3, :, 0], torch.from_numpy(image.reshape(-1) / 255).float())
    seven = load_task(IdxConfig(path=str(folder), pixels_per_step=7), seed=0)
    assert seven.test.x.shape[1:] == (112, 7) and seven.seq_len == 112
    with pytest.raises(TaskDataError, match="pixels_per_step=5 does not divide the images' 784 pixels"):
        load_task(IdxConfig(path=str(folder), pixels_per_step=5), seed=0)


def test_plain_and_gz_files_read_the_same(tmp_path):
    array = np.arange(24).reshape(2, 3, 4)
    plain = write_idx(tmp_path / "a-idx3-ubyte", array, IMAGES_MAGIC, gz=False)
    packed = write_idx(tmp_path / "b-idx3-ubyte", array, IMAGES_MAGIC, gz=True)
    assert np.array_equal(read_idx(plain, IMAGES_MAGIC), array)
    assert np.array_equal(read_idx(packed, IMAGES_MAGIC), array)


def test_val_is_a_seeded_tenth_of_train_disjoint_from_it(mnist):
    folder, arrays = mnist
    first, again, other = (load_task(IdxConfig(path=str(folder)), seed=seed) for seed in (0, 0, 1))
    train_rows = {row.numpy().tobytes() for row in first.train.x}
    assert not any(row.numpy().tobytes() in train_rows for row in first.val.x)
    source = {(image / 255).astype(np.float32).tobytes() for image in arrays["train-images-idx3-ubyte"]}
    assert train_rows | {row.numpy().tobytes() for row in first.val.x} == source
    assert torch.equal(first.val.x, again.val.x) and torch.equal(first.train.y, again.train.y)
    assert not torch.equal(first.val.x, other.val.x)


def test_limit_train_uses_the_first_images(mnist):
    folder, arrays = mnist
    data = load_task(IdxConfig(path=str(folder), limit_train=20), seed=0)
    assert (len(data.train.y), len(data.val.y), len(data.test.y)) == (18, 2, 12)
    assert sorted(torch.cat([data.train.y, data.val.y]).tolist()) == sorted(arrays["train-labels-idx1-ubyte"][:20])
    assert data.n_outputs == 10


def test_chance_is_the_test_accuracy_of_the_training_majority_class(mnist):
    folder, _ = mnist
    data = load_task(IdxConfig(path=str(folder)), seed=0)
    majority = torch.bincount(data.train.y).argmax()
    assert data.chance == pytest.approx((data.test.y == majority).double().mean().item())


def assert_one_line_naming(error, path):
    message = str(error.value)
    assert str(path) in message and "\n" not in message


def test_missing_folder(tmp_path):
    path = tmp_path / "mnist"
    with pytest.raises(TaskDataError, match="no such folder") as caught:
        load_task(IdxConfig(path=str(path)), seed=0)
    assert_one_line_naming(caught, path)


def test_missing_file(tmp_path):
    write_mnist(tmp_path, gz=True)
    (tmp_path / "t10k-labels-idx1-ubyte.gz").unlink()
    with pytest.raises(TaskDataError, match="t10k-labels-idx1-ubyte") as caught:
        load_task(IdxConfig(path=str(tmp_path)), seed=0)
    assert_one_line_naming(caught, tmp_path)


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gz"])
def test_bad_magic_number(tmp_path, gz):
    write_mnist(tmp_path, gz=False)
    (tmp_path / "train-images-idx3-ubyte").unlink()
    bad = write_idx(tmp_path / "train-images-idx3-ubyte", np.zeros((N_TRAIN, 28, 28)), 0x00000802, gz)
    with pytest.raises(TaskDataError, match="magic number 0x00000802") as caught:
        load_task(IdxConfig(path=str(tmp_path)), seed=0)
    assert_one_line_naming(caught, bad)


@pytest.mark.parametrize("cut", [10, 13], ids=["body", "header"])
def test_truncated_file(tmp_path, cut):
    write_mnist(tmp_path, gz=False)
    path = tmp_path / "t10k-labels-idx1-ubyte"
    path.write_bytes(path.read_bytes()[: 4 + 4 + N_TEST - cut])
    with pytest.raises(TaskDataError, match="truncated|wrong size") as caught:
        load_task(IdxConfig(path=str(tmp_path)), seed=0)
    assert_one_line_naming(caught, path)


def test_corrupt_gzip(tmp_path):
    write_mnist(tmp_path, gz=True)
    path = tmp_path / "train-labels-idx1-ubyte.gz"
    path.write_bytes(path.read_bytes()[:-12])
    with pytest.raises(TaskDataError, match="gzip") as caught:
        load_task(IdxConfig(path=str(tmp_path)), seed=0)
    assert_one_line_naming(caught, path)


def test_label_count_differs_from_image_count(tmp_path):
    write_mnist(tmp_path, gz=False)
    path = tmp_path / "train-labels-idx1-ubyte"
    write_idx(path, np.zeros(N_TRAIN - 1), LABELS_MAGIC, gz=False)
    with pytest.raises(TaskDataError, match="39 labels") as caught:
        load_task(IdxConfig(path=str(tmp_path)), seed=0)
    assert_one_line_naming(caught, path)


def test_unset_path_says_which_key_to_set():
    with pytest.raises(TaskDataError, match="set task.path"):
        load_task(IdxConfig(), seed=0)
