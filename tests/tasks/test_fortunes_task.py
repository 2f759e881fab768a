"""The fortunes tasks on a tiny corpus in the package's format (tests/tasks/fortunes/): which files are
topics, repeated texts, fixed splits, the LM's windows and documents, the topic classifier, errors."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from normbench.checks import ConfigError
from normbench.tasks import FortunesLmConfig, FortunesTopicConfig, TaskDataError
from normbench.tasks.data import NOT_SCORED, PAD_TOKEN
from normbench.tasks.fortunes import FORTUNES_PATH, JOIN, encoded, encoded_each, order_key, read_corpus, split_of
from normbench.tasks.text import unigram_entropy_bits

FIXTURE = Path(__file__).parent / "fortunes"
TOPICS = ("chess", "cooking", "weather")


def corpus_text(topic: str) -> list[str]:
    return [piece.rstrip("\n") for piece in (FIXTURE / topic).read_text().split("%\n") if piece.strip()]


def test_the_topics_are_the_files_without_a_dot_and_each_text_is_read_once():
    corpus = read_corpus(FIXTURE)
    assert tuple(corpus) == TOPICS  # weather.dat (strfile's index) and weather.u8 (a link) are not topics
    weather = corpus["weather"]
    assert weather.count("Rain in the morning,\nsun by noon.") == 1  # repeated within its file: kept once
    shared = "Everything is better with tea."  # in weather and in cooking: its topic is not one thing
    assert shared in corpus_text("weather") and shared in corpus_text("cooking")
    assert all(shared not in documents for documents in corpus.values())
    assert sum(map(len, corpus.values())) == 36


def test_a_documents_split_is_fixed_by_its_text_not_by_the_seed_or_the_file_order(tmp_path):
    for topic in TOPICS:  # the same texts under other topic names, in another order
        (tmp_path / f"renamed-{topic}").write_text("".join(d + "\n%\n" for d in reversed(corpus_text(topic))))
    config = dict(examples="documents", length=200, n_train=100, n_val=100, n_test=100)
    here, there = (FortunesLmConfig(path=str(FIXTURE), **config), FortunesLmConfig(path=str(tmp_path), **config))
    a, b, c = here.load(0), here.load(7), there.load(3)
    for split in ("train", "val", "test"):
        assert np.array_equal(getattr(a, split).x, getattr(b, split).x)
        assert np.array_equal(getattr(a, split).x, getattr(c, split).x)
    counts = np.bincount([split_of(d) for docs in read_corpus(FIXTURE).values() for d in docs], minlength=3)
    assert (len(a.train.y), len(a.val.y), len(a.test.y)) == tuple(counts) and counts.min() >= 1


def test_text_is_encoded_as_a_lookup_of_each_character_would_encode_it():
    """The table by code point gives each character its alphabet id, whatever the ids' order (NUL, a two-byte, a
    three-byte and an astral character among them, the last the alphabet's highest code point, the table's last
    entry); a character outside the alphabet, in a gap of the table or beyond its end, is the KeyError a lookup
    raises, naming the first such character; each text of a list is encoded alone."""
    text = "Caf\u00e9 \u2014 na\u00efve\x00 \U0001f600!\n%"
    alphabet = {character: i for i, character in enumerate(sorted(set(text), reverse=True))}
    lookup = [alphabet[character] for character in text]
    assert encoded(text, alphabet).dtype == np.int64 and encoded(text, alphabet).tolist() == lookup
    assert encoded("", alphabet).tolist() == [] and encoded("", alphabet).dtype == np.int64
    for outside in ("x", "\u00ff", "\U0001f601"):  # a gap in the table, and beyond its end
        with pytest.raises(KeyError) as refused:
            encoded(f"C{outside}af\u00e9{outside}y", alphabet)
        assert refused.value.args == (outside,)
    assert encoded("", {}).tolist() == []
    with pytest.raises(KeyError):
        encoded("a", {})
    texts = ["na\u00efve", "", "\U0001f600", "Caf\u00e9 \u2014\x00"]
    assert [row.tolist() for row in encoded_each(texts, alphabet)] == [[alphabet[c] for c in t] for t in texts]
    assert encoded_each([], alphabet) == []


def test_lm_windows_are_cut_from_their_own_splits_documents():
    data = FortunesLmConfig(path=str(FIXTURE), length=12, n_train=50, n_val=10, n_test=10).load(seed=0)
    corpus = read_corpus(FIXTURE)
    documents = sorted({d for docs in corpus.values() for d in docs})
    alphabet = sorted(set(JOIN).union(*map(set, documents)))
    assert data.input_dim == data.n_outputs == len(alphabet)
    assert (data.readout, data.metric, data.seq_len, data.variable_length) == ("every_step", "bpc", 12, False)
    for number, split in enumerate((data.train, data.val, data.test)):
        own = JOIN.join(sorted((d for d in documents if split_of(d) == number), key=order_key))
        assert split.x.shape == split.y.shape == (len(split.x), 12)
        assert np.array_equal(split.y[:, :-1], split.x[:, 1:])
        for x, y in zip(split.x, split.y):
            assert "".join(alphabet[i] for i in [*x, y[-1]]) in own
    other = FortunesLmConfig(path=str(FIXTURE), length=12, n_train=50, n_val=10, n_test=10).load(seed=1)
    assert not np.array_equal(data.train.x, other.train.x)  # the seed draws the windows, not the splits


def test_lm_documents_are_one_example_each_as_long_as_they_are_padded_and_masked():
    data = FortunesLmConfig(path=str(FIXTURE), examples="documents", length=20, n_train=4, n_val=100,
                            n_test=100).load(seed=0)
    assert data.variable_length and len(data.train.y) == 4  # n_train: the first 4 of the split's documents
    val_docs = [d for docs in read_corpus(FIXTURE).values() for d in docs if split_of(d) == 1]
    assert len(data.val.y) == len(val_docs)  # n_val above the split's size: all of them
    assert sorted(data.val.lengths.tolist()) == sorted(min(len(d), 21) - 1 for d in val_docs)
    for x, y, n in zip(data.val.x, data.val.y, data.val.lengths):
        assert (x[n:] == PAD_TOKEN).all() and (y[n:] == NOT_SCORED).all() and (x[:n] >= 0).all()
        assert np.array_equal(y[: n - 1], x[1:n])
    assert data.seq_len == 20


def test_lm_declares_chance_and_its_unigram_and_bigram_plateaus():
    data = FortunesLmConfig(path=str(FIXTURE), length=12, n_train=200, n_val=50, n_test=10).load(seed=0)
    assert data.chance == pytest.approx(unigram_entropy_bits(data.train.y.ravel()))
    assert set(data.trivial) == {"unigram model", "bigram model"}
    assert 0 < data.trivial["bigram model"] < data.trivial["unigram model"]  # English: the last letter tells a lot


def test_topic_classifies_each_document_by_its_file_with_the_majority_as_its_plateau():
    config = FortunesTopicConfig(path=str(FIXTURE), topics="weather+chess", max_len=15)
    data = config.load(seed=0)
    corpus = read_corpus(FIXTURE)
    assert data.n_outputs == 2 and data.readout == "last" and data.metric == "accuracy" and data.variable_length
    for split, number in ((data.train, 0), (data.val, 1), (data.test, 2)):
        expected = sorted((min(len(d), 15), label) for label, topic in enumerate(("weather", "chess"))
                          for d in corpus[topic] if split_of(d) == number)
        assert sorted(zip(split.lengths.tolist(), split.y.tolist())) == expected
        for x, n in zip(split.x, split.lengths):
            assert (x[n:] == PAD_TOKEN).all() and (x[:n] >= 0).all()
    majority = np.bincount(data.train.y).argmax()
    assert data.trivial == {"majority class": pytest.approx(np.mean(data.val.y == majority))}
    assert data.chance == pytest.approx(data.trivial["majority class"])


@pytest.mark.parametrize("config, message", [
    (FortunesTopicConfig(path=str(FIXTURE), topics="weather+pets"), "no topic file 'pets'"),
    (FortunesLmConfig(path="/nonexistent/fortunes"), "install the corpus with `apt-get install -y fortunes`"),
    (FortunesLmConfig(path=str(FIXTURE), length=5000), r"fewer than task.length \+ 1 = 5001"),
])
def test_a_missing_corpus_or_topic_is_one_line(config, message):
    with pytest.raises(TaskDataError, match=message) as error:
        config.load(seed=0)
    assert "\n" not in str(error.value)


def test_a_corpus_that_is_not_utf8_or_has_no_topics_is_one_line(tmp_path):
    with pytest.raises(TaskDataError, match="no topic files"):
        FortunesLmConfig(path=str(tmp_path)).load(seed=0)
    (tmp_path / "latin").write_bytes(b"caf\xe9\n%\n")
    with pytest.raises(TaskDataError, match="not UTF-8"):
        FortunesLmConfig(path=str(tmp_path)).load(seed=0)


@pytest.mark.parametrize("make", [
    lambda: FortunesTopicConfig(topics="weather"),
    lambda: FortunesTopicConfig(topics="weather+weather"),
    lambda: FortunesTopicConfig(n_val=0),
    lambda: FortunesLmConfig(examples="lines"),
    lambda: FortunesLmConfig(length=0),
])
def test_bad_settings_are_config_errors(make):
    with pytest.raises(ConfigError):
        make()


def test_the_default_path_is_debians_and_the_cli_exits_2_with_one_line_without_it(cli):
    assert FortunesLmConfig().path == FortunesTopicConfig().path == FORTUNES_PATH == "/usr/share/games/fortunes"
    code, out, err = cli("task=fortunes_topic", "task.path=/nonexistent/fortunes", "steps=2", "threads=1")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "apt-get install -y fortunes" in err


@pytest.mark.parametrize("task", [
    ["task=fortunes_lm", "task.length=8", "task.n_train=32", "task.n_val=8", "task.n_test=8"],
    ["task=fortunes_lm", "task.examples=documents", "task.length=8", "task.n_train=32"],
    ["task=fortunes_topic", "task.topics=weather+cooking+chess", "task.max_len=10"],
])
def test_a_tiny_run_on_each_records_the_tasks_trivial_solutions(cli, tmp_path, tiny_args, task):
    tiny = [arg for arg in tiny_args if not arg.startswith("task")] + ["batch_size=4", "model=lstm"]
    code, _, err = cli(*tiny, *task, f"task.path={FIXTURE}", "hydra.run.dir=run")
    assert code == 0, err
    record = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert record["status"] == "ok" and record["task"]["trivial"]
    from normbench.studies.app import describe

    for name, value in record["task"]["trivial"].items():  # the run's last line names its plateaus beside chance
        assert f", {name} {value:.3g}" in describe(record)
    assert set(record["task"]["trivial"]) in ({"unigram model", "bigram model"}, {"majority class"})


def test_the_installed_corpus_when_there_is_one():
    """The package's own files (CI installs them): every topic file reads, ~15,000 texts, ~2.5 M characters."""
    if not Path(FORTUNES_PATH).is_dir():
        pytest.skip(f"{FORTUNES_PATH} is not installed here (apt-get install -y fortunes)")
    corpus = read_corpus(Path(FORTUNES_PATH))
    assert len(corpus) >= 40 and set(FortunesTopicConfig().topic_list()) <= set(corpus)
    assert 14_000 < sum(map(len, corpus.values())) < 16_000


def test_a_copy_of_the_fixture_reads_the_same(tmp_path):
    shutil.copytree(FIXTURE, tmp_path / "copy", symlinks=True)
    assert read_corpus(tmp_path / "copy") == read_corpus(FIXTURE)
