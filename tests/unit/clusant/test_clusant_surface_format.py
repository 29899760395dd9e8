"""Surface formats: a drawn candidate written in the input's format, and the privacy claim of doing so.

The exact test pushes the mechanism's full output distribution through ``render``: for inputs of the same
type and format every rendered output stays within the mechanism's bound; inputs of different formats have
disjoint rendered supports (the format is published, as the ledger's adjacency says); and a render that
also looks at the private value beyond its format fails the same check (the check is not vacuous)."""
from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict

import pytest

from privtext.clusant.settings import VocabularySettings
from privtext.clusant.surface_format import luhn_digit, render, surface_format
from privtext.clusant.vocabulary import build_vocabulary

DRAWN_DATE = "July 12, 1989"


def luhn_valid(number: str) -> bool:
    digits = [int(c) for c in number if c.isdigit()]
    total = sum(d if i % 2 == 0 else (2 * d - 9 if d > 4 else 2 * d) for i, d in enumerate(reversed(digits)))
    return total % 10 == 0


@pytest.mark.parametrize("value,expected,with_year", [
    ("March 3, 2024", "July 12, 1989", "July 12, 2024"), ("2024-03-03", "1989-07-12", "2024-07-12"),
    ("03/04/2024", "07/12/1989", "07/12/2024"), ("3/4/2024", "07/12/1989", "07/12/2024"),
    ("04.03.2024", "12.07.1989", "12.07.2024"), ("April 2024", "July 1989", "July 2024"),
    ("2022", "1989", "1989"),  # a year alone keeps nothing: it would be written as it is
    ("3 March 2024", "12 July 1989", "12 July 2024"),
    ("Monday, March 3, 2024", "Wednesday, July 12, 1989", "Friday, July 12, 2024")])
def test_a_date_keeps_its_layout(value, expected, with_year):
    """The layout alone (``date_keep`` "none"), and with the year kept (the default; the weekday the written
    date's): ``test_date_keeps_year`` has the guarantee."""
    assert render("DATE_TIME", DRAWN_DATE, surface_format("DATE_TIME", value, "none")) == expected
    assert render("DATE_TIME", DRAWN_DATE, surface_format("DATE_TIME", value)) == with_year


def test_a_time_stays_a_time_and_unknown_formats_keep_the_draw():
    assert dt.datetime.strptime(render("DATE_TIME", DRAWN_DATE, surface_format("DATE_TIME", "14:30")), "%H:%M")
    assert dt.datetime.strptime(render("DATE_TIME", DRAWN_DATE, surface_format("DATE_TIME", "9:15 AM")), "%I:%M %p")
    assert surface_format("DATE_TIME", "the spring of last year") is None
    assert render("DATE_TIME", DRAWN_DATE, None) == DRAWN_DATE
    assert surface_format("PERSON", "Maria Lopez") is None and surface_format("EMAIL_ADDRESS", "a@b.org") is None


@pytest.mark.parametrize("card", ["3763 514788 19751", "4111-1111-1111-1111", "4111111111111111",
                                  "6011 0009 9013 9424 123"])
def test_a_card_keeps_its_length_and_grouping_and_is_luhn_valid(card):
    out = render("CREDIT_CARD", "4654731069083242330", surface_format("CREDIT_CARD", card))
    assert len(out) == len(card) and [c for c in out if not c.isdigit()] == [c for c in card if not c.isdigit()]
    assert luhn_valid(out) and out != card
    assert luhn_digit("7992739871") == "3"  # the textbook example: 79927398713


@pytest.mark.parametrize("entity_type,value",
                         [("PHONE_NUMBER", "+1-204-645-9461x86670"), ("PHONE_NUMBER", "(990)818-3554"),
                                               ("PHONE_NUMBER", "555-010-4477 ext. 12"),
                                               ("ZIP_CODE", "77219"), ("ZIP_CODE", "77219-1234"),
                          ("US_SSN", "123-45-6789"),
                                               ("ORDER_NUMBER", "#414939"), ("ORDER_NUMBER", "AB-1234567")])
def test_codes_keep_their_shape(entity_type, value):
    """Digits drawn, separators kept; an order number's letters drawn too, a phone's extension marker kept."""
    out = render(entity_type, "#4390735", surface_format(entity_type, value))
    shape = lambda s: "".join("9" if c.isdigit() else "A" if c.isupper() else "a" if c.isalpha() else c for c in s)
    assert len(out) == len(value) and (shape(out) == shape(value) or entity_type == "PHONE_NUMBER")
    assert [c for c in out if not c.isdigit()] == [c for c in value if not c.isdigit()] or entity_type == "ORDER_NUMBER"


def test_the_date_vocabulary_holds_full_dates_only():
    phrases = build_vocabulary("DATE_TIME", VocabularySettings(size=300))
    assert len(phrases) == 300
    for p in phrases:  # every candidate renders into every layout: it spells a day, a month and a year
        assert surface_format("DATE_TIME", p, "none") in ("%B %d, %Y", "%b %d, %Y", "%d %B %Y", "%Y-%m-%d", "%m/%d/%Y",
                                                  "%d.%m.%Y",
                                                  # May: %b
                                                  "%B %-d, %Y", "%b %-d, %Y", "%-d %B %Y", "%-d %b %Y", "%-m/%-d/%Y"), p


def _rendered_distribution(mech, embedding, phrases, fmt, leak: str = "") -> dict[str, float]:
    out: dict[str, float] = defaultdict(float)
    for phrase, p in zip(phrases, mech.probabilities(embedding)):
        out[render("DATE_TIME", phrase, fmt) + leak] += p
    return out


def test_rendering_keeps_the_mechanisms_bound_within_a_format_and_publishes_the_format(date_mechanism):
    """Exact: the full rendered output distributions of same-format inputs stay within log_ratio_bound for
    every output; different formats: disjoint supports; a render that leaks one more character of the input
    fails the check for same-format inputs (negative control). The layout alone (``date_keep`` "none"): two
    years in one class; with the year kept, ``test_date_keeps_year``."""
    phrases, _, _, inputs, mech = date_mechanism
    x, x_same, x_other = "March 3, 2024", "October 19, 1961", "2024-03-03"
    fmt = surface_format("DATE_TIME", x, "none")
    assert fmt == surface_format("DATE_TIME", x_same, "none") != surface_format("DATE_TIME", x_other, "none")
    p = _rendered_distribution(mech, inputs[0], phrases, fmt)
    q = _rendered_distribution(mech, inputs[1], phrases, fmt)
    assert set(p) == set(q) and len(p) > 100 and math.isclose(sum(p.values()), 1.0)
    bound = float(mech.log_ratio_bound(inputs[0], inputs[1])[0])
    worst = max(abs(math.log(p[o]) - math.log(q[o])) for o in p)
    assert worst <= bound + 1e-9 and worst > 0.1 * bound  # held, and not trivially
    other = _rendered_distribution(mech, inputs[2], phrases, surface_format("DATE_TIME", x_other, "none"))
    assert not set(other) & set(p)  # a different format: nothing in common, the format is what is published
    leaky_p = _rendered_distribution(mech, inputs[0], phrases, fmt, leak=x[4])
    leaky_q = _rendered_distribution(mech, inputs[1], phrases, fmt, leak=x_same[4])
    assert not set(leaky_p) & set(leaky_q)  # depending on the value itself: an unbounded ratio, caught


def test_the_format_class_is_the_layout_not_the_value():
    """Whether a day is under 10 or a phone spells a word is the value, not its format: not published."""
    for keep, layout in [("none", "%m/%d/%Y"), ("year", "%m/%d/%=2024Y")]:
        assert surface_format("DATE_TIME", "3/4/2024", keep) == surface_format("DATE_TIME", "12/5/2024", keep) == layout
    assert surface_format("DATE_TIME", "March 3, 2024") == surface_format("DATE_TIME", "March 13, 2024")
    vanity = render("PHONE_NUMBER", "#4390735", surface_format("PHONE_NUMBER", "1-800-FLOWERS"))
    assert vanity[:6].count("-") == 2 and vanity.replace("-", "").isdigit()
    assert surface_format("PHONE_NUMBER", "1-800-FLOWERS") == surface_format("PHONE_NUMBER", "1-800-3569377")


# --- any script, any digit system, any width: no character of the input's digits or letters is rendered ---

import sys
import unicodedata

from hypothesis import given, settings as hsettings, strategies as st

from privtext.clusant.surface_format import CODE_TYPES, DIGIT_TYPES, fold
from privtext.pii.hashing import normalize_value

_DIGIT_ZEROS = [c for c in map(chr, range(sys.maxunicode + 1)) if unicodedata.category(c) == "Nd"
                and unicodedata.digit(c) == 0]
_UNICODE_DIGITS = st.sampled_from(_DIGIT_ZEROS).flatmap(lambda zero: st.integers(0,
                                                                                 9).map(lambda d: chr(ord(zero) + d)))
_VALUE_CHARS = st.one_of(_UNICODE_DIGITS,
                         st.characters(categories=("Lu", "Ll", "Lo", "Mn", "Nd", "No", "Pd", "Zs", "Ps", "Pe")),
                         st.sampled_from("-. ()+/#－（）　"))
_PLACEHOLDERS = set("9Aa")


def _runs(text: str) -> set[str]:
    """Every digit/letter run of length >= 2 of ``text`` (digits by value, letters case-folded)."""
    norm = "".join(str(unicodedata.digit(c)) if c.isdigit() else c.casefold() if c.isalpha() else " "
                   for c in fold(text))
    return {w[i:i + n] for w in norm.split() for n in range(2, len(w) + 1) for i in range(len(w) - n + 1)}


@pytest.mark.parametrize("entity_type,value", [
    ("PHONE_NUMBER", "０９０－１２３４－５６７８"), ("PHONE_NUMBER", "(２１２) ５５５-７７８８"),
    ("PHONE_NUMBER", "+٩٧١ ٥٠ ١٢٣ ٤٥٦٧"), ("CARD_LAST4", "４４２１"),
    ("CREDIT_CARD", "４１１１ １１１１ １１１１ １１１１"), ("ORDER_NUMBER", "MÜLLER-12345"),
    ("ZIP_CODE", "Łódź 90-001"), ("US_SSN", "१२३-४५-६७८९"), ("PHONE_NUMBER", "๐๘๑ ๒๓๔ ๕๖๗๘")])
def test_non_ascii_digits_and_letters_never_pass_through(entity_type, value):
    """The reported cases: full-width, Arabic-Indic, Devanagari, Thai digits and letters with diacritics
    are drawn like ASCII ones; the output shares no digit/letter run with the input; a card stays a card."""
    fmt = surface_format(entity_type, value)
    assert fmt is not None and not set(fmt) & (set(fold(value)) - set("-. ()+/") - _PLACEHOLDERS)
    out = render(entity_type, "#4390735", fmt)
    assert out.isascii() and normalize_value(entity_type, out) != normalize_value(entity_type, value)
    assert not {r for r in _runs(out) if len(r) >= 4} & _runs(value)  # drawn digits: a 4-run in common is not chance
    if entity_type == "CREDIT_CARD":
        assert luhn_valid(out) and sum(c.isdigit() for c in out) == 16


@hsettings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(DIGIT_TYPES | CODE_TYPES | {"DATE_TIME"})),
       st.text(_VALUE_CHARS, min_size=1, max_size=30),
       st.sampled_from(["#4390735", "July 12, 1989", "Ab-99", ""]))
def test_a_format_class_holds_no_digit_or_letter_of_the_value_and_render_never_fails(entity_type, value, candidate):
    """Property over generated Unicode values: the format class carries only placeholders, separators and
    (phones) the extension marker; ``render`` never raises; its output depends on (candidate, format) only,
    so two values of one format render identically, and its digits and letters are ASCII."""
    fmt = surface_format(entity_type, value)
    out = render(entity_type, candidate, fmt)
    if fmt is None:
        assert out == candidate
        return
    if entity_type != "DATE_TIME":
        letters = {c for c in fmt if c.isalnum()} - _PLACEHOLDERS
        assert letters <= (set("extensionEXTENSION") if entity_type == "PHONE_NUMBER" else set()), (value, fmt)
        assert all(c.isascii() for c in out if c.isalnum())
        twin = "".join("7" if c == "9" else "Q" if c == "A" else "q" if c == "a" else c for c in fmt)
        assert render(entity_type, candidate, surface_format(entity_type, twin)) == out
    else:
        assert out.isascii()


@given(st.text(_VALUE_CHARS, max_size=40))
def test_ascii_digits_writes_every_digit_of_any_script_as_its_ascii_value_and_keeps_the_rest(value):
    """The audit encodes tokens as ``ascii_digits`` writes them: every decimal digit becomes the ASCII digit of
    the same value (so two numbers differing in one digit stay two values to the encoder, whatever their
    script or width), and everything else is ``fold``'s text unchanged."""
    from privtext.clusant.surface_format import ascii_digits

    folded, out = fold(value), ascii_digits(value)
    assert len(out) == len(folded)
    for before, after in zip(folded, out):
        if unicodedata.decimal(before, None) is not None:
            assert after.isascii() and after.isdigit() and int(after) == unicodedata.decimal(before)
        else:
            assert after == before
    assert not any(unicodedata.decimal(c, None) is not None and not c.isascii() for c in out)
