import numpy as np

from privtext.dped.vocabulary import dp_select, public_words, unit_word_counts


def test_public_list_is_whole_words():
    words = public_words()
    assert len(words) > 15000
    assert all(w.isalpha() and w.islower() for w in words)
    assert "the" in words and "##s" not in words


def test_dp_vocabulary_is_inside_public_list():
    candidates = ["alpha", "beta", "gamma", "delta"]
    # "zzprivate" is frequent in the private data but not public: it can never be released
    units = [["alpha beta zzprivate zzprivate"] for _ in range(200)] + [["gamma zzprivate"]]
    counts = unit_word_counts(units, candidates, words_per_unit=1)
    assert counts.tolist() == [200, 0, 1, 0]  # L0 = 1: each unit contributes its top word only
    out = dp_select(counts, candidates, 1.0, 1, 4.0, None, np.random.default_rng(0))
    assert set(out) <= set(candidates) and "zzprivate" not in out
    assert out[0] == "alpha" and "delta" not in out  # 200 >> 4 sigma; 0 + noise < 4 sigma for this seed
