"""Noise sources shared by every privacy mechanism in privtext.

Randomness: ``make_rng`` returns a numpy Generator over ChaCha20 (``randomgen``) keyed with 256 bits
from ``os.urandom`` -- a cryptographic generator, so released noise does not reveal the generator's
state (PCG64 does: each float noise value pins ~55 bits of it). ``deterministic: true`` uses PCG64 with
a fixed seed (tests only; every charge records it and such releases cannot be published).

* ``gaussian_release``: the Gaussian mechanism, floating-point safe (Mironov 2012's attack on
  ``value + float noise``: the low bits of the sum reveal the value, so outputs occur that no noise
  draw can produce from a neighbouring value). The value is snapped to a power-of-two grid g and the
  noise is g times a discrete Gaussian N_Z(0, (s/g)^2) (Canonne, Kamath & Steinke 2020, Alg. 3:
  rejection from a discrete Laplace), so every output lies on gZ and every grid point has positive
  probability whatever the value: no output has an empty preimage. Its guarantee (mu-GDP,
  (eps, delta)-DP, (p, r)-secret protection) is the caller's to state, because only the caller knows
  the L2 sensitivity and adjacency; see ``gaussian_release`` for the rounding's accounting.
* ``exponential_log_probs``: the exponential mechanism (McSherry & Talwar 2007),
  Pr[y | x] proportional to exp(eps * u(x, y) / (2 * Delta_u)); eps-DP for the adjacency under which
  the utility u has sensitivity Delta_u. With u = -d(x, y) and Delta_u = 1 it is the
  eps-metric-LDP form exp(-eps * d(x, y) / 2) used by SanText/CusText/CluSanT.
* ``sample_categorical``: draws one index per row of a (precomputed) log-probability table,
  vectorised over all rows with the Gumbel-max trick (the output is an index: its support does not
  depend on floating-point details).
"""
from __future__ import annotations

import math
import os

import numpy as np
from randomgen import ChaCha
from scipy.special import logsumexp

GRID_BITS = 30  # grid g = 2^(floor(log2 sigma) - GRID_BITS): the noise spans ~2^30 grid steps per sigma


def make_rng(deterministic: bool = False, seed: int = 0) -> np.random.Generator:
    """ChaCha20 keyed from ``os.urandom`` (a CSPRNG) unless ``deterministic`` (then PCG64(seed))."""
    if deterministic:
        return np.random.default_rng(seed)
    return np.random.Generator(ChaCha(key=int.from_bytes(os.urandom(32), "little"), rounds=20))


def discrete_gaussian(rng: np.random.Generator, sigma: float, size) -> np.ndarray:
    """Integers from the discrete Gaussian N_Z(0, sigma^2), Pr[y] proportional to exp(-y^2 / (2 sigma^2))
    (CKS20 Alg. 3): Y ~ DLap(t), t = floor(sigma) + 1, kept with probability
    exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2)); expected acceptance >= 0.5 for sigma >= 1. DLap(t) is the
    difference of two geometric variables with ratio e^(-1/t) (inverse CDF). The support is all of Z
    for any sigma; float arithmetic touches only the acceptance probabilities, never the support."""
    if not (sigma > 0 and math.isfinite(sigma)):
        raise ValueError(f"sigma must be a finite positive number, got {sigma}")
    n = int(np.prod(size))
    t = math.floor(sigma) + 1
    log_q = -1.0 / t
    out = np.empty(n, dtype=np.int64)
    todo = np.arange(n)
    while todo.size:
        u = rng.random((2, todo.size))
        g = np.floor(np.log1p(-u) / log_q)  # Geometric(1 - e^(-1/t)) failures, u in [0, 1)
        y = (g[0] - g[1]).astype(np.int64)
        keep = rng.random(todo.size) < np.exp(-((np.abs(y) - sigma**2 / t) ** 2) / (2.0 * sigma**2))
        out[todo[keep]] = y[keep]
        todo = todo[~keep]
    return out.reshape(size)


def noise_grid(sigma: float) -> float:
    """The power-of-two grid of ``gaussian_release`` for noise ``sigma``: 2^(floor(log2 sigma) - 30)."""
    return 2.0 ** (math.floor(math.log2(sigma)) - GRID_BITS)


def gaussian_release(rng: np.random.Generator, value, sigma: float, sensitivity: float) -> np.ndarray:
    """``value`` + Gaussian noise of standard deviation ``sigma``, released on the grid gZ.

    Guarantee: that of the continuous Gaussian mechanism N(0, sigma^2 I) whose accounting assumes every
    neighbouring shift is at most k * ``sensitivity`` in L2 (k = 1 for plain DP; k = the number of a
    secret's sampled records for SecPE's mixture pair, ``sensitivity`` then the one-record shift), with
    k = 0 meaning an identical value. Snapping both neighbours to the grid moves their difference by at
    most g sqrt(d) (d = value.size; identical values snap identically), so the noise is drawn with
    s = sigma (1 + g sqrt(d) / sensitivity): (k Delta + g sqrt(d)) / s <= k Delta / sigma for every
    k >= 1 -- the recorded pair still dominates. A smaller ``sensitivity`` than the calibrated one is
    conservative (more noise). The discrete Gaussian on gZ^d has the continuous Gaussian's Renyi curve
    for lattice shifts (CKS20 Thm. 14) and, per coordinate, no larger delta(eps) (CKS20 Thm. 7); the
    ledger accounts the continuous pair. ``sigma`` 0 returns the value (no protection; the charge says so).
    """
    value = np.asarray(value, dtype=np.float64)
    if sigma == 0:
        return value.copy()
    if not (sigma > 0 and math.isfinite(sigma)) or not sensitivity > 0:
        raise ValueError(f"need a finite sigma >= 0 and a sensitivity > 0, got {sigma}, {sensitivity}")
    grid = noise_grid(sigma)
    if value.size and np.abs(value).max() / grid >= 2.0**52:
        raise ValueError("value too large for the noise grid (|value| / grid >= 2^52)")
    s = sigma * (1.0 + grid * math.sqrt(max(value.size, 1)) / sensitivity)
    snapped = np.round(value / grid) * grid
    return snapped + grid * discrete_gaussian(rng, s / grid, value.shape).astype(np.float64)


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
