"""The handwritten digits scikit-learn bundles (1797 images of 8x8) read as a sequence of pixels.

The data ships inside normbench (``digits.csv.gz``, 57 KB: scikit-learn's file, byte for byte, the test
set of the UCI "Optical Recognition of Handwritten Digits" data, E. Alpaydin and C. Kaynak 1998,
CC BY 4.0), so this real-data task needs no download and no scikit-learn. Where that file is missing,
scikit-learn's own copy is read, then ``sklearn.datasets.load_digits``.
"""

import hashlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from normbench.checks import require, require_name
from normbench.tasks.data import Split, TaskConfig, TaskData, TaskDataError
from normbench.tasks.splits import majority_class_accuracy, stratified_split

PIXELS = 64  # an 8x8 digit
SPLIT_FRACTIONS = (0.70, 0.15, 0.15)  # train, val, test
MAX_INTENSITY = 16  # each pixel counts the set bits of a 4x4 block of the original 32x32 bitmap


@dataclass
class DigitsConfig(TaskConfig):
    metric: ClassVar[str] = "accuracy"  # its entry in TASK_METRICS (normbench/records/metrics.py)
    name: str = "digits"
    pixels_per_step: int = 1  # 1: 64 steps of one pixel; 8: 8 rows of 8 pixels; must divide 64
    permute: bool = False  # read the pixels in one fixed random order instead of row by row
    permutation_seed: int = 0  # draws that order; apart from the run seed, so all runs share it
    target: float = 0.9  # val accuracy that counts as solved

    def __post_init__(self):
        require_name(self.name, "digits")
        require(self.pixels_per_step >= 1 and PIXELS % self.pixels_per_step == 0,
                f"task.pixels_per_step must divide {PIXELS} (1, 2, 4, 8, 16, 32, 64), got {self.pixels_per_step}")
        require(self.permutation_seed >= 0, f"task.permutation_seed must be >= 0, got {self.permutation_seed}")

    def load(self, seed: int) -> TaskData:
        return load_digits(self, seed)

    @classmethod
    def inert(cls, setting) -> list[str]:
        return [] if setting("permute") else ["permutation_seed"]

    @classmethod
    def describe_data(cls, paths: list[str]) -> str:
        return "scikit-learn's bundled 8×8 handwritten digits (1797 images), read pixel by pixel"


def pixel_order(config: DigitsConfig) -> np.ndarray:
    """The order in which the 64 pixels are read: row by row, or one fixed permutation."""
    if not config.permute:
        return np.arange(PIXELS)
    return np.random.default_rng(config.permutation_seed).permutation(PIXELS)


SHIPPED = Path(__file__).with_name("digits.csv.gz")
SHIPPED_SHA256 = "09f66e6debdee2cd2b5ae59e0d6abbb73fc2b0e0185d2e1957e9ebb51e23aa22"  # scikit-learn 1.x's file


def bundled_digits() -> tuple[np.ndarray, np.ndarray]:
    """(images 1797x64 float64, labels int64), as sklearn.datasets.load_digits(return_X_y=True) gives
    them, from the shipped file (its last column is the label; tests/tasks/test_digits_task.py holds the
    two equal). A shipped file that is missing or not the one shipped (a damaged install) gives way to
    scikit-learn's, where it is installed: its file, else its load_digits."""
    if SHIPPED.is_file() and hashlib.sha256(SHIPPED.read_bytes()).hexdigest() == SHIPPED_SHA256:
        return _read_table(SHIPPED)
    spec = importlib.util.find_spec("sklearn")  # finds the package without importing it (~1-2 s)
    if spec is None:
        raise TaskDataError(f"digits: the data file {SHIPPED} is missing or damaged and scikit-learn, which also "
                            "has it, is not installed (reinstall normbench, or pip install scikit-learn)")
    path = Path(spec.origin).parent / "datasets" / "data" / "digits.csv.gz" if spec.origin else None
    if path is not None and path.is_file():
        return _read_table(path)
    from sklearn import datasets

    return datasets.load_digits(return_X_y=True)


def _read_table(path: Path) -> tuple[np.ndarray, np.ndarray]:
    table = np.loadtxt(path, delimiter=",")
    return table[:, :-1], table[:, -1].astype(np.int64)


def load_digits(config: DigitsConfig, seed: int) -> TaskData:
    """Classify a digit from its pixels, `pixels_per_step` at a time; split 70/15/15 by class."""
    images, labels = bundled_digits()
    pixels = (images[:, pixel_order(config)] / MAX_INTENSITY).astype(np.float32)
    steps = PIXELS // config.pixels_per_step
    x = pixels.reshape(len(pixels), steps, config.pixels_per_step)
    y = labels.astype(np.int64)
    train, val, test = stratified_split(labels, SPLIT_FRACTIONS, np.random.default_rng(seed))
    return TaskData.classification(
        name="digits",
        train=Split(x=x[train], y=y[train]),
        val=Split(x=x[val], y=y[val]),
        test=Split(x=x[test], y=y[test]),
        input_kind="features",
        input_dim=config.pixels_per_step,
        n_outputs=10,
        chance=majority_class_accuracy(labels[train], labels[test]),
        target=config.target,
        seq_len=steps,
    )
