import numpy as np
import pytest

from privtext.clusant.clustering import cluster_vocabulary, custext_clusters, kmeans_clusters, singleton_clusters


def _is_partition(labels, n_vocab):
    counts = np.bincount(labels)
    return labels.shape == (n_vocab,) and labels.min() == 0 and (counts > 0).all()


@pytest.mark.parametrize("method", ["custext", "kmeans"])
@pytest.mark.parametrize("n_clusters", [1, 7, 60, 500])
def test_clustering_partitions_the_vocabulary(vocab, method, n_clusters):
    labels = cluster_vocabulary(vocab, method, n_clusters, np.random.default_rng(0))
    assert _is_partition(labels, len(vocab))
    assert labels.max() + 1 <= min(n_clusters, len(vocab))


def test_custext_clusters_have_size_h_and_hold_nearest_neighbours(vocab):
    labels = custext_clusters(vocab, 7, np.random.default_rng(1))
    sizes = np.sort(np.bincount(labels))
    h = int(np.ceil(len(vocab) / 7))
    assert (sizes[1:] == h).all() and sizes[0] <= h  # every cluster has h tokens, the last one possibly fewer
    # the first cluster is a seed plus its h-1 nearest tokens: one member has all others among its h nearest
    first = np.flatnonzero(labels == 0)
    d = np.linalg.norm(vocab[first][:, None] - vocab[None], axis=2)
    nearest = np.argsort(d, axis=1)[:, :h]
    assert any(set(first) == set(row) for row in nearest)


def test_custext_clusters_are_reproducible(vocab):
    a = custext_clusters(vocab, 6, np.random.default_rng(3))
    b = custext_clusters(vocab, 6, np.random.default_rng(3))
    np.testing.assert_array_equal(a, b)


def test_kmeans_recovers_separated_groups():
    rng = np.random.default_rng(0)
    centres = np.eye(4)[:3] * 10
    x = np.repeat(centres, 15, axis=0) + 0.1 * rng.normal(size=(45, 4))
    labels = kmeans_clusters(x, 3, np.random.default_rng(1))
    for g in range(3):
        assert len(set(labels[g * 15 : (g + 1) * 15])) == 1
    assert len(set(labels)) == 3


def test_singletons_and_unknown_method(vocab):
    assert _is_partition(singleton_clusters(5), 5) and singleton_clusters(5).max() == 4
    with pytest.raises(ValueError):
        cluster_vocabulary(vocab, "dbscan", 3, np.random.default_rng(0))
