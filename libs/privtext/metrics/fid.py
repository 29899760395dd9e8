"""Fréchet distance between two sets of sentence embeddings (FID on text embeddings, SecPE Sec. 4).

FD = ||mu_a - mu_b||^2 + tr(S_a + S_b - 2 (S_a S_b)^{1/2}) for the Gaussian fits (mean, covariance)
of the two sets. Only aggregates (mean [d], covariance [d, d]) are needed, so the real side can be
computed in Spark (sums and Gram matrix) and never leaves as rows.
"""
from __future__ import annotations

import numpy as np
from scipy import linalg


def gaussian_fit(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean, unbiased covariance) of the rows of ``x`` (needs >= 2 rows)."""
    x = np.asarray(x, dtype=np.float64)
    if x.shape[0] < 2:
        raise ValueError("the Fréchet distance needs at least 2 embeddings per set")
    return x.mean(axis=0), np.cov(x, rowvar=False)


def fit_from_moments(n: int, total: np.ndarray, gram: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean, unbiased covariance) from n, sum of rows and sum of outer products (summable in Spark)."""
    mean = total / n
    return mean, (gram - n * np.outer(mean, mean)) / (n - 1)


def frechet_distance(mu_a, cov_a, mu_b, cov_b) -> float:
    diff = mu_a - mu_b
    covmean = linalg.sqrtm(cov_a @ cov_b)  # (no ``disp``: scipy 1.18 removed it)
    if not np.isfinite(covmean).all():  # near-singular product: regularise as the FID reference code does
        eps = 1e-6 * np.eye(cov_a.shape[0])
        covmean = linalg.sqrtm((cov_a + eps) @ (cov_b + eps))
    covmean = np.real(covmean)
    return float(max(diff @ diff + np.trace(cov_a) + np.trace(cov_b) - 2.0 * np.trace(covmean), 0.0))


def fid(real: np.ndarray, synthetic: np.ndarray) -> float:
    return frechet_distance(*gaussian_fit(real), *gaussian_fit(synthetic))
