"""Tests of (p, r)-secret protection: conversions, SecretNoise LP, mixture-PLD sigma calibration."""
import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as dpa_pld
from scipy import optimize, sparse
from scipy.special import logsumexp
from scipy.stats import norm

from privtext.privacy import secret_protection as sp

# ---------------------------------------------------------------- conversions (Lemma 3.3, App. C)

def test_mu_r_round_trip_vectorised_and_stable_at_1e_12():
    p = np.array([1e-12, 1e-8, 1e-4, 0.1])
    r = 10 * p
    mu = sp.mu_from_pr(p, r)
    assert mu.shape == (4,) and np.all(mu > 0)
    np.testing.assert_allclose(sp.r_from_mu(p, mu), r, rtol=1e-9)
    # 1 - cdf would lose everything at p = 1e-12; isf keeps it: Phi^-1(1-1e-12) = 7.034484...
    assert sp.mu_from_pr(1e-12, 1e-11) == pytest.approx(7.034483825301131 - 6.706023155415345, rel=1e-9)


def test_gdp_delta_round_trip_and_large_eps():
    for mu in (0.5, 1.0, 3.0):
        for eps in (0.0, 1.0, 5.0):
            delta = sp.gdp_delta(mu, eps)
            assert sp.gdp_mu_from_eps_delta(eps, delta) == pytest.approx(mu, rel=1e-8)
    big = sp.gdp_delta(2.0, 60.0)  # e^60 * Phi(...) must not overflow or go negative
    assert 0.0 <= big < 1e-100


def test_lemma_c2_conversion():
    p, eps = 1e-4, 1.0
    pure = sp.r_from_eps_delta(eps, 0.0, p)
    assert pure == pytest.approx(p * np.e / (p * np.e + 1 - p), rel=1e-12)
    approx = sp.r_from_eps_delta(eps, 1e-6, p)
    # any c >= 1 is valid; the optimum is below c = 1 and above the pure-DP value
    c1 = 1 / (1 + (1 - p) / (p * (np.e + 1))) + 1e-6
    assert pure < approx <= c1
    np.testing.assert_allclose(sp.r_from_eps_delta(eps, 0.0, np.array([p, 2 * p]))[0], pure)


# ---------------------------------------------------------------- SecretNoise LP (Eq. 6) and rho

def _random_incidence(rng, n, m, q):
    dense = rng.random((n, m)) < q
    return sparse.csr_matrix(dense.astype(float)), dense


def test_lp_feasible_optimal_against_dense_solve():
    rng = np.random.default_rng(3)
    inc, dense = _random_incidence(rng, 60, 12, 0.12)
    eta = rng.uniform(0.2, 2.0, 12)
    w = sp.secret_noise_weights(inc, eta)
    assert np.all((w >= 0) & (w <= 1))
    assert np.all(dense.T.astype(float) @ w <= eta + 1e-7)
    free = ~dense.any(axis=1)
    assert free.any() and np.all(w[free] == 1.0)
    ref = optimize.linprog(-np.ones(60), A_ub=dense.T.astype(float), b_ub=eta, bounds=(0, 1), method="highs-ds")
    assert w.sum() == pytest.approx(-ref.fun, rel=1e-7)


def test_rho_in_unit_interval_and_secret_free_records_sampled_surely():
    rng = np.random.default_rng(4)
    inc, dense = _random_incidence(rng, 200, 30, 0.05)
    w = sp.secret_noise_weights(inc, sp.mu_from_pr(1e-4, 1e-3))
    rho = sp.sampling_probabilities(w)
    assert np.all((rho >= 0) & (rho <= 1))
    assert np.all(rho[~dense.any(axis=1)] == 1.0)
    # all records secret-bearing: the largest weight is scaled up to probability 1
    rho2 = sp.sampling_probabilities(np.array([0.2, 0.1, 0.0]))
    np.testing.assert_allclose(rho2, [1.0, 0.5, 0.0])


# ---------------------------------------------------------------- blow-up of the dominating pair

def test_blowup_single_gaussian_matches_closed_form_down_to_1e_12():
    # C = 1 surely: the T rounds of m releases are sqrt(mT)/sigma-GDP, B(a) = sf(isf(a) - mu)
    for alpha, sigma, rounds, m in [(1e-4, 2.0, 3, 2), (1e-12, 1.0, 1, 1)]:
        mu = np.sqrt(m * rounds) / sigma
        exact = norm.sf(norm.isf(alpha) - mu)
        got = sp.secret_blowup([0.0, 1.0], sigma, alpha, rounds, m)
        assert exact <= got <= exact * 1.02  # pessimistic grid 1e-3 per round: e^(2 T d) < 1.02


def test_mixture_pld_matches_dp_accounting_reference():
    pmf = sp.poisson_binomial_pmf([0.3, 0.5, 0.2])
    ours = sp.mixture_pld(pmf, 1.5, releases_per_round=1, discretization=1e-2)
    ref = dpa_pld.from_mixture_gaussian_mechanism(1.5, [0.0, 1.0, 2.0, 3.0], list(pmf),
                                                  value_discretization_interval=1e-2)
    eps = np.array([0.0, 1.0, 2.0, 3.0])
    d_ours, d_ref = ours.get_delta_for_epsilon(eps), ref._pmf_remove.get_delta_for_epsilon(eps)
    np.testing.assert_allclose(d_ours, d_ref, rtol=0.03)  # both pessimistic at grid 1e-2


def _mc_blowup(rng, pmf, sigma, rounds, m, alpha, n):
    """Monte Carlo Neyman-Pearson power at level alpha of the T-round mixture pair (P_j, Q_j)."""
    s = np.sqrt(m) * np.arange(len(pmf)) / sigma
    logw = np.log(np.maximum(pmf, 1e-300))

    def loss(y):  # log dP/dQ summed over rounds
        return logsumexp(logw[None, None, :] + y[..., None] * s - 0.5 * s**2, axis=-1).sum(axis=1)

    y_q = rng.standard_normal((n, rounds))
    c = rng.choice(len(pmf), size=(n, rounds), p=pmf)
    y_p = rng.standard_normal((n, rounds)) + s[c]
    threshold = np.quantile(loss(y_q), 1 - alpha)
    return float(np.mean(loss(y_p) > threshold))


def test_calibrated_mixture_sigma_against_monte_carlo_neyman_pearson():
    # one secret in 3 records with rho = (0.6, 0.3, 0.3); p = 0.01, r = 0.05 so that 4e5 draws give
    # sd(B_hat) ~ sqrt(r(1-r)/n) = 3.4e-4 plus the threshold's error (~ B'(p) * sqrt(p/n) ~ 3e-4)
    rho = np.array([0.6, 0.3, 0.3])
    inc = sparse.csr_matrix(np.ones((3, 1)))
    p, r, rounds, m = 0.01, 0.05, 3, 2
    sigma, binding, _, _ = sp.calibrate_sigma(inc, rho, p, r, rounds, m)
    assert binding == 0
    pmf = sp.poisson_binomial_pmf(rho)
    rng = np.random.default_rng(11)
    tol = 5 * 5e-4
    at = _mc_blowup(rng, pmf, sigma, rounds, m, p, 400_000)
    below = _mc_blowup(rng, pmf, 0.9 * sigma, rounds, m, p, 400_000)
    assert at <= r + tol
    assert at >= r - 0.01  # tight: the pessimistic grid costs little
    assert below > r + tol


def test_exact_between_mean_gaussian_and_worst_case_gaussian():
    rho = np.array([0.5, 0.4, 0.2])
    inc = sparse.csr_matrix(np.ones((3, 1)))
    p, r, rounds, m = 1e-4, 1e-3, 1, 2
    exact, *_ = sp.calibrate_sigma(inc, rho, p, r, rounds, m, method="exact")
    mean_gauss, *_ = sp.calibrate_sigma(inc, rho, p, r, rounds, m, method="gaussian")
    worst = np.sqrt(m * rounds) * 3 / sp.mu_from_pr(p, r)  # all 3 records sampled: dominates
    assert mean_gauss == pytest.approx(np.sqrt(m * rounds) * rho.sum() / sp.mu_from_pr(p, r))
    assert mean_gauss < exact < worst  # Jensen (T=1, shifts below isf(p)) and stochastic dominance
    # deterministic C (rho in {0, 1}): the mixture is one Gaussian and both methods agree
    det, *_ = sp.calibrate_sigma(inc, np.array([1.0, 1.0, 0.0]), p, r, 4, m, method="exact")
    det_g, *_ = sp.calibrate_sigma(inc, np.array([1.0, 1.0, 0.0]), p, r, 4, m, method="gaussian")
    assert det_g <= det <= det_g * 1.01


def test_pruned_calibration_equals_max_over_secrets():
    rng = np.random.default_rng(5)
    inc, dense = _random_incidence(rng, 16, 4, 0.2)
    rho = rng.uniform(0.0, 1.0, 16)
    p, r, rounds = 1e-3, 1e-2, 2
    sigma, binding, n_groups, _ = sp.calibrate_sigma(inc, rho, p, r, rounds)
    per_secret = [sp.calibrate_sigma(inc[:, [j]], rho, p, r, rounds)[0] for j in range(4)]
    assert sigma == pytest.approx(max(per_secret), rel=2e-3)
    assert per_secret[binding] == pytest.approx(sigma, rel=2e-3)
    assert n_groups == int((dense.sum(axis=0) > 0).sum())


def test_secret_noise_end_to_end_and_groups():
    rng = np.random.default_rng(6)
    inc, dense = _random_incidence(rng, 300, 20, 0.02)
    res = sp.secret_noise(inc, 1e-4, 1e-3, rounds=2, method="gaussian")
    assert res.expected_sampled == pytest.approx(res.rho.sum())
    assert res.sigma > 0 and 0 <= res.binding_secret < 20
    with pytest.raises(ValueError):
        sp.calibrate_sigma(inc, res.rho, 1e-3, 1e-4, 2)
