"""Clusterings of a PUBLIC replacement vocabulary for CluSanT (Sec. 5, "Experimental Methodology").

* ``custext_clusters``: CusText's clustering as used in the CluSanT paper: pick a random remaining
  token, put it and its h-1 nearest remaining tokens in a cluster, remove them, repeat until none is
  left (every cluster has h tokens, the last one possibly fewer).
* ``kmeans_clusters``: Lloyd's KMeans (k-means++ start, ``scipy.cluster.vq.kmeans2``).

Both return ``labels`` (one cluster id per vocabulary row, ids 0..n-1, no empty cluster): a partition
of the vocabulary. The vocabulary is public, so clustering it costs no privacy; the randomness here
only makes the (public) clustering reproducible.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
from scipy.cluster.vq import kmeans2

CLUSTERINGS = ("custext", "kmeans")


def custext_clusters(embeddings: np.ndarray, n_clusters: int, rng: np.random.Generator) -> np.ndarray:
    """CusText clustering with cluster size h = ceil(V / n_clusters) (so at most ``n_clusters`` clusters)."""
    emb = np.asarray(embeddings, dtype=np.float64)
    n_vocab = len(emb)
    size = math.ceil(n_vocab / max(1, min(n_clusters, n_vocab)))
    labels = np.full(n_vocab, -1, dtype=np.int64)
    remaining = np.arange(n_vocab)
    cluster = 0
    while remaining.size:
        seed = remaining[rng.integers(remaining.size)]
        others = remaining[remaining != seed]
        dist = np.linalg.norm(emb[others] - emb[seed], axis=1)
        nearest = others[np.argsort(dist, kind="stable")[: size - 1]]
        labels[seed] = cluster
        labels[nearest] = cluster
        remaining = remaining[labels[remaining] < 0]
        cluster += 1
    return labels


def kmeans_clusters(embeddings: np.ndarray, n_clusters: int, rng: np.random.Generator) -> np.ndarray:
    """KMeans labels, renumbered so that no cluster is empty (KMeans may leave a centre without points)."""
    emb = np.asarray(embeddings, dtype=np.float64)
    n = max(1, min(n_clusters, len(emb)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "One of the clusters is empty": handled by the renumbering
        _, labels = kmeans2(emb, n, minit="++", rng=rng)
    return np.unique(labels, return_inverse=True)[1].astype(np.int64)


def cluster_vocabulary(
    embeddings: np.ndarray, method: str, n_clusters: int, rng: np.random.Generator
) -> np.ndarray:
    """Labels of the vocabulary rows under ``method`` ('custext' or 'kmeans')."""
    if method == "custext":
        return custext_clusters(embeddings, n_clusters, rng)
    if method == "kmeans":
        return kmeans_clusters(embeddings, n_clusters, rng)
    raise ValueError(f"unknown clustering {method!r}; allowed: {', '.join(CLUSTERINGS)}")


def singleton_clusters(n_vocab: int) -> np.ndarray:
    """One token per cluster (the SanText setting)."""
    return np.arange(n_vocab, dtype=np.int64)
