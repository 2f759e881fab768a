"""IMDB movie-review sentiment (Maas et al. 2011) from the Stanford aclImdb folder layout.

Each review is as long as it is (its last ``max_len`` words), padded at the end and masked
(normbench/tasks/padding.py); ``variable_length=false`` left-pads every review to ``max_len`` instead,
so the model reads the padding as input (how this task ran before masks).
"""

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Optional

import numpy as np

from normbench.checks import require_at_least, require_name
from normbench.tasks.data import PAD_TOKEN, Split, TaskConfig, TaskData, TaskDataError, resolve_path
from normbench.tasks.files import MIB, read_regular_file
from normbench.tasks.splits import holdout, majority_class_accuracy

SUBFOLDERS = ("train/pos", "train/neg", "test/pos", "test/neg")
PAD, UNKNOWN = 0, 1
FIRST_WORD_ID = 2
VAL_FRACTION = 0.1
WORD = re.compile(r"[a-z0-9']+")
EXPECTED = "the aclImdb folder, with train/pos, train/neg, test/pos, test/neg"
# The longest aclImdb review is about 14 KB and its four folders hold about 65 MB, so these caps
# only stop a path that is not aclImdb (a huge file, a symlink to a device) from filling memory.
MAX_REVIEW_BYTES = 1 * MIB
MAX_TOTAL_BYTES = 256 * MIB


@dataclass
class ImdbConfig(TaskConfig):
    metric: ClassVar[str] = "accuracy"  # its entry in TASK_METRICS (normbench/records/metrics.py)
    name: str = "imdb"
    path: Optional[str] = None  # the aclImdb folder; required
    max_vocab: int = 20000  # most frequent training words kept; the rest read as "unknown"
    max_len: int = 256  # tokens kept per review: its last ones
    max_files_per_class: Optional[int] = None  # read only the first N reviews of each folder (quick runs)
    target: float = 0.85  # val accuracy that counts as solved
    variable_length: bool = True  # each review as long as it is (padding masked); false: left-padded to max_len
    bucket: bool = False  # variable_length: train batches of reviews of about one length

    def __post_init__(self):
        require_name(self.name, "imdb")
        require_at_least("max_vocab", self.max_vocab, 1)
        require_at_least("max_len", self.max_len, 1)
        if self.max_files_per_class is not None:
            require_at_least("max_files_per_class", self.max_files_per_class, 1)

    def load(self, seed: int) -> TaskData:
        return load_imdb(self, seed)

    @classmethod
    def padded(cls, setting) -> bool:
        return bool(setting("variable_length", True))

    @classmethod
    def inert(cls, setting) -> list[str]:
        # left-padded to max_len: the imdb of earlier records
        return ["variable_length"] if setting("variable_length") is False else []

    @classmethod
    def describe_data(cls, paths: list[str]) -> str:
        return "the aclImdb movie reviews (Maas et al. 2011)"


def words(review: str) -> list[str]:
    """Lowercased words; the HTML line breaks the reviews are full of are not words."""
    return WORD.findall(review.lower().replace("<br />", " "))


def build_vocabulary(reviews: list[list[str]], max_vocab: int) -> dict[str, int]:
    """Word -> id for the `max_vocab` most frequent words; ids 0 and 1 are pad and unknown."""
    counts = Counter(word for review in reviews for word in review)
    # Equal counts are ordered alphabetically, so the vocabulary does not depend on file order.
    ranked = sorted(counts, key=lambda word: (-counts[word], word))[:max_vocab]
    return {word: FIRST_WORD_ID + rank for rank, word in enumerate(ranked)}


def encode(reviews: list[list[str]], vocabulary: dict[str, int], max_len: int) -> np.ndarray:
    """int64 (N, max_len): each review's last `max_len` word ids, padded on the left.

    Left padding puts the end of every review at the last step, where a "last" readout looks.
    """
    ids = np.full((len(reviews), max_len), PAD, dtype=np.int64)
    for row, review in zip(ids, reviews):
        kept = [vocabulary.get(word, UNKNOWN) for word in review[-max_len:]]
        row[max_len - len(kept) :] = kept
    return ids


def encode_lengths(reviews: list[list[str]], vocabulary: dict[str, int], max_len: int) -> tuple[np.ndarray, np.ndarray]:
    """(ids, lengths): each review's last `max_len` word ids from step 0, padded at the end with -1 to
    the longest; an empty review is one unknown word (a sequence has at least one step)."""
    kept = [[vocabulary.get(word, UNKNOWN) for word in review[-max_len:]] or [UNKNOWN] for review in reviews]
    lengths = np.array([len(review) for review in kept], dtype=np.int64)
    ids = np.full((len(kept), int(lengths.max())), PAD_TOKEN, dtype=np.int64)
    for row, review in zip(ids, kept):
        row[: len(review)] = review
    return ids, lengths


class ReadBudget:
    """Bytes still allowed for all reviews together: many files within the per-file cap add up too."""

    def __init__(self, limit: int):
        self.limit = limit
        self.left = limit

    def take(self, n_bytes: int, path: Path) -> None:
        self.left -= n_bytes
        if self.left < 0:
            raise TaskDataError(f"imdb: too large: the reviews read so far, up to {path}, hold more than "
                                f"{self.limit // MIB} MiB, the most this task reads")


def read_reviews(folder: Path, max_files: Optional[int], budget: ReadBudget) -> list[str]:
    """The folder's reviews in file-name order, the first `max_files` of them if set."""
    files = sorted(folder.glob("*.txt"))[:max_files]
    if not files:
        raise TaskDataError(f"imdb: no .txt files in {folder} (set task.path to {EXPECTED})")
    reviews = []
    for file in files:
        raw = read_regular_file("imdb", file, MAX_REVIEW_BYTES)
        budget.take(len(raw), file)
        try:
            reviews.append(raw.decode("utf-8"))
        except UnicodeDecodeError as error:
            raise TaskDataError(f"imdb: not UTF-8: {file} (at byte {error.start})") from None
    return reviews


def read_labelled(root: Path, part: str, max_files: Optional[int],
                  budget: ReadBudget) -> tuple[list[list[str]], np.ndarray]:
    """Tokenised reviews of `part` ("train" or "test"), and their labels: 1 positive, 0 negative."""
    positive = read_reviews(root / part / "pos", max_files, budget)
    negative = read_reviews(root / part / "neg", max_files, budget)
    labels = np.array([1] * len(positive) + [0] * len(negative), dtype=np.int64)
    return [words(review) for review in positive + negative], labels


def load_imdb(config: ImdbConfig, seed: int) -> TaskData:
    """Binary sentiment of a review read as a sequence of word ids; val is a seeded 10% of train."""
    root = resolve_path("imdb", config.path, EXPECTED)
    if not root.is_dir():
        raise TaskDataError(f"imdb: no such folder: {root} (set task.path to {EXPECTED})")
    for subfolder in SUBFOLDERS:
        if not (root / subfolder).is_dir():
            raise TaskDataError(f"imdb: no folder {root / subfolder} (set task.path to {EXPECTED})")
    budget = ReadBudget(MAX_TOTAL_BYTES)
    train_reviews, train_labels = read_labelled(root, "train", config.max_files_per_class, budget)
    test_reviews, test_labels = read_labelled(root, "test", config.max_files_per_class, budget)
    # The vocabulary counts the whole train folder, val included: it uses no labels, and
    # this way every seed shares one vocabulary and so one embedding size.
    vocabulary = build_vocabulary(train_reviews, config.max_vocab)
    y = train_labels
    kept, held_out = holdout(len(train_labels), VAL_FRACTION, np.random.default_rng(seed))
    if config.variable_length:
        x, lengths = encode_lengths(train_reviews, vocabulary, config.max_len)
        test_x, test_lengths = encode_lengths(test_reviews, vocabulary, config.max_len)
        train = Split(x=x[kept], y=y[kept], lengths=lengths[kept])
        val = Split(x=x[held_out], y=y[held_out], lengths=lengths[held_out])
        test = Split(x=test_x, y=test_labels, lengths=test_lengths)
    else:
        x = encode(train_reviews, vocabulary, config.max_len)
        train, val = Split(x=x[kept], y=y[kept]), Split(x=x[held_out], y=y[held_out])
        test = Split(x=encode(test_reviews, vocabulary, config.max_len), y=test_labels)
    return TaskData.classification(
        name="imdb",
        train=train,
        val=val,
        test=test,
        bucket=config.bucket and config.variable_length,
        input_kind="tokens",
        input_dim=FIRST_WORD_ID + len(vocabulary),
        n_outputs=2,
        chance=majority_class_accuracy(train_labels[kept], test_labels),
        target=config.target,
        seq_len=max(train.x.shape[1], test.x.shape[1]),
    )
