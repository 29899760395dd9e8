import numpy as np
import pytest

from privtext.metrics.fid import fid, fit_from_moments, frechet_distance, gaussian_fit
from privtext.metrics.utility import downstream_accuracy, length_ks, length_plot, length_summary, word_lengths


def test_frechet_distance_closed_form():
    # diagonal Gaussians: FD = |mu_a - mu_b|^2 + sum (sqrt(a_i) - sqrt(b_i))^2
    mu_a, mu_b = np.array([0.0, 1.0]), np.array([2.0, 1.0])
    cov_a, cov_b = np.diag([1.0, 4.0]), np.diag([9.0, 4.0])
    assert frechet_distance(mu_a, cov_a, mu_b, cov_b) == pytest.approx(4.0 + 4.0)


def test_fid_same_distribution_is_small_and_moments_match():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(4000, 3)), rng.normal(size=(4000, 3))
    assert fid(a, b) < 0.01 and fid(a, b + 1.0) == pytest.approx(3.0, abs=0.05)
    mean, cov = fit_from_moments(len(a), a.sum(axis=0), a.T @ a)
    ref_mean, ref_cov = gaussian_fit(a)
    np.testing.assert_allclose(mean, ref_mean)
    np.testing.assert_allclose(cov, ref_cov, atol=1e-10)


def test_lengths_and_accuracy(tmp_path):
    assert word_lengths(["a b c", "", None]).tolist() == [3, 0, 0]
    assert length_summary(np.array([1, 2, 3]))["median"] == 2
    assert length_ks(np.array([1, 2, 3]), np.array([1, 2, 3])) == 0.0
    rng = np.random.default_rng(1)
    train = np.vstack([rng.normal(-2, 1, (20, 2)), rng.normal(2, 1, (20, 2))])
    test = np.vstack([rng.normal(-2, 1, (50, 2)), rng.normal(2, 1, (50, 2))])
    labels = ["x"] * 20 + ["y"] * 20
    assert downstream_accuracy(train, labels, test, ["x"] * 50 + ["y"] * 50) > 0.95
    assert downstream_accuracy(train[:5], ["x"] * 5, test, ["x"] * 50 + ["y"] * 50) == 0.5
    assert (tmp_path / "l.png").exists() is False
    length_plot(np.array([1, 2]), np.array([3]), str(tmp_path / "l.png"))
    assert (tmp_path / "l.png").stat().st_size > 0
