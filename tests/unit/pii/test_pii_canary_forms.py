"""Canaries in other widths, digit systems and scripts: each form is the value it claims, its offsets
index the text exactly, and scoring by form sees a detector blind to one form (with negative controls)."""
import re
import unicodedata

import pytest
from hypothesis import given, settings, strategies as st

from privtext.pii.canaries import (
    DIGIT_SYSTEMS,
    DIGIT_TYPES,
    FORMS,
    GENERATORS,
    NAME_SCRIPTS,
    SCRIPT_TYPES,
    fullwidth,
    in_digits,
    make_canaries,
    score,
)

CANARIES = make_canaries(list(GENERATORS), 120, seed=11) + make_canaries(["PERSON"], 80, seed=12)  # every script
# the Unicode character-name prefix of each script's letters
SCRIPT_NAMES = {"cyrillic": "CYRILLIC", "greek": "GREEK", "arabic": "ARABIC", "hebrew": "HEBREW",
                "devanagari": "DEVANAGARI", "han": "CJK UNIFIED IDEOGRAPH", "hangul": "HANGUL", "thai": "THAI"}


def _planted():
    for c in CANARIES:
        for (start, end, etype), form in zip(c.gold, c.forms):
            yield c.text[start:end], etype, form


def _ascii_digits(value: str) -> str:
    return "".join(str(unicodedata.digit(c)) if unicodedata.digit(c, None) is not None else c for c in value)


def test_every_form_is_planted_and_ascii_stays_the_larger_part():
    forms = [f for c in CANARIES for f in c.forms]
    assert set(forms) == set(FORMS)
    assert 0.4 < forms.count("ascii") / len(forms) < 0.6  # ASCII_SHARE 0.5 over 600 draws (sd 0.02)
    for _, etype, form in _planted():
        assert not form.startswith("digits:") or etype in DIGIT_TYPES
        assert not form.startswith("script:") or etype in SCRIPT_TYPES


def test_each_form_is_the_value_it_claims():
    phone = re.compile(r"^[0-9()+.\- x]+$")
    for value, etype, form in _planted():
        assert value and value == value.strip()
        if form == "ascii":
            assert value.isascii()
        elif form == "fullwidth":
            folded = unicodedata.normalize("NFKC", value)
            assert folded.isascii() and all(c == "\u3000" or 0xFF01 <= ord(c) <= 0xFF5E for c in value)
            assert etype != "PHONE_NUMBER" or phone.match(folded)  # an ASCII phone once folded
        elif form.startswith("digits:"):
            zero = DIGIT_SYSTEMS[form.split(":")[1]]
            digits = [c for c in value if unicodedata.digit(c, None) is not None]
            assert digits and all(zero <= ord(c) <= zero + 9 for c in digits)  # every digit in that system
            assert _ascii_digits(value).isascii()
            assert etype != "PHONE_NUMBER" or phone.match(_ascii_digits(value))
        else:
            prefix = SCRIPT_NAMES[form.split(":")[1]]
            letters = [c for c in value if unicodedata.category(c).startswith("L")]
            assert etype == "PERSON" and letters and all(unicodedata.name(c).startswith(prefix) for c in letters)
    assert set(SCRIPT_NAMES) == set(NAME_SCRIPTS)


@settings(max_examples=200, deadline=None)
@given(st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E)), st.sampled_from(sorted(DIGIT_SYSTEMS)))
def test_width_and_digit_renderings_fold_back(text, system):
    assert unicodedata.normalize("NFKC", fullwidth(text)) == text
    assert _ascii_digits(in_digits(text, system)) == text
    assert len(fullwidth(text)) == len(in_digits(text, system)) == len(text)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**64 - 1), st.integers(1, 8),
       st.lists(st.sampled_from(sorted(GENERATORS)), min_size=1, max_size=5, unique=True))
def test_offsets_index_the_text_exactly(seed, count, types):
    canaries = make_canaries(types, count, seed=seed)
    assert len(canaries) == count
    for c in canaries:
        assert len(c.forms) == len(c.gold) == 3
        prev = 0
        for start, end, etype in c.gold:
            value = c.text[start:end]
            assert prev <= start < end <= len(c.text) and etype in types
            assert value == value.strip() and not c.text[start - 1].isalnum() and not c.text[end].isalnum()
            prev = end
    assert make_canaries(types, count, seed=seed) == canaries  # deterministic under a seed


def _blind_to(blind: str):
    """A fake detector finding exactly the gold values not in form ``blind``."""
    return {c.doc_id: [(s, e) for (s, e, _), f in zip(c.gold, c.forms) if f != blind] for c in CANARIES}


def test_a_detector_blind_to_full_width_scores_zero_there_and_the_overall_sees_it():
    result = score(CANARIES, _blind_to("fullwidth"))
    forms = [f for c in CANARIES for f in c.forms]
    n_full = forms.count("fullwidth")
    assert result["by_form"]["fullwidth"]["values"] == n_full and result["by_form"]["fullwidth"]["recall"] == 0.0
    assert all(v["recall"] == 1.0 for f, v in result["by_form"].items() if f != "fullwidth")
    assert result["overall"]["values"] == len(forms)
    assert result["overall"]["recall"] == pytest.approx(1 - n_full / len(forms), abs=1e-12)
    phones = [f for c in CANARIES for (_, _, t), f in zip(c.gold, c.forms) if t == "PHONE_NUMBER"]
    assert result["by_type"]["PHONE_NUMBER"]["recall"] == pytest.approx(1 - phones.count("fullwidth") / len(phones),
                                                                           abs=1e-12)
    assert result["by_form"]["fullwidth"]["by_type"]["PHONE_NUMBER"]["recall"] == 0.0
    assert result["overall"]["recall"] < 0.9  # the publish gate's default refuses it


def test_negative_control_an_ascii_only_detector_fails_the_other_forms():
    """An ASCII-only pattern detector (what the old canaries could not tell from a perfect one) finds
    every ASCII digit run and misses every value written in another width or digit system."""
    found = {c.doc_id: [m.span() for m in re.finditer(r"[0-9][0-9 ()./:-]*[0-9]|[0-9]", c.text)]
             for c in CANARIES}
    result = score(CANARIES, found)
    assert result["by_form"]["ascii"]["by_type"]["US_SSN"]["recall"] == 1.0
    for form, figures in result["by_form"].items():
        if form != "ascii":
            assert figures["recall"] == 0.0, form
    assert result["overall"]["recall"] < 0.6


def test_canaries_without_forms_score_as_ascii():
    old = [type(c)(c.doc_id, c.text, c.gold) for c in CANARIES[:10]]
    perfect = {c.doc_id: [(s, e) for s, e, _ in c.gold] for c in old}
    assert set(score(old, perfect)["by_form"]) == {"ascii"}
