"""Level-wise (tiered) exponential mechanism of AmPL (Sec. 3 step 1, Eq. 16) and the PoII rule (App. E.1).

Mechanism: a secret x of tier l (1 = PII, 2 = PoII, ...) is released as candidate y with
Pr[y | x] proportional to exp(-alpha_l * eps * d(x, y) / 2), d the Euclidean distance between
embeddings, sampled with ``privtext.privacy.mechanisms`` (utility -d, sensitivity 1).

Guarantee (metric LDP, adjacency = any two secrets x, x'): within tier l the mechanism is
(alpha_l * eps, d)-mDP, i.e. ln Pr[y|x]/Pr[y|x'] <= alpha_l * eps * d(x, x') (triangle inequality on
the score and on the normaliser, each contributing half). Across tiers the ratio is bounded by
eps * (max(alpha_x, alpha_x') * d(x, x') + |alpha_x - alpha_x'| * D), D = the largest distance between
a secret and a candidate output: tiering buys utility at the price of a diameter term, which is what
the learned-adversary audit then measures. alpha_1 < alpha_2 gives PII the stronger noise.
"""
from __future__ import annotations

import numpy as np

from privtext.ampl.sequences import SecretSequences
from privtext.privacy.mechanisms import exponential_log_probs, sample_categorical


def euclidean_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pairwise Euclidean distances between rows of ``a`` [m, d] and ``b`` [k, d]."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    sq = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * a @ b.T
    return np.sqrt(np.maximum(sq, 0.0))


def tiered_em_log_probs(secret_emb: np.ndarray, tiers: np.ndarray, outputs: np.ndarray, eps: float,
                        alphas) -> np.ndarray:
    """Eq. 16 for each row: log Pr[y | x] over ``outputs`` with eps_l = alphas[tier - 1] * eps."""
    tiers = np.asarray(tiers)
    if np.any(tiers < 1) or np.any(tiers > len(alphas)):
        raise ValueError(f"tiers must be in 1..{len(alphas)}")
    dist = euclidean_distances(secret_emb, outputs)
    out = np.empty_like(dist)
    for level, alpha in enumerate(alphas, start=1):
        rows = tiers == level
        if rows.any():
            out[rows] = exponential_log_probs(-dist[rows], alpha * eps, sensitivity=1.0)
    return out


def perturb(rng: np.random.Generator, secrets: SecretSequences, candidates: np.ndarray, eps: float, alphas,
            chunk: int = 4096) -> np.ndarray:
    """Sample the tiered EM for every sensitive position; returns candidate ids [n, L] (-1 elsewhere).
    Probabilities are computed once per distinct (secret, tier) and sampled in chunks of positions."""
    mask = secrets.mask
    pairs = np.stack([secrets.secret_ids[mask], secrets.tiers[mask].astype(np.int64)], axis=1)
    uniq, inverse = np.unique(pairs, axis=0, return_inverse=True)
    table = tiered_em_log_probs(candidates[uniq[:, 0]], uniq[:, 1], candidates, eps, alphas)
    inverse = inverse.reshape(-1)
    drawn = np.empty(inverse.shape[0], dtype=np.int64)
    for start in range(0, inverse.shape[0], chunk):
        drawn[start:start + chunk] = sample_categorical(rng, table[inverse[start:start + chunk]])
    released = np.full(mask.shape, -1, dtype=np.int64)
    released[mask] = drawn
    return released


def assign_tiers(vocab_emb: np.ndarray, pii: np.ndarray, poii_fraction: float = 0.1) -> np.ndarray:
    """App. E.1: tier 1 = PII (e.g. NER PERSON/GPE/ORG tokens, or detect_pii's tiers); tier 2 = the top
    ``poii_fraction`` of the other tokens ranked by their largest cosine similarity to any PII token;
    tier 0 = non-sensitive. (The paper does not say how similarities to the PII set are aggregated;
    the maximum is used: a token close to any identifier is quasi-identifying.)"""
    pii = np.asarray(pii, dtype=bool)
    tiers = np.where(pii, 1, 0).astype(np.int8)
    rest = np.flatnonzero(~pii)
    if not pii.any() or rest.size == 0:
        return tiers
    unit = vocab_emb / np.maximum(np.linalg.norm(vocab_emb, axis=1, keepdims=True), 1e-12)
    pii_unit = unit[pii]
    score = np.concatenate([(unit[rest[s:s + 4096]] @ pii_unit.T).max(axis=1)
                            for s in range(0, rest.size, 4096)])
    top = int(np.ceil(poii_fraction * rest.size))
    tiers[rest[np.argsort(-score, kind="stable")[:top]]] = 2
    return tiers
