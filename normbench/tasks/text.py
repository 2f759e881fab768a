"""Character-level language modelling on any UTF-8 text file."""

from pathlib import Path

import numpy as np
import torch

from normbench.tasks import Split, TaskData, TaskDataError, resolve_path
from normbench.schema import TextConfig  # the config lives in the torch-free schema
from normbench.tasks.files import MIB, read_regular_file

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
    return Split(
        x=torch.from_numpy(np.ascontiguousarray(windows[:, :-1])),
        y=torch.from_numpy(np.ascontiguousarray(windows[:, 1:])),
    )


def load_text(config: TextConfig, seed: int) -> TaskData:
    """Next-character prediction; the vocabulary is every character of the file."""
    path = resolve_path("text", config.path, "a UTF-8 text file")
    alphabet, ids = encode_characters(read_text(path))
    ids = ids.astype(np.int64)
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
    )
