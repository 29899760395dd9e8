"""Floating-point-safe, cryptographically seeded Gaussian noise (``privacy.mechanisms``).

The Mironov (2012) check, done exactly: a released coordinate y has an empty preimage under
"secret absent" when no noise value the mechanism can draw maps the absent-secret statistic to y.
"""
import math

import numpy as np
import pytest
from randomgen import ChaCha
from scipy.stats import chisquare

from privtext.privacy.mechanisms import discrete_gaussian, gaussian_release, make_rng, noise_grid
from privtext.secpe.secret_clustering import PublicClusters, release

K, D, SIGMA, R = 100, 384, 3.0, 1.0


def _stats(rng):
    centers = rng.normal(size=(K, D)).astype(np.float32)
    centers /= np.linalg.norm(centers, axis=1, keepdims=True)
    clusters = PublicClusters.create(centers, rng.integers(5, 50, K))
    counts = rng.integers(0, 20, K).astype(np.float64)
    sums = rng.normal(size=(K, D)) * counts[:, None] * 0.05
    secret = rng.normal(size=D)
    secret /= np.linalg.norm(secret)
    present_sums = sums.copy()
    present_sums[0] += secret  # the secret's record, sampled, assigned to centre 0
    present_counts = counts.copy()
    present_counts[0] += 1
    return clusters, (counts, sums), (present_counts, present_sums)


def _in_grid_image(y, scale, grid):
    """y == scale * x for the grid point x nearest to y / scale (the release's only possible outputs)."""
    x = np.round(y / scale / grid) * grid
    return scale * x == y


def test_released_coordinates_never_have_an_empty_preimage_under_secret_absent():
    rng = np.random.default_rng(0)
    clusters, _, present = _stats(rng)
    scale = (2.0 * R / clusters.sizes)[:, None]
    grid = noise_grid(SIGMA)
    coordinates = 0
    for _ in range(3):  # 3 x (100 x 384 centres + 100 counts) > 10^5 coordinates
        out = release(*present, clusters, SIGMA, make_rng(), R)
        assert _in_grid_image(out.centers, scale, grid).all()
        assert np.all(np.round(out.counts / grid) * grid == out.counts)
        coordinates += out.centers.size + out.counts.size
    assert coordinates >= 10**5
    # every grid point has positive probability under the absent secret: the discrete Gaussian's
    # support is Z (checked on its sampler below), so membership of the grid image is the whole test


def test_negative_control_the_float_mechanism_fails_the_same_check():
    """``mean + scale * N(0, sigma^2)`` in floats: a share of the coordinates of the centre holding the
    secret cannot come from the absent mean by any double noise value (the audit: 77-85 of 384)."""
    rng = np.random.default_rng(1)
    clusters, absent, present = _stats(rng)
    public = clusters.centers.astype(np.float64)
    mean_of = lambda c, s: (clusters.sizes[:, None] * public + s) / (clusters.sizes + c)[:, None]
    a, p = mean_of(*absent)[0], mean_of(*present)[0]
    scale = 2.0 * R / clusters.sizes[0]
    y = p + scale * np.random.default_rng(2).normal(0.0, SIGMA, D)
    empty = 0
    for yi, ai in zip(y, a):
        x = (yi - ai) / scale
        candidates = [x]
        for direction in (-np.inf, np.inf):  # the 64 doubles on each side of x
            c = x
            for _ in range(64):
                c = np.nextafter(c, direction)
                candidates.append(c)
        empty += not any(ai + scale * c == yi for c in candidates)
    assert empty >= D // 10, empty  # the old sampler leaks on a measurable share of coordinates (here ~20%)


@pytest.mark.parametrize("sigma", [0.7, 3.0, 40.0])
def test_discrete_gaussian_matches_its_pmf(sigma):
    n = 200_000
    z = discrete_gaussian(np.random.default_rng(5), sigma, n)
    support = np.arange(-int(6 * sigma) - 2, int(6 * sigma) + 3)
    pmf = np.exp(-support.astype(float) ** 2 / (2 * sigma**2))
    pmf /= pmf.sum()
    observed = np.array([(z == k).sum() for k in support])
    keep = pmf * n >= 5  # chi-square cells with an expected count of at least 5
    expected = pmf[keep] * n
    stat, pvalue = chisquare(observed[keep], expected * observed[keep].sum() / expected.sum())
    assert pvalue > 1e-3  # fixed seed; a wrong pmf (e.g. sigma off by 5%) gives p ~ 0
    # variance of N_Z(0, s^2) is s^2 up to e^(-2 pi^2 s^2) terms; the sample variance's sd is s^2 sqrt(2/n)
    assert z.var() == pytest.approx((pmf * support**2).sum(), abs=5 * (pmf * support**2).sum() * math.sqrt(2 / n))


def test_grid_rounding_is_paid_for_by_a_slightly_larger_noise():
    """s = sigma (1 + g sqrt(d) / Delta): the released spread exceeds sigma by that tiny factor only."""
    value = np.zeros(50_000)
    out = gaussian_release(np.random.default_rng(3), value, 2.0, sensitivity=1.0)
    factor = 1 + noise_grid(2.0) * math.sqrt(value.size)
    assert out.std() == pytest.approx(2.0 * factor, rel=5 * math.sqrt(1 / (2 * value.size)))
    assert gaussian_release(np.random.default_rng(3), value, 0.0, 1.0).tolist() == value.tolist()


def test_production_randomness_is_chacha20_from_urandom():
    rng = make_rng(deterministic=False)
    assert isinstance(rng.bit_generator, ChaCha)
    assert make_rng(deterministic=False).random() != make_rng(deterministic=False).random()
    assert make_rng(True, 4).random() == make_rng(True, 4).random()
