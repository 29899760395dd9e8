"""Padded document batches the audit works on (numpy only; the stage layer builds them from Delta).

A document is a sequence of token embeddings. ``SecretSequences`` is the original side (which
positions hold sensitive tokens, their candidate ids and tiers); ``ReleasedSequences`` pairs what was
released (sensitive tokens replaced, context kept) with the original embeddings at the replaced
positions, which is what the learned adversary is trained to reconstruct (Sec. 2.4, Fig. 1).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def _check_common(emb: np.ndarray, mask: np.ndarray, lengths: np.ndarray) -> None:
    n, length = mask.shape
    if emb.ndim != 3 or emb.shape[:2] != (n, length):
        raise ValueError(f"embeddings must be [n, L, d] matching mask {mask.shape}, got {emb.shape}")
    if lengths.shape != (n,) or np.any(lengths < 1) or np.any(lengths > length):
        raise ValueError("lengths must be [n] with 1 <= length <= L")
    if np.any(mask & (np.arange(length)[None, :] >= lengths[:, None])):
        raise ValueError("mask marks padding positions")


@dataclass(frozen=True)
class ReleasedSequences:
    """released: float32 [n, L, d] released token embeddings (context + replaced sensitive tokens);
    mask: bool [n, L] True at replaced sensitive positions; original: float32 [n, L, d] original
    embeddings (only read where mask is True); lengths: int64 [n] tokens before padding."""

    released: np.ndarray
    mask: np.ndarray
    original: np.ndarray
    lengths: np.ndarray

    def __post_init__(self) -> None:
        _check_common(self.released, self.mask, self.lengths)
        if self.original.shape != self.released.shape:
            raise ValueError("original and released must have the same shape")

    @property
    def n(self) -> int:
        return self.mask.shape[0]

    def take(self, rows: np.ndarray) -> "ReleasedSequences":
        return ReleasedSequences(self.released[rows], self.mask[rows], self.original[rows], self.lengths[rows])

    def targets(self) -> np.ndarray:
        """Original embeddings at the sensitive positions, [n_obs, d] in row-major (doc, position) order."""
        return self.original[self.mask]


@dataclass(frozen=True)
class SecretSequences:
    """embeddings: float32 [n, L, d] original document; secret_ids: int64 [n, L] index of the sensitive
    token in the candidate table, -1 at non-sensitive positions; tiers: int8 [n, L] sensitivity level
    (1 = PII, 2 = PoII, ...; 0 at non-sensitive positions); lengths: int64 [n]."""

    embeddings: np.ndarray
    secret_ids: np.ndarray
    tiers: np.ndarray
    lengths: np.ndarray

    def __post_init__(self) -> None:
        mask = self.secret_ids >= 0
        _check_common(self.embeddings, mask, self.lengths)
        if self.tiers.shape != mask.shape or np.any((self.tiers > 0) != mask):
            raise ValueError("tiers must be >= 1 exactly at the sensitive positions (secret_ids >= 0)")

    @property
    def mask(self) -> np.ndarray:
        return self.secret_ids >= 0

    def take(self, rows: np.ndarray) -> "SecretSequences":
        return SecretSequences(self.embeddings[rows], self.secret_ids[rows], self.tiers[rows], self.lengths[rows])

    def truth(self) -> np.ndarray:
        """The candidate index of every sensitive position, in the row-major order of ``targets()``."""
        return self.secret_ids[self.mask]

    def release(self, released_ids: np.ndarray, candidates: np.ndarray) -> ReleasedSequences:
        """The released batch when each sensitive token is replaced by candidate ``released_ids``
        (same [n, L] layout, read only where sensitive)."""
        mask = self.mask
        released = self.embeddings.copy()
        released[mask] = candidates[released_ids[mask]]
        return ReleasedSequences(released.astype(np.float32), mask, self.embeddings.astype(np.float32), self.lengths)


def split_rows(rng: np.random.Generator, n: int, held_out: float) -> tuple[np.ndarray, np.ndarray]:
    """A random (kept, held_out) partition of row indices; the held-out share is ``held_out``.
    Sec. 2.4 uses 60/20/20: ``split_rows(n, 0.2)`` for test, then 0.25 of the rest for validation."""
    if not 0 < held_out < 1 or n < 2:
        raise ValueError("need n >= 2 and 0 < held_out < 1")
    perm = rng.permutation(n)
    cut = min(n - 1, max(1, int(round(n * held_out))))
    return np.sort(perm[cut:]), np.sort(perm[:cut])
