"""Names standing alone in real mail (issue 44): a name as a mail's last paragraph ("-Joan", "C."), a greeting
paragraph ("jason -"), and a person's name words propagated to their other occurrences in the same document.
Pure functions of ``pii.structure`` and ``pii.detect`` (no analyzer): seconds. Names are made up."""
import re

from hypothesis import given, settings as hsettings, strategies as st

from privtext.pii import structure
from privtext.pii.detect import Span, _known_first_names, _not_names, _same_names
from tests_support import rules_only

SETTINGS = rules_only()
BODY = "The numbers look better than expected.\n\n"


def people(text):
    shape = structure.analyze(text, _known_first_names(), _not_names())
    return [text[s:e] for kind, s, e in shape.spans if kind == "PERSON"]


def test_a_name_alone_as_the_last_paragraph_is_a_person():
    for closing, name in [("-Joan\n", "Joan"), ("-- Darko", "Darko"), ("caroline\n\n\n", "caroline"),
                          ("horst-günter\n", "horst-günter"), ("C.\n\n-- \nClifford Barnett\n", "C."),
                          ("-Denise\n\n___\nDenise Hodgson | Acme\n", "Denise"),
                          ("-Mariola\n\n-----Original Message-----\nFrom: x@example.com\n", "Mariola"),
                          ("Thanks,\njonat\n\n-- \nJonathan Barker\n", "jonat")]:
        assert name in people(BODY + closing), closing


def test_a_closing_paragraph_that_is_no_name_stays_text():
    for closing in ["Thoughts?\n", "Best Regards\n", "Cheers\n", "all\n", "Done.\n", "Thanks,\nthe team\n",
                    "Sunday\n", "lol\n", "See you then\n\nok\n"]:
        assert people(BODY + closing) == [], closing
    assert people("Joan\nsays the build is green.\n\nfine by me.\n") == []  # not a paragraph of its own


def test_a_greeting_paragraph_names_its_addressee():
    assert people("jason -\n\nThe wedding is on 9/6.\n") == ["jason"]
    assert set(people("Hi Tiffany,\n\nI spoke to them.\n")) == {"Tiffany"}
    for greeting in ["Hi all,\n\nsee below.\n", "Folks,\n\nsee below.\n", "However,\n\nsee below.\n"]:
        assert people(greeting) == [], greeting


def names_after(text, *full):
    spans = [Span("PERSON", text.index(v), text.index(v) + len(v), 0.99, "direct", "") for v in full]
    return sorted(text[s.start:s.end] for s in _same_names(text, spans, SETTINGS))


def test_a_full_name_makes_its_words_alone_the_same_person():
    text = "From: Daniel Fernandez <d@example.com>\n\nDid you hear back from Fernandez? daniel said so. DANIEL too.\n"
    assert names_after(text, "Daniel Fernandez") == ["DANIEL", "Daniel", "Fernandez", "Fernandez"]
    # lower-case occurrences only where the name was written so; stop, form and calendar words never spread
    text = "From: Will May <w@example.com>\n\nI will call in May. Will said so.\n"
    assert names_after(text, "Will May") == []
    text = "Fernandez wrote. Fernandezes and O'Fernandez are others; Fernandez is not."
    assert names_after(text, "Fernandez") == ["Fernandez"] * 2


@hsettings(max_examples=150, deadline=None)
@given(st.text(), st.lists(st.tuples(st.integers(0, 200), st.integers(0, 30)), max_size=4))
def test_propagated_spans_stay_inside_the_text_and_on_a_name_word(text, cuts):
    spans = [Span("PERSON", min(a, len(text)), min(a + n, len(text)), 0.99, "direct", "") for a, n in cuts]
    words = {w.casefold() for s in spans for w in re.findall(r"[^\W\d_][\w'’-]*", text[s.start:s.end])}
    for s in _same_names(text, spans, SETTINGS):
        assert 0 <= s.start < s.end <= len(text)
        assert text[s.start:s.end].casefold() in words


@hsettings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.characters(), max_size=300).map(lambda t: t + "\n\n-" + t[:12] + "\n"))
def test_structure_spans_stay_inside_any_unicode_text(text):
    shape = structure.analyze(text, _known_first_names(), _not_names())
    for _, s, e in shape.spans:
        assert 0 <= s < e <= len(text)
        assert text[s:e].strip() == text[s:e]  # on the value, no blank around it


def test_us_phones_with_a_trunk_one_and_glued_to_a_letter_match_whole():
    import regex

    from privtext.pii.recognizers import PATTERNS

    us_phone = next(rx for name, rx, _ in PATTERNS["phone_extensions"][1] if name == "us_phone")
    for text, phone in [("Tel: 1-261-656-9670\nFax: 502.844.5572", "1-261-656-9670"),
                        ("mobile: 1-713-756-6161M", "1-713-756-6161"), ("Fax1.502.844.5572W", "1.502.844.5572"),
                        ("+1 555-123-4567", "+1 555-123-4567")]:
        assert regex.search(us_phone, text).group() == phone, text
    assert regex.search(us_phone, "build 2002-555-1234-5678") is None  # a longer digit run is no phone


def test_a_number_no_calendar_has_is_no_date_and_mail_words_are_no_organisation():
    dates = lambda text: [text[s:e] for kind, s, e in structure.analyze(text, frozenset(), frozenset()).spans
                          if kind == "DATE_TIME"]
    assert dates("This is fixed in 5.0.2195, see the log.") == []
    assert dates("Due 14.08.2002 or 8/14/2002.") == ["14.08.2002", "8/14/2002"]
    text = "FREE API docs. Cheers\nDear Friend, LIMITED TIME OFFER from Acme Widgets today."
    orgs = [Span("ORGANIZATION", text.index(v), text.index(v) + len(v), 0.85, "quasi", "")
            for v in ("FREE", "API", "Cheers", "Dear Friend", "LIMITED TIME OFFER", "Acme Widgets")]
    kept = structure.apply(orgs, structure.analyze(text, frozenset(), frozenset()), text)
    assert [text[s.start:s.end] for s in kept] == ["Acme Widgets"]

