import hashlib

import numpy as np
import pytest
from pydantic import ValidationError

from privtext.secpe.aug_pe import augpe_secret_sigma, augpe_vote, private_votes
from privtext.secpe.evolution import center_votes, evolve, label_quotas, secpe_vote, select_top
from privtext.secpe.secret_clustering import (
    NO_LABEL,
    NoisyCenters,
    PublicClusters,
    choose_public_source,
    clip_rows,
    generated_public_clusters,
    private_cluster_stats,
    release,
)
from privtext.secpe.settings import SecpeSettings

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
    vote = secpe_vote(lambda t, c: private_cluster_stats(private, c, 1.0), clusters, 0.0, rng, 1.0,
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
    vote = secpe_vote(lambda t, c: (counts, np.zeros((2, D))), clusters, 0.0, np.random.default_rng(0), 1.0)
    out = evolve(gen, fake_embed, vote, ["a", "b"], n_syn=8, variations=2, rounds=1, seed=1)
    assert sorted(out.labels) == ["a"] * 6 + ["b"] * 2  # (31, 11) of 42 -> 5.9, 2.1 -> 6, 2


def test_augpe_sigma_scales_with_rows_per_secret():
    one = augpe_secret_sigma(1e-4, 1e-3, 4, 1)
    assert augpe_secret_sigma(1e-4, 1e-3, 4, 3) == 3 * one
    assert augpe_secret_sigma(1e-4, 1.0, 4, 3) == 0.0


# SecPE's public clusters from the generator (all-private corpora): D_pub = round 0's RANDOM_API pool.
# Independence from the private rows: Protected Evolution on two different private corpora, comparing the
# public clusters each release used; the negative control folds the private rows into D_pub and the same
# check must see it. The noise is checked against Eq. 7's closed form.

LABELS = ["a", "b"]


def _clusters_used(private: np.ndarray, private_labels: np.ndarray, public) -> tuple[list, list]:
    """(public clusters of every release, round 0's pool) of a 2-round SecPE run over ``private``."""
    used, pools = [], []

    def stats(t, clusters):
        used.append(clusters)
        return private_cluster_stats(private, clusters, 1.0, labels=private_labels)

    def spy(pool, codes):
        pools.append(pool.copy())
        return public(pool, codes)

    vote = secpe_vote(stats, spy, sigma=0.5, rng=np.random.default_rng(0), radius=1.0)
    evolve(FakeGenerator(), fake_embed, vote, LABELS, n_syn=6, variations=4, rounds=2, seed=3)
    return used, pools


def _same(x: PublicClusters, y: PublicClusters) -> bool:
    return (x.k == y.k and np.array_equal(x.centers, y.centers) and np.array_equal(x.sizes, y.sizes)
            and np.array_equal(x.labels, y.labels))


def _private(seed: int, n: int = 40):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, D)) * (1 + seed), rng.integers(0, 2, n)


def honest(pool, codes):
    return generated_public_clusters(pool, codes, k_total=4, radius=1.0, seed=0)


def test_generated_centres_do_not_depend_on_the_private_rows():
    first, pools = _clusters_used(*_private(1), honest)
    second, _ = _clusters_used(*_private(2, n=7), honest)
    assert len(first) == 2 and first[0] is first[1]  # built once, from round 0's pool, for every round
    assert _same(first[0], second[0])
    # the pool is round 0's RANDOM_API output: the same generator draws, embedded and clipped
    gen, seeds = FakeGenerator(), np.random.default_rng(3)
    round0 = [t for name in LABELS for t in gen.random(3 * 4, name, seed=int(seeds.integers(2**31)))]
    np.testing.assert_array_equal(pools[0], clip_rows(fake_embed(round0), 1.0))


def test_negative_control_private_rows_taken_as_public_are_seen():
    """A D_pub that takes the private rows in (here: pool + private) passes the run but fails the check."""
    def leaky(private, labels):
        return lambda pool, codes: generated_public_clusters(
            np.vstack([pool, clip_rows(private, 1.0)]), np.concatenate([codes, labels]), k_total=4, radius=1.0, seed=0)

    first, _ = _clusters_used(*_private(1), leaky(*_private(1)))
    second, _ = _clusters_used(*_private(2, n=7), leaky(*_private(2, n=7)))
    assert not _same(first[0], second[0])


def test_the_first_vote_must_be_round_0():
    vote = secpe_vote(lambda t, c: (np.zeros(c.k), np.zeros((c.k, D))), honest, 0.0, np.random.default_rng(0), 1.0)
    cand = clip_rows(fake_embed(["x", "y", "z"]), 1.0)
    with pytest.raises(ValueError, match="round 0"):
        vote(1, cand, np.array([0, 0, 1]))


@pytest.mark.parametrize("k_total,pool_per_label,distinct", [(4, 12, 12), (40, 5, 5), (3, 9, 2), (1, 6, 6)])
def test_generated_clusters_have_n_k_at_least_one_and_centres_within_r(k_total, pool_per_label, distinct):
    rng = np.random.default_rng(k_total)
    base = rng.normal(size=(distinct, D)) * 3  # norms ~ 12: clipped to R = 0.5
    pool = np.vstack([base[rng.integers(0, distinct, pool_per_label)] for _ in LABELS])
    codes = np.repeat([0, 1], pool_per_label)
    got = generated_public_clusters(pool, codes, k_total, radius=0.5, seed=0)
    assert got.sizes.min() >= 1
    for c in (0, 1):
        mine = got.labels == c
        assert got.sizes[mine].sum() == pool_per_label  # every sample in exactly one centre of its label
        assert 1 <= mine.sum() <= min(max(1, round(k_total / 2)), len(np.unique(pool[codes == c], axis=0)))
    assert np.linalg.norm(got.centers, axis=1).max() <= 0.5 + 1e-6
    # each centre is the mean of its clipped members: the pool's clipped sum is the size-weighted centres'
    np.testing.assert_allclose((got.sizes[:, None] * got.centers).sum(axis=0), clip_rows(pool, 0.5).sum(axis=0),
                               atol=1e-4)
    unlabelled = generated_public_clusters(pool, np.zeros(len(pool), int), k_total, 0.5, 0, labelled=False)
    assert set(unlabelled.labels.tolist()) == {NO_LABEL}


def test_noise_calibration_is_eq7s_closed_form_on_generated_centres():
    """Same closed form as test_secret_clustering.test_eq7_noise_scales: centre noise sd 2 R sigma / n_k,
    count noise sd sigma; and Thm. 1's bound: c sampled records of one secret move the centres, at
    Eq. 7's noise scale n_k / 2R, by at most c in L2 (so sigma from SecretNoise is unchanged)."""
    rng = np.random.default_rng(5)
    pool = rng.normal(size=(24, D))
    clusters = generated_public_clusters(pool, np.repeat([0, 1], 12), k_total=4, radius=1.0, seed=0)
    private, labels = rng.normal(size=(30, D)), rng.integers(0, 2, 30)
    counts, sums = private_cluster_stats(private, clusters, 1.0, labels=labels)
    sigma, draws = 2.0, 4000
    out = [release(counts, sums, clusters, sigma, rng, 1.0) for _ in range(draws)]
    centres, sizes = np.stack([o.centers for o in out]), np.stack([o.counts for o in out])
    # s.e. of a sd estimated from 4000 draws is 1.1%; 6% is over 5 s.e. (per coordinate, 4 x 16 of them)
    np.testing.assert_allclose(centres.std(axis=0), np.repeat((2 * sigma / clusters.sizes)[:, None], D, 1), rtol=0.06)
    np.testing.assert_allclose(sizes.std(axis=0), sigma, rtol=0.06)
    secret_rows = rng.normal(size=(3, D)) * 100  # one secret's 3 records, far away: clipped to R
    with_ = release(*private_cluster_stats(np.vstack([private, secret_rows]), clusters, 1.0,
                                           labels=np.concatenate([labels, [0, 1, 1]])), clusters, 0.0, rng, 1.0)
    without = release(counts, sums, clusters, 0.0, rng, 1.0)
    assert np.abs(with_.counts - without.counts).sum() == 3
    assert np.linalg.norm((with_.centers - without.centers) * (clusters.sizes / 2.0)[:, None]) <= 3 + 1e-9


def test_public_source_choice_and_refusal():
    assert choose_public_source("auto", [30, 12], 20) == "documents"  # >= ceil(20 / 2) each
    assert choose_public_source("auto", [30, 9], 20) == "generator"
    assert choose_public_source("auto", [], 20) == "generator"
    assert choose_public_source("generator", [500, 500], 20) == "generator"
    assert choose_public_source("documents", [1, 1], 20) == "documents"  # n_k >= 1 is all Thm. 1 needs
    for per_label in ([0, 0], [5, 0], []):
        with pytest.raises(ValueError, match="secpe.public_source") as refused:
            choose_public_source("documents", per_label, 20)
        assert "documents, generator, auto" in str(refused.value)


def test_settings_refuse_bad_public_source_and_labels():
    assert SecpeSettings(labels=["x", "y"]).labels == ("x", "y")
    with pytest.raises(ValidationError, match="public_source"):
        SecpeSettings(public_source="private")
    for labels in (["x", "x"], [""]):
        with pytest.raises(ValidationError, match="distinct non-empty"):
            SecpeSettings(labels=labels)
