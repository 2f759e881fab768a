"""Seeded splits of fixed labelled data sets, and the chance level they imply."""

import numpy as np


def holdout(n: int, fraction: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Indices (kept, held_out), each sorted: a random `fraction` of range(n), at least one, held out."""
    n_held = max(1, round(fraction * n))
    order = rng.permutation(n)
    return np.sort(order[n_held:]), np.sort(order[:n_held])


def stratified_split(labels: np.ndarray, fractions: tuple[float, ...], rng: np.random.Generator) -> list[np.ndarray]:
    """Indices of each split, each sorted; every class is divided in the same proportions."""
    parts = [[] for _ in fractions]
    boundaries = np.cumsum(fractions)[:-1]
    for label in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == label))
        cuts = np.round(boundaries * len(members)).astype(int)
        for part, piece in zip(parts, np.split(members, cuts)):
            part.append(piece)
    return [np.sort(np.concatenate(part)) for part in parts]


def majority_class_accuracy(train_labels: np.ndarray, test_labels: np.ndarray) -> float:
    """Accuracy on `test_labels` of always predicting the most common training label."""
    majority = np.bincount(train_labels).argmax()  # ties go to the smaller label
    return float(np.mean(test_labels == majority))
