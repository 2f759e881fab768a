"""Character-level language modelling on any UTF-8 text file.

An example is a window of fixed length cut anywhere (``examples=windows``), or one line or one
paragraph (blank-line separated) of the file, as long as it is up to ``length`` + 1 characters:
variable lengths, padded and masked (normbench/tasks/padding.py).
"""
import re
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Optional

import numpy as np

from normbench.checks import one_of, require_at_least, require_name, require_split_sizes
from normbench.tasks.data import (
    NOT_SCORED,
    PAD_TOKEN,
    Split,
    TaskConfig,
    TaskData,
    TaskDataError,
    draw_bytes,
    resolve_path,
)
from normbench.tasks.files import MIB, read_regular_file
from normbench.tasks.trivial import ngram_bits

TEXT_EXAMPLES = ("windows", "lines", "paragraphs")  # what one example is


@dataclass
class TextConfig(TaskConfig):
    metric: ClassVar[str] = "bpc"  # its entry in TASK_METRICS (normbench/records/metrics.py)
    name: str = "text"
    path: Optional[str] = None  # a UTF-8 text file; required
    length: int = 64  # characters per input window (each predicts its next character)
    n_train: int = 10000  # windows sampled from the first 90% of the file
    n_val: int = 1000  # windows sampled from the next 5%
    n_test: int = 1000  # windows sampled from the last 5%
    target: float = 2.5  # val bits per character that counts as solved
    examples: str = "windows"  # windows (fixed length) | lines | paragraphs: one example each, as long as it is (up to length)
    bucket: bool = False  # lines, paragraphs: train batches of examples of about one length

    def __post_init__(self):
        require_name(self.name, "text")
        require_at_least("length", self.length, 1)
        one_of("task.examples", self.examples, TEXT_EXAMPLES)
        require_split_sizes(self)

    def load(self, seed: int) -> TaskData:
        return load_text(self, seed)

    def tensor_bytes(self) -> int:
        return draw_bytes(self, 2 * self.length + 1)  # the windows (the file itself is capped at MAX_BYTES)

    @classmethod
    def padded(cls, setting) -> bool:
        return setting("examples", "windows") != "windows"

    @classmethod
    def inert(cls, setting) -> list[str]:
        return ["examples"] if setting("examples") == "windows" else []  # the fixed windows of earlier records

    @classmethod
    def describe_data(cls, paths: list[str]) -> str:
        return "a UTF-8 text file, character by character"

SPLIT_FRACTIONS = (0.90, 0.05, 0.05)  # train, val, test: contiguous stretches of the file, in order
# The whole file is decoded, then held as UTF-32 and as int64 ids: about 13 bytes of memory per
# byte read. 256 MiB is more than twice enwik8, the largest common character-LM corpus of this size.
MAX_BYTES = 256 * MIB


def read_text(path: Path) -> str:
    """The file's characters; a leading byte-order mark is not one of them."""
    raw = read_regular_file("text", path, MAX_BYTES, " (set task.path to a UTF-8 text file)")
    if not raw:
        raise TaskDataError(f"text: empty file: {path}")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise TaskDataError(
            f"text: not UTF-8: {path} (byte 0x{raw[error.start]:02x} at offset {error.start})"
        ) from None


def encode_characters(text: str) -> tuple[np.ndarray, np.ndarray]:
    """(alphabet, ids): the sorted code points present, and each character's index into them."""
    # UTF-32 holds one code point per character, so counting and looking up are array
    # operations, and code-point order is the order sorted(set(text)) would give.
    code_points = np.frombuffer(text.encode("utf-32-le"), dtype="<u4")
    present = np.bincount(code_points) > 0
    alphabet = np.flatnonzero(present)
    index = np.cumsum(present) - 1
    return alphabet, index[code_points]


def unigram_entropy_bits(ids: np.ndarray) -> float:
    """Entropy of the character frequencies: the bpc of a model that ignores all context."""
    counts = np.bincount(ids)
    p = counts[counts > 0] / len(ids)
    return float(-(p * np.log2(p)).sum())


def sample_windows(stream: np.ndarray, n: int, length: int, rng: np.random.Generator) -> Split:
    """`n` random windows of length+1 characters; y is x shifted by one."""
    starts = rng.integers(0, len(stream) - length, n)
    windows = stream[starts[:, None] + np.arange(length + 1)]
    return Split(x=np.ascontiguousarray(windows[:, :-1]), y=np.ascontiguousarray(windows[:, 1:]))


UNIT_BREAKS = {"lines": re.compile(r"\r?\n"), "paragraphs": re.compile(r"(?:\r?\n){2,}")}


def units(text: str, ids: np.ndarray, examples: str) -> list[np.ndarray]:
    """The ids of each line (or paragraph) of ``text``, its break left out; units of fewer than two
    characters (nothing to predict) are dropped."""
    pieces, start = [], 0
    for match in UNIT_BREAKS[examples].finditer(text):
        pieces.append(ids[start : match.start()])
        start = match.end()
    pieces.append(ids[start:])
    return [piece for piece in pieces if len(piece) >= 2]


def sample_units(pool: list[np.ndarray], n: int, length: int, rng: np.random.Generator) -> Split:
    """`n` units drawn with replacement, each cut to its first length+1 characters; y is x shifted by one,
    padded steps are id -1 in x and not scored in y."""
    chosen = [pool[i][: length + 1] for i in rng.integers(0, len(pool), n)]
    lengths = np.array([len(unit) - 1 for unit in chosen])
    steps = int(lengths.max())
    x = np.full((n, steps), PAD_TOKEN, dtype=np.int64)
    y = np.full((n, steps), NOT_SCORED, dtype=np.int64)
    for row, unit in enumerate(chosen):
        x[row, : len(unit) - 1], y[row, : len(unit) - 1] = unit[:-1], unit[1:]
    return Split(x=x, y=y, lengths=lengths)


def load_units(config: TextConfig, path: Path, text: str, alphabet: np.ndarray, ids: np.ndarray,
               seed: int) -> TaskData:
    """One line or paragraph per example; the units are divided 90/5/5 in file order."""
    pool = units(text, ids, config.examples)
    cuts = [round(fraction * len(pool)) for fraction in np.cumsum(SPLIT_FRACTIONS)[:-1]]
    pools = [pool[: cuts[0]], pool[cuts[0] : cuts[1]], pool[cuts[1] :]]
    if min(len(p) for p in pools) == 0:
        raise TaskDataError(f"text: {path} has {len(pool)} {config.examples} of two or more characters, too few "
                            f"for train, val and test each to get one; use a longer file or task.examples=windows")
    sizes = (config.n_train, config.n_val, config.n_test)
    train, val, test = (sample_units(p, n, config.length, np.random.default_rng([seed, number]))
                        for number, (p, n) in enumerate(zip(pools, sizes)))
    return TaskData(name="text", train=train, val=val, test=test, input_kind="tokens", input_dim=len(alphabet),
                    n_outputs=len(alphabet), readout="every_step", loss="cross_entropy", metric="bpc",
                    higher_is_better=False, chance=unigram_entropy_bits(np.concatenate(pools[0])),
                    target=config.target, seq_len=max(split.x.shape[1] for split in (train, val, test)),
                    bucket=config.bucket, trivial=ngram_bits(train, val, len(alphabet)))


def load_text(config: TextConfig, seed: int) -> TaskData:
    """Next-character prediction; the vocabulary is every character of the file."""
    path = resolve_path("text", config.path, "a UTF-8 text file")
    text = read_text(path)
    alphabet, ids = encode_characters(text)
    ids = ids.astype(np.int64)
    if config.examples != "windows":
        return load_units(config, path, text, alphabet, ids, seed)
    cuts = [round(fraction * len(ids)) for fraction in np.cumsum(SPLIT_FRACTIONS)[:-1]]
    streams = np.split(ids, cuts)
    shortest = min(len(stream) for stream in streams)
    if shortest < config.length + 1:
        raise TaskDataError(
            f"text: {path} has {len(ids)} characters, so its smallest split ({shortest}) cannot hold a window"
            f" of task.length + 1 = {config.length + 1}; use a longer file or a smaller task.length"
        )
    sizes = (config.n_train, config.n_val, config.n_test)
    # Each split draws from its own stream, so resizing one leaves the others' windows unchanged.
    train, val, test = (
        sample_windows(stream, n, config.length, np.random.default_rng([seed, number]))
        for number, (stream, n) in enumerate(zip(streams, sizes))
    )
    return TaskData(
        name="text",
        train=train,
        val=val,
        test=test,
        input_kind="tokens",
        input_dim=len(alphabet),
        n_outputs=len(alphabet),
        readout="every_step",
        loss="cross_entropy",
        metric="bpc",
        higher_is_better=False,
        chance=unigram_entropy_bits(streams[0]),
        target=config.target,
        seq_len=config.length,
        trivial=ngram_bits(train, val, len(alphabet)),
    )
