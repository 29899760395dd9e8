import hashlib

import numpy as np

from privtext.secpe.aug_pe import augpe_secret_sigma, augpe_vote, private_votes
from privtext.secpe.evolution import center_closeness, center_votes, evolve, label_quotas, secpe_vote, select_top
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


def test_histogram_ties_are_ranked_by_closeness_to_the_released_centres():
    hist = np.array([0.0, 5.0, 0.0, 0.0, 0.0])
    labels = np.zeros(5, dtype=np.int64)
    closeness = np.array([-3.0, -9.0, -1.0, -np.inf, -2.0])
    assert select_top(hist, labels, np.array([3]), closeness).tolist() == [1, 2, 4]  # histogram first
    assert select_top(hist, labels, np.array([3])).tolist() == [1, 0, 2]  # no closeness: candidate order


def test_center_closeness_reads_positive_centres_of_the_candidates_label():
    cand = np.array([[1, 0], [0, 1], [1, 0], [0.6, 0.8]], dtype=np.float32)
    noisy = NoisyCenters(np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]]), np.array([4.0, 2.0, -1.0]),
                         np.array([0, 0, 1]))
    got = center_closeness(noisy, cand, np.array([0, 0, 1, 0]))
    np.testing.assert_allclose(got[[0, 1, 3]], [0.0, 0.0, -np.hypot(0.6, 0.2)], atol=1e-6)
    assert got[2] == -np.inf  # label 1's only centre has a negative noisy size


def test_secpe_fills_the_picks_beyond_K_with_the_candidates_nearest_a_centre():
    """K = 1 < N_syn = 3: one candidate gets the vote, the other two picks are the candidates nearest the
    released centre (computed here with numpy), not the first ones generated."""
    gen = FakeGenerator()
    first = gen.random(6, None, seed=np.random.default_rng(0).integers(2**31))  # evolve's first draw
    emb = fake_embed(first)
    centre = emb[5] * 0.6 + emb[4] * 0.4
    noisy = NoisyCenters(centre[None, :], np.array([7.0]), np.array([-1]))
    out = evolve(gen, fake_embed, lambda t, e, c: (center_votes(noisy, e, c), center_closeness(noisy, e, c)),
                 [None], n_syn=3, variations=2, rounds=1, seed=0)
    expected = {first[i] for i in np.argsort(np.linalg.norm(emb - centre, axis=1))[:3]}
    assert set(out.texts) == expected and expected != set(first[:3])


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
