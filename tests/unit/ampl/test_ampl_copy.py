"""The released view's copy component (issue 45): "the released token itself, with probability w".

A Gaussian around a regressed point cannot express a release that keeps a share of the secrets verbatim: the
MSE-optimal prediction shrinks the copied token towards the mean (40% of names verbatim scored 0.0000 on
fixture mail). The copy weight is fitted by maximum likelihood on the validation split; the prior has no
released token and no copy component, which can change Eq. 5 only on triplets whose released token is x_i
or x_j (``CopyComponent``'s docstring; checked exactly below).
"""
import math
from unittest import mock

import numpy as np
import pytest
import torch
from scipy.stats import binom

from privtext.ampl import audit as audit_module
from privtext.ampl.adversary import (
    COPY_TEST_LEVEL,
    CopyComponent,
    GaussianPosterior,
    copied_points,
    copy_test,
    fit_copy_weight,
)
from privtext.ampl.audit import audit_with_diagnostics, control_release
from privtext.ampl.mpl import mpl
from privtext.ampl.sequences import ReleasedSequences, split_rows
from privtext.ampl.settings import AmplSettings
from privtext.ampl.synthetic import boilerplate_secrets

CPU = torch.device("cpu")


@pytest.mark.parametrize(("copies", "beta"), [(400, 0.1), (700, 0.25), (100, 0.05)])
def test_copy_weight_is_the_closed_form_maximum_likelihood(copies, beta):
    # every observation: the Gaussian gives its truth (and the released token) mass beta; `copies` of 1,000
    # released their truth. LL(w) = n_c log(w + (1 - w) beta) + n_o log((1 - w) beta) is maximal at
    # w = (s - beta) / (1 - beta), s = n_c / n
    n = 1000
    a = (np.arange(n) < copies).astype(float)
    w = fit_copy_weight(np.full(n, math.log(beta)), a, np.full(n, beta))
    s = copies / n
    assert w == pytest.approx((s - beta) / (1 - beta), abs=1e-9)


def test_the_no_copying_test_is_the_exact_binomial_tail():
    rng = np.random.default_rng(3)
    for n, p in ((1, 0.035), (5, 0.2), (60, 0.1), (300, 0.02)):
        for k in range(0, min(n, 12) + 1):
            expected = binom.sf(k - 1, n, p) if k else 1.0  # P[Bin(n, p) >= k], independent computation
            assert copy_test(np.arange(n) < k, np.full(n, p)) == pytest.approx(expected, rel=1e-9, abs=1e-15)
    masses = rng.uniform(0, 0.3, size=8)  # Poisson-binomial: against enumeration of the 2^8 outcomes
    outcomes = np.array(np.meshgrid(*[[0, 1]] * 8)).reshape(8, -1).T
    probs = np.prod(np.where(outcomes == 1, masses, 1 - masses), axis=1)
    for k in range(9):
        assert copy_test(np.arange(8) < k, masses) == pytest.approx(probs[outcomes.sum(1) >= k].sum(), rel=1e-9)


def test_copy_weight_is_zero_without_copying_and_without_evidence():
    n, beta = 400, 0.1
    # a release independent of the secret: the released token is the truth as often as the Gaussian expects
    assert fit_copy_weight(np.full(n, math.log(beta)), (np.arange(n) < n * beta).astype(float), np.full(n, beta)) == 0
    for copies in range(41, 80):  # above beta: the ML w is positive, kept only where the binomial tail is < 1%
        w = fit_copy_weight(np.full(n, math.log(beta)), (np.arange(n) < copies).astype(float), np.full(n, beta))
        w_hat = (copies / n - beta) / (1 - beta)
        assert w == (pytest.approx(w_hat, abs=1e-9) if binom.sf(copies - 1, n, beta) < COPY_TEST_LEVEL else 0.0)
    # one copy where the Gaussian gave the released token 0.035 (what set a weekday group's w to 1 under an
    # asymptotic likelihood-ratio gate on the real CluSanT release): no evidence
    assert fit_copy_weight(np.array([math.log(0.035)]), np.ones(1), np.array([0.035])) == 0.0
    # an identity release: every token copied, capped below 1 by the floor
    assert fit_copy_weight(np.full(n, math.log(beta)), np.ones(n), np.full(n, beta), floor=1e-6) == pytest.approx(
        1 - 1e-6)


def test_copied_points_find_verbatim_tokens_and_share_mass_between_equal_embeddings():
    cand = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [0.5, 0.5]])  # candidates 1 and 2: one embedding
    released = np.array([[[1.0, 0.0], [0.0, 1.0], [0.51, 0.5]]], dtype=np.float32)
    batch = ReleasedSequences(released, np.ones((1, 3), dtype=bool), released.copy(), np.array([3]))
    points, multiplicity, copied = copied_points(batch, cand)
    assert copied[0] == points[0] and copied[1] == points[1] == points[2] and copied[2] == -1
    assert multiplicity[points[1]] == 2 and multiplicity[points[0]] == 1


def test_the_copy_component_changes_mpl_only_on_triplets_holding_the_released_token():
    # the asymmetry argument, exactly: released view = w C + (1 - w) q_G, prior = q_G with the same Gaussian
    rng = np.random.default_rng(7)
    k, n_obs = 12, 40
    cand, pred = rng.normal(size=(k, 3)), rng.normal(size=(n_obs, 3))
    copied = rng.integers(-1, k, size=n_obs)  # -1: a public replacement, nothing to copy
    weight = rng.uniform(0.05, 0.9, size=n_obs)
    comp = CopyComponent(np.arange(k), np.ones(k, dtype=np.int64), copied, weight)
    post = GaussianPosterior(pred, cand, 0.9, 1e-3, CPU, copy=comp)
    prior = GaussianPosterior(pred, cand, 0.9, 1e-3, CPU)
    obs, i, j = rng.integers(0, n_obs, 5000), rng.integers(0, k, 5000), rng.integers(0, k, 5000)
    keep = i != j
    obs, i, j = obs[keep], i[keep], j[keep]
    d = np.linalg.norm(cand[i] - cand[j], axis=1)
    with_copy = mpl(post.log_prob(obs, i), post.log_prob(obs, j), prior.log_prob(obs, i), prior.log_prob(obs, j), d)
    touched = (copied[obs] == i) | (copied[obs] == j)
    np.testing.assert_allclose(with_copy[~touched], 0.0, atol=1e-9)  # q_G's odds, to round-off
    assert np.all(with_copy[touched & (copied[obs] == i)] > 0)
    # and it is a distribution: sums to 1 over the candidates at every observation
    total = np.exp(post.log_prob(np.repeat(np.arange(n_obs), k), np.tile(np.arange(k), n_obs))).reshape(n_obs, k)
    np.testing.assert_allclose(total.sum(1), 1.0, rtol=1e-9)


TINY = AmplSettings(epochs=12, hidden_size=16, num_layers=1, heads=2, batch_size=16, dropout=0.0, triplets=4000,
                    device="cpu", pass_rule="ratio")


def _verbatim(secrets, cand, share, rng):
    """Each secret kept verbatim with probability ``share``, else replaced by a uniform candidate."""
    ids = np.where(secrets.mask, rng.integers(0, len(cand), size=secrets.secret_ids.shape), -1)
    keep = secrets.mask & (rng.random(ids.shape) < share)
    return secrets.release(np.where(keep, secrets.secret_ids, ids), cand)


def test_a_release_keeping_40_percent_verbatim_fails_and_failed_only_with_the_copy_component():
    seed = 0
    rng = np.random.default_rng(seed)
    secrets, cand = boilerplate_secrets(rng, n_docs=160, dim=6)
    train_rows, test_rows = split_rows(rng, secrets.mask.shape[0], 0.2)
    truth = secrets.take(test_rows).truth()

    def run(release):
        return audit_with_diagnostics(release.take(train_rows), release.take(test_rows), cand, truth,
                                      adversary="transformer", eps=0.5, settings=TINY,
                                      rng=np.random.default_rng(seed + 5))

    release = _verbatim(secrets, cand, 0.4, rng)
    leak, diag = run(release)
    # w is the share copied beyond what the Gaussian already gives the truth: (0.4 - beta) / (1 - beta) <= 0.4; the
    # validation split holds ~24 documents (~40 positions), so its binomial s.e. is ~0.08: 0.4 -/+ 3 s.e.
    assert 0.15 < diag.copy_weights[0] < 0.65
    # ~40% of held-out triplets hold a copied truth; a copy raises q(x_i | y) from the Gaussian's to >= w
    assert leak.violation_ratio > 4 * TINY.delta_target and not leak.passed
    with mock.patch.object(audit_module, "fit_copy_weights", lambda *a, **k: {}):  # the mutation: w forced to 0
        blind, _ = run(release)
    assert blind.passed  # the Gaussian alone does not see the leak: this test fails without the component
    uniform, diag = run(control_release(secrets, cand, "control_uniform", rng))
    assert diag.copy_weights[0] == 0.0  # the no-copying test keeps the component off
    assert uniform.violation_ratio < TINY.delta_target / 2
