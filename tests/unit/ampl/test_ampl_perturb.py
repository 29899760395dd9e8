import math

import numpy as np
import pytest

from privtext.ampl.perturb import assign_tiers, euclidean_distances, perturb, tiered_em_log_probs
from privtext.ampl.synthetic import synthetic_secrets

EPS, ALPHAS = 1.2, (0.3, 0.8)


def _points(seed=0, k=8):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(k, 3))


def test_log_probs_are_eq_16():
    pts = _points()
    tiers = np.array([1, 2, 1, 2, 1, 2, 1, 2])
    got = tiered_em_log_probs(pts, tiers, pts, EPS, ALPHAS)
    for r in range(len(pts)):
        w = np.exp(-0.5 * ALPHAS[tiers[r] - 1] * EPS * np.linalg.norm(pts[r] - pts, axis=1))
        # distances come from |a|^2 + |b|^2 - 2ab: ~1e-8 absolute error at d = 0
        np.testing.assert_allclose(np.exp(got[r]), w / w.sum(), rtol=1e-7)


def test_each_tier_respects_its_eps_exact_probability_ratios():
    pts = _points(1)
    d = euclidean_distances(pts, pts)
    diameter = d.max()
    for tier_x in (1, 2):
        for tier_y in (1, 2):
            a = tiered_em_log_probs(pts, np.full(8, tier_x), pts, EPS, ALPHAS)
            b = tiered_em_log_probs(pts, np.full(8, tier_y), pts, EPS, ALPHAS)
            for i in range(8):
                for j in range(8):
                    if i == j:
                        continue
                    worst = np.max(a[i] - b[j])  # max over outputs y of ln Pr[y|x_i] / Pr[y|x_j]
                    ax, ay = ALPHAS[tier_x - 1], ALPHAS[tier_y - 1]
                    if tier_x == tier_y:
                        assert worst <= ax * EPS * d[i, j] + 1e-12  # (alpha_l eps, d)-mDP within a tier
                    else:
                        assert worst <= EPS * (max(ax, ay) * d[i, j] + abs(ax - ay) * diameter) + 1e-12
    # PII's tier is strictly tighter than PoII's on the same pair
    a1 = tiered_em_log_probs(pts, np.full(8, 1), pts, EPS, ALPHAS)
    a2 = tiered_em_log_probs(pts, np.full(8, 2), pts, EPS, ALPHAS)
    assert np.max(a1[0] - a1[1]) < np.max(a2[0] - a2[1])


def test_sampling_frequencies_match_probabilities():
    rng = np.random.default_rng(2)
    secrets, candidates = synthetic_secrets(rng, n_docs=3000, length=4, dim=3, n_pii=3, n_poii=3, mentions=2)
    ids = perturb(np.random.default_rng(3), secrets, candidates, EPS, ALPHAS)
    assert np.all((ids >= 0) == secrets.mask)
    probs = tiered_em_log_probs(candidates[[0]], np.array([1]), candidates, EPS, ALPHAS)[0]
    rows = secrets.secret_ids == 0
    freq = np.bincount(ids[rows], minlength=6) / rows.sum()
    # binomial standard error at n >= 1000 draws is <= 0.016; 4 s.e. tolerance
    np.testing.assert_allclose(freq, np.exp(probs), atol=4 * math.sqrt(0.25 / rows.sum()))


def test_poii_rule_takes_the_most_pii_similar_tenth():
    vocab = np.array([[1.0, 0.0], [0.99, 0.1], [0.0, 1.0], [0.7, 0.7], [-1.0, 0.0], [0.1, 0.99],
                      [0.0, -1.0], [-0.7, -0.7], [0.5, -0.5], [-0.2, 1.0], [0.95, -0.2]])
    pii = np.zeros(11, dtype=bool)
    pii[0] = True
    tiers = assign_tiers(vocab, pii, poii_fraction=0.2)  # 10 non-PII tokens -> top 2
    assert tiers[0] == 1
    assert set(np.flatnonzero(tiers == 2)) == {1, 10}  # cosines 0.995 and 0.978 to the PII token
    assert (tiers == 0).sum() == 8


def test_rejects_unknown_tiers():
    with pytest.raises(ValueError):
        tiered_em_log_probs(_points(), np.zeros(8, dtype=int), _points(), EPS, ALPHAS)
