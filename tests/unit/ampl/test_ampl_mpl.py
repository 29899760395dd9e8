import math

import numpy as np
import pytest
from scipy.stats import binom

from privtext.ampl.adversary import GaussianPosterior
from privtext.ampl.mpl import (
    explicit_joint_posterior,
    floor_log_probs,
    log10_p_fail,
    mpl,
    prior_marginal,
    true_secret_triplets,
    violation_ratio,
)
from privtext.ampl.perturb import euclidean_distances, tiered_em_log_probs

# Sec. 2.4 / App. C.1: correlated prior over (X1, X2), EM channel 0.72 / 0.28, eps = 1, d(x1, x2) = 1.
JOINT = np.array([[0.01, 0.49], [0.49, 0.01]])
CHANNEL = np.array([[0.72, 0.28], [0.28, 0.72]])


def _mpl_of(posterior, prior):
    return float(mpl(np.log(posterior[0]), np.log(posterior[1]), np.log(prior[0]), np.log(prior[1]), 1.0))


def test_sec_2_4_single_observation_mpl_is_0_944():
    prior = prior_marginal(JOINT, 0)
    for y in (0, 1):
        # single observation of X1: marginalise X2 out of the prior, observe only one record
        post = explicit_joint_posterior(prior, CHANNEL, (y,), 0)
        assert round(_mpl_of(post, prior), 3) == 0.944
        assert _mpl_of(post, prior) == pytest.approx(math.log(0.72 / 0.28), abs=1e-12)


def test_sec_2_4_joint_observation_mpl_is_1_846():
    post = explicit_joint_posterior(JOINT, CHANNEL, (0, 1), 0)  # M(X1) = y1, M(X2) = y2
    value = _mpl_of(post, prior_marginal(JOINT, 0))
    assert round(value, 3) == 1.846
    assert value == pytest.approx(math.log(0.256032 / 0.040432), abs=1e-12)  # Eq. 41
    assert value > 1.0 > round(math.log(0.72 / 0.28), 3)  # joint violates eps = 1, single does not


def test_independent_secrets_joint_equals_single_prop_3():
    rng = np.random.default_rng(1)
    p1, p2 = rng.dirichlet(np.ones(3)), rng.dirichlet(np.ones(3))
    channel = rng.dirichlet(np.ones(4), size=3)
    joint = np.outer(p1, p2)
    for y in [(0, 1), (2, 3), (1, 1)]:
        joint_post = explicit_joint_posterior(joint, channel, y, 0)
        single_post = explicit_joint_posterior(p1, channel, (y[0],), 0)
        np.testing.assert_allclose(joint_post, single_post, rtol=1e-12)


def test_k_randomized_response_mpl_equals_eps():
    # k-RR with the discrete metric (d = 1): Pr[y = x] = e^eps / (e^eps + k - 1). Its posterior-odds
    # shift is exactly eps when y is one of the pair and 0 otherwise, for ANY prior (Prop. 2).
    eps, k = 0.7, 4
    channel = np.full((k, k), 1.0 / (math.exp(eps) + k - 1))
    np.fill_diagonal(channel, math.exp(eps) / (math.exp(eps) + k - 1))
    prior = np.array([0.1, 0.2, 0.3, 0.4])
    for y in range(k):
        post = explicit_joint_posterior(prior, channel, (y,), 0)
        for i in range(k):
            for j in range(k):
                if i == j:
                    continue
                value = mpl(np.log(post[i]), np.log(post[j]), np.log(prior[i]), np.log(prior[j]), 1.0)
                expected = eps if y in (i, j) else 0.0
                assert value == pytest.approx(expected, abs=1e-12)


def test_exponential_mechanism_single_observation_mpl_is_its_likelihood_ratio_and_bounded_by_eps():
    # Prop. 2: single-observation mPL = |ln Pr[y|x_i]/Pr[y|x_j]| / d <= eps for the (eps, d)-mDP EM.
    rng = np.random.default_rng(2)
    points = rng.normal(size=(5, 3))
    eps = 0.9
    log_channel = tiered_em_log_probs(points, np.ones(5, dtype=int), points, eps, (1.0,))
    dist = euclidean_distances(points, points)
    prior = rng.dirichlet(np.ones(5))
    worst = 0.0
    for y in range(5):
        post = explicit_joint_posterior(prior, np.exp(log_channel), (y,), 0)
        for i in range(5):
            for j in range(5):
                if i != j:
                    value = mpl(np.log(post[i]), np.log(post[j]), np.log(prior[i]), np.log(prior[j]), dist[i, j])
                    theory = abs(log_channel[i, y] - log_channel[j, y]) / dist[i, j]
                    assert value == pytest.approx(theory, abs=1e-10)
                    worst = max(worst, value)
    assert worst <= eps + 1e-12


def test_mpl_rejects_identical_secrets():
    with pytest.raises(ValueError):
        mpl(0.0, 0.0, 0.0, 0.0, 0.0)


def test_violation_ratio_matches_direct_loop():
    rng = np.random.default_rng(3)
    candidates = rng.normal(size=(6, 2))
    candidates[5] = candidates[4]  # a duplicate: pairs (4, 5) must never be drawn
    log_post = np.log(rng.dirichlet(np.ones(6), size=10))
    log_prior = np.log(rng.dirichlet(np.ones(6), size=10))
    truth = rng.integers(0, 6, size=10)
    t = true_secret_triplets(rng, truth, candidates, 2000)
    assert np.all(t.dist > 0) and not np.any((np.minimum(t.i, t.j) == 4) & (np.maximum(t.i, t.j) == 5))
    assert np.array_equal(t.i, truth[t.obs])  # x_i is always the observation's true secret
    values = mpl(log_post[t.obs, t.i], log_post[t.obs, t.j], log_prior[t.obs, t.i], log_prior[t.obs, t.j], t.dist)
    eps = 0.8
    direct = 0
    for o, i, j in zip(t.obs, t.i, t.j):
        d = np.linalg.norm(candidates[i] - candidates[j])
        shift = math.log(math.exp(log_post[o, i]) / math.exp(log_post[o, j])) - (log_prior[o, i] - log_prior[o, j])
        direct += abs(shift) / d > eps
    assert violation_ratio(values, eps) == direct / len(t.obs)


def test_prop_4_bound_matches_formula():
    s, delta, ratio = 500, 0.1, 0.04
    xi = ratio / delta
    assert log10_p_fail(ratio, s, delta) == pytest.approx(math.log10(2 * math.exp(-2 * s * (1 - xi) ** 2 * delta ** 2)))
    kl = ratio * math.log(ratio / delta) + (1 - ratio) * math.log((1 - ratio) / (1 - delta))
    assert log10_p_fail(ratio, s, delta, "chernoff") == pytest.approx(-s * kl / math.log(10))
    assert log10_p_fail(0.1, s, delta) == 0.0 and log10_p_fail(0.2, s, delta, "chernoff") == 0.0
    assert log10_p_fail(0.099, 10, delta) == 0.0  # a bound above 1 is capped at 1
    with pytest.raises(ValueError):
        log10_p_fail(0.0, s, delta, "bogus")


@pytest.mark.parametrize("bound", ["hoeffding", "chernoff"])
def test_prop_4_bound_is_valid_against_exact_binomial(bound):
    # If the true violation probability is delta, Pr[p_hat <= a] is the binomial CDF; the bound
    # must dominate it at every a < delta (validity of the audit's significance level).
    s, delta = 400, 0.1
    for count in range(0, 40):
        a = count / s
        exact = binom.cdf(count, s, delta)
        assert math.log10(exact) <= log10_p_fail(a, s, delta, bound) + 1e-12


def test_gaussian_posterior_matches_dense_softmax_and_is_a_distribution():
    rng = np.random.default_rng(4)
    pred, cand = rng.normal(size=(7, 3)), rng.normal(size=(5, 3))
    import torch

    post = GaussianPosterior(pred, cand, scale=0.7, floor=1e-3, device=torch.device("cpu"), chunk_elems=10)
    obs, cands = np.repeat(np.arange(7), 5), np.tile(np.arange(5), 7)
    got = post.log_prob(obs, cands).reshape(7, 5)
    logits = -((pred[:, None] - cand[None]) ** 2).sum(-1) / 0.7
    dense = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    np.testing.assert_allclose(got, floor_log_probs(dense, 1e-3, 5), rtol=1e-10)
    np.testing.assert_allclose(np.exp(got).sum(1), 1.0, rtol=1e-12)
    assert np.exp(got).min() >= 1e-3 / 5 * (1 - 1e-12)


def test_an_exact_adversary_of_clusant_shows_no_violation_in_d_k_but_does_in_euclidean_distance():
    """The audit's distance must be the guarantee's metric. Exact Bayes posteriors of a CluSanT release
    (k = 4, so D_k grows across clusters): mPL <= eps for every (x_i, x_j, y) with d = D_k (the mechanism's
    ``metric``, an independent enumeration of its output distribution), while the plain Euclidean distance
    counts violations of a release that keeps its bound; the triplet sampler uses the given distance."""
    from privtext.ampl.mpl import true_secret_triplets
    from privtext.clusant.clustering import cluster_vocabulary
    from privtext.clusant.mechanism import build_mechanism

    rng = np.random.default_rng(4)
    emb = rng.normal(size=(60, 8))
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    vocab, inputs = emb[:48], emb[48:]
    eps = 2.0
    mech = build_mechanism("clusant", vocab, cluster_vocabulary(vocab, "kmeans", 6, np.random.default_rng(0)), eps, 4.0)
    log_channel = np.log(np.stack([mech.probabilities(x) for x in inputs]))  # [inputs, outputs], exact
    pairs = [(i, j) for i in range(len(inputs)) for j in range(len(inputs)) if i != j]
    i, j = (np.array(v) for v in zip(*pairs))
    shift = np.abs(log_channel[i] - log_channel[j]).max(axis=1)  # uniform prior: mPL numerator, worst y
    d_k = mech.metric(inputs[i], inputs[j])
    euclid = np.linalg.norm(inputs[i] - inputs[j], axis=1)
    assert (shift / d_k).max() <= eps + 1e-9
    assert (shift / euclid > eps).any()  # the wrong metric: a release that keeps its bound "violates"
    t = true_secret_triplets(rng, np.arange(len(inputs)), inputs, 500, distance=lambda a,
                             b: mech.metric(inputs[a], inputs[b]))
    assert np.allclose(t.dist, mech.metric(inputs[t.i], inputs[t.j]))
