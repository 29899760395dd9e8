import numpy as np

from privtext.dped.sharding import assign_shards


def test_user_level_shards_are_disjoint_and_stable():
    docs = [f"d{i}" for i in range(300)]
    users = [f"u{i % 37}" for i in range(300)]
    a = assign_shards(docs, 8, "s", users)
    assert a.adjacency == "user"
    # every user's documents sit in exactly one shard
    for u in set(users):
        assert len(set(a.shard[np.array(users) == u])) == 1
    assert set(a.shard) <= set(range(8)) and len(set(a.shard)) > 4
    # removing one user moves nobody else
    keep = np.array(users) != "u3"
    b = assign_shards([d for d, k in zip(docs, keep) if k], 8, "s", [u for u, k in zip(users, keep) if k])
    assert np.array_equal(b.shard, a.shard[keep])


def test_record_level_without_user_ids():
    docs = [f"d{i}" for i in range(100)]
    a = assign_shards(docs, 5, "s")
    assert a.adjacency == "record" and len(set(a.unit)) == 100
    assert assign_shards(docs, 5, "s", [None] * 100).adjacency == "record"
