"""The audit's controls on repetitive mail (issue 45): one Gaussian scale for the posterior and the prior.

The cause: mPL (Eq. 5) subtracts the prior's log-odds from the posterior's. With a scale per view, an
adversary that predicts the same p in both views (it learnt nothing from the release) still shows the shift
(||p - x_j||^2 - ||p - x_i||^2)(1/s_post - 1/s_prior), which is d^2 (1/s_post - 1/s_prior) where the context
predicts the secret (p = x_i: list boilerplate, one value in hundreds of mails), the same for every
occurrence of the value. With one scale the shift is 2 (p' - p).(x_i - x_j) / s: zero when p' = p.
"""
import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from privtext.ampl.adversary import TEMPERATURE_GRID, GaussianPosterior, nearest_candidate, shared_scale
from privtext.ampl.audit import audit_with_diagnostics, control_release, controls_valid
from privtext.ampl.mpl import mpl
from privtext.ampl.sequences import ReleasedSequences, split_rows
from privtext.ampl.settings import AmplSettings
from privtext.ampl.synthetic import boilerplate_secrets

CPU = torch.device("cpu")


def _view(pred, val_mse):
    return SimpleNamespace(predict=lambda batch: pred, val_mse=val_mse, device=CPU)


def _val(targets):
    n, dim = targets.shape
    original = targets.reshape(n, 1, dim).astype(np.float32)
    return ReleasedSequences(original.copy(), np.ones((n, 1), dtype=bool), original, np.ones(n, dtype=np.int64))


def test_two_scales_show_a_shift_where_the_adversary_learnt_nothing_one_scale_shows_none():
    rng = np.random.default_rng(0)
    cand = rng.normal(size=(5, 4))
    p = cand[0] + 0.01 * rng.normal(size=4)  # the context predicts x_0 (boilerplate); both views predict p
    i, j = np.zeros(4, dtype=np.int64), np.arange(1, 5)
    s_prior = 1.0
    s_post = s_prior / math.sqrt(2)  # one step of the temperature grid apart
    post = GaussianPosterior(p[None], cand, s_post, 0.0, CPU)
    prior = GaussianPosterior(p[None], cand, s_prior, 0.0, CPU)
    obs = np.zeros(4, dtype=np.int64)
    d = np.linalg.norm(cand[i] - cand[j], axis=1)
    two = mpl(post.log_prob(obs, i), post.log_prob(obs, j), prior.log_prob(obs, i), prior.log_prob(obs, j), d)
    gap = ((p - cand[j]) ** 2).sum(1) - ((p - cand[i]) ** 2).sum(1)
    np.testing.assert_allclose(two, np.abs(gap) * (1 / s_post - 1 / s_prior) / d, rtol=1e-9)  # the closed form
    assert np.all(two > 0.2 * d)  # ~ d (sqrt 2 - 1): over any eps below that for every occurrence of the value
    one = mpl(prior.log_prob(obs, i), prior.log_prob(obs, j), prior.log_prob(obs, i), prior.log_prob(obs, j), d)
    assert np.all(one == 0)


def test_shared_scale_is_the_grid_temperature_of_the_summed_validation_nll():
    rng = np.random.default_rng(1)
    cand = rng.normal(size=(30, 5))
    targets = cand[rng.integers(0, 30, size=60)]
    preds = [targets + rng.normal(scale=s, size=targets.shape) for s in (0.3, 0.8)]
    views = [_view(p, float(np.mean((p - targets) ** 2))) for p in preds]  # val_mse as the adversary computes it
    val, floor = _val(targets), 1e-4
    base = 2.0 * np.mean([v.val_mse for v in views])
    truth = nearest_candidate(targets, cand)
    obs = np.arange(len(truth))

    def nll(t):  # the independent computation: the dense posterior of each view at each grid temperature
        return sum(-GaussianPosterior(v.predict(val), cand, base * t, floor, CPU).log_prob(obs, truth).sum()
                   for v in views)

    best = min(TEMPERATURE_GRID, key=nll)
    assert shared_scale(views, val, cand, floor, chunk_elems=64) == pytest.approx(base * best)
    assert shared_scale(views, val, cand, floor, temperature=3.0) == pytest.approx(base * 3.0)
    # on a subset of the validation positions: the base and the grid temperature of those positions alone
    rows = np.arange(0, len(targets), 3)
    sub = [_view(p[rows], float(np.mean((p[rows] - targets[rows]) ** 2))) for p in preds]
    assert shared_scale(views, val, cand, floor, rows=rows) == pytest.approx(shared_scale(sub, _val(targets[rows]),
                                                                                          cand, floor))


TINY = AmplSettings(epochs=12, hidden_size=16, num_layers=1, heads=2, batch_size=16, dropout=0.0, triplets=4000,
                    device="cpu", pass_rule="ratio")


@pytest.mark.parametrize("seed", [0, 1])
def test_on_boilerplate_the_uniform_control_passes_with_margin_and_identity_fails(seed):
    rng = np.random.default_rng(seed)
    secrets, cand = boilerplate_secrets(rng, n_docs=160, dim=6)
    train_rows, test_rows = split_rows(rng, secrets.mask.shape[0], 0.2)
    results = {}
    for control in ("control_uniform", "control_identity"):
        release = control_release(secrets, cand, control, rng)
        results[control], _ = audit_with_diagnostics(release.take(train_rows), release.take(test_rows), cand,
                                                      secrets.take(test_rows).truth(), adversary="transformer",
                                                      eps=0.5, settings=TINY, rng=np.random.default_rng(seed + 5))
    # uniform: its true mPL is 0, so delta / 2 is a margin, not a tolerance; 4,000 triplets put the
    # sampling s.e. of a ratio near 0.025 at sqrt(0.025 * 0.975 / 4000) = 0.0025
    assert results["control_uniform"].violation_ratio < TINY.delta_target / 2
    assert results["control_identity"].violation_ratio > 0.5
    assert controls_valid(results["control_identity"], results["control_uniform"])


def test_triplet_draws_are_uniform_within_the_group_of_the_true_secret():
    from privtext.ampl.mpl import true_secret_triplets

    rng = np.random.default_rng(3)
    groups = np.array(["a"] * 4 + ["b"] * 3 + ["c"])  # c: alone, its observations cannot be audited
    truth = np.array([0, 5, 7, 2])
    t = true_secret_triplets(rng, truth, rng.normal(size=(8, 3)), 60_000, groups)
    assert not np.isin(t.obs, [2]).any() and np.all(t.i != t.j)
    for secret, others in ((0, [1, 2, 3]), (5, [4, 6]), (2, [0, 1, 3])):
        drawn = t.j[t.i == secret]
        counts = np.array([np.sum(drawn == o) for o in others])
        expected = drawn.size / len(others)  # x_j = x_i is redrawn: uniform over the group's other members
        assert np.all(np.abs(counts - expected) < 5 * np.sqrt(expected))  # 5 binomial s.e.


def test_log_prob_of_repeated_pairs_matches_the_dense_softmax():
    rng = np.random.default_rng(4)
    pred, cand = rng.normal(size=(6, 3)), rng.normal(size=(9, 3))
    post = GaussianPosterior(pred, cand, 0.8, 1e-3, CPU, chunk_elems=7)
    obs, c = rng.integers(0, 6, size=500), rng.integers(0, 9, size=500)
    logits = -((pred[:, None, :] - cand[None, :, :]) ** 2).sum(-1) / 0.8
    dense = np.exp(logits - logits.max(1, keepdims=True))
    dense = (1 - 1e-3) * dense / dense.sum(1, keepdims=True) + 1e-3 / 9
    np.testing.assert_allclose(post.log_prob(obs, c), np.log(dense[obs, c]), rtol=1e-9, atol=1e-12)
