"""Metric-normalized posterior leakage (mPL) and its probabilistic bound (PBmPL).

* ``mpl``: Def. 2 / Eq. 5, mPL(x_i, x_j, y) = |ln q(x_i|y)/q(x_j|y) - ln pi(x_i)/pi(x_j)| / d(x_i, x_j),
  from log-posteriors and log-priors (any normalisation: only differences enter).
* ``explicit_joint_posterior``: the exact Bayesian posterior of one secret X_l given a joint
  observation of L independently perturbed, *correlated* secrets (Eq. 4; the explicit
  joint-probability attacker of Sec. 2.4 and App. C.1).
* ``violation_ratio``: Eq. 12, the share of sampled triplets (x_i, x_j, y) with mPL > eps.
  ``true_secret_triplets``: the audit's triplets, x_i = the true secret of y, x_j another value of
  its type (Eq. 12 samples them uniformly; uniform triplets involve y's true secret with probability ~2/K, so with K in
  the hundreds an identity release (no sanitization) shows almost no violations; restricted to the true secret, the
  ratio separates identity (~all), sanitizers (a share) and a uniform replacement (~none)).
* ``log10_p_fail``: Prop. 4. Read correctly, the bound is a significance level, not a probability of
  the fixed number p: if the true violation probability were p >= delta, the chance that S i.i.d.
  triplets show a rate <= p_hat is at most exp(-2 S (delta - p_hat)^2) (one-sided Hoeffding; the
  paper's two-sided version carries an extra factor 2, kept here so the number matches Prop. 4).
  ``bound="chernoff"`` gives the tighter, equally valid Chernoff-KL bound exp(-S KL(p_hat || delta)).
  The triplet indicators are i.i.d. because triplets are drawn with replacement from the fixed set of
  held-out observations and candidates, so the guarantee concerns that population and the fixed
  (trained) adversary.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


def mpl(log_post_i, log_post_j, log_prior_i, log_prior_j, dist_ij) -> np.ndarray:
    """Eq. 5 (vectorised): |(ln q_i - ln q_j) - (ln pi_i - ln pi_j)| / d_ij; requires d_ij > 0."""
    dist_ij = np.asarray(dist_ij, dtype=np.float64)
    if np.any(dist_ij <= 0):
        raise ValueError("mPL is defined for distinct secrets only (d(x_i, x_j) > 0)")
    shift = (np.asarray(log_post_i) - np.asarray(log_post_j)) - (np.asarray(log_prior_i) - np.asarray(log_prior_j))
    return np.abs(shift) / dist_ij


def explicit_joint_posterior(joint_prior: np.ndarray, channel: np.ndarray, observation, position: int) -> np.ndarray:
    """Pr[X_position = x | M(X_1..X_L) = observation] for an explicit joint prior (App. C.1, Eq. 34-41).

    ``joint_prior`` has shape (K,)*L (Pr[X_1=x_a, ..., X_L=x_z]); ``channel[x, y]`` = Pr[M(x) = y] is
    applied independently to every component; ``observation`` is the tuple of L output indices.
    Cost O(K^L): the exact attacker the paper calls impractical beyond toy sizes.
    """
    joint_prior = np.asarray(joint_prior, dtype=np.float64)
    channel = np.asarray(channel, dtype=np.float64)
    weight = joint_prior.copy()
    for axis, y in enumerate(observation):
        shape = [1] * weight.ndim
        shape[axis] = -1
        weight = weight * channel[:, y].reshape(shape)
    marginal = weight.sum(axis=tuple(a for a in range(weight.ndim) if a != position))
    return marginal / marginal.sum()


def prior_marginal(joint_prior: np.ndarray, position: int) -> np.ndarray:
    """Pr[X_position = x] from an explicit joint prior."""
    joint_prior = np.asarray(joint_prior, dtype=np.float64)
    return joint_prior.sum(axis=tuple(a for a in range(joint_prior.ndim) if a != position))


@dataclass(frozen=True)
class Triplets:
    """S triplets (x_i, x_j, y): observation index, two candidate indices and d(x_i, x_j) > 0."""

    obs: np.ndarray
    i: np.ndarray
    j: np.ndarray
    dist: np.ndarray


Distance = Callable[[np.ndarray, np.ndarray], np.ndarray]  # candidate index pairs (i, j) -> d(x_i, x_j)


def true_secret_triplets(rng: np.random.Generator, truth: np.ndarray, candidates: np.ndarray, count: int,
                         groups: np.ndarray | None = None, distance: Distance | None = None,
                         eligible: np.ndarray | None = None) -> Triplets:
    """i.i.d. triplets (y, x_i, x_j): y uniform among the observations, x_i = the true secret of y
    (``truth[y]``, an index into ``candidates``), x_j uniform among the candidates of x_i's group (the
    sanitizer's adjacency: two values of one span, i.e. of one entity type; all candidates if no
    ``groups``) at distance > 0. Observations whose group has no other candidate are not sampled.
    ``distance``: the metric d of Eq. 5, which must be the metric of the audited guarantee (the
    mechanism's D_k for CluSanT); default the Euclidean distance of the candidate rows. ``eligible``: a
    boolean per observation, only those are sampled (the audit's unseen units); default all."""
    truth = np.asarray(truth, dtype=np.int64)
    k = candidates.shape[0]
    groups = np.zeros(k, dtype=np.int64) if groups is None else np.unique(np.asarray(groups), return_inverse=True)[1]
    order = np.argsort(groups, kind="stable")  # the members of group g: order[start[g]:start[g] + size[g]]
    size = np.bincount(groups)
    start = np.concatenate([[0], np.cumsum(size)[:-1]])
    keep = size[groups[truth]] > 1
    if eligible is not None:
        keep &= np.asarray(eligible, dtype=bool)
    usable = np.flatnonzero(keep)
    if usable.size < 1:
        raise ValueError("need an observation whose secret has another candidate of its type")
    obs = usable[rng.integers(0, usable.size, size=count)]
    i = truth[obs]

    def draw(rows):  # uniform within x_i's group, vectorised (a Python loop over 10^5 triplets took seconds)
        g = groups[i[rows]]
        return order[start[g] + np.minimum((rng.random(len(rows)) * size[g]).astype(np.int64), size[g] - 1)]

    distance = distance or (lambda a, b: _pair_dist(candidates, a, b))
    j = draw(np.arange(count))
    dist = np.asarray(distance(i, j), dtype=np.float64)
    for _ in range(1000):
        bad = dist <= 0
        if not bad.any():
            return Triplets(obs=obs, i=i, j=j, dist=dist)
        j[bad] = draw(np.flatnonzero(bad))
        dist[bad] = distance(i[bad], j[bad])
    raise ValueError("candidate set has (almost) no pair of distinct secrets")


def _pair_dist(candidates: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    diff = candidates[i].astype(np.float64) - candidates[j].astype(np.float64)
    return np.sqrt((diff * diff).sum(axis=1))


def violation_ratio(mpl_values: np.ndarray, eps: float) -> float:
    """Eq. 12: empirical share of triplets with mPL > eps."""
    return float(np.mean(np.asarray(mpl_values) > eps))


def log10_p_fail(ratio: float, triplets: int, delta: float, bound: str = "hoeffding") -> float:
    """log10 of the Prop. 4 failure bound for an observed violation ratio over S ``triplets``.

    hoeffding: log10(2 exp(-2 S (1 - xi)^2 delta^2)) with xi = ratio / delta (Prop. 4 as stated);
    chernoff: log10 exp(-S KL(ratio || delta)) (Bernoulli KL). Both are capped at 0 (a bound of 1) and
    are 0 when ratio >= delta, where the data give no evidence that p <= delta.
    """
    if not 0 < delta < 1:
        raise ValueError("delta must be in (0, 1)")
    if ratio >= delta:
        return 0.0
    if bound == "hoeffding":
        value = math.log10(2.0) - 2.0 * triplets * (delta - ratio) ** 2 / math.log(10.0)
    elif bound == "chernoff":
        kl = bernoulli_kl(ratio, delta)
        value = -triplets * kl / math.log(10.0)
    else:
        raise ValueError(f"unknown bound {bound!r}; allowed: hoeffding, chernoff")
    return min(0.0, value)


def bernoulli_kl(a: float, b: float) -> float:
    """Bernoulli KL divergence KL(a || b) in nats (0 ln 0 = 0)."""
    terms = 0.0
    if a > 0:
        terms += a * math.log(a / b)
    if a < 1:
        terms += (1 - a) * math.log((1 - a) / (1 - b))
    return terms


def floor_log_probs(logp: np.ndarray, floor: float, k: int) -> np.ndarray:
    """log((1 - floor) p + floor / k) for log-probabilities over k outcomes: every posterior stays
    >= floor / k (Prop. 5, A1), so no log-ratio is infinite."""
    if floor <= 0:
        return np.asarray(logp)
    return np.logaddexp(math.log1p(-floor) + np.asarray(logp), math.log(floor / k))
