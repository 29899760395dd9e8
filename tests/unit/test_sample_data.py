"""sample_data.plant_pii: the text kept as written, every planted offset on a value of its slot's type."""
import string

from hypothesis import given, settings, strategies as st

from privtext.sample_data import REVIEW_FRAMES, SLOT_TYPES, plant_pii


def _assemble(frame: str, review: str, text: str, planted) -> str:
    """``frame`` written with ``review`` and the planted values (read at their offsets), in slot order."""
    values, out = iter(planted), ""
    for literal, slot, _, _ in string.Formatter().parse(frame):
        out += literal
        if slot == "review":
            out += review
        elif slot is not None:
            start, end, planted_slot, _ = next(values, (0, 0, None, None))
            out += text[start:end] if planted_slot == slot else "\0"
    return out


@settings(max_examples=30, deadline=None)
@given(st.lists(st.text(max_size=60), min_size=1, max_size=8), st.integers(0, 2**16))
def test_planted_reviews_keep_the_review_and_point_at_their_values(reviews, seed):
    rows = plant_pii(reviews, seed=seed)
    assert len(rows) == len(reviews)
    for review, row in zip(reviews, rows):
        text, planted = row["text"], row["planted"]
        assert all(SLOT_TYPES[slot] == t and end > start for start, end, slot, t in planted)
        # any text, braces and all, kept verbatim inside one frame whose slots hold the planted values
        assert any(_assemble(f, review, text, planted) == text for f in REVIEW_FRAMES)
    assert plant_pii(reviews, seed=seed) == rows  # reproducible


def test_the_demos_two_samples_share_no_secret_value():
    """The demo's export sample and its refresh's chat sample (privtext.demo) plant disjoint values: compared
    as letters and digits only, case-folded (coarser than pii.hashing.normalize_value for every type, and the
    secret id hashes the value without its type), so no planted value of one is a secret id of the other."""
    from privtext.demo import REFRESH_SAMPLE
    from privtext.sample_data import generate

    def values(rows):
        return {"".join(c for c in row["text"][start:end].casefold() if c.isalnum())
                for row in rows for start, end, _, _ in row["planted"]}

    export = generate(1000, seed=7, with_planted=True)  # privtext demo's defaults (--n 1000 --seed 7)
    chats = generate(REFRESH_SAMPLE, seed=7, with_planted=True, corpus="chat")
    assert values(export) and values(chats)
    assert values(export) & values(chats) == set()
    assert values(export) & values(generate(100, seed=8, with_planted=True)) != set()  # two email samples do share
    assert not {r["doc_id"] for r in export} & {r["doc_id"] for r in chats}
    public = sum(not r["planted"] for r in chats) / len(chats)
    assert 0.3 < public < 0.6  # SecPE's public part: enough secret-free messages per label for its clusters
