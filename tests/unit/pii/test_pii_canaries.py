"""Canary documents: known values at exact offsets, a fresh draw per seed, scoring against an oracle."""
from privtext.pii.canaries import GENERATORS, make_canaries, score


def test_canaries_hold_their_values_at_the_recorded_offsets():
    canaries = make_canaries(list(GENERATORS), 30, seed=3)
    assert len(canaries) == 30 and all(c.doc_id.startswith("canary-") for c in canaries)
    seen = set()
    for c in canaries:
        for start, end, etype in c.gold:
            value = c.text[start:end]
            assert value and value == value.strip() and etype in GENERATORS
            seen.add(etype)
    assert seen == set(GENERATORS)  # every configured type with a generator is exercised
    assert make_canaries(list(GENERATORS), 5, seed=3) == canaries[:5]
    assert make_canaries(list(GENERATORS), 5, seed=4)[0].text != canaries[0].text  # a fresh draw per seed
    assert make_canaries(["NO_GENERATOR"], 5, seed=1) == []


def test_score_counts_overlap_and_characters():
    canaries = make_canaries(["PERSON", "EMAIL_ADDRESS", "CREDIT_CARD"], 2, seed=1)
    perfect = {c.doc_id: [(s, e) for s, e, _ in c.gold] for c in canaries}
    assert score(canaries, perfect)["overall"] == {"values": 6, "recall": 1.0, "coverage": 1.0}
    half = {c.doc_id: [(s, s + (e - s) // 2) for s, e, t in c.gold if t == "PERSON"] for c in canaries}
    result = score(canaries, half)
    person = result["by_type"]["PERSON"]
    assert person["recall"] == 1.0 and 0.4 < person["coverage"] <= 0.5
    assert result["by_type"]["EMAIL_ADDRESS"]["recall"] == 0.0
    assert score(canaries, {})["overall"]["recall"] == 0.0
