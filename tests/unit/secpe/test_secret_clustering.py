import numpy as np
import pytest

from privtext.privacy.secret_protection import incidence_matrix, secret_noise
from privtext.secpe.secret_clustering import (
    PublicClusters,
    clip_rows,
    group_secret_noise,
    nearest,
    private_cluster_stats,
    release,
)

CLUSTERS = PublicClusters.create([[1.0, 0.0], [0.0, 1.0]], [2, 4])
PRIVATE = np.array([[3.0, 0.0], [0.2, 0.6], [0.0, 1.0]])


def test_eq7_statistics_tiny_case():
    counts, sums = private_cluster_stats(PRIVATE, CLUSTERS, radius=1.0)
    np.testing.assert_array_equal(counts, [1, 2])
    np.testing.assert_allclose(sums, [[1.0, 0.0], [0.2, 1.6]])  # the first row is clipped to norm 1
    noisy = release(counts, sums, CLUSTERS, sigma=0.0, rng=np.random.default_rng(0), radius=1.0)
    np.testing.assert_allclose(noisy.counts, [3, 6])
    np.testing.assert_allclose(noisy.centers, [[1.0, 0.0], [0.2 / 6, 5.6 / 6]])


def test_eq7_noise_scales():
    counts, sums = private_cluster_stats(PRIVATE, CLUSTERS, radius=1.0)
    rng = np.random.default_rng(1)
    draws = [release(counts, sums, CLUSTERS, 2.0, rng, 1.0) for _ in range(4000)]
    centers = np.stack([d.centers for d in draws])
    sizes = np.stack([d.counts for d in draws])
    # centre noise std = (2R / n_k) sigma = 2 and 1; count noise std = sigma = 2; 4000 draws: ~1.1% s.e.
    np.testing.assert_allclose(centers.std(axis=0), [[2, 2], [1, 1]], rtol=0.06)
    # the release states its own noise scale (what synthesize reports and warns on): the Monte Carlo sd above
    np.testing.assert_allclose(draws[0].noise_sd, centers.std(axis=0).mean(axis=1), rtol=0.06)
    np.testing.assert_array_equal(draws[0].noise_sd, [2.0, 1.0])
    np.testing.assert_allclose(sizes.std(axis=0), [2, 2], rtol=0.06)
    np.testing.assert_allclose(centers.mean(axis=0), [[1.0, 0.0], [0.2 / 6, 5.6 / 6]], atol=0.15)


def test_clipping_bounds_the_centre_shift():
    rng = np.random.default_rng(2)
    base = rng.normal(size=(50, 2)) * 5
    secret_rows = rng.normal(size=(3, 2)) * 100  # huge, clipped to R = 0.5
    assert np.all(np.linalg.norm(clip_rows(secret_rows, 0.5), axis=1) <= 0.5 + 1e-6)
    radius = 0.5
    clusters = PublicClusters.create(clip_rows([[1.0, 0.0], [0.0, 1.0]], radius), [5, 7])
    without = release(*private_cluster_stats(base, clusters, radius), clusters, 0.0, rng, radius)
    with_ = release(*private_cluster_stats(np.vstack([base, secret_rows]), clusters, radius), clusters, 0.0, rng,
                    radius)
    assert abs(with_.counts - without.counts).sum() == 3
    scaled_shift = np.linalg.norm((with_.centers - without.centers) * (clusters.sizes / (2 * radius))[:, None])
    assert scaled_shift <= 3 + 1e-9  # joint L2 sensitivity C = 3 at Eq. 7's noise scale


def test_keep_mask_and_labels():
    clusters = PublicClusters.create([[1.0, 0.0], [0.9, 0.1]], [1, 1], labels=[0, 1])
    rows = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]])
    counts, _ = private_cluster_stats(rows, clusters, 1.0, keep=np.array([True, True, False]),
                                      labels=np.array([1, 1, 0]))
    np.testing.assert_array_equal(counts, [0, 2])  # label 1 rows go to the label-1 centre
    assert nearest(rows[:1], np.zeros((0, 2))).tolist() == [-1]


def test_empty_public_clusters_are_dropped():
    assert PublicClusters.create([[1, 0], [0, 1]], [0, 3]).k == 1


def test_group_noise_matches_record_level_secret_noise():
    # 3 singleton groups: records {0}, {0, 1}, {1}; the group form is the record form
    groups, sizes = [[0], [0, 1], [1]], [1, 1, 1]
    inc = incidence_matrix([0, 1, 1, 2], [0, 0, 1, 1], 3, 2)
    ref = secret_noise(inc, 1e-4, 1e-3, rounds=2, method="gaussian")
    got = group_secret_noise(groups, sizes, 2, 1e-4, 1e-3, rounds=2, method="gaussian")
    assert got.sigma == pytest.approx(ref.sigma, rel=1e-9)
    np.testing.assert_allclose(got.rho, ref.rho, atol=1e-9)


def test_group_noise_uniform_rho_within_group_and_exact_sigma():
    got = group_secret_noise([[0], [1]], [3, 1], 2, 1e-4, 1e-3, rounds=1, method="exact")
    # secret 0 sits in 3 interchangeable records: its LP capacity mu is shared evenly
    assert got.rho.shape == (2,) and got.rho.max() == pytest.approx(1.0)
    assert got.sigma > 0 and got.binding_group in (0, 1)
    assert group_secret_noise([[0]], [2], 1, 1e-4, 1.0, rounds=3).sigma == 0.0
