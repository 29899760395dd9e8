"""SecretClustering (SecPE Alg. 2, Theorem 1, Eq. 7): public KMeans centres shifted by noisy private sums.

Split of the work, so that Spark can run the private part: ``private_cluster_stats`` is the per-partition
pass over private embeddings (clip to R, keep the rows sampled with rho, assign each to its nearest
public centre) and returns ``(counts[K], sums[K, d])``, which add up across partitions; ``release``
turns the summed statistics into the noisy counts and centres of Eq. 7 on the driver (O(K d)).

Guarantee: (p, r)-secret protection (Def. 3.2) under Def. 3.1's adjacency (D ~_j D' differ by the
records that contain secret s_j). Sensitivity: let c_k be the number of s_j's records that were sampled
and assigned to centre k, C = sum_k c_k. Counts: n_k + m_k moves by c_k, so the count vector moves by
at most C in L2. Centres: with every private row clipped to R and every public centre of norm <= R
(a mean of clipped public rows), adding c_k rows moves the mean of centre k by at most
2 R c_k / (n_k + m_k) <= 2 R c_k / n_k (Thm. 1's proof), so the centres scaled by n_k / (2R) -- the
scale of Eq. 7's noise -- move by at most C in L2 jointly. One round is therefore two Gaussian
releases of noise sigma, each with L2 sensitivity C, on the same sample: the pair that
``privacy.secret_protection.secret_noise(..., rounds=T, releases_per_round=2)`` calibrates (its
mixture PLD counts both releases, sqrt(2) C; Thm. 1 states sigma "with T = 1" for one round and
leaves the count/centre composition implicit -- we compose both releases and all T rounds). Labels
(per-label centres) change nothing: every record still moves exactly one count and one centre.
Public centres must have n_k >= 1 (``PublicClusters`` drops empty ones): 2R/n_k needs it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from privtext.privacy.mechanisms import gaussian_release

NO_LABEL = -1


def clip_rows(x: np.ndarray, radius: float) -> np.ndarray:
    """Clip_R: x * min(1, R / ||x||) row-wise (float32)."""
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x * np.minimum(1.0, radius / np.maximum(norms, 1e-30)).astype(np.float32)


def nearest(points: np.ndarray, targets: np.ndarray, point_labels=None, target_labels=None,
            chunk: int = 8192) -> np.ndarray:
    """Index of the nearest target (L2) of every point, restricted to targets of the point's label
    (integer codes) when labels are given; -1 where a point's label has no target. Chunked, O(chunk * K)."""
    points = np.asarray(points, dtype=np.float32)
    targets = np.asarray(targets, dtype=np.float32)
    out = np.full(points.shape[0], -1, dtype=np.int64)
    if targets.shape[0] == 0 or points.shape[0] == 0:
        return out
    sq = (targets * targets).sum(axis=1)
    for start in range(0, points.shape[0], chunk):
        block = points[start:start + chunk]
        dist = sq[None, :] - 2.0 * (block @ targets.T)  # ||x||^2 is constant per row
        if point_labels is not None:
            mismatch = np.asarray(point_labels[start:start + chunk])[:, None] != np.asarray(target_labels)[None, :]
            dist[mismatch] = np.inf
            idx = np.argmin(dist, axis=1)
            idx[np.all(mismatch, axis=1)] = -1
        else:
            idx = np.argmin(dist, axis=1)
        out[start:start + chunk] = idx
    return out


@dataclass(frozen=True)
class PublicClusters:
    """KMEANS(D_pub, K): centres e_k [K, d], sizes n_k [K] and label codes [K] (NO_LABEL if unlabeled)."""

    centers: np.ndarray
    sizes: np.ndarray
    labels: np.ndarray

    @classmethod
    def create(cls, centers, sizes, labels=None) -> "PublicClusters":
        centers = np.asarray(centers, dtype=np.float32)
        sizes = np.asarray(sizes, dtype=np.float64)
        labels = np.full(sizes.shape[0], NO_LABEL) if labels is None else np.asarray(labels, dtype=np.int64)
        keep = sizes >= 1
        return cls(centers[keep], sizes[keep], labels[keep])

    @property
    def k(self) -> int:
        return int(self.sizes.shape[0])


def private_cluster_stats(embeddings: np.ndarray, clusters: PublicClusters, radius: float,
                          keep: np.ndarray | None = None, labels: np.ndarray | None = None,
                          chunk: int = 8192):
    """Alg. 2 lines 5-12 on one partition: (m_k counts [K], sums of clipped rows [K, d], float64).

    ``keep``: the Bernoulli(rho_i) draws of this round (None: every row); ``labels``: the rows' label
    codes (each row goes to the nearest centre of its own label; rows whose label has no public
    centre are dropped). Sums of several partitions are the statistics of their union. Chunked:
    memory O(chunk (K + d) + K d) whatever the number of rows.
    """
    from scipy import sparse

    emb_all = np.asarray(embeddings)
    use_labels = labels is not None and bool(np.any(clusters.labels != NO_LABEL))
    counts = np.zeros(clusters.k)
    sums = np.zeros((clusters.k, emb_all.shape[1]))
    for start in range(0, emb_all.shape[0], chunk):
        rows = slice(start, start + chunk)
        emb = emb_all[rows]
        lab = np.asarray(labels)[rows] if use_labels else None
        if keep is not None:
            emb = emb[keep[rows]]
            lab = None if lab is None else lab[keep[rows]]
        emb = clip_rows(emb, radius)
        idx = nearest(emb, clusters.centers, lab, clusters.labels if use_labels else None)
        ok = np.flatnonzero(idx >= 0)
        onehot = sparse.csr_matrix((np.ones(ok.size, np.float32), (idx[ok], ok)), shape=(clusters.k, emb.shape[0]))
        counts += np.bincount(idx[ok], minlength=clusters.k)
        sums += onehot @ emb
    return counts, sums


@dataclass(frozen=True)
class NoisyCenters:
    """Eq. 7's release: noisy centres e~_k [K, d] and noisy sizes n~_k [K], with the centres' labels."""

    centers: np.ndarray
    counts: np.ndarray
    labels: np.ndarray


def release(counts: np.ndarray, sums: np.ndarray, clusters: PublicClusters, sigma: float,
            rng: np.random.Generator, radius: float) -> NoisyCenters:
    """Eq. 7: n~_k = n_k + m_k + N(0, sigma^2); e~_k = (n_k e_k + sum_i e^_i) / (n_k + m_k)
    + (2R / n_k) N(0, sigma^2 I_d). ``sigma`` from SecretNoise for T rounds, 2 releases per round.

    Both releases are floating-point safe (``gaussian_release``): the centres are released in the
    noise's units (mean scaled by n_k / 2R, where one sampled record moves them by <= 1 in L2), then
    scaled back, a post-processing of the grid-valued release."""
    counts = np.asarray(counts, dtype=np.float64)
    total = clusters.sizes + counts
    public = clip_rows(clusters.centers, radius).astype(np.float64)  # ||e_k|| <= R, as the bound needs
    mean = (clusters.sizes[:, None] * public + sums) / total[:, None]
    scale = (2.0 * radius / clusters.sizes)[:, None]
    noisy_centers = scale * gaussian_release(rng, mean / scale, sigma, sensitivity=1.0)
    noisy_counts = gaussian_release(rng, total, sigma, sensitivity=1.0)
    return NoisyCenters(noisy_centers, noisy_counts, clusters.labels)


@dataclass(frozen=True)
class GroupNoise:
    """SecretNoise (Alg. 1) on record groups: sigma, rho per group, and what the ledger records."""

    sigma: float
    rho: np.ndarray  # per group
    expected_sampled: float
    binding_group: int  # a group holding the binding secret (-1 if none)
    n_groups: int


def group_secret_noise(group_secrets: list, group_sizes, n_secrets: int, p: float, r: float, rounds: int,
                       method: str = "exact") -> GroupNoise:
    """Alg. 1 for private records grouped by their secret set (the stage collects one row per
    distinct set, not per record): group g has ``group_sizes[g]`` records that all contain exactly
    the secrets ``group_secrets[g]`` (indices < n_secrets).

    The LP (Eq. 6) and the calibration of ``privacy.secret_protection`` are solved on the records
    expanded from the groups (index arrays only, O(sum of sizes x secrets per record)); the LP
    weights are then averaged within each group -- records of a group are interchangeable in the LP,
    so the group mean of an optimal solution is feasible and optimal -- and sigma is calibrated to the
    resulting rho (T rounds, 2 releases per round), so one rho per group is what the executors apply.
    ``r >= 1`` means no protection: sigma 0, every record sampled.
    """
    from privtext.privacy.secret_protection import (calibrate_sigma, incidence_matrix, mu_from_pr,
                                                    sampling_probabilities, secret_noise_weights)

    sizes = np.asarray(group_sizes, dtype=np.int64)
    n_groups = sizes.shape[0]
    if r >= 1 or n_groups == 0:
        return GroupNoise(0.0, np.ones(n_groups), float(sizes.sum()), -1, n_groups)
    row_of_group = np.repeat(np.arange(n_groups), sizes)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    rec, sec = [], []
    for g, secrets in enumerate(group_secrets):
        secrets = np.asarray(secrets, dtype=np.int64)
        rows = starts[g] + np.arange(sizes[g])
        rec.append(np.repeat(rows, secrets.size))
        sec.append(np.tile(secrets, sizes[g]))
    inc = incidence_matrix(np.concatenate(rec), np.concatenate(sec), int(sizes.sum()), n_secrets)
    w = secret_noise_weights(inc, mu_from_pr(p, r))
    w_group = np.bincount(row_of_group, weights=w, minlength=n_groups) / sizes
    rho = sampling_probabilities(w_group)
    sigma, binding, _, _ = calibrate_sigma(inc, rho[row_of_group], p, r, rounds, 2, method)
    binding_group = -1
    if binding >= 0:
        binding_group = int(row_of_group[inc.tocsc()[:, binding].indices[0]])
    return GroupNoise(float(sigma), rho, float((rho * sizes).sum()), binding_group, n_groups)


def secret_count_pmfs(group_secrets: list, group_sizes, rho, n_secrets: int):
    """Each secret's per-round count distribution C_j = sum of Bernoulli(rho) over its records (the
    mixture weights of its dominating pair), deduplicated: (pmfs, variant per secret, records per secret)."""
    from privtext.privacy.secret_protection import count_pmfs

    sizes = np.asarray(group_sizes, dtype=np.int64)
    members: list[list[float]] = [[] for _ in range(n_secrets)]
    for g, secrets in enumerate(group_secrets):
        for j in secrets:
            members[j].extend([float(rho[g])] * int(sizes[g]))
    return count_pmfs(members)
