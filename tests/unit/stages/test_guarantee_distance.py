"""``audit.guarantee_distance``: CluSanT's metric between the sanitizer's embeddings of the two values where the
sanitizer replaces the type, and the audit encoder's Euclidean distance where D_k says nothing (a masked type,
or two values the sanitizer's encoder maps to one point). The sanitizer and its encoder are fakes with a known
metric; the expected distances are computed pair by pair, independently of the vectorised code."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from privtext.stages.audit import guarantee_distance

# the sanitizer's own embedding of each value: the two account numbers are one point to it (no wordpiece)
PHRASES = {"Alice": [0.0, 1.0], "Bob": [3.0, 1.0], "Carol": [0.0, 5.0], "4711": [2.0, 2.0], "4712": [2.0, 2.0],
           "a@x.org": [9.0, 9.0], "b@y.org": [1.0, 1.0]}
VALUES = ["Alice", "Bob", "Carol", "4711", "4712", "a@x.org", "b@y.org"]
TYPES = ["PERSON", "PERSON", "PERSON", "ACCOUNT", "ACCOUNT", "EMAIL", "EMAIL"]  # EMAIL: masked, no mechanism


def manhattan_times_2(a, b):  # a stand-in D_k: any metric the mechanism states
    return 2.0 * np.abs(np.asarray(a) - np.asarray(b)).sum(axis=1)


def fixture(seed=0):
    rng = np.random.default_rng(seed)
    batch = SimpleNamespace(candidates=rng.normal(size=(len(VALUES), 4)), candidate_values=VALUES,
                            candidate_types=TYPES)
    mechanism = SimpleNamespace(metric=manhattan_times_2,
                                pair_metric=lambda x: lambda i, j: manhattan_times_2(x[i], x[j]))
    sanitizer = SimpleNamespace(per_type={"PERSON": SimpleNamespace(mechanism=mechanism),
                                          "ACCOUNT": SimpleNamespace(mechanism=mechanism)})
    encoded = []

    def encode(values):
        encoded.append(list(values))
        return np.array([PHRASES[v] for v in values])
    return batch, sanitizer, encode, encoded


def expected(batch, sanitizer, i, j):
    euclidean = float(np.linalg.norm(batch.candidates[i] - batch.candidates[j]))
    if TYPES[i] not in sanitizer.per_type:
        return euclidean
    d_k = 2.0 * sum(abs(x - y) for x, y in zip(PHRASES[VALUES[i]], PHRASES[VALUES[j]]))
    return d_k if d_k > 0 else euclidean


def test_the_guarantees_metric_where_it_says_something_else_the_audits_euclidean_distance():
    batch, sanitizer, encode, encoded = fixture()
    distance = guarantee_distance(batch, sanitizer, encode)
    assert encoded == [VALUES]  # every value is encoded once, by the sanitizer's encoder
    pairs = [(i, j) for i in range(len(VALUES)) for j in range(len(VALUES)) if TYPES[i] == TYPES[j] and i != j]
    i, j = (np.array(x) for x in zip(*pairs))
    got = distance(i, j)
    assert got == pytest.approx([expected(batch, sanitizer, a, b) for a, b in pairs])
    assert distance(np.array([0]), np.array([1]))[0] == pytest.approx(6.0)  # PERSON: D_k, |0-3| + |1-1| times 2
    euclidean = np.linalg.norm(batch.candidates[3] - batch.candidates[4])
    assert euclidean > 0 and distance(np.array([3]), np.array([4]))[0] == pytest.approx(euclidean)  # one point
    euclidean = np.linalg.norm(batch.candidates[5] - batch.candidates[6])
    assert distance(np.array([5]), np.array([6]))[0] == pytest.approx(euclidean)  # a masked type: no D_k


def test_pair_metric_is_the_mechanisms_metric_on_the_indexed_rows():
    """``CluSanT.pair_metric`` (clusters found once per value) against ``metric`` on the pairs' rows, exactly, on a
    real mechanism with inputs straddling its clusters; and the audit's distance, chunked, against it."""
    import math

    from privtext.clusant.mechanism import CluSanT

    rng = np.random.default_rng(5)
    vocab = rng.normal(size=(40, 6))
    vocab /= np.linalg.norm(vocab, axis=1, keepdims=True)
    for k in (2.0, math.inf):
        mech = CluSanT(vocab, np.arange(40) % 4, k=k, eps_cluster=1.0, eps_token=1.0, token_sensitivity=1.0)
        x = np.vstack([vocab[:20] + 0.05 * rng.normal(size=(20, 6)), rng.normal(size=(30, 6))])
        i, j = rng.integers(0, 50, size=3000), rng.integers(0, 50, size=3000)
        np.testing.assert_array_equal(mech.pair_metric(x)(i, j), mech.metric(x[i], x[j]))
    batch = SimpleNamespace(candidates=rng.normal(size=(50, 3)), candidate_values=[str(v) for v in range(50)],
                            candidate_types=["PERSON"] * 50)
    sanitizer = SimpleNamespace(per_type={"PERSON": SimpleNamespace(mechanism=mech)})
    distance = guarantee_distance(batch, sanitizer, lambda values: x[[int(v) for v in values]], chunk=7)
    pairs = i != j
    d_k = mech.metric(x[i[pairs]], x[j[pairs]])  # inf across clusters at k = inf, as the guarantee states
    euclidean = np.linalg.norm(batch.candidates[i[pairs]] - batch.candidates[j[pairs]], axis=1)
    np.testing.assert_allclose(distance(i[pairs], j[pairs]), np.where(d_k > 0, d_k, euclidean), rtol=1e-12)
