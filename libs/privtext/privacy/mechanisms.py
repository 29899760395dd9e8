"""Noise sources shared by every privacy mechanism in privtext.

Production noise comes from a generator seeded with 256 bits from ``os.urandom``; a fixed seed is
used only when the configuration says ``deterministic: true`` (tests, reproducible demos).

* ``gaussian_noise``: the Gaussian mechanism's noise N(0, sigma^2 I). Its guarantee (mu-GDP with
  mu = sensitivity / sigma, or (eps, delta)-DP / (p, r)-secret protection after accounting) is the
  caller's to state and record, because only the caller knows the L2 sensitivity and adjacency.
* ``exponential_log_probs``: the exponential mechanism (McSherry & Talwar 2007),
  Pr[y | x] proportional to exp(eps * u(x, y) / (2 * Delta_u)); eps-DP for the adjacency under which
  the utility u has sensitivity Delta_u. With u = -d(x, y) and Delta_u = 1 it is the
  eps-metric-LDP form exp(-eps * d(x, y) / 2) used by SanText/CusText/CluSanT.
* ``sample_categorical``: draws one index per row of a (precomputed) log-probability table,
  vectorised over all rows with the Gumbel-max trick.
"""
from __future__ import annotations

import os

import numpy as np
from scipy.special import logsumexp


def make_rng(deterministic: bool = False, seed: int = 0) -> np.random.Generator:
    """A PCG64 generator: seeded from ``os.urandom`` unless ``deterministic`` (then from ``seed``)."""
    if deterministic:
        return np.random.default_rng(seed)
    return np.random.Generator(np.random.PCG64(int.from_bytes(os.urandom(32), "little")))


def gaussian_noise(rng: np.random.Generator, shape, sigma: float) -> np.ndarray:
    """Gaussian mechanism noise N(0, sigma^2) of the given shape (sigma >= 0)."""
    if sigma < 0 or not np.isfinite(sigma):
        raise ValueError(f"sigma must be a finite non-negative number, got {sigma}")
    return rng.normal(0.0, sigma, size=shape)


def exponential_log_probs(utility: np.ndarray, epsilon: float, sensitivity: float = 1.0) -> np.ndarray:
    """Log-probabilities of the exponential mechanism over the last axis of ``utility``.

    log Pr[y | x] = eps * u(x, y) / (2 * Delta_u) - log sum_y' exp(eps * u(x, y') / (2 * Delta_u)).
    Entries of ``utility`` equal to -inf get probability 0 (candidates outside the range).
    """
    if epsilon <= 0 or sensitivity <= 0:
        raise ValueError(f"epsilon and sensitivity must be positive, got {epsilon}, {sensitivity}")
    logits = (epsilon / (2.0 * sensitivity)) * np.asarray(utility, dtype=np.float64)
    return logits - logsumexp(logits, axis=-1, keepdims=True)


def sample_categorical(rng: np.random.Generator, log_probs: np.ndarray) -> np.ndarray:
    """One draw per row of ``log_probs`` (shape (..., k)) by Gumbel-max: argmax(log p + G)."""
    log_probs = np.asarray(log_probs, dtype=np.float64)
    return np.argmax(log_probs + rng.gumbel(size=log_probs.shape), axis=-1)
