"""IMDB loader on a tiny aclImdb tree the test writes: tokens, vocabulary, padding, splits, errors."""

import shutil

import pytest
import torch

from normbench.tasks import ImdbConfig, TaskDataError
from normbench.tasks.imdb import build_vocabulary, encode, encode_lengths, words
from normbench.tasks.tensors import load_task

REVIEWS = {
    "pos": "A great film<br />I loved it, truly great! {tag}",
    "neg": "An awful, boring film<br /><br />I hated it. {tag}",
}


def write_acl_imdb(root, n_train=10, n_test=5):
    """aclImdb/{train,test}/{pos,neg}/*.txt; each review ends in a word found nowhere else."""
    for part, n in (("train", n_train), ("test", n_test)):
        for label, review in REVIEWS.items():
            folder = root / part / label
            folder.mkdir(parents=True)
            for i in range(n):
                text = review.format(tag=f"tag{part}{label}{i}")
                (folder / f"{i}_{8 if label == 'pos' else 3}.txt").write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def acl_imdb(tmp_path):
    return write_acl_imdb(tmp_path / "aclImdb")


def test_words_are_lowercase_and_line_breaks_are_not_words():
    assert words("Great<br />Film's END!! 10/10") == ["great", "film's", "end", "10", "10"]


def test_vocabulary_keeps_the_most_frequent_words_ties_alphabetical():
    vocabulary = build_vocabulary([["b", "a", "c", "a"], ["b", "d"]], max_vocab=3)
    assert vocabulary == {"a": 2, "b": 3, "c": 4}


def test_encode_keeps_the_last_tokens_and_pads_on_the_left():
    vocabulary = {"a": 2, "b": 3, "c": 4}
    ids = encode([["a", "b", "zz"], ["a", "b", "c", "a", "b"], []], vocabulary, max_len=4)
    assert ids.tolist() == [[0, 2, 3, 1], [3, 4, 2, 3], [0, 0, 0, 0]]


def test_splits_shapes_and_metadata(acl_imdb):
    data = load_task(ImdbConfig(path=str(acl_imdb), max_len=32, variable_length=False), seed=0)
    assert (len(data.train.y), len(data.val.y), len(data.test.y)) == (18, 2, 10)
    for split in (data.train, data.val, data.test):
        assert split.x.shape == (len(split.y), 32) and split.x.dtype == torch.int64
        assert split.y.dtype == torch.int64 and set(split.y.tolist()) <= {0, 1}
        assert split.x.max() < data.input_dim
        assert (split.x[:, 0] == 0).all() and (split.x[:, -1] != 0).all()  # left-padded
    assert data.test.y.sum() == 5 and data.train.y.sum() + data.val.y.sum() == 10
    assert (data.input_kind, data.n_outputs, data.seq_len, data.target) == ("tokens", 2, 32, 0.85)
    assert (data.readout, data.loss, data.metric, data.higher_is_better) == (
        "last",
        "cross_entropy",
        "accuracy",
        True,
    )


def test_vocabulary_comes_from_training_texts_only(acl_imdb):
    data = load_task(ImdbConfig(path=str(acl_imdb), max_len=32, variable_length=False), seed=0)
    # Each review ends in its own tag: known for training reviews, unknown for test reviews.
    assert (data.test.x[:, -1] == 1).all()
    assert (data.train.x[:, -1] > 1).all() and (data.val.x[:, -1] > 1).all()
    small = load_task(ImdbConfig(path=str(acl_imdb), max_vocab=3, variable_length=False), seed=0)
    assert small.input_dim == 5 and small.train.x.max() == 4


def test_val_is_a_seeded_holdout_disjoint_from_train(acl_imdb):
    first, again, other = (load_task(ImdbConfig(path=str(acl_imdb)), seed=seed) for seed in (0, 0, 1))
    train_rows = {tuple(row.tolist()) for row in first.train.x}
    assert not any(tuple(row.tolist()) in train_rows for row in first.val.x)
    assert torch.equal(first.val.x, again.val.x) and torch.equal(first.train.y, again.train.y)
    assert not torch.equal(first.val.x, other.val.x)
    assert torch.equal(first.test.x, other.test.x)


def test_chance_is_the_test_accuracy_of_the_training_majority_class(acl_imdb):
    data = load_task(ImdbConfig(path=str(acl_imdb)), seed=0)
    majority = torch.bincount(data.train.y).argmax()
    assert data.chance == pytest.approx((data.test.y == majority).double().mean().item())


def test_max_files_per_class_reads_the_first_files_of_each_folder(acl_imdb):
    data = load_task(ImdbConfig(path=str(acl_imdb), max_files_per_class=3), seed=0)
    assert len(data.train.y) + len(data.val.y) == 6 and len(data.test.y) == 6


def assert_one_line_naming(error, path):
    message = str(error.value)
    assert str(path) in message and "\n" not in message


def test_missing_folder(tmp_path):
    path = tmp_path / "aclImdb"
    with pytest.raises(TaskDataError, match="no such folder") as caught:
        load_task(ImdbConfig(path=str(path)), seed=0)
    assert_one_line_naming(caught, path)


def test_folder_without_train_pos(acl_imdb):
    shutil.rmtree(acl_imdb / "train" / "pos")
    with pytest.raises(TaskDataError, match="train/pos") as caught:
        load_task(ImdbConfig(path=str(acl_imdb)), seed=0)
    assert_one_line_naming(caught, acl_imdb)


def test_class_folder_without_reviews(acl_imdb):
    for file in (acl_imdb / "test" / "neg").iterdir():
        file.unlink()
    with pytest.raises(TaskDataError, match="no .txt files") as caught:
        load_task(ImdbConfig(path=str(acl_imdb)), seed=0)
    assert_one_line_naming(caught, acl_imdb / "test" / "neg")


def test_review_that_is_not_utf8(acl_imdb):
    bad = acl_imdb / "train" / "neg" / "0_3.txt"
    bad.write_bytes("très mauvais".encode("latin-1"))
    with pytest.raises(TaskDataError, match="not UTF-8") as caught:
        load_task(ImdbConfig(path=str(acl_imdb)), seed=0)
    assert_one_line_naming(caught, bad)


def test_unset_path_says_which_key_to_set():
    with pytest.raises(TaskDataError, match="set task.path"):
        load_task(ImdbConfig(), seed=0)


def test_encode_lengths_keeps_the_last_tokens_from_step_0_padded_with_the_mark():
    vocabulary = {"a": 2, "b": 3, "c": 4}
    ids, lengths = encode_lengths([["a", "b", "zz"], ["a", "b", "c", "a", "b"], []], vocabulary, max_len=4)
    assert ids.tolist() == [[2, 3, 1, -1], [3, 4, 2, 3], [1, -1, -1, -1]] and lengths.tolist() == [3, 4, 1]


def test_reviews_come_as_long_as_they_are_with_their_lengths(tmp_path):
    root = write_acl_imdb(tmp_path / "aclImdb", n_train=4, n_test=2)
    (root / "train" / "pos" / "0_8.txt").write_text("short tagtrainpos0", encoding="utf-8")
    data = load_task(ImdbConfig(path=str(root), max_len=32), seed=0)
    assert data.variable_length and not data.bucket
    for split in (data.train, data.val, data.test):
        real = torch.arange(split.x.shape[1]) < split.lengths[:, None]
        assert ((split.x == -1) == ~real).all()  # padded exactly past each review's end
    assert sorted(set(data.train.lengths.tolist()) | set(data.val.lengths.tolist())) == [2, 8, 9]
    assert data.seq_len == 9
    assert load_task(ImdbConfig(path=str(root), bucket=True), seed=0).bucket
