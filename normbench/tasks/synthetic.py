"""Synthetic memory tasks: adding, copy, and multi-query associative recall.

Each split draws from its own random stream, numbered (seed, split), so the three splits are
independent draws and resizing one leaves the examples of the others unchanged.
"""

from dataclasses import dataclass
from typing import Callable, ClassVar, Optional

import numpy as np

from normbench.checks import require, require_at_least, require_name, require_split_sizes
from normbench.tasks.data import NOT_SCORED, Split, TaskConfig, TaskData, draw_bytes


@dataclass
class AddingConfig(TaskConfig):
    metric: ClassVar[str] = "mse"  # its entry in TASK_METRICS (normbench/records/metrics.py)
    name: str = "adding"
    length: int = 50  # sequence length T; one marker falls in each half
    n_train: int = 10000
    n_val: int = 1000
    n_test: int = 1000
    target: float = 0.01  # val MSE that counts as solved
    min_length: Optional[int] = None  # variable lengths: each example's T drawn from [min_length, length]; null: all T
    bucket: bool = False  # variable lengths: train batches of examples of about one length

    def __post_init__(self):
        require_name(self.name, "adding")
        require_at_least("length", self.length, 2)
        if self.min_length is not None:
            require_at_least("min_length", self.min_length, 2)
            require(self.min_length <= self.length,
                    f"task.min_length must be <= task.length ({self.length}), got {self.min_length}")
        require_split_sizes(self)

    def load(self, seed: int) -> TaskData:
        return load_adding(self, seed)

    def tensor_bytes(self) -> int:
        return draw_bytes(self, 2 * self.length + 1)

    @classmethod
    def describe_data(cls, paths: list[str]) -> str:
        return "synthetic adding-problem sequences drawn from the run's seed (no files)"

    @classmethod
    def padded(cls, setting) -> bool:
        return setting("min_length") is not None and setting("min_length") < (setting("length") or 0)

    @classmethod
    def inert(cls, setting) -> list[str]:
        return [] if cls.padded(setting) else ["min_length"]  # null or = length: the fixed-length task of earlier records


@dataclass
class CopyConfig(TaskConfig):
    metric: ClassVar[str] = "accuracy"  # its entry in TASK_METRICS (normbench/records/metrics.py)
    name: str = "copy"
    n_symbols: int = 8  # data symbols to choose from
    length: int = 10  # symbols to memorise
    delay: int = 20  # blanks between the last symbol and the delimiter
    n_train: int = 10000
    n_val: int = 1000
    n_test: int = 1000
    target: float = 0.9  # val accuracy over the output positions that counts as solved

    def __post_init__(self):
        require_name(self.name, "copy")
        require_at_least("n_symbols", self.n_symbols, 2)
        require_at_least("length", self.length, 1)
        require_at_least("delay", self.delay, 0)
        require_split_sizes(self)

    def load(self, seed: int) -> TaskData:
        return load_copy(self, seed)

    def tensor_bytes(self) -> int:
        return draw_bytes(self, 2 * self.length + self.delay + 1)

    @classmethod
    def describe_data(cls, paths: list[str]) -> str:
        return "synthetic copy-memory sequences drawn from the run's seed (no files)"


@dataclass
class MqarConfig(TaskConfig):
    metric: ClassVar[str] = "accuracy"  # its entry in TASK_METRICS (normbench/records/metrics.py)
    name: str = "mqar"
    n_pairs: int = 8  # key-value pairs to memorise per sequence
    n_keys: int = 64  # size of the key vocabulary
    n_values: int = 64  # size of the value vocabulary, disjoint from the keys
    n_queries: Optional[int] = None  # keys asked for after the pairs, each once; None = all of them
    n_train: int = 10000
    n_val: int = 1000
    n_test: int = 1000
    target: float = 0.9  # val accuracy over the query positions that counts as solved

    def __post_init__(self):
        require_name(self.name, "mqar")
        require_at_least("n_pairs", self.n_pairs, 1)
        # Keys and values are drawn without replacement within a sequence, as in Zoology.
        require(self.n_keys >= self.n_pairs, f"task.n_keys must be >= task.n_pairs ({self.n_pairs}), got {self.n_keys}")
        require(self.n_values >= self.n_pairs,
                f"task.n_values must be >= task.n_pairs ({self.n_pairs}), got {self.n_values}")
        require(self.n_queries is None or 1 <= self.n_queries <= self.n_pairs,
                f"task.n_queries must be null or between 1 and task.n_pairs ({self.n_pairs}), got {self.n_queries}")
        require_split_sizes(self)

    def load(self, seed: int) -> TaskData:
        return load_mqar(self, seed)

    def tensor_bytes(self) -> int:
        return draw_bytes(self, 3 * self.n_pairs + 1)  # at most 2 * n_pairs + n_queries positions

    @classmethod
    def describe_data(cls, paths: list[str]) -> str:
        return "synthetic multi-query associative recall sequences drawn from the run's seed (no files)"


def draw_splits(sizes: tuple[int, int, int], seed: int, draw: Callable) -> tuple[Split, Split, Split]:
    """Call `draw(n, rng)` for train, val and test, each with its own generator."""
    return tuple(draw(n, np.random.default_rng([seed, stream])) for stream, n in enumerate(sizes))


def adding_examples(n: int, length: int, rng: np.random.Generator) -> Split:
    """Per step a value ~ U(0,1) and a marker; y is the sum of the two marked values."""
    values = rng.random((n, length), dtype=np.float32)
    first = rng.integers(0, length // 2, n)
    second = rng.integers(length // 2, length, n)
    rows = np.arange(n)
    markers = np.zeros((n, length), dtype=np.float32)
    markers[rows, first] = 1.0
    markers[rows, second] = 1.0
    x = np.stack([values, markers], axis=-1)
    y = values[rows, first] + values[rows, second]
    return Split(x=x, y=y)


def adding_examples_of_lengths(n: int, min_length: int, length: int, rng: np.random.Generator) -> Split:
    """The adding problem with each example's own length L ~ U{min_length..length}: one marker in
    each half of its own L; the steps past L are padding (NaN, normbench/tasks/padding.py)."""
    lengths = rng.integers(min_length, length + 1, n)
    values = rng.random((n, length), dtype=np.float32)
    first = rng.integers(0, lengths // 2)
    second = rng.integers(lengths // 2, lengths)
    rows = np.arange(n)
    markers = np.zeros((n, length), dtype=np.float32)
    markers[rows, first] = 1.0
    markers[rows, second] = 1.0
    y = values[rows, first] + values[rows, second]
    x = np.stack([values, markers], axis=-1)
    x[np.arange(length)[None, :] >= lengths[:, None]] = np.nan
    return Split(x=x, y=y, lengths=lengths)


def load_adding(config: AddingConfig, seed: int) -> TaskData:
    """The adding problem (Hochreiter & Schmidhuber 1997; Le et al. 2015); with ``min_length`` below
    ``length``, of variable lengths."""
    sizes = (config.n_train, config.n_val, config.n_test)
    if config.min_length is not None and config.min_length < config.length:
        def draw(n, rng):
            return adding_examples_of_lengths(n, config.min_length, config.length, rng)
    else:
        def draw(n, rng):
            return adding_examples(n, config.length, rng)
    train, val, test = draw_splits(sizes, seed, draw)
    return TaskData(
        name="adding",
        train=train,
        val=val,
        test=test,
        input_kind="features",
        input_dim=2,
        n_outputs=1,
        readout="last",
        loss="mse",
        metric="mse",
        higher_is_better=False,
        # The sum of two U(0,1) has mean 1 and variance 2 * 1/12, so always predicting
        # the mean scores an MSE of exactly 1/6.
        chance=1 / 6,
        target=config.target,
        seq_len=config.length,
        bucket=config.bucket and train.lengths is not None,
    )


def copy_examples(n: int, n_symbols: int, length: int, delay: int, rng: np.random.Generator) -> Split:
    """Symbols, `delay` blanks, a delimiter, then `length` blanks during which to recall them.

    Token ids: data symbols 0..n_symbols-1, blank n_symbols, delimiter n_symbols+1, so a target
    class is the very token id it copies.
    """
    blank, delimiter = n_symbols, n_symbols + 1
    symbols = rng.integers(0, n_symbols, (n, length))
    x = np.full((n, 2 * length + delay + 1), blank, dtype=np.int64)
    x[:, :length] = symbols
    x[:, length + delay] = delimiter
    y = np.full_like(x, NOT_SCORED)
    y[:, length + delay + 1 :] = symbols
    return Split(x=x, y=y)


def load_copy(config: CopyConfig, seed: int) -> TaskData:
    """The copy-memory task (Arjovsky et al. 2016; their T is our delay + 1)."""
    sizes = (config.n_train, config.n_val, config.n_test)
    train, val, test = draw_splits(
        sizes, seed, lambda n, rng: copy_examples(n, config.n_symbols, config.length, config.delay, rng)
    )
    return TaskData(
        name="copy",
        train=train,
        val=val,
        test=test,
        input_kind="tokens",
        input_dim=config.n_symbols + 2,
        n_outputs=config.n_symbols,
        readout="every_step",
        loss="cross_entropy",
        metric="accuracy",
        higher_is_better=True,
        chance=1 / config.n_symbols,  # symbols are uniform and independent of everything seen
        target=config.target,
        seq_len=2 * config.length + config.delay + 1,
    )


def mqar_examples(
    n: int, n_pairs: int, n_keys: int, n_values: int, n_queries: int, rng: np.random.Generator
) -> Split:
    """`k1 v1 k2 v2 ... q1 q2 ...`: at each query position the target is the value bound to it.

    Token ids: keys 0..n_keys-1, values n_keys..n_keys+n_values-1; a target is the value's
    index 0..n_values-1, so target + n_keys is the token that followed the key.
    """
    keys = np.stack([rng.choice(n_keys, n_pairs, replace=False) for _ in range(n)])
    values = np.stack([rng.choice(n_values, n_pairs, replace=False) for _ in range(n)])
    asked = rng.permuted(np.tile(np.arange(n_pairs), (n, 1)), axis=1)[:, :n_queries]
    context = 2 * n_pairs
    x = np.empty((n, context + n_queries), dtype=np.int64)
    x[:, 0:context:2] = keys
    x[:, 1:context:2] = n_keys + values
    x[:, context:] = np.take_along_axis(keys, asked, axis=1)
    y = np.full_like(x, NOT_SCORED)
    y[:, context:] = np.take_along_axis(values, asked, axis=1)
    return Split(x=x, y=y)


def load_mqar(config: MqarConfig, seed: int) -> TaskData:
    """Multi-query associative recall (Arora et al. 2023, "Zoology"), the attention-native task."""
    n_queries = config.n_pairs if config.n_queries is None else config.n_queries
    sizes = (config.n_train, config.n_val, config.n_test)
    train, val, test = draw_splits(
        sizes,
        seed,
        lambda n, rng: mqar_examples(n, config.n_pairs, config.n_keys, config.n_values, n_queries, rng),
    )
    return TaskData(
        name="mqar",
        train=train,
        val=val,
        test=test,
        input_kind="tokens",
        input_dim=config.n_keys + config.n_values,
        n_outputs=config.n_values,
        readout="every_step",
        loss="cross_entropy",
        metric="accuracy",
        higher_is_better=True,
        chance=1 / config.n_values,  # guessing a value without looking at the context
        # Any value the context holds: a model that has learned which tokens are values, not which
        # value belongs to which key, stops here (normbench/tasks/trivial.py).
        trivial={"any value from the context": 1 / config.n_pairs},
        target=config.target,
        seq_len=2 * config.n_pairs + n_queries,
    )
