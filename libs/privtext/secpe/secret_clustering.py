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

D_pub (Alg. 2 line 2) is the corpus's documents without a secret, or, where a corpus has (nearly) none
of them, the generator's round-0 samples (``generated_public_clusters``); ``choose_public_source``
picks one. Either way the centres and sizes (e_k, n_k) must not depend on the private rows: the
bound above takes them as fixed, so each release's sensitivity, hence sigma, is the same for both.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

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


PUBLIC_SOURCES = ("documents", "generator", "auto")


def centres_per_label(sizes: Sequence[int], k_total: int, minimum: int) -> list[int]:
    """K split over labels in proportion to their D_pub sizes n_c: max(minimum, round(K n_c / sum n)),
    at most n_c (0 for a label without D_pub)."""
    total = sum(sizes)
    return [0 if n == 0 else int(min(n, max(minimum, round(k_total * n / total)))) for n in sizes]


def choose_public_source(requested: str, public_per_label: Sequence[int], k_total: int) -> str:
    """Alg. 2's D_pub: ``documents`` (the corpus's documents without a secret, as in the paper) or
    ``generator`` (the generator's round-0 samples, ``generated_public_clusters``).

    ``auto``: documents when every label has at least ceil(K / #labels) of them -- enough for its share
    of the K centres with n_k >= 1 each (Thm. 1's bound divides by n_k) -- else generator. ``documents``
    with a label holding no public document is refused: that label would get no centre, its private
    documents no vote, and the synthetic table none of its texts. The choice reads the public counts
    only (documents without a secret, which Alg. 2 releases as they are), never a private row.
    """
    if requested == "generator":
        return requested
    enough = math.ceil(k_total / max(1, len(public_per_label)))
    if requested == "auto":
        return "documents" if public_per_label and min(public_per_label) >= enough else "generator"
    if not public_per_label or min(public_per_label) == 0:
        raise ValueError(
            "synthesize needs public documents (no secret) for the public clusters, for every label; found "
            f"{sum(public_per_label)} over {len(public_per_label)} label(s), "
            f"{sum(n == 0 for n in public_per_label)} without any. Set secpe.public_source to generator "
            f"(the generator's random samples as D_pub) or auto; allowed values: {', '.join(PUBLIC_SOURCES)}")
    return requested


def generated_public_clusters(pool: np.ndarray, pool_labels: np.ndarray, k_total: int, radius: float,
                              seed: int, labelled: bool = True) -> PublicClusters:
    """KMEANS(D_pub, K) with D_pub = round 0's candidate pool: the N_syn L texts that RANDOM_API wrote
    from the label prompts alone (Alg. 3 line 4), before any private row was read. K is split evenly
    over labels (the pool's label sizes are equal), at least one centre each; centres are the means of
    their clipped members (norm <= R) and every centre has n_k >= 1.

    Guarantee: unchanged, (p, r)-secret protection under Def. 3.1's adjacency. The pool is public by
    construction -- a function of the configuration and the generator's seeds only -- so the centres,
    their sizes n_k and the split of K are the same on neighbouring corpora, and Thm. 1's sensitivity
    (2R c_k / n_k per centre, C per release) holds as for public documents; it costs no secret budget
    and no generation beyond round 0. n_k must not be sized from the private data (e.g. from the
    expected number of sampled private rows): it sets Eq. 7's noise scale and offsets the counts.

    How many samples (n_k ~ N_syn L / K): with m_k private rows assigned to centre k, Eq. 7 releases
    e~_k = (n_k e_k + sum_i e^_i) / (n_k + m_k) + (2R / n_k) N(0, sigma^2 I_d).
    * Noise: per direction 2 R sigma / n_k, so more samples per centre mean less noise.
    * Dilution: the private mean mu_k enters with weight m_k / (n_k + m_k). A centre votes for its nearest
      (unit-norm) candidate, a choice that depends on e~_k's direction only: e_k + (m_k / n_k) mu_k plus
      noise of sd 2 R sigma (n_k + m_k) / n_k^2 per direction. The private pull relative to the
      generator's own mean is m_k / n_k; its ratio to the noise, m_k n_k / (2 R sigma (n_k + m_k)), grows
      with n_k but saturates at m_k / (2 R sigma) (half of it at n_k = m_k). Far beyond m_k every centre
      sits at the generator's mean and votes for the pool's medoids whatever the private data: n_k of
      the order of m_k (~ the ledger's expected_sampled / K) is where more samples stop paying.
    * Counts: n~_k = n_k + m_k + N(0, sigma^2). The private part m_k keeps its noise sigma whatever n_k,
      but the label quotas follow n~_k, so n_k (equal per label) pulls the label mix towards even by
      n_k / (n_k + m_k).
    Round 0's pool is used because it is free (generated anyway); on CPU generation is what bounds n_k
    (all-private corpora have m_k >> N_syn L / K), so raise L or lower K for larger n_k.
    """
    from sklearn.cluster import KMeans

    pool = clip_rows(pool, radius).astype(np.float64)
    pool_labels = np.asarray(pool_labels, dtype=np.int64)
    codes = np.unique(pool_labels)
    ks = centres_per_label([int(np.sum(pool_labels == c)) for c in codes], k_total, minimum=1)
    centers, sizes, out_labels = [], [], []
    for c, k in zip(codes, ks):
        x = pool[pool_labels == c]
        k = min(k, np.unique(x, axis=0).shape[0])  # no more centres than distinct samples
        assign = KMeans(n_clusters=k, n_init=1, random_state=seed).fit(x).labels_
        n = np.bincount(assign, minlength=k)
        sums = np.zeros((k, x.shape[1]))
        np.add.at(sums, assign, x)
        keep = n >= 1
        centers.append(sums[keep] / n[keep][:, None])  # the mean of its members: ||e_k|| <= R
        sizes.append(n[keep])
        out_labels += [int(c) if labelled else NO_LABEL] * int(keep.sum())
    return PublicClusters.create(np.vstack(centers), np.concatenate(sizes), out_labels)


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
    """Eq. 7's release: noisy centres e~_k [K, d] and noisy sizes n~_k [K], with the centres' labels, and
    each centre's noise sd per direction, 2 R sigma / n_k (public: R, sigma and the public sizes n_k)."""

    centers: np.ndarray
    counts: np.ndarray
    labels: np.ndarray
    noise_sd: np.ndarray | None = None


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
    return NoisyCenters(noisy_centers, noisy_counts, clusters.labels, scale[:, 0] * sigma)


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
    from privtext.privacy.secret_protection import (
        calibrate_sigma,
        incidence_matrix,
        mu_from_pr,
        sampling_probabilities,
        secret_noise_weights,
    )

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
