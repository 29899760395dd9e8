"""Bayesian remapping (Sec. 3 step 4, Eq. 15; Chatzikokolakis et al. 2017) as post-processing.

f(y) = argmin_{y'} sum_x Pr[x | y] c(x, y'), Pr[x | y] proportional to pi_x Pr[M(x) = y], rows x = the
secrets (each with its tier's mechanism, so the sum over tiers of Eq. 15 is a sum over rows).
f depends only on public quantities (mechanism, prior, cost) and y, so by Prop. 1 the remapped
release keeps the mPL (and mDP) guarantee of the release it is applied to.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp


@dataclass(frozen=True)
class Remap:
    """posterior: [K_out, m] Pr[x | y] per observed output y; choice: [K_out] remapped output f(y)."""

    posterior: np.ndarray
    choice: np.ndarray


def bayes_remap(prior: np.ndarray, log_channel: np.ndarray, cost: np.ndarray) -> Remap:
    """Eq. 15 for every output y. ``prior`` [m] (>= 0), ``log_channel`` [m, K_out] = log Pr[M(x) = y],
    ``cost`` [m, K'] = c(x, y') over the remap targets. An output no secret can produce keeps the
    prior as its posterior."""
    prior = np.asarray(prior, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_joint = np.log(prior)[:, None] + np.asarray(log_channel, dtype=np.float64)
        norm = logsumexp(log_joint, axis=0)
        posterior = np.where(np.isfinite(norm)[:, None], np.exp(log_joint.T - norm[:, None]), prior / prior.sum())
    choice = np.argmin(posterior @ np.asarray(cost, dtype=np.float64), axis=1)
    return Remap(posterior=posterior, choice=choice)
