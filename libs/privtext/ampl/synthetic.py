"""Synthetic documents with correlated secrets, for tests and benchmarks of the audit (no real data).

Each document mentions one PII secret s (drawn from a Zipf prior) and, with probability ``coupling``,
its fixed PoII partner (person -> employer, Sec. 3), else an independent PoII secret; the mentions
sit at random positions among uninformative context tokens. Joint consumption of the repeated,
coupled mentions is what per-record mDP does not control (Sec. 2.4).
"""
from __future__ import annotations

import numpy as np

from privtext.ampl.sequences import SecretSequences


def synthetic_secrets(rng: np.random.Generator, n_docs: int = 256, length: int = 12, dim: int = 8,
                      n_pii: int = 6, n_poii: int = 6, mentions: int = 4, coupling: float = 0.9,
                      context_vocab: int = 50) -> tuple[SecretSequences, np.ndarray]:
    """Returns (documents, candidates [n_pii + n_poii, dim]); ids < n_pii are tier 1 (PII), the rest tier 2.
    Mentions alternate PII / PoII; a document has ``mentions`` sensitive positions (<= length // 2)."""
    if mentions > length // 2:
        raise ValueError("mentions must be at most length // 2")
    candidates = rng.normal(size=(n_pii + n_poii, dim))
    context = rng.normal(size=(context_vocab, dim))
    prior = 1.0 / np.arange(1, n_pii + 1)
    pii = rng.choice(n_pii, size=n_docs, p=prior / prior.sum())
    partner = n_pii + pii % n_poii
    poii = np.where(rng.random(n_docs) < coupling, partner, n_pii + rng.integers(0, n_poii, size=n_docs))
    lengths = rng.integers(length // 2 + mentions // 2, length + 1, size=n_docs)
    lengths = np.maximum(lengths, mentions)
    emb = np.zeros((n_docs, length, dim))
    ids = np.full((n_docs, length), -1, dtype=np.int64)
    for doc in range(n_docs):
        n = lengths[doc]
        emb[doc, :n] = context[rng.integers(0, context_vocab, size=n)]
        pos = np.sort(rng.choice(n, size=mentions, replace=False))
        ids[doc, pos] = np.where(np.arange(mentions) % 2 == 0, pii[doc], poii[doc])
    sens = ids >= 0
    emb[sens] = candidates[ids[sens]]
    tiers = np.where(sens, np.where(ids < n_pii, 1, 2), 0).astype(np.int8)
    return SecretSequences(emb.astype(np.float32), ids, tiers, lengths.astype(np.int64)), candidates


def boilerplate_secrets(rng: np.random.Generator, n_docs: int = 256, length: int = 12, dim: int = 8,
                        n_values: int = 6, n_rare: int = 40, boilerplate: float = 0.5,
                        context_vocab: int = 50) -> tuple[SecretSequences, np.ndarray]:
    """Mail-like documents: with probability ``boilerplate`` a document carries a list footer, a context token
    that names one of ``n_values`` list values followed by that value (the same value in hundreds of
    documents, predictable from its context); every document also mentions one of ``n_rare`` values at a
    random position, which nothing in the context predicts. Returns (documents, candidates [n_values + n_rare,
    dim]); all secrets are tier 1."""
    candidates = rng.normal(size=(n_values + n_rare, dim))
    context = rng.normal(size=(context_vocab + n_values, dim))  # the last n_values tokens name a list
    emb = np.zeros((n_docs, length, dim))
    ids = np.full((n_docs, length), -1, dtype=np.int64)
    lengths = rng.integers(length // 2, length + 1, size=n_docs)
    for doc in range(n_docs):
        n = lengths[doc]
        emb[doc, :n] = context[rng.integers(0, context_vocab, size=n)]
        rare_at = int(rng.integers(0, n - 2))
        ids[doc, rare_at] = n_values + int(rng.integers(n_rare))
        if rng.random() < boilerplate:
            value = int(rng.integers(n_values))
            emb[doc, n - 2] = context[context_vocab + value]
            ids[doc, n - 1] = value
    sens = ids >= 0
    emb[sens] = candidates[ids[sens]]
    return SecretSequences(emb.astype(np.float32), ids, sens.astype(np.int8), lengths.astype(np.int64)), candidates
