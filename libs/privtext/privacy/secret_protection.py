"""(p, r)-secret protection (SecPE, Sec. 3.1, 3.2.1, Alg. 1, App. C).

Adjacency (Def. 3.1): D ~_j D' differ only in the presence of secret s_j in the records that
contain it. Guarantee (Def. 3.2): for every secret j and every prior pi_j with mass <= p_j on each
candidate, no reconstruction attack succeeds with probability above r_j. By Hayes et al. (2023,
Thm. 2) it suffices that the blow-up function of a dominating pair (P_j, Q_j) of the mechanism,
B(alpha) = sup{P_j(E) : Q_j(E) <= alpha} = 1 - T(alpha), satisfies B(p_j) <= r_j.

This module holds the conversions (Lemma 3.3, Remark C.1, Lemma C.2, Thm. 3) and SecretNoise.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import optimize
from scipy.stats import norm

__all__ = [
    "compose_pr",
    "gdp_delta",
    "gdp_mu_from_eps_delta",
    "mu_from_pr",
    "r_from_eps_delta",
    "r_from_mu",
]


# ---------------------------------------------------------------------------------------------
# Lemma 3.3 and App. C conversions
# ---------------------------------------------------------------------------------------------

def mu_from_pr(p, r):
    """mu(p, r) = Phi^-1(1-p) - Phi^-1(1-r) (Lemma 3.3 inverted); vectorised over secrets.

    A mu-GDP mechanism gives (p, r)-secret protection for every (p, r) with mu(p, r) >= mu.
    Computed with ``norm.isf`` so that p, r down to 1e-300 keep full relative precision.
    """
    p, r = np.asarray(p, dtype=np.float64), np.asarray(r, dtype=np.float64)
    if np.any((p <= 0) | (p >= 1)) or np.any((r <= 0) | (r > 1)):
        raise ValueError("need 0 < p < 1 and 0 < r <= 1")
    out = norm.isf(p) - norm.isf(r)
    return out if out.ndim else float(out)


def r_from_mu(p, mu):
    """r(p, mu) = 1 - Phi(Phi^-1(1-p) - mu) (Lemma 3.3, Eq. 4): the blow-up of mu-GDP at p."""
    p, mu = np.asarray(p, dtype=np.float64), np.asarray(mu, dtype=np.float64)
    if np.any((p <= 0) | (p >= 1)) or np.any(mu < 0):
        raise ValueError("need 0 < p < 1 and mu >= 0")
    out = norm.sf(norm.isf(p) - mu)
    return out if out.ndim else float(out)


def gdp_delta(mu: float, epsilon):
    """delta(eps) of mu-GDP (Remark C.1, Dong et al. 2019 Cor. 2.13), vectorised over eps.

    delta = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2); the second term is evaluated in log
    space so that large eps neither overflows nor cancels catastrophically.
    """
    eps = np.asarray(epsilon, dtype=np.float64)
    if mu <= 0:
        return np.zeros_like(eps) if eps.ndim else 0.0
    a = norm.logcdf(-eps / mu + mu / 2)
    b = eps + norm.logcdf(-eps / mu - mu / 2)
    out = np.exp(a) * -np.expm1(np.minimum(b - a, 0.0))
    return out if out.ndim else float(out)


def gdp_mu_from_eps_delta(epsilon: float, delta: float) -> float:
    """Largest mu such that mu-GDP implies (eps, delta)-DP, i.e. gdp_delta(mu, eps) = delta."""
    if epsilon < 0 or not 0 < delta < 1:
        raise ValueError(f"need eps >= 0 and 0 < delta < 1, got {epsilon}, {delta}")
    hi = 1.0
    while gdp_delta(hi, epsilon) < delta:
        hi *= 2.0
    return float(optimize.brentq(lambda m: gdp_delta(m, epsilon) - delta, 1e-12, hi, xtol=1e-12, rtol=1e-12))


def r_from_eps_delta(epsilon: float, delta: float, p):
    """(eps, delta)-DP -> (p, r)-secret protection (Lemma C.2), minimised over its free c >= 1.

    r = 1 / (1 + (e^eps + 1/c)^-1 (1-p)/p) + c*delta. For delta = 0 (c -> inf) this is
    p e^eps / (p e^eps + 1 - p), the success of K-ary randomized response with K = 1/p.
    """
    p = np.asarray(p, dtype=np.float64)
    if epsilon < 0 or not 0 <= delta < 1 or np.any((p <= 0) | (p >= 1)):
        raise ValueError("need eps >= 0, 0 <= delta < 1, 0 < p < 1")

    def r_of(c, pj):
        return 1.0 / (1.0 + (1.0 - pj) / (pj * (math.exp(epsilon) + 1.0 / c))) + c * delta

    def best(pj):
        if delta == 0:
            return 1.0 / (1.0 + math.exp(-epsilon) * (1.0 - pj) / pj)
        res = optimize.minimize_scalar(lambda lc: r_of(math.exp(lc), pj), bounds=(0.0, 60.0),
                                       method="bounded", options={"xatol": 1e-10})
        return min(1.0, float(min(res.fun, r_of(1.0, pj))))

    out = np.vectorize(best, otypes=[np.float64])(p)
    return out if out.ndim else float(out)


def compose_pr(ps, rs):
    """Naive composition (Thm. 3): mechanisms with (p_i, r_i) compose to (min_i p_i, sum_i r_i),
    coordinate-wise per secret. ``ps``, ``rs``: shape (k,) or (k, m) for k mechanisms, m secrets.

    Correction to the paper: Thm. 3 states p = max_i p_i, but its proof needs a prior that is valid
    for every component (pi(i) <= p_i for all i), i.e. p = min_i p_i; with the max, a component's
    guarantee would be applied to priors it does not cover. With equal p_i (the usual case) the
    two agree.
    """
    ps, rs = np.asarray(ps, dtype=np.float64), np.asarray(rs, dtype=np.float64)
    if ps.shape != rs.shape or ps.ndim == 0:
        raise ValueError("ps and rs need the same shape (k,) or (k, m)")
    return ps.min(axis=0), np.minimum(rs.sum(axis=0), 1.0)
