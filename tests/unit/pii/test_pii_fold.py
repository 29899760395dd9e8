"""Width and digit folding for detection: the folded text and its offset map back, over generated Unicode."""
import unicodedata

from hypothesis import given, settings, strategies as st

from privtext.pii.fold import fold, fold_char


def test_full_width_and_other_digit_systems_fold_to_ascii():
    assert fold("５３６－２２－８７５６").text == "536-22-8756"
    assert fold("५३६-२२-८७५६").text == "536-22-8756"  # Devanagari digits
    assert fold("٥٣٦-٢٢-٨٧٥٦").text == "536-22-8756"  # Arabic-Indic digits
    assert fold("ｊｏｈｎ＠ｅｘａｍｐｌｅ．ｃｏｍ").text == "john@example.com"
    assert fold("Иван Петров").text == "Иван Петров"  # letters of other scripts are kept


def test_ascii_text_is_its_own_fold_without_a_map():
    folded = fold("Call 555-0143 today")
    assert folded.text == "Call 555-0143 today" and folded.orig_start is None
    assert folded.to_original(5, 13) == (5, 13)


def test_an_expanding_character_maps_back_whole():
    text = "of\ufb01ce ５５５"  # "ﬁ" folds to two letters
    folded = fold(text)
    assert folded.text == "office 555"
    assert folded.to_original(0, 6) == (0, 5)  # "office" is the whole "of\ufb01ce"
    assert folded.to_original(3, 4) == (2, 3)  # the "i" half of "ﬁ" maps to the whole ligature
    assert text[slice(*folded.to_original(7, 10))] == "５５５"


unicode_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=60)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(unicode_text)
def test_folded_text_is_the_concatenation_of_folded_characters(text):
    folded = fold(text)
    assert folded.text == "".join(fold_char(c) for c in text)
    assert not any(unicodedata.category(c) == "Nd" and not c.isascii() for c in folded.text)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(unicode_text, st.data())
def test_every_folded_span_maps_back_to_the_characters_that_made_it(text, data):
    folded = fold(text)
    if not folded.text:
        return
    start = data.draw(st.integers(0, len(folded.text) - 1))
    end = data.draw(st.integers(start + 1, len(folded.text)))
    o_start, o_end = folded.to_original(start, end)
    assert 0 <= o_start < o_end <= len(text)
    # the original span folds to the folded span, widened only to whole characters
    refolded = "".join(fold_char(c) for c in text[o_start:o_end])
    assert folded.text[start:end] in refolded
    prefix = "".join(fold_char(c) for c in text[:o_start])
    assert len(prefix) <= start and start + (end - start) <= len(prefix) + len(refolded)
    # a span on character boundaries maps back exactly: the map is the identity on ASCII
    if text.isascii():
        assert (o_start, o_end) == (start, end)
