"""Read on real text (issue 44, a published night of the real-text fixtures): a chat's "this past summer" and
"the first 2 days" were typed DATE_TIME and written as full dates ("November 12, 2030"), and "Does" before
"Harry Potter" was widened into the name and replaced with it. A DATE_TIME span with no date element (no
number of any script, no month or weekday name) is relative time; a stop word is never widened into a name."""
import datetime as dt
import unicodedata

import pytest
from hypothesis import example, given, settings as hsettings, strategies as st

from privtext.pii.detect import detect_spans
from privtext.pii.gazetteers import stop_words
from privtext.pii.refine import _not_a_date
from tests_support import rules_only

DEFAULT = rules_only()
RELATIVE_ON = rules_only(relative_time_is_pii=True)
NO_DATE_ELEMENT = ["this past summer", "the first 2 days", "this past weekend", "the other day", "later today",
                   "the end of the month", "during the summer"]
LAYOUTS = ["%B %d, %Y", "%d %b %Y", "%Y-%m-%d", "%m/%d/%Y", "%a, %d %b %Y %H:%M:%S", "%A the %d", "%b %Y", "%d.%m."]


def _types_over(analyzer, text, value, settings=DEFAULT):
    start = text.index(value)
    return {s.entity_type for s in detect_spans(analyzer, text, settings)
            if s.start < start + len(value) and start < s.end}


@pytest.mark.parametrize("phrase", NO_DATE_ELEMENT)
def test_a_span_without_a_date_element_is_not_replaced(analyzer, phrase):
    assert _not_a_date(phrase, DEFAULT) and not _not_a_date(phrase, RELATIVE_ON)
    text = f"I actually interned for a lab {phrase} and liked it."
    assert "DATE_TIME" not in _types_over(analyzer, text, phrase)


def test_negative_controls_dates_stay_dates(analyzer):
    """What the rule must not drop: a day, a month with a year, a year alone, a date in other digits."""
    for value in ["March 3, 2024", "summer 2019", "the fourth of July", "Sept. 4", "2024-03-03", "٢٠٢٤-٠٣-٠٣"]:
        assert not _not_a_date(value, DEFAULT), value
    text = "The contract was signed on March 3, 2024 in the morning."
    assert _types_over(analyzer, text, "March 3, 2024") == {"DATE_TIME"}


@hsettings(max_examples=300, deadline=None)
@given(st.text(st.characters(blacklist_categories=("Cs", "Nd", "Nl", "No")), max_size=40))
@example("the sun")  # "sun" alone is the weekday's abbreviation: a date element, kept (the rule errs to replace)
def test_text_without_a_number_or_a_calendar_name_is_no_date(text):
    words = {w.casefold().rstrip(".") for w in "".join(c if c.isalpha() else " " for c in text).split()}
    calendar = {m.casefold() for m in (dt.date(2000, i, 1).strftime(f) for i in range(1, 13) for f in ("%B", "%b"))}
    calendar |= {d.casefold() for d in (dt.date(2024, 1, i).strftime(f) for i in range(1, 8) for f in ("%A", "%a"))}
    calendar |= {"sept", "tue", "tues", "thur", "thurs"}
    assert _not_a_date(text, DEFAULT) or bool(words & calendar)


@hsettings(max_examples=300, deadline=None)
@given(st.dates(dt.date(1, 1, 1), dt.date(9999, 12, 31)), st.sampled_from(LAYOUTS),
       st.sampled_from(["0", "٠", "०", "０", "๐"]))
def test_a_written_date_is_a_date_in_any_digit_system(day, layout, zero):
    value = day.strftime(layout)
    shifted = "".join(chr(ord(zero) + int(c)) if c.isdigit() else c for c in value)
    assert all(unicodedata.category(c) != "Nd" or unicodedata.digit(c) in range(10) for c in shifted)
    assert not _not_a_date(value, DEFAULT) and not _not_a_date(shifted, DEFAULT)


@pytest.mark.parametrize("word", ["Does", "Would", "Also", "Whenever", "Quite"])
def test_a_stop_word_before_a_name_is_not_widened_into_it(analyzer, word):
    assert word.casefold() in stop_words()
    text = f"Speaker 2: {word} Harry Potter qualify?"
    spans = [s for s in detect_spans(analyzer, text, DEFAULT) if s.entity_type == "PERSON"]
    assert [text[s.start:s.end] for s in spans] == ["Harry Potter"]


def test_negative_control_a_capitalised_name_word_is_still_widened(analyzer):
    text = "Yesterday I met Russell Mcclain at the station."
    spans = [text[s.start:s.end] for s in detect_spans(analyzer, text, DEFAULT) if s.entity_type == "PERSON"]
    assert spans == ["Russell Mcclain"]
