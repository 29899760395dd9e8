"""(p, r)-secret protection (SecPE, Sec. 3.1, 3.2.1, Alg. 1, App. C).

Adjacency (Def. 3.1): D ~_j D' differ only in the presence of secret s_j in the records that
contain it. Guarantee (Def. 3.2): for every secret j and every prior pi_j with mass <= p_j on each
candidate, no reconstruction attack succeeds with probability above r_j. By Hayes et al. (2023,
Thm. 2) it suffices that the blow-up function of a dominating pair (P_j, Q_j) of the mechanism,
B(alpha) = sup{P_j(E) : Q_j(E) <= alpha} = 1 - T(alpha), satisfies B(p_j) <= r_j.

This module holds the conversions (Lemma 3.3, Remark C.1, Lemma C.2) and SecretNoise. Thm. 3's naive
composition (p = min, r = sum) is not used: after one release the posterior exceeds p, so the next
release's (p, r) no longer applies; ``privacy.budget`` composes the dominating pairs instead.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from dp_accounting.pld import pld_pmf, privacy_loss_distribution as pld
from scipy import optimize, sparse
from scipy.special import logsumexp
from scipy.stats import norm

__all__ = [
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


# ---------------------------------------------------------------------------------------------
# SecretNoise (Alg. 1): linear program (Eq. 6) and sampling probabilities (line 4)
# ---------------------------------------------------------------------------------------------

def incidence_matrix(record_index, secret_index, n_records: int, n_secrets: int) -> sparse.csr_matrix:
    """Boolean record x secret incidence (CSR) from (record, secret) index pairs; duplicates merge."""
    rows, cols = np.asarray(record_index, dtype=np.int64), np.asarray(secret_index, dtype=np.int64)
    data = np.ones(rows.shape[0], dtype=np.float64)
    m = sparse.csr_matrix((data, (rows, cols)), shape=(n_records, n_secrets))
    m.data[:] = 1.0  # duplicates summed by the constructor count once
    return m


def secret_noise_weights(incidence: sparse.spmatrix, eta) -> np.ndarray:
    """Eq. 6: max sum_i w_i s.t. sum_{i in D_pri,j} w_i <= eta_j for every secret j, w in [0, 1].

    Solved with HiGHS interior point + crossover (``scipy.optimize.linprog``; a vertex, ~4 s at
    10^5 records x 10^4 secrets where dual simplex takes minutes) over the records that contain a secret; a record
    free of secrets is in no constraint, so its optimal weight is 1 and it is not sent to the solver.
    """
    inc = sparse.csr_matrix(incidence, dtype=np.float64)
    inc.data[:] = 1.0
    n_records, n_secrets = inc.shape
    eta = np.broadcast_to(np.asarray(eta, dtype=np.float64), (n_secrets,))
    if np.any(eta < 0):
        raise ValueError("eta must be >= 0 (r_j >= p_j)")
    w = np.ones(n_records)
    has_secret = np.diff(inc.indptr) > 0
    if not has_secret.any():
        return w
    a_ub = inc[has_secret].T.tocsr()  # secrets x constrained records
    res = optimize.linprog(
        c=-np.ones(a_ub.shape[1]), A_ub=a_ub, b_ub=eta, bounds=(0.0, 1.0), method="highs-ipm"
    )
    if res.status != 0:
        raise RuntimeError(f"SecretNoise LP failed: {res.message}")
    w[has_secret] = np.clip(res.x, 0.0, 1.0)
    return w


def sampling_probabilities(w: np.ndarray) -> np.ndarray:
    """Alg. 1 line 4, read as rho_i = V * w_i with V = 1 / max_i w_i.

    The printed formula rho_i = V * w_i / sum_i' w_i' is garbled: its rho sum to V = 1/max w, so the
    whole data set would contribute about one expected record (and Sec. 3.2.1's version
    1 / (max w * sum w) does not depend on i at all). Dropping the 1/sum w factor gives
    probabilities in [0, 1] that keep the LP's proportions, the largest weight sampled with
    probability 1, and a record free of secrets (w = 1, so max w = 1) sampled with probability 1.
    Privacy does not depend on this choice: sigma is calibrated to the rho actually used.
    """
    w = np.asarray(w, dtype=np.float64)
    if w.size == 0 or np.any((w < 0) | (w > 1)):
        raise ValueError("weights must be non-empty and in [0, 1]")
    top = w.max()
    return np.zeros_like(w) if top == 0 else np.minimum(w / top, 1.0)


# ---------------------------------------------------------------------------------------------
# sigma calibration (Alg. 1 lines 5-6)
# ---------------------------------------------------------------------------------------------

def poisson_binomial_pmf(rho) -> np.ndarray:
    """pmf of C = sum_i Bernoulli(rho_i) on {0, ..., len(rho)} (exact convolution)."""
    pmf = np.ones(1)
    for q in np.asarray(rho, dtype=np.float64):
        pmf = np.convolve(pmf, [1.0 - q, q])
    return pmf



def count_pmfs(rho_per_secret):
    """Per-round count pmfs of secrets given each one's record sampling probabilities (rounded up to
    2^-30, as ``calibrate_sigma`` does: a larger rho makes C stochastically larger), deduplicated:
    returns (pmfs, variant index per secret, records per secret)."""
    pmfs, index = [], {}
    variant = np.zeros(len(rho_per_secret), dtype=np.int64)
    for j, values in enumerate(rho_per_secret):
        key = tuple(sorted((np.ceil(np.asarray(values, dtype=np.float64) * 2.0**30) / 2.0**30).tolist(), reverse=True))
        if key not in index:
            index[key] = len(pmfs)
            pmfs.append(poisson_binomial_pmf(np.asarray(key)))
        variant[j] = index[key]
    return pmfs, variant, np.array([len(v) for v in rho_per_secret], dtype=np.int64)


def mixture_pld(count_pmf, noise: float, releases_per_round: int = 2, discretization: float = 1e-3,
                tail_mass: float = 1e-16) -> pld.PrivacyLossDistribution:
    """Pessimistic PLD of one round's pair P = sum_k Pr[C=k] N(sqrt(m) k, noise^2), Q = N(0, noise^2).

    The m Gaussian releases of a round (Alg. 2: noisy counts and noisy centres, each with L2
    sensitivity C after the 2R/n_k scaling) use the same sampled subset, so their joint pair is
    sum_k Pr[C=k] N(k 1_m, noise^2 I_m) vs N(0, noise^2 I_m); rotating 1_m/sqrt(m) onto an axis
    makes it the scalar mixture above (exact, not a bound; treating the m releases as independent
    mixtures would understate the loss). Only the direction P || Q (secret present vs absent) is
    needed for the blow-up B(alpha) = sup{P(E) : Q(E) <= alpha}.

    Built here rather than with ``pld.from_mixture_gaussian_mechanism``, which takes minutes at a
    fine grid: the privacy loss L(x) = log sum_k w_k exp(s_k x - s_k^2/2) (unit noise, s_k =
    sqrt(m) k / noise) is increasing in x, so the P-mass of each cell of a fine x-grid (cell width
    d / max s_k, so L moves by at most d in a cell) is put on L at the cell's right end rounded up to
    the grid d: every loss is rounded up, which makes delta(eps), hence B, upper bounds. The P-mass
    beyond the x-range and the atoms of C's upper tail of total mass < ``tail_mass`` go to the
    infinity mass (also an upper bound). Composition and delta(eps) are dp-accounting's.
    """
    w = np.asarray(count_pmf, dtype=np.float64)
    k = np.flatnonzero(w > 0)
    w = w[k]
    upper_tail = np.cumsum(w[::-1])[::-1]  # Pr[C >= k_i]
    keep = upper_tail > tail_mass
    keep[0] = True
    infinity = float(w[~keep].sum())
    k, w = k[keep], w[keep]
    s = np.sqrt(releases_per_round) * k / noise
    if s[-1] == 0:
        return pld.PrivacyLossDistribution(pld_pmf.DensePLDPmf(discretization, 0, np.array([1.0 - infinity]),
                                                               infinity, True))
    lo, hi = s[0] - 10.0, s[-1] + 10.0
    n_cells = int(np.ceil((hi - lo) * s[-1] / discretization))
    edges = np.linspace(lo, hi, n_cells + 1)
    # mixture CDF F on the edges, as sum_k w_k (Phi(z) if z < 0 else 1 - sf(z)), z = edge - s_k,
    # so that cell masses in the right tail come from sf differences (no cancellation)
    z = edges[:, None] - s[None, :]
    right = z >= 0
    cdf_left = np.where(right, 0.0, norm.cdf(z)) @ w
    sf_right = np.where(right, norm.sf(z), 0.0) @ w
    mass = np.maximum(np.diff(cdf_left) + np.diff(right @ w) - np.diff(sf_right), 0.0)
    mass[0] += cdf_left[0]  # P-mass left of lo has losses below the first cell's: rounded up into it
    infinity += float(sf_right[-1])  # P-mass right of hi
    loss = logsumexp(np.outer(edges[1:], s) - 0.5 * s**2, b=w, axis=1) - np.log(w.sum())
    idx = np.ceil(loss / discretization - 1e-9).astype(np.int64)
    base = int(idx.min())
    probs = np.bincount(idx - base, weights=mass)
    return pld.PrivacyLossDistribution(pld_pmf.DensePLDPmf(discretization, base, probs, infinity, True))


def blowup(privacy_loss: pld.PrivacyLossDistribution, alpha: float) -> float:
    """B(alpha) = sup{P(E) : Q(E) <= alpha} = 1 - T(alpha) from the privacy profile delta(eps).

    By convex duality B(alpha) = inf_eps [delta(eps) + e^eps alpha] (Dong et al. 2019, Prop. 2.12);
    for a discrete PLD the infimum is attained at one of its loss values, all multiples of the grid
    d, so it is taken over the grid points in [-5, log(1/alpha)] (a larger eps cannot help since
    e^eps alpha > 1 there). Every eps gives an upper bound, so the result is one for a pessimistic PLD.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    d = privacy_loss._pmf_remove._discretization  # noqa: SLF001 (grid of the PLD's loss values)
    eps = np.arange(np.floor(-5.0 / d), np.ceil(np.log(1.0 / alpha) / d) + 1) * d
    values = np.asarray(privacy_loss.get_delta_for_epsilon(eps)) + np.exp(eps) * alpha
    return float(min(1.0, values.min()))


def secret_blowup(count_pmf, sigma: float, alpha: float, rounds: int, releases_per_round: int = 2,
                  discretization: float = 1e-3) -> float:
    """Upper bound on B(alpha) of T rounds of Alg. 2 for one secret (Alg. 1 line 5).

    C = sum of Bernoulli(rho_i) over the secret's records is drawn afresh every round (Alg. 2
    line 7 runs inside each round of Alg. 3), so the T rounds are T independent mixtures and their
    PLDs compose (the T-fold product of the mixture pair, not the mixture of T-fold products).
    """
    per_round = mixture_pld(count_pmf, sigma, releases_per_round, discretization)
    return blowup(per_round.self_compose(rounds) if rounds > 1 else per_round, alpha)


def _one_round_blowup(pmfs: np.ndarray, sigma: np.ndarray, z: np.ndarray, m: int) -> np.ndarray:
    """Exact B(alpha) of a single round (T = 1): the Neyman-Pearson sets of all mixture components
    are the same half-line, so B = sum_k Pr[C=k] sf(z - sqrt(m) k / sigma), z = Phi^-1(1-alpha)."""
    k = np.arange(pmfs.shape[1])
    return (pmfs * norm.sf(z[:, None] - np.sqrt(m) * k[None, :] / sigma[:, None])).sum(axis=1)


@dataclass(frozen=True)
class SecretNoiseResult:
    """Output of ``secret_noise`` (Alg. 1)."""

    sigma: float  # noise multiplier of every Gaussian release of Alg. 2
    rho: np.ndarray  # sampling probability of each record
    weights: np.ndarray  # LP solution w (Eq. 6)
    mu: np.ndarray  # mu(p_j, r_j) per secret (= eta_j by default)
    binding_secret: int  # index of a secret with sigma_j = sigma (-1 if no secret constrains sigma)
    expected_sampled: float  # sum_i rho_i
    n_groups: int  # distinct (p, r, rho multiset) classes
    n_calibrated: int  # PLD evaluations (T-fold compositions) spent on the calibration


def calibrate_sigma(incidence: sparse.spmatrix, rho, p, r, rounds: int, releases_per_round: int = 2,
                    method: str = "exact", discretization: float = 1e-3, rel_tol: float = 1e-3):
    """Alg. 1 lines 5-6: sigma = max_j min{sigma : B_(P_j,Q_j)(p_j) <= r_j}.

    Returns (sigma, binding_secret, n_groups, n_calibrated).

    Guarantee: (p, r)-secret protection (Def. 3.2) of T rounds of Alg. 2 that sample record i with
    probability rho_i each round and make ``releases_per_round`` Gaussian releases of noise sigma
    (after Alg. 2's 2R/n_k scaling) with L2 sensitivity C_j each, under Def. 3.1's adjacency.

    method="exact" (default): the pair P_j = (sum_k Pr[C_j=k] N(sqrt(m) k, sigma^2))^{(x)T},
    Q_j = N(0, sigma^2)^{(x)T} through pessimistic PLDs (``secret_blowup``), sigma_j by bisection on
    log sigma to relative ``rel_tol``, returned on the safe side.
    method="gaussian": the paper's single-Gaussian reading, N(E[C_j], sigma^2) per release, i.e.
    sqrt(m T) E[C_j] / sigma = mu(p_j, r_j) (the capacity eta_j of Eq. 6 is this mean). It is NOT a
    guarantee: for a single round the exact B is E[sf(z - sqrt(m) C/sigma)], which exceeds
    sf(z - sqrt(m) E[C]/sigma) by Jensen wherever sf(z - .) is convex (shifts below z).

    Secrets are grouped by (p_j, r_j, rho multiset, rounded up to 2^-30: a larger rho makes C
    stochastically larger, so rounding up is safe). If C_a >= C_b stochastically, B_a >= B_b for
    every sigma (the likelihood ratio of each round's pair is increasing, so the one-round curves
    are ordered, and composition keeps the order); dominated groups are dropped. The rest are
    sorted by their exact one-round sigma (a lower bound on sigma_j); the first is calibrated, then
    the others are certified at that sigma in blocks through the CDF envelope of the block (a
    stochastically larger C), splitting blocks that fail down to single groups, which are bisected.
    """
    inc = sparse.csc_matrix(incidence, dtype=np.float64)
    n_secrets = inc.shape[1]
    rho = np.asarray(rho, dtype=np.float64)
    p = np.broadcast_to(np.asarray(p, dtype=np.float64), (n_secrets,))
    r = np.broadcast_to(np.asarray(r, dtype=np.float64), (n_secrets,))
    if method not in ("exact", "gaussian"):
        raise ValueError(f"method must be 'exact' or 'gaussian', got {method!r}")
    if rounds < 1 or releases_per_round < 1:
        raise ValueError("rounds and releases_per_round must be >= 1")
    groups = _rho_groups(inc, rho, p, r)
    if not groups:
        return 0.0, -1, 0, 0
    keys = list(groups)
    if method == "gaussian":
        sig = np.array([np.sqrt(releases_per_round * rounds) * sum(key[2]) / mu_from_pr(key[0], key[1])
                        for key in keys])
        g = int(np.argmax(sig))
        return float(sig[g]), groups[keys[g]][0], len(keys), len(keys)
    cal = _Calibration(keys, rounds, releases_per_round, discretization, rel_tol)
    for members in cal.classes():
        if cal.sigma < cal.hi[members[0]]:
            cal.raise_sigma(members[0])  # the largest lower bound of its class: calibrate it first
        cal.certify(members)
    binding = groups[keys[cal.binding]][0] if cal.binding >= 0 else -1
    return float(cal.sigma), int(binding), len(keys), cal.evals


def _rho_groups(inc: sparse.csc_matrix, rho: np.ndarray, p: np.ndarray, r: np.ndarray) -> dict[tuple, list[int]]:
    """Secrets grouped by (p_j, r_j, their rho multiset rounded up to 2^-30, descending); secrets never
    sampled or unconstrained (r_j >= 1) are left out."""
    mu = np.broadcast_to(mu_from_pr(p, r), (len(p),))
    grid = 2.0**30
    groups: dict[tuple, list[int]] = {}
    for j in range(len(p)):
        vals = np.ceil(rho[inc.indices[inc.indptr[j]:inc.indptr[j + 1]]] * grid) / grid
        vals = np.sort(vals[vals > 0])[::-1]
        if vals.size == 0 or r[j] >= 1:
            continue  # nothing of this secret is ever sampled, or no constraint
        if mu[j] <= 0:
            raise ValueError(f"secret {j}: r_j <= p_j cannot be met by any finite noise")
        groups.setdefault((p[j], r[j], tuple(vals)), []).append(j)
    return groups


class _Calibration:
    """The exact calibration's state: the groups' count PMFs/CDFs and one-round lower bounds (``lo``,
    ``hi``), the sigma reached so far, the group that set it (``binding``) and the PLD evaluations spent."""

    def __init__(self, keys: list[tuple], rounds: int, m: int, discretization: float, rel_tol: float):
        self.rounds, self.m, self.discretization, self.rel_tol = rounds, m, discretization, rel_tol
        self.pmfs = np.zeros((len(keys), max(len(key[2]) for key in keys) + 1))
        for g, key in enumerate(keys):
            pmf = poisson_binomial_pmf(np.asarray(key[2]))
            self.pmfs[g, : pmf.size] = pmf
        self.cdfs = np.cumsum(self.pmfs, axis=1)
        self.kp = np.array([key[0] for key in keys])
        self.kr = np.array([key[1] for key in keys])
        # exact one-round sigma of every group (vectorised bisection): a lower bound on sigma_j
        z = norm.isf(self.kp)
        lo, hi = np.full(len(keys), 1e-6), np.full(len(keys), 1e6)
        for _ in range(80):
            mid = np.sqrt(lo * hi)
            ok = _one_round_blowup(self.pmfs, mid, z, m) <= self.kr
            hi, lo = np.where(ok, mid, hi), np.where(ok, lo, mid)
        self.lo, self.hi = lo, hi
        self.sigma, self.binding, self.evals = 0.0, -1, 0

    def classes(self) -> list[list[int]]:
        """The undominated groups per (p, r) class, larger lower bounds first: if C_a >= C_b
        stochastically, B_a >= B_b for every sigma, so b is dropped."""
        frontier: list[int] = []
        for g in np.argsort(-self.hi):
            same = [f for f in frontier if self.kp[f] == self.kp[g] and self.kr[f] == self.kr[g]]
            if same and np.any(np.all(self.cdfs[same] <= self.cdfs[g] + 1e-15, axis=1)):
                continue
            frontier.append(int(g))
        by_class: dict[tuple, list[int]] = {}
        for g in frontier:
            by_class.setdefault((self.kp[g], self.kr[g]), []).append(g)
        return list(by_class.values())

    def fails(self, pmf: np.ndarray, g: int, sig: float) -> bool:
        self.evals += 1
        return secret_blowup(pmf, sig, self.kp[g], self.rounds, self.m, self.discretization) > self.kr[g]

    def raise_sigma(self, g: int) -> None:
        """Bisect group g's sigma on [low, high]: B(lo[g]) > r_g (one round already fails there); every
        value kept was checked (B <= r_g) and is >= the previous sigma, so covered groups stay covered."""
        low = max(self.lo[g], self.sigma)
        kmax = np.flatnonzero(self.pmfs[g] > 0)[-1]
        high = max(np.sqrt(self.m * self.rounds) * kmax / mu_from_pr(self.kp[g], self.kr[g]), low) * (1 + self.rel_tol)
        while self.fails(self.pmfs[g], g, high):  # worst-case Gaussian can fail only by the PLD's rounding
            low, high = high, high * 1.25
        while high / low > 1 + self.rel_tol:
            mid = np.sqrt(low * high)
            if self.fails(self.pmfs[g], g, mid):
                low = mid
            else:
                high = mid
        self.sigma, self.binding = high, g

    def certify(self, members: list[int]) -> None:
        """The pointwise minimum of the members' CDFs is a CDF that dominates every member, so one check
        of it at sigma certifies them all; otherwise split (members are in proxy order)."""
        env = np.diff(np.concatenate([[0.0], self.cdfs[members].min(axis=0)]))
        if not self.fails(env, members[0], self.sigma):
            return
        if len(members) == 1:
            self.raise_sigma(members[0])
            return
        half = len(members) // 2
        self.certify(members[:half])
        self.certify(members[half:])


def secret_noise(incidence: sparse.spmatrix, p, r, rounds: int, releases_per_round: int = 2,
                 method: str = "exact", eta=None, discretization: float = 1e-3) -> SecretNoiseResult:
    """Alg. 1 SECRETNOISE: LP weights (Eq. 6, eta_j = mu(p_j, r_j) unless given), sampling
    probabilities rho (line 4), and the noise sigma for ``rounds`` rounds (lines 5-6).

    ``incidence``: records x secrets (sparse, nonzero = record contains secret); ``p``, ``r``:
    scalars or one value per secret. See ``calibrate_sigma`` for the guarantee.
    """
    n_secrets = incidence.shape[1]
    mu = np.broadcast_to(np.asarray(mu_from_pr(p, r), dtype=np.float64), (n_secrets,)).copy()
    w = secret_noise_weights(incidence, mu if eta is None else eta)
    rho = sampling_probabilities(w)
    sigma, binding, n_groups, n_cal = calibrate_sigma(
        incidence, rho, p, r, rounds, releases_per_round, method, discretization
    )
    return SecretNoiseResult(sigma, rho, w, mu, binding, float(rho.sum()), n_groups, n_cal)
