"""Two tasks on a real English corpus that installs offline: Debian's ``fortunes`` package.

``apt-get install -y fortunes`` puts about 43 topic files of fortune(6) texts under
/usr/share/games/fortunes (``computers``, ``literature``, ``startrek``, ...): each is plain text, one
document after another, a line holding only ``%`` between them (strfile's format; the ``.dat``
beside each is its binary index, the ``.u8`` a link to it). docs/tasks.md says what is in it.

- ``fortunes_lm``: character-level language modelling (bits per character). An example is a window
  of fixed length cut from the split's documents joined as the files hold them
  (``examples=windows``), or one document, its first ``length`` + 1 characters
  (``examples=documents``: variable lengths, padded and masked as normbench/tasks/padding.py says).
- ``fortunes_topic``: which topic file a document comes from, read character by character; one
  example per document, as long as it is (up to ``max_len``), padded and masked.

The corpus is read at run time from ``task.path``, never copied into the repository. A text found in
more than one topic file is left out (its topic is not one thing); one repeated within a file is kept
once. Each document's split is fixed by a hash of its text, not by the run's seed or the file
order, so every seed, every task and every version of the package that keeps a text puts it in the
same split.
"""

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Optional

import numpy as np

from normbench.checks import one_of, require, require_at_least, require_name, require_split_sizes
from normbench.tasks.data import NOT_SCORED, PAD_TOKEN, Split, TaskConfig, TaskData, TaskDataError, draw_bytes
from normbench.tasks.files import MIB, read_regular_file
from normbench.tasks.splits import majority_class_accuracy
from normbench.tasks.text import sample_windows, unigram_entropy_bits
from normbench.tasks.trivial import majority_accuracy, ngram_bits

FORTUNES_PATH = "/usr/share/games/fortunes"  # where Debian's fortunes package installs its files
INSTALL = "apt-get install -y fortunes"
EXPECTED = "a folder of %-separated fortune files"
# The package's files hold 2.8 MB in all, the largest 245 KB: the caps only stop a wrong path
# (a huge file, a link to a device) from filling memory.
MAX_FILE_BYTES = 16 * MIB
MAX_TOTAL_BYTES = 128 * MIB
SEPARATOR = re.compile(r"^%\n", re.MULTILINE)
JOIN = "\n%\n"  # how the windows' stream joins documents: as the files do
SPLIT_BUCKETS = 10  # of a document's hash: 0 -> val, 1 -> test, the other 8 -> train (80/10/10)
SPLITS = ("train", "val", "test")
LM_EXAMPLES = ("windows", "documents")
# The topics fortunes_topic tells apart by default: files of at least 150 distinct documents whose
# subject is one thing (a person's sayings, a field), leaving out the grab-bags (cookie, fortunes,
# miscellaneous, people, wisdom, platitudes, ...) whose texts could sit in any of them.
DEFAULT_TOPICS = "computers+definitions+law+linux+literature+politics+science+songs-poems+startrek+zippy"


def topic_files(folder: Path) -> list[Path]:
    """The folder's topic files in name order: regular files (not links) whose name has no dot,
    which leaves out strfile's NAME.dat indexes and the NAME.u8 links to NAME."""
    if not folder.is_dir():
        raise TaskDataError(f"fortunes: no such folder: {folder} (install the corpus with `{INSTALL}`, "
                            f"which fills {FORTUNES_PATH}, or set task.path to {EXPECTED})")
    files = sorted(entry for entry in folder.iterdir()
                   if "." not in entry.name and not entry.is_symlink() and entry.is_file())
    if not files:
        raise TaskDataError(f"fortunes: no topic files in {folder} (set task.path to {EXPECTED})")
    return files


def documents_of(text: str) -> list[str]:
    """The %-separated documents of one file, each without its final newline; empty ones dropped."""
    return [piece.rstrip("\n") for piece in SEPARATOR.split(text) if piece.strip()]


def read_corpus(folder: Path) -> dict[str, list[str]]:
    """{topic: its documents in file order}, every text once: a text in two topic files in neither."""
    by_topic, left = {}, MAX_TOTAL_BYTES
    for file in topic_files(folder):
        raw = read_regular_file("fortunes", file, MAX_FILE_BYTES)
        left -= len(raw)
        if left < 0:
            raise TaskDataError(f"fortunes: too large: the files of {folder} hold more than "
                                f"{MAX_TOTAL_BYTES // MIB} MiB, the most this task reads")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise TaskDataError(f"fortunes: not UTF-8: {file} (at byte {error.start})") from None
        by_topic[file.name] = list(dict.fromkeys(documents_of(text)))  # first of each repeat, in order
    seen: dict[str, int] = {}
    for documents in by_topic.values():
        for document in documents:
            seen[document] = seen.get(document, 0) + 1
    return {topic: [d for d in documents if seen[d] == 1] for topic, documents in by_topic.items()}


def split_of(document: str) -> int:
    """0 train, 1 val, 2 test, from the document's own text (blake2b: the same on every machine)."""
    bucket = int.from_bytes(hashlib.blake2b(document.encode("utf-8"), digest_size=8).digest(), "big") % SPLIT_BUCKETS
    return {0: 1, 1: 2}.get(bucket, 0)


def order_key(document: str) -> bytes:
    """A fixed order within a split that is not the files' (which runs topic by topic)."""
    return hashlib.blake2b(document.encode("utf-8"), digest_size=8, person=b"normbench-order").digest()


def split_documents(labelled: list[tuple[str, int]]) -> list[list[tuple[str, int]]]:
    """(document, label) pairs into train, val and test, each in its fixed order."""
    parts = [[], [], []]
    for pair in labelled:
        parts[split_of(pair[0])].append(pair)
    return [sorted(part, key=lambda pair: order_key(pair[0])) for part in parts]


def load_folder(task: str, path: Optional[str]) -> dict[str, list[str]]:
    if path is None:
        raise TaskDataError(f"{task}: task.path is not set (set task.path to {EXPECTED})")
    return read_corpus(Path(path).expanduser().absolute())


def alphabet_of(documents: list[str]) -> dict[str, int]:
    """Character -> id over every character of the corpus read (the joins' too), in code-point order,
    so every seed and split shares one vocabulary."""
    return {character: i for i, character in enumerate(sorted(set(JOIN).union(*map(set, documents))))}


def encoded(text: str, alphabet: dict[str, int]) -> np.ndarray:
    """The ids of ``text``'s characters (int64); a character outside ``alphabet`` is a KeyError, as a lookup is.
    By a table indexed by code point: the train split's stream (2 million characters) takes 0.06 s, where a lookup
    per character took 0.22 s (on a 2-core AMD EPYC; a fortunes_lm task's data 0.27 s against 0.46 s a seed)."""
    codes = np.frombuffer(text.encode("utf-32-le"), dtype="<u4")
    table = np.full(max(map(ord, alphabet), default=0) + 1, -1, dtype=np.int64)
    table[[ord(character) for character in alphabet]] = list(alphabet.values())
    beyond = codes >= len(table)
    ids = table[np.where(beyond, 0, codes)]
    if (unknown := beyond | (ids < 0)).any():
        raise KeyError(text[int(unknown.argmax())])
    return ids


def encoded_each(texts: list[str], alphabet: dict[str, int]) -> list[np.ndarray]:
    """``encoded`` of each text, by one lookup of them all (one table, not one a text)."""
    if not texts:
        return []
    return np.split(encoded("".join(texts), alphabet), np.cumsum([len(text) for text in texts])[:-1])


def padded_rows(rows: list[np.ndarray], fill: int) -> tuple[np.ndarray, np.ndarray]:
    """(matrix, lengths): the rows left-aligned, padded at the end with ``fill`` to the longest."""
    lengths = np.array([len(row) for row in rows], dtype=np.int64)
    matrix = np.full((len(rows), int(lengths.max())), fill, dtype=np.int64)
    for i, row in enumerate(rows):
        matrix[i, : len(row)] = row
    return matrix, lengths


def first(part: list, n: Optional[int]) -> list:
    """At most ``n`` of the split's documents (all when ``n`` is null), in its fixed order."""
    return part if n is None else part[:n]


def require_documents(task: str, path, parts: list[list], what: str) -> None:
    for name, part in zip(SPLITS, parts):
        if not part:
            raise TaskDataError(f"{task}: {path} gives no {what} to the {name} split; use a larger corpus")


@dataclass
class FortunesLmConfig(TaskConfig):
    metric: ClassVar[str] = "bpc"  # its entry in TASK_METRICS (normbench/records/metrics.py)
    name: str = "fortunes_lm"
    path: Optional[str] = FORTUNES_PATH  # the fortunes folder; docs/tasks.md
    examples: str = "windows"  # windows (fixed length) | documents: one each, its first length+1 characters
    length: int = 128  # characters per input window, or the most a document gives (each predicts the next)
    n_train: int = 10000  # windows drawn from train's documents; documents: the first n of train's
    n_val: int = 1000  # the same of val's
    n_test: int = 1000  # the same of test's
    target: float = 2.5  # val bits per character that counts as solved
    bucket: bool = False  # documents: train batches of documents of about one length

    def __post_init__(self):
        require_name(self.name, "fortunes_lm")
        one_of("task.examples", self.examples, LM_EXAMPLES)
        require_at_least("length", self.length, 1)
        require_split_sizes(self)

    def load(self, seed: int) -> TaskData:
        return load_fortunes_lm(self, seed)

    def tensor_bytes(self) -> int:
        return draw_bytes(self, 2 * self.length + 1)

    @classmethod
    def padded(cls, setting) -> bool:
        return setting("examples", "windows") == "documents"

    @classmethod
    def describe_data(cls, paths: list[str]) -> str:
        return described(paths, "character by character")


@dataclass
class FortunesTopicConfig(TaskConfig):
    metric: ClassVar[str] = "accuracy"  # its entry in TASK_METRICS (normbench/records/metrics.py)
    name: str = "fortunes_topic"
    path: Optional[str] = FORTUNES_PATH  # the fortunes folder; docs/tasks.md
    topics: str = DEFAULT_TOPICS  # the topic files told apart, joined by + (a comma would be a Hydra sweep): one class each
    max_len: int = 256  # characters kept of a document: its first ones
    n_train: Optional[int] = None  # the first n of train's documents; null: all
    n_val: Optional[int] = None  # the same of val's
    n_test: Optional[int] = None  # the same of test's
    target: float = 0.6  # val accuracy that counts as solved
    bucket: bool = False  # train batches of documents of about one length

    def __post_init__(self):
        require_name(self.name, "fortunes_topic")
        require_at_least("max_len", self.max_len, 1)
        require(len(self.topic_list()) >= 2, f"task.topics must name at least two topic files, got {self.topics!r}")
        require(len(set(self.topic_list())) == len(self.topic_list()), f"task.topics names a topic twice: {self.topics!r}")
        for key in ("n_train", "n_val", "n_test"):
            if getattr(self, key) is not None:
                require_at_least(key, getattr(self, key), 1)

    def topic_list(self) -> list[str]:
        return [topic.strip() for topic in str(self.topics).split("+") if topic.strip()]

    def load(self, seed: int) -> TaskData:
        return load_fortunes_topic(self, seed)

    @classmethod
    def padded(cls, setting) -> bool:
        return True

    @classmethod
    def describe_data(cls, paths: list[str]) -> str:
        return described(paths, "each document's topic file, read character by character")


def described(paths: list[str], how: str) -> str:
    where = "Debian's fortunes package" if set(paths) <= {FORTUNES_PATH, None} else "fortune files"
    return f"{where} (%-separated English texts by topic file), {how}"


def load_fortunes_lm(config: FortunesLmConfig, seed: int) -> TaskData:
    """Next-character prediction on the corpus's documents; each split draws from its own documents."""
    corpus = load_folder("fortunes_lm", config.path)
    documents = [document for texts in corpus.values() for document in texts]
    parts = split_documents([(document, 0) for document in documents])
    require_documents("fortunes_lm", config.path, parts, "document")
    alphabet = alphabet_of(documents)
    sizes = (config.n_train, config.n_val, config.n_test)
    if config.examples == "windows":
        streams = [encoded(JOIN.join(d for d, _ in part), alphabet) for part in parts]
        for name, stream in zip(SPLITS, streams):
            if len(stream) < config.length + 1:
                raise TaskDataError(f"fortunes_lm: the {name} split of {config.path} holds {len(stream)} characters, "
                                    f"fewer than task.length + 1 = {config.length + 1}; use a smaller task.length")
        # Each split draws from its own stream, so resizing one leaves the others' windows unchanged.
        train, val, test = (sample_windows(stream, n, config.length, np.random.default_rng([seed, number]))
                            for number, (stream, n) in enumerate(zip(streams, sizes)))
        seq_len = config.length
    else:
        train, val, test = (document_examples([d for d, _ in first(part, n)], alphabet, config.length)
                            for part, n in zip(parts, sizes))
        seq_len = max(split.x.shape[1] for split in (train, val, test))
    return TaskData(name="fortunes_lm", train=train, val=val, test=test, input_kind="tokens",
                    input_dim=len(alphabet), n_outputs=len(alphabet), readout="every_step", loss="cross_entropy",
                    metric="bpc", higher_is_better=False, chance=unigram_entropy_bits(scored(train.y)),
                    target=config.target, seq_len=seq_len, bucket=config.bucket and config.examples == "documents",
                    trivial=ngram_bits(train, val, len(alphabet)))


def scored(y: np.ndarray) -> np.ndarray:
    return y[y >= 0]


def document_examples(documents: list[str], alphabet: dict[str, int], length: int) -> Split:
    """One example per document of two or more characters: its first length+1 characters; y is x
    shifted by one, padded steps are PAD_TOKEN in x and not scored in y."""
    ids = encoded_each([document[: length + 1] for document in documents if len(document) >= 2], alphabet)
    x, lengths = padded_rows([row[:-1] for row in ids], PAD_TOKEN)
    y, _ = padded_rows([row[1:] for row in ids], NOT_SCORED)
    return Split(x=x, y=y, lengths=lengths)


def load_fortunes_topic(config: FortunesTopicConfig, seed: int) -> TaskData:
    """The topic file of each document, read as its first ``max_len`` characters."""
    corpus = load_folder("fortunes_topic", config.path)
    topics = config.topic_list()
    missing = [topic for topic in topics if topic not in corpus]
    if missing:
        raise TaskDataError(f"fortunes_topic: no topic file {missing[0]!r} in {config.path} "
                            f"(its topics: {', '.join(corpus)})")
    labelled = [(document, label) for label, topic in enumerate(topics) for document in corpus[topic]]
    parts = split_documents(labelled)
    require_documents("fortunes_topic", config.path, parts, "document of the topics")
    alphabet = alphabet_of([document for document, _ in labelled])
    sizes = (config.n_train, config.n_val, config.n_test)
    train, val, test = (topic_examples(first(part, n), alphabet, config.max_len) for part, n in zip(parts, sizes))
    return TaskData.classification(
        name="fortunes_topic", train=train, val=val, test=test, input_kind="tokens", input_dim=len(alphabet),
        n_outputs=len(topics), chance=majority_class_accuracy(train.y, val.y), target=config.target,
        seq_len=max(split.x.shape[1] for split in (train, val, test)), bucket=config.bucket,
        trivial=majority_accuracy(train.y, val.y))


def topic_examples(pairs: list[tuple[str, int]], alphabet: dict[str, int], max_len: int) -> Split:
    x, lengths = padded_rows(encoded_each([document[:max_len] for document, _ in pairs], alphabet), PAD_TOKEN)
    return Split(x=x, y=np.array([label for _, label in pairs], dtype=np.int64), lengths=lengths)

