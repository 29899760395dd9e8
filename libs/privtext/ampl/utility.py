"""Utility loss of a replacement (App. E.2, Eq. 82) and its expectation under a mechanism (Eq. 14)."""
from __future__ import annotations

import numpy as np

from privtext.ampl.sequences import ReleasedSequences


def _unit(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    norm = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.where(norm > 0, norm, 1.0)


def cosine_cost(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Eq. 82: c(x, y) = 1 - (cos(x, y) + 1) / 2 in [0, 1], for all pairs of rows ([m, d] x [k, d] -> [m, k])."""
    return 0.5 * (1.0 - _unit(x) @ _unit(y).T)


def expected_utility_loss(prior: np.ndarray, log_channel: np.ndarray, cost: np.ndarray) -> float:
    """L_utility (Eq. 14): sum_x pi_x sum_y c(x, y) Pr[M(x) = y], rows = secrets (each with its tier's
    mechanism), columns = outputs. For a remapped release pass ``cost[:, remap]``."""
    prior = np.asarray(prior, dtype=np.float64)
    return float(prior @ (np.exp(log_channel) * cost).sum(axis=1) / prior.sum())


def realized_utility_loss(batch: ReleasedSequences) -> float:
    """Mean Eq. 82 cost between original and released embeddings over the replaced positions."""
    if not batch.mask.any():
        return 0.0
    x = _unit(batch.original[batch.mask])
    y = _unit(batch.released[batch.mask])
    return float(np.mean(0.5 * (1.0 - (x * y).sum(axis=1))))
