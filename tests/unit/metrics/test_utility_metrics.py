import numpy as np
import pytest

from privtext.metrics.fid import fid, fit_from_moments, frechet_distance, gaussian_fit
from privtext.metrics.utility import (
    fit_classifier,
    histogram_summary,
    length_histogram,
    length_ks,
    length_plot,
    word_lengths,
)


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


def test_length_histograms(tmp_path):
    assert word_lengths(["a b c", "", None]).tolist() == [3, 0, 0]
    hist = length_histogram(["a", "a b", "a b c"])
    assert histogram_summary(hist) == {"mean": 2.0, "median": 2.0, "p90": 3.0}
    assert length_ks(hist, hist) == 0.0
    assert length_ks(length_histogram(["a"]), length_histogram(["a b"])) == 1.0
    length_plot(hist, length_histogram(["x y"]), str(tmp_path / "l.png"))
    assert (tmp_path / "l.png").stat().st_size > 0


@pytest.mark.parametrize("n_classes", [2, 3])
def test_classifier_trained_on_one_set_scores_another(n_classes):
    rng = np.random.default_rng(1)
    means = np.array([[-3, 0], [3, 0], [0, 3]])[:n_classes]
    train = np.vstack([rng.normal(m, 0.5, (20, 2)) for m in means])
    test = np.vstack([rng.normal(m, 0.5, (50, 2)) for m in means])
    names = ["x", "y", "z"][:n_classes]
    clf = fit_classifier(train, np.repeat(names, 20))
    correct, total = clf.correct(test, np.repeat(names, 50))
    assert total == 50 * n_classes and correct / total > 0.95
    constant = fit_classifier(train[:5], ["x"] * 5)
    assert constant.correct(test, np.repeat(names, 50)) == (50.0, 50.0 * n_classes)
