import hashlib

import numpy as np

from privtext.secpe.aug_pe import augpe_secret_sigma, augpe_vote, private_votes
from privtext.secpe.evolution import center_votes, evolve, label_quotas, secpe_vote, select_top
from privtext.secpe.secret_clustering import NoisyCenters, PublicClusters, private_cluster_stats

D = 16


class FakeGenerator:
    """Unit-test stand-in for privtext.generate: texts are tokens; variations append a suffix."""

    def random(self, n, label, seed=None):
        return [f"{label}:{seed % 97}:{i}" for i in range(n)]

    def variation(self, texts, L, label=None, seed=None):
        return [[f"{t}/{j}" for j in range(L)] for t in texts]


def fake_embed(texts):
    out = []
    for t in texts:
        rng = np.random.default_rng(int(hashlib.sha256(t.encode()).hexdigest()[:8], 16))
        v = rng.normal(size=D)
        out.append(v / np.linalg.norm(v))
    return np.asarray(out, dtype=np.float32)


def test_label_quotas_follow_positive_mass():
    hist = np.array([3.0, -5.0, 1.0, 0.0])
    labels = np.array([0, 0, 1, 1])
    assert label_quotas(hist, labels, 2, 4).tolist() == [3, 1]
    assert label_quotas(-np.ones(4), labels, 2, 3).sum() == 3
    assert sorted(select_top(hist, labels, np.array([1, 1])).tolist()) == [0, 2]


def test_center_votes_add_noisy_counts_to_nearest_same_label_candidate():
    cand = np.array([[1, 0], [0, 1], [1, 0]], dtype=np.float32)
    noisy = NoisyCenters(np.array([[0.9, 0.1], [0.1, 0.9]]), np.array([5.0, 2.0]), np.array([1, 0]))
    np.testing.assert_allclose(center_votes(noisy, cand, np.array([0, 0, 1])), [0, 2, 5])


def _target_clusters(target_emb):
    return PublicClusters.create(np.vstack([target_emb, -target_emb]), [1, 1])


def test_secpe_and_augpe_select_the_candidates_nearest_the_private_data():
    gen = FakeGenerator()
    first = gen.random(8, None, seed=np.random.default_rng(0).integers(2**31))  # evolve's first draw
    target = fake_embed(first[3:4])[0]
    private = np.repeat(target[None, :], 20, axis=0) + 0.01
    clusters = _target_clusters(target)
    rng = np.random.default_rng(0)
    released = []
    vote = secpe_vote(lambda t: private_cluster_stats(private, clusters, 1.0), clusters, 0.0, rng, 1.0,
                      on_release=lambda t, noisy: released.append(t))
    out = evolve(gen, fake_embed, vote, [None], n_syn=2, variations=4, rounds=2, seed=0)
    assert released == [0, 1] and len(out.texts) == 2
    assert any(t.startswith(first[3]) for t in out.texts)
    assert [r.candidates for r in out.rounds] == [8, 10]
    augpe = augpe_vote(lambda t, e, c: private_votes(private, e, 1.0), 0.0, rng)
    out2 = evolve(gen, fake_embed, augpe, [None], n_syn=2, variations=4, rounds=2, seed=0)
    assert any(t.startswith(first[3]) for t in out2.texts)
    assert set(out2.born) <= {0, 1}


def test_label_mix_follows_the_noisy_counts():
    gen = FakeGenerator()
    clusters = PublicClusters.create(np.eye(D)[:2], [1, 1], labels=[0, 1])
    counts = np.array([30.0, 10.0])  # label "a" gets three quarters of the mass
    vote = secpe_vote(lambda t: (counts, np.zeros((2, D))), clusters, 0.0, np.random.default_rng(0), 1.0)
    out = evolve(gen, fake_embed, vote, ["a", "b"], n_syn=8, variations=2, rounds=1, seed=1)
    assert sorted(out.labels) == ["a"] * 6 + ["b"] * 2  # (31, 11) of 42 -> 5.9, 2.1 -> 6, 2


def test_augpe_sigma_scales_with_rows_per_secret():
    one = augpe_secret_sigma(1e-4, 1e-3, 4, 1)
    assert augpe_secret_sigma(1e-4, 1e-3, 4, 3) == 3 * one
    assert augpe_secret_sigma(1e-4, 1.0, 4, 3) == 0.0
