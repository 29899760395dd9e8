"""First or last names standing alone that detection left in real-text mail (issue 44), one rule per cause: a
"Ta," sign-off; a closing name followed by a quote attribution or a list footer; a given name that is also a word
("Mark", "Jan") where a name is written; a lower-case greeting word that is no English word ("Hello steph,"); a
lower-case known first name in prose ("tell jeremy"); a surname spaCy tags a noun ("I spoke to Sandoval"); a name
after "Thanks". Through the default analyzer with negative controls, and the rules as properties over generated
Unicode. The names are made up."""
import re

from hypothesis import example, given, settings as hsettings, strategies as st

from privtext.pii import structure
from privtext.pii.detect import _known_first_names, _not_names, detect_spans
from privtext.pii.gazetteers import find_names, first_names, names_that_are_words
from tests_support import rules_only

SETTINGS = rules_only()
BODY = "The build on the staging box failed again; the log is on the share.\n\n"


def people(analyzer, text):
    return [text[s.start:s.end] for s in detect_spans(analyzer, text, SETTINGS) if s.entity_type == "PERSON"]


def test_sign_offs_and_closing_names(analyzer):
    closings = {"Ta,\nrico\n": "rico", "Ta,\nChristelle\n": "Christelle", "Regards, mark\n": "mark",
                "Cheers,\nJan\n": "Jan", "Thanks,\nWill\n": "Will",
                "-Charles\n\n\nTo unsubscribe from this group, send an email to:\nx-unsubscribe@yahoogroups.com\n":
                    "Charles",
                "-- lucie\n\nIn message <20240822174628.GA4290@example.net>, Ciro Paz writes:\n> ok\n": "lucie",
                "kathleen\n\nQuoting Ann Lee <al@example.com>:\n> ok\n": "kathleen",
                "G.\n\nAt 11/13/25 12:33 PM, you wrote:\n> ok\n": "G.",
                "-Graeme\n\nBob Stone wrote:\n> ok\n": "Graeme"}
    for closing, name in closings.items():
        assert name in people(analyzer, BODY + closing), closing
    # no name there: the same places holding a sign-off, a group, a word or nothing
    for closing, word in [("Ta,\nthe team\n", "team"), ("Thanks,\nall\n", "all"), ("Regards, Sunday\n", "Sunday"),
                          ("Best\n\nTo unsubscribe, e-mail: x-unsubscribe@example.org\n", "Best"), ("Ta.\n", "Ta"),
                          ("Thoughts?\n\nBob Stone wrote:\n> ok\n", "Thoughts")]:
        assert not [v for v in people(analyzer, BODY + closing) if word in v], closing


def test_greetings(analyzer):
    assert people(analyzer, "Hello steph,\n\n" + BODY) == ["steph"]
    assert people(analyzer, "gilli -\n\n" + BODY) == ["gilli"]
    assert people(analyzer, "Hello Mark,\n\n" + BODY) == ["Mark"]
    for greeting in ["Dear reader,\n\n", "Hello again,\n\n", "Update -\n\n", "Dear customer,\n\n", "Hi all,\n\n"]:
        assert people(analyzer, greeting + BODY) == [], greeting


def test_names_in_prose(analyzer):
    text = ("Tell jeremy I said happy birthday. nicole got the job! Action items: samantha owns the rollout, "
            "gillian reviews. I spoke to Sandoval this morning.\n\nThanks Briay, that did it.\n")
    assert set(people(analyzer, text)) == {"jeremy", "nicole", "samantha", "gillian", "Sandoval", "Briay"}
    # lower-case words that are names elsewhere but English words here, contractions, an address, a path
    text = ("I will mark the bill as paid; the amber light hung there, arent you coming? Ask the kelly green "
            "shop.\nMail jeremy@example.com or see http://example.com/~nicole/ for the rest.\n")
    assert [v for v in people(analyzer, text) if v in ("mark", "bill", "amber", "hung", "arent", "kelly")] == []
    assert "jeremy" not in people(analyzer, text) and "nicole" not in people(analyzer, text)
    # a title's second word is no lone name, though its first is a word that opens no name ("Star")
    assert people(analyzer, "Tell me, my friend, do you prefer Star Wars or Star Trek?\n") == []


ENGLISH = frozenset({"kelly", "amber", "bill"})
LOWER = sorted(n.lower() for n in first_names())[:400]


@hsettings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=12), st.sampled_from(LOWER + ["kelly", "amber", "the", "may"])),
                max_size=12))
def test_lower_case_names_are_whole_known_words_that_are_no_english_word(parts):
    text = " ".join(parts)
    for start, end, _ in find_names(text, frozenset(), ENGLISH):
        word = text[start:end]
        assert 0 <= start < end <= len(text)
        if word.islower():
            assert word in LOWER or word.title() in first_names()
            assert word not in ENGLISH
            assert not (start and (text[start - 1].isalnum() or text[start - 1] in "'’-"))


@hsettings(max_examples=200, deadline=None)
@given(st.text(max_size=200), st.sampled_from(["Ta,\n", "Regards, ", "\n\n-", "\n\n-- ", "Hello ", ""]),
       st.text(alphabet=st.characters(categories=("L", "M")), min_size=1, max_size=10),
       st.sampled_from(["\n", "\n\nQuoting x:\n", "\n\nTo unsubscribe\n", ",\n\n", " -\n\n"]), st.text(max_size=80))
# found on a clean clone: a code point of the CJK extension planes that Python's Unicode tables leave unassigned
# was taken as an uncased letter (the planes' whole range was), so a "name" without a letter
@example(before="A", cue="Ta,\n", name="A", after="\n", rest="\U0002ebe1")
@example(before="0: ", cue="Ta,\n", name="A", after="\n", rest="0: ")  # a clean clone's draw: "0:" turns, "0" a name
def test_sign_off_and_greeting_spans_stay_on_a_name_in_any_unicode(before, cue, name, after, rest):
    text = before + cue + name + after + rest
    shape = structure.analyze(text, _known_first_names(), _not_names(), ENGLISH, names_that_are_words())
    for kind, s, e in shape.spans:
        assert 0 <= s < e <= len(text)
        assert text[s:e].strip() == text[s:e]
        if kind == "PERSON":
            assert re.search(r"[^\W\d_]", text[s:e])
