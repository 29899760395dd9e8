"""Aug-PE baseline (Xie et al. 2024) under mu-GDP, as SecPE's Sec. 4 compares it at the same (p, r).

Every private row (clipped to R) votes for its nearest candidate (of its label); the histogram gets
N(0, sigma^2) per bin and the same selection and variation as SecPE (``evolution.evolve``).
``private_votes`` is the per-partition pass (votes add up across partitions); ``augpe_vote`` wraps a
callable computing the summed votes (e.g. a Spark job with the candidate embeddings broadcast).

Guarantee: a row's vote moves one bin by 1 (add/remove one row: L2 sensitivity 1), so T rounds are
sqrt(T)/sigma-GDP for one row. The paper's baseline sets sqrt(T)/sigma = mu(p, r) (Lemma 3.3,
``privacy.accounting.augpe_sigma``), which protects a secret only if it sits in one row. A secret in
c rows moves the histogram by up to c in L2 (group privacy), so for (p, r)-secret protection of every
secret -- the guarantee SecPE gives and the ledger records -- we scale by c_max, the largest number
of private rows sharing one secret: sigma = c_max sqrt(T) / mu(p, r) (tighter than the paper's
baseline only when c_max = 1; correct in general).
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from privtext.privacy.accounting import augpe_sigma
from privtext.privacy.mechanisms import gaussian_release
from privtext.secpe.evolution import Vote
from privtext.secpe.secret_clustering import clip_rows, nearest


def augpe_secret_sigma(p: float, r: float, rounds: int, max_rows_per_secret: int) -> float:
    """Noise of the Aug-PE histogram for (p, r)-secret protection over T rounds (0 if r >= 1: no protection)."""
    if r >= 1 or math.isinf(r):
        return 0.0
    return augpe_sigma(p, r, rounds) * max(1, int(max_rows_per_secret))


def private_votes(embeddings: np.ndarray, cand_emb: np.ndarray, radius: float, labels=None,
                  cand_labels=None, chunk: int = 8192) -> np.ndarray:
    """One partition's votes [N]: each clipped private row adds 1 to its nearest candidate (same label)."""
    votes = np.zeros(cand_emb.shape[0])
    for start in range(0, len(embeddings), chunk):  # chunked: memory O(chunk N) whatever the rows
        rows = slice(start, start + chunk)
        lab = None if labels is None else np.asarray(labels)[rows]
        idx = nearest(clip_rows(embeddings[rows], radius), cand_emb, lab, cand_labels if labels is not None else None)
        votes += np.bincount(idx[idx >= 0], minlength=cand_emb.shape[0])
    return votes


def augpe_vote(votes: Callable[[int, np.ndarray, np.ndarray], np.ndarray], sigma: float,
               rng: np.random.Generator) -> Vote:
    """The Aug-PE vote: ``votes(round, cand_emb, cand_labels)`` summed over all private rows, plus N(0, sigma^2)."""

    def vote(t: int, cand_emb: np.ndarray, cand_labels: np.ndarray) -> np.ndarray:
        hist = np.asarray(votes(t, cand_emb, cand_labels), dtype=np.float64)
        return gaussian_release(rng, hist, sigma, sensitivity=1.0)  # one record moves one vote

    return vote
