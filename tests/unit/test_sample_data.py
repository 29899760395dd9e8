"""sample_data.plant_pii: the text kept as written, every planted offset on a value of its slot's type."""
import string

from hypothesis import given, settings
from hypothesis import strategies as st

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
