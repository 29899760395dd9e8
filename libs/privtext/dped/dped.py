"""DPED end to end without Spark (Alg. 1): the same pure functions the Spark stage calls, in order.

The stage runs ``train_teacher`` + ``teacher_answers`` per shard in ``applyInPandas`` and sums the
answers; ``release`` is what follows on the driver (O(M * d + M * k) state).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from privtext.dped.aggregation import Aggregate, NoiseMultipliers, aggregate, vote_histogram
from privtext.dped.settings import DpedSettings
from privtext.dped.student import train_student
from privtext.dped.teacher import Teacher, teacher_answers, train_teacher
from privtext.dped.vocabulary import tokenize


def encode(texts: Sequence[str], words: Sequence[str]) -> list[np.ndarray]:
    """Token ids of each text over ``words`` (other tokens dropped)."""
    index = {w: i for i, w in enumerate(words)}
    return [np.array([index[t] for t in tokenize(x) if t in index], dtype=np.int64) for x in texts]


def train_teachers(
    token_docs: Sequence[np.ndarray], shard: np.ndarray, vocab_size: int, settings: DpedSettings, seed: int
) -> list[Teacher]:
    """One teacher per shard 0..N-1 (Alg. 1 lines 2-5), each seeded by (seed, shard)."""
    return [
        train_teacher([token_docs[j] for j in np.flatnonzero(shard == i)], vocab_size, settings, seed * 100_003 + i)
        for i in range(settings.n_teachers)
    ]


def release(
    teachers: Sequence[Teacher], query_ids: np.ndarray, settings: DpedSettings,
    multipliers: NoiseMultipliers, rng: np.random.Generator, seed: int, anchor: np.ndarray | None = None,
) -> tuple[np.ndarray, Aggregate]:
    """Teacher answers -> noisy aggregate (Eq. 1-2, noisy check) -> student vectors [M, d] (Eq. 3-4)."""
    hidden_sum = np.zeros((len(query_ids), settings.dim))
    vote_sets = []
    for t in teachers:
        h, v = teacher_answers(t, query_ids, settings.top_k, clip=settings.clip_hidden, anchor=anchor)
        hidden_sum += h
        vote_sets.append(v)
    agg = aggregate(hidden_sum, vote_histogram(vote_sets, len(query_ids)), settings, multipliers, rng)
    return train_student(agg, settings, seed), agg
