import numpy as np
import scipy.sparse as sp

from privtext.dped.aggregation import NoiseMultipliers, aggregate, vote_histogram
from privtext.dped.settings import DpedSettings
from privtext.dped.teacher import clip_rows


def test_clip_rows_bound():
    x = np.random.default_rng(0).normal(size=(200, 7)) * 10
    c = clip_rows(x, 1.5)
    assert np.all(np.linalg.norm(c, axis=1) <= 1.5 + 1e-9)
    small = x / 100
    assert np.allclose(clip_rows(small, 1.5), small)


def test_vote_histogram_counts_sets():
    v1 = np.array([[1, 2], [0, -1], [-1, -1]])
    v2 = np.array([[1, 0], [2, 0], [-1, -1]])
    h = vote_histogram([v1, v2], 3).toarray()
    assert h.tolist() == [[1, 2, 1], [2, 0, 1], [0, 0, 0]]


def _votes(max_counts, n=6):
    rows = []
    for i, m in enumerate(max_counts):
        r = np.zeros(n)
        r[(i + 1) % n] = m
        r[(i + 2) % n] = m // 2  # other bins differ between the two inputs below
        rows.append(r)
    return sp.csr_matrix(np.array(rows))


def test_threshold_is_noisy_and_depends_only_on_noisy_max():
    s = DpedSettings(n_teachers=50, threshold=25.0, top_k=2, dim=4, vocabulary_mode="public")
    nm = NoiseMultipliers(threshold=3.0, hidden=1.0, vote=1.0)
    maxes = [50, 50, 0, 0, 25, 25]
    a = aggregate(np.zeros((6, 4)), _votes(maxes), s, nm, np.random.default_rng(7))
    other = _votes(maxes).toarray()
    other[:, 0] += 0  # same maxima, different lower bins
    other[other == 25] = 12  # lower bins of rows with max 50 change (12 -> ... ) but not the max
    other = np.where(np.array(maxes)[:, None] == 50, other, _votes(maxes).toarray())
    b = aggregate(np.ones((6, 4)), sp.csr_matrix(other), s, nm, np.random.default_rng(7))
    # same seed and same maxima -> same decisions, whatever the rest of the data
    assert np.array_equal(a.answered, b.answered)
    # far above / far below T (8+ sigma_T away) answer / abstain with certainty for this seed
    assert a.answered[:2].all() and not a.answered[2:4].any()
    # at the threshold the decision is random: over many seeds about half answer (sd of mean ~ 0.016)
    rate = np.mean([aggregate(np.zeros((6, 4)), _votes(maxes), s, nm, np.random.default_rng(i)).answered[4:].mean()
                    for i in range(500)])
    assert 0.45 < rate < 0.55
    assert np.isnan(a.hidden[~a.answered]).all() and (a.labels[~a.answered] == -1).all()


def test_released_labels_are_top_votes_when_noise_is_small():
    s = DpedSettings(n_teachers=50, threshold=1.0, top_k=1, dim=2, vocabulary_mode="public")
    nm = NoiseMultipliers(threshold=0.01, hidden=0.01, vote=0.01)
    a = aggregate(np.full((6, 2), 5.0), _votes([40] * 6), s, nm, np.random.default_rng(0))
    assert a.answered.all()
    assert a.labels[:, 0].tolist() == [(i + 1) % 6 for i in range(6)]
    assert np.allclose(a.hidden, 0.1, atol=0.01 * 6)  # 5/50 plus noise with sigma 0.01*2/50


def test_block_release_matches_whole_release_and_excludes_its_own_query():
    # a block of rows released on its own (the Spark stage's tasks) gives the same labels as the whole
    # matrix when the noise is negligible; each row's own query column (first_query + r) is excluded
    s = DpedSettings(n_teachers=50, threshold=1.0, top_k=2, dim=3, vocabulary_mode="public")
    nm = NoiseMultipliers(threshold=0.01, hidden=0.01, vote=0.01)
    m = 8
    dense = np.zeros((m, m))
    for q in range(m):
        dense[q, q] = 50  # the query's own word has the most votes: never a label
        dense[q, (q + 3) % m] = 30
        dense[q, (q + 5) % m] = 20
    votes = sp.csr_matrix(dense)
    hidden = np.arange(m * 3, dtype=float).reshape(m, 3)
    whole = aggregate(hidden, votes, s, nm, np.random.default_rng(0))
    parts = [aggregate(hidden[b:b + 3], votes[b:b + 3], s, nm, np.random.default_rng(b), first_query=b)
             for b in range(0, m, 3)]
    labels = np.concatenate([p.labels for p in parts])
    assert [sorted(r) for r in labels.tolist()] == [sorted(((q + 3) % m, (q + 5) % m)) for q in range(m)]
    assert np.array_equal(np.sort(labels, 1), np.sort(whole.labels, 1))
    assert np.allclose(np.concatenate([p.hidden for p in parts]), hidden / 50, atol=1e-3)
    # without the offset the block would exclude the wrong column and label its own query
    wrong = aggregate(hidden[3:6], votes[3:6], s, nm, np.random.default_rng(3))
    assert any(q + 3 in row for q, row in enumerate(wrong.labels.tolist()))
