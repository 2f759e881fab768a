"""MNIST or Fashion-MNIST from their IDX files, read as a sequence of image rows, or of pixels (sequential MNIST)."""

import math
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Optional

import numpy as np

from normbench.checks import require_at_least, require_name
from normbench.tasks.data import Split, TaskConfig, TaskData, TaskDataError, resolve_path
from normbench.tasks.files import MIB, gunzip_capped, read_regular_file
from normbench.tasks.splits import holdout, majority_class_accuracy

# An IDX magic number is two zero bytes, a type code (0x08: unsigned byte) and the number
# of dimensions (http://yann.lecun.com/exdb/mnist/); sizes follow as big-endian uint32.
IMAGES_MAGIC = 0x00000803
LABELS_MAGIC = 0x00000801
VAL_FRACTION = 0.1
FASHION_MNIST = "/usr/share/datasets/fashion-mnist"  # Debian's dataset-fashion-mnist package (conf/task/fashion_small.yaml)
# MNIST's training images are 47 MB and EMNIST's largest split about 550 MB; the images are then
# held again as float32 (4x). The cap applies after decompression: a small .gz can expand without bound.
MAX_BYTES = 1024 * MIB
EXPECTED = (
    "the folder with train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte,"
    " t10k-labels-idx1-ubyte"
)


@dataclass
class IdxConfig(TaskConfig):
    metric: ClassVar[str] = "accuracy"  # its entry in TASK_METRICS (normbench/records/metrics.py)
    name: str = "idx"
    path: Optional[str] = None  # folder with the four IDX files, each plain or .gz; required
    limit_train: Optional[int] = None  # use only the first N training images (quick runs)
    target: float = 0.9  # val accuracy that counts as solved
    # null: one image row a step (28 steps of 28 pixels); N: N pixels a step in reading order, a divisor of the
    # image's pixel count (1: 784 steps, Cooijmans et al. 2016's sequential MNIST)
    pixels_per_step: Optional[int] = None

    def __post_init__(self):
        require_name(self.name, "idx")
        if self.limit_train is not None:
            require_at_least("limit_train", self.limit_train, 2)  # one to train on, one to validate
        if self.pixels_per_step is not None:
            require_at_least("pixels_per_step", self.pixels_per_step, 1)

    def load(self, seed: int) -> TaskData:
        return load_idx(self, seed)

    @classmethod
    def describe_data(cls, paths: list[str]) -> str:
        if not (paths and all(p.rstrip("/").endswith("fashion-mnist") for p in paths)):
            return "MNIST-format IDX image files"
        what = "Fashion-MNIST (28×28 clothing images, 10 classes) as IDX files"
        if any(p.rstrip("/") == FASHION_MNIST for p in paths):
            what += " from Debian's dataset-fashion-mnist package"
        return what


def find_idx_file(folder: Path, stem: str) -> Path:
    """The plain file if there is one, else its .gz (either may turn out not to be a regular file)."""
    for candidate in (folder / stem, folder / f"{stem}.gz"):
        if candidate.exists() or candidate.is_symlink():
            return candidate
    raise TaskDataError(f"idx: no {stem} or {stem}.gz in {folder} (set task.path to {EXPECTED})")


def read_idx(path: Path, magic: int) -> np.ndarray:
    """The uint8 array in an IDX file, after checking its magic number and its size."""
    raw = read_regular_file("idx", path, MAX_BYTES)
    if path.suffix == ".gz":
        raw = gunzip_capped("idx", path, raw, MAX_BYTES)
    if raw[:4] != magic.to_bytes(4, "big"):
        raise TaskDataError(f"idx: bad magic number 0x{raw[:4].hex()} in {path} (expected 0x{magic:08x})")
    n_dims = magic & 0xFF
    header = 4 + 4 * n_dims
    if len(raw) < header:
        raise TaskDataError(f"idx: truncated: {path} has {len(raw)} bytes, fewer than its {header}-byte header")
    shape = tuple(int(size) for size in np.frombuffer(raw, dtype=">u4", count=n_dims, offset=4))
    expected = header + math.prod(shape)
    if len(raw) != expected:
        dims = "x".join(map(str, shape))
        raise TaskDataError(f"idx: wrong size: {path} has {len(raw)} bytes, but its header ({dims}) needs {expected}")
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(shape)


def read_images_and_labels(folder: Path, prefix: str) -> tuple[np.ndarray, np.ndarray]:
    """uint8 images (N, rows, cols) and labels (N,) of `prefix` ("train" or "t10k")."""
    images_path = find_idx_file(folder, f"{prefix}-images-idx3-ubyte")
    labels_path = find_idx_file(folder, f"{prefix}-labels-idx1-ubyte")
    images = read_idx(images_path, IMAGES_MAGIC)
    labels = read_idx(labels_path, LABELS_MAGIC)
    if len(images) != len(labels):
        raise TaskDataError(
            f"idx: {images_path} holds {len(images)} images but {labels_path} holds {len(labels)} labels"
        )
    if len(images) == 0:
        raise TaskDataError(f"idx: no images in {images_path}")
    if 0 in images.shape[1:]:
        rows, cols = images.shape[1:]
        raise TaskDataError(f"idx: {images_path} holds {rows}x{cols} images; a row-by-row sequence needs "
                            f"at least 1x1")
    return images, labels


def load_idx(config: IdxConfig, seed: int) -> TaskData:
    """Classify an image read one row per step; val is a seeded 10% of the training file."""
    folder = resolve_path("idx", config.path, EXPECTED)
    if not folder.is_dir():
        raise TaskDataError(f"idx: no such folder: {folder} (set task.path to {EXPECTED})")
    train_images, train_labels = read_images_and_labels(folder, "train")
    test_images, test_labels = read_images_and_labels(folder, "t10k")
    if train_images.shape[1:] != test_images.shape[1:]:
        raise TaskDataError(
            f"idx: train images in {folder} are {train_images.shape[1:]} but test images are {test_images.shape[1:]}"
        )
    # Classes come from the full files, so a quick run with limit_train builds the same output layer.
    n_classes = int(max(train_labels.max(), test_labels.max())) + 1
    train_images, train_labels = train_images[: config.limit_train], train_labels[: config.limit_train]
    if len(train_labels) < 2:
        raise TaskDataError(f"idx: {folder} holds {len(train_labels)} training images; at least 2 are needed")
    x, test_x = _as_sequences(train_images, config.pixels_per_step), _as_sequences(test_images, config.pixels_per_step)
    y = train_labels.astype(np.int64)
    kept, held_out = holdout(len(train_labels), VAL_FRACTION, np.random.default_rng(seed))
    return TaskData.classification(
        name="idx",
        train=Split(x=x[kept], y=y[kept]),
        val=Split(x=x[held_out], y=y[held_out]),
        test=Split(x=test_x, y=test_labels.astype(np.int64)),
        input_kind="features",
        input_dim=x.shape[2],
        n_outputs=n_classes,
        chance=majority_class_accuracy(train_labels[kept], test_labels),
        target=config.target,
        seq_len=x.shape[1],
    )


def _as_sequences(images: np.ndarray, pixels_per_step: Optional[int]) -> np.ndarray:
    """float32 (N, steps, inputs) in [0, 1]: a row a step, or ``pixels_per_step`` pixels a step in reading order."""
    x = images / np.float32(255)
    if pixels_per_step is None:
        return x
    pixels = images.shape[1] * images.shape[2]
    if pixels % pixels_per_step:
        raise TaskDataError(f"idx: task.pixels_per_step={pixels_per_step} does not divide the images' {pixels} pixels "
                            f"({images.shape[1]}x{images.shape[2]})")
    return x.reshape(len(images), pixels // pixels_per_step, pixels_per_step)
