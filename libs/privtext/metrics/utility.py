"""Utility of synthetic text: length distributions and downstream accuracy (SecPE Sec. 4).

Everything works on summable aggregates so that the real side can be computed in Spark executors:
length histograms (counts per number of words, capped at ``MAX_WORDS``) and, for downstream accuracy,
a classifier fitted on the driver on the synthetic texts' embeddings (a logistic regression: the
CPU-affordable stand-in for the paper's fine-tuned RoBERTa) whose parameters are applied to the real
labeled embeddings wherever they are, returning (correct, total). Outputs are aggregates, no text.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

MAX_WORDS = 512  # longer texts fall in the last bin


def word_lengths(texts: Sequence[str]) -> np.ndarray:
    return np.array([len(t.split()) if isinstance(t, str) else 0 for t in texts], dtype=np.int64)


def length_histogram(texts: Sequence[str]) -> np.ndarray:
    """Counts of texts by number of words [MAX_WORDS + 1] (summable across partitions)."""
    return np.bincount(np.minimum(word_lengths(texts), MAX_WORDS), minlength=MAX_WORDS + 1).astype(np.float64)


def histogram_summary(hist: np.ndarray) -> dict:
    """mean, median and 90th percentile of the lengths counted in ``hist``."""
    hist = np.asarray(hist, dtype=np.float64)
    n = hist.sum()
    if n == 0:
        return {"mean": 0.0, "median": 0.0, "p90": 0.0}
    cdf = np.cumsum(hist) / n
    lengths = np.arange(hist.size)
    return {"mean": float((lengths * hist).sum() / n), "median": float(np.searchsorted(cdf, 0.5)),
            "p90": float(np.searchsorted(cdf, 0.9))}


def length_ks(hist_a: np.ndarray, hist_b: np.ndarray) -> float:
    """Kolmogorov-Smirnov distance between two length histograms (0 = same distribution)."""
    cdf_a = np.cumsum(hist_a) / max(np.sum(hist_a), 1e-300)
    cdf_b = np.cumsum(hist_b) / max(np.sum(hist_b), 1e-300)
    return float(np.max(np.abs(cdf_a - cdf_b)))


@dataclass(frozen=True)
class LinearClassifier:
    """Argmax of X W^T + b over ``classes`` (a fitted logistic regression, or a constant)."""

    classes: np.ndarray
    weights: np.ndarray  # [n_classes, d]
    bias: np.ndarray  # [n_classes]

    def predict(self, x: np.ndarray) -> np.ndarray:
        return self.classes[np.argmax(np.asarray(x, dtype=np.float64) @ self.weights.T + self.bias, axis=1)]

    def correct(self, x: np.ndarray, labels: Sequence) -> tuple[float, float]:
        """(number correct, number of rows): sums across partitions to an accuracy."""
        labels = np.asarray([str(v) for v in labels])
        return float(np.sum(self.predict(x) == labels)), float(labels.size)


def fit_classifier(train_emb: np.ndarray, train_labels: Sequence, seed: int = 0) -> LinearClassifier:
    """Logistic regression on the synthetic set; a single synthetic label gives a constant predictor."""
    from sklearn.linear_model import LogisticRegression

    labels = np.asarray([str(v) for v in train_labels])
    classes = np.unique(labels)
    d = np.asarray(train_emb).shape[1]
    if classes.size < 2:
        return LinearClassifier(classes, np.zeros((max(classes.size, 1), d)), np.zeros(max(classes.size, 1)))
    clf = LogisticRegression(max_iter=1000, random_state=seed).fit(train_emb, labels)
    weights, bias = clf.coef_, clf.intercept_
    if classes.size == 2:  # sklearn's binary form: one row for classes[1]
        weights, bias = np.vstack([np.zeros_like(weights[0]), weights[0]]), np.array([0.0, bias[0]])
    return LinearClassifier(clf.classes_, weights, bias)


def length_plot(real_hist: np.ndarray, synthetic_hist: np.ndarray, path: str, title: str = "") -> str:
    """Both length distributions (share of texts per number of words), saved as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    top = int(max(np.flatnonzero(real_hist).max(initial=1), np.flatnonzero(synthetic_hist).max(initial=1))) + 1
    x = np.arange(top)
    fig, ax = plt.subplots(figsize=(5, 3.2))
    for hist, name in ((real_hist, "real"), (synthetic_hist, "synthetic")):
        ax.step(x, np.asarray(hist[:top]) / max(np.sum(hist), 1), where="mid", label=name)
    ax.set_xlabel("words per text")
    ax.set_ylabel("share of texts")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
