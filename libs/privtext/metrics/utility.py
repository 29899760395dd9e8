"""Utility of synthetic text: length distributions and downstream accuracy (SecPE Sec. 4).

Downstream accuracy: a logistic-regression classifier trained on the synthetic texts' sentence
embeddings (labels = the synthetic labels), tested on real held-out labeled texts' embeddings -- the
CPU-affordable stand-in for the paper's fine-tuned RoBERTa. Everything here is post-processing of a
release and of held-out evaluation data; the outputs are aggregates (no text).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np


def word_lengths(texts: Sequence[str]) -> np.ndarray:
    return np.array([len((t or "").split()) for t in texts], dtype=np.int64)


def length_summary(lengths: np.ndarray) -> dict:
    lengths = np.asarray(lengths, dtype=np.float64)
    if lengths.size == 0:
        return {"mean": 0.0, "median": 0.0, "p90": 0.0}
    return {"mean": float(lengths.mean()), "median": float(np.median(lengths)), "p90": float(np.quantile(lengths, 0.9))}


def length_ks(real_lengths: np.ndarray, synthetic_lengths: np.ndarray) -> float:
    """Kolmogorov-Smirnov distance between the two length distributions (0 = identical)."""
    from scipy.stats import ks_2samp

    return float(ks_2samp(real_lengths, synthetic_lengths).statistic)


def downstream_accuracy(train_emb: np.ndarray, train_labels: Sequence, test_emb: np.ndarray,
                        test_labels: Sequence, seed: int = 0) -> float:
    """Accuracy on (test_emb, test_labels) of a logistic regression fitted on the synthetic set.
    With a single synthetic label the classifier predicts it everywhere."""
    from sklearn.linear_model import LogisticRegression

    train_labels = np.asarray([str(x) for x in train_labels])
    test_labels = np.asarray([str(x) for x in test_labels])
    if np.unique(train_labels).size < 2:
        return float(np.mean(test_labels == train_labels[0])) if train_labels.size else 0.0
    clf = LogisticRegression(max_iter=1000, random_state=seed).fit(train_emb, train_labels)
    return float(np.mean(clf.predict(test_emb) == test_labels))


def length_plot(real_lengths: np.ndarray, synthetic_lengths: np.ndarray, path: str, title: str = "") -> str:
    """Histogram of both length distributions (words per text), saved as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.2))
    top = max(int(np.max(real_lengths, initial=1)), int(np.max(synthetic_lengths, initial=1)))
    bins = np.linspace(0, top + 1, 30)
    ax.hist(real_lengths, bins=bins, alpha=0.5, density=True, label="real")
    ax.hist(synthetic_lengths, bins=bins, alpha=0.5, density=True, label="synthetic")
    ax.set_xlabel("words per text")
    ax.set_ylabel("density")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
