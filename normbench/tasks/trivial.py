"""A task's trivial solutions: what a predictor that ignores what the task is about scores.

Chance (``TaskData.chance``) is the uninformed guess. A trivial solution is a shortcut a model can
learn and then stop at, short of the task: a character model that knows only how often each
character comes (unigram) or which follows which (bigram); a classifier that always answers the most
common class; mqar's answer with any value seen in the context (normbench/tasks/synthetic.py).
Each is scored as the run's validation metric would score it, on the validation split, fitted on the
training split, and recorded by name in the run record's ``task.trivial``; normbench/analysis/rules.py
says a run whose best evaluation stays on one "did not learn the task".
"""

import numpy as np

from normbench.tasks.data import NOT_SCORED, Split

# A character seen in training is never given probability 0 on validation: add-1/2 counts
# (Krichevsky-Trofimov), the smallest common smoothing, so the value stays close to the plug-in entropy.
PSEUDO_COUNT = 0.5


def _pairs(split: Split) -> tuple[np.ndarray, np.ndarray]:
    """(input, target) ids of every scored step of a per-step token task."""
    x, y = np.asarray(split.x), np.asarray(split.y)
    scored = y != NOT_SCORED
    return x[scored], y[scored]


def ngram_bits(train: Split, val: Split, n_symbols: int) -> dict[str, float]:
    """Bits per character on ``val`` of the unigram model and of the bigram model (the next character
    given the one just read) fitted on ``train``'s scored steps."""
    train_x, train_y = _pairs(train)
    val_x, val_y = _pairs(val)
    unigram = np.bincount(train_y, minlength=n_symbols) + PSEUDO_COUNT
    p_unigram = unigram / unigram.sum()
    bigram = np.zeros((n_symbols, n_symbols))
    np.add.at(bigram, (train_x, train_y), 1.0)
    bigram += PSEUDO_COUNT
    p_bigram = bigram / bigram.sum(1, keepdims=True)
    return {"unigram model": float(-np.log2(p_unigram[val_y]).mean()),
            "bigram model": float(-np.log2(p_bigram[val_x, val_y]).mean())}


def majority_accuracy(train_labels: np.ndarray, val_labels: np.ndarray) -> dict[str, float]:
    """Validation accuracy of always answering the most common training label."""
    majority = np.bincount(train_labels).argmax()  # ties go to the smaller label
    return {"majority class": float(np.mean(val_labels == majority))}
