"""Errors read in a real night's chat export (issue 44), one rule per cause: a speaker label that is also a word or a
faith ("Christian", "Mark", "grace") is the speaker; a group (NRP) names a nationality, religion or party; a run of
capitalised words opening a turn needs a known name; a duration ("2 - 12 hours") is no date; a stage direction's
first word ("(Grabs popcorn.)") is an action; chat abbreviations ("FTW") are no part of a name. Through the default
analyzer and, as properties over generated Unicode, the rules themselves. The text is made up."""
import re

from hypothesis import given, settings as hsettings, strategies as st

from privtext.pii import structure
from privtext.pii.detect import Span, _known_first_names, _not_names, detect_spans
from privtext.pii.gazetteers import NRP_LIST, find_proper_noun_runs, first_names, is_group, last_names
from privtext.pii.refine import RELATIVE_TIME
from tests_support import rules_only

SETTINGS = rules_only()
WORD = st.text(alphabet=st.characters(categories=("L", "M", "N")), min_size=1, max_size=12)


def found(analyzer, text):
    return [(s.entity_type, text[s.start:s.end]) for s in detect_spans(analyzer, text, SETTINGS)]


def test_the_real_nights_chat_errors(analyzer):
    chat = ("Christian: That would be so nice, a pencil that does our work\nNicole: ooo that's a good one\n"
            "Christian: It could imprint that too\nNicole: (Grabs popcorn.)\n"
            "Christian: Advanced Human Anatomy with Lab\n"
            "Nicole: I spent anywhere between 2 - 12 hours weekly on it, 10-ish years ago\n"
            "Christian: spent a ton at Ulta\nNicole: Ulta FTW\n")
    spans = found(analyzer, chat)
    assert [k for k, v in spans if v == "Christian"] == ["PERSON"] * chat.count("Christian:")
    assert not [v for _, v in spans if "Grabs" in v or "Anatomy" in v or "hours" in v or "years" in v or "FTW" in v]
    # the same words where they are what the rule keeps: a faith, a name opening a stage direction, a date
    spans = found(analyzer, "Nicole: I'm a Christian and proud of it\nBob: (Nicole grabs popcorn.)\nNicole: ok\n"
                            "Bob: born 12 February 1970 in Ohio\n")
    assert ("NRP", "Christian") in spans and ("DATE_TIME", "12 February 1970") in spans
    assert [k for k, v in spans if v == "Nicole"] == ["PERSON"] * 3


def test_speaker_labels_that_are_words():
    chat = "Mark: hi\ngrace: hey there\nMark: ok then\ngrace: sure\nThanks: one line\n"
    shape = structure.analyze(chat, _known_first_names(), _not_names())
    assert sorted({chat[s:e] for k, s, e in shape.spans if k == "PERSON"}) == ["Mark", "grace"]


def test_a_run_opening_a_turn_needs_a_known_name():
    text = "Speaker 1: Advanced Human Anatomy with Lab\nSpeaker 2: Maria Lopez said hi\nI met Mimount Bijster there"
    proper = frozenset(m.start() for m in re.finditer(r"\b[A-Z]\w+", text))
    runs = [text[s:e] for s, e, _ in find_proper_noun_runs(text, proper)]
    assert runs == ["Maria Lopez", "Mimount Bijster"] and "speaker" not in last_names()


def test_groups_are_groups():
    assert all(is_group(w) for w in ("English", "italian", "Christians", "Orthodox Jew", "Asian", "Hispanics", "Arabs"))
    assert not any(is_group(w) for w in ("Grabs", "Tesla", "Congrats", "Fortnite", "Ironman", "creepy", "Spamassassin"))


@hsettings(max_examples=300, deadline=None)
@given(st.one_of(st.integers(0, 10_000).map(str), st.sampled_from(["two", "a few", "several", "couple of"])),
       st.one_of(st.none(), st.tuples(st.sampled_from(["-", " - ", "–", " to ", " or "]), st.integers(0, 999))),
       st.booleans(), st.sampled_from(["hour", "hours", "days", "weeks", "years", "hrs", "mins", "months"]))
def test_a_duration_is_relative_time_and_a_calendar_date_is_not(count, upper, ish, unit):
    digits = count[0].isdigit()
    value = count + (f"{upper[0]}{upper[1]}" if upper and digits else "") + ("-ish" if ish and digits else "")
    assert RELATIVE_TIME.match(f"{value} {unit}"), value
    day = int(count) % 28 + 1 if count.isdigit() else 3
    assert not RELATIVE_TIME.match(f"{day} February {1900 + (upper[1] if upper else 70) % 200}")


@hsettings(max_examples=300, deadline=None)
@given(WORD, st.integers(1, 4))
def test_a_label_is_a_speaker_unless_a_word_labels_one_turn(label, times):
    if label.casefold() == "zoe":
        return
    lines = [f"{label}: hello there"] * times + ["Zoe: fine", "Zoe: ok"]  # a chat whatever the label
    shape = structure.analyze("\n".join(lines) + "\n", _known_first_names(), _not_names())
    named = {s for k, s, e in shape.spans if k == "PERSON" and e - s == len(label) and s in
             {m.start() for m in re.finditer(re.escape(label) + ":", "\n".join(lines))}}
    if not structure._TURN.fullmatch(f"{label}: ") or structure._ROLE.fullmatch(label) \
            or label.casefold() in structure._FIELD_LABELS:
        return
    if not re.search(r"[^\W\d_]", label):  # "0:", "12:": a numbered item, no one's name
        assert not named
        return
    if label.casefold() in _not_names() and times == 1:
        assert not named
    if label.casefold() not in _not_names():
        assert len(named) == times


@hsettings(max_examples=300, deadline=None)
@given(WORD, st.text(alphabet=st.characters(exclude_characters="()*\n"), max_size=30), st.booleans(), WORD)
def test_a_stage_directions_first_word_is_protected_unless_a_first_name(word, rest, star, speaker):
    open_, close = ("*", "*") if star else ("(", ")")
    turn = f"{open_}{word} x{rest}{close}"
    chat = f"{speaker}A: hi\n{speaker}B: {turn}\n{speaker}A: ok\n"
    shape = structure.analyze(chat, _known_first_names(), _not_names())
    start = chat.index(turn) + 1
    protected = (start, start + len(word)) in shape.protected
    if re.fullmatch(r"[^\W\d_][\w'’-]*", word) and structure._TURN.match(f"{speaker}B: ") \
            and structure._STAGE.match(chat, chat.index(turn)):
        assert protected == (word.casefold() not in _known_first_names())
    for s, e in shape.protected:
        assert 0 <= s < e <= len(chat) and "\n" not in chat[s:e]


@hsettings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(), max_size=120), st.data())
def test_chat_words_are_cut_from_a_names_edges_only(text, data):
    a = data.draw(st.integers(0, len(text)))
    b = data.draw(st.integers(a, len(text)))
    kind = data.draw(st.sampled_from(["PERSON", "ORGANIZATION", "NRP", "URL", "DATE_TIME"]))
    span = Span(kind, a, b, 0.85, "direct", "")
    out = structure._without_slang(span, text)
    if kind not in structure._NAME_TYPES:
        assert out is span
        return
    if out is None:
        words = structure._SPAN_WORD.findall(text, a, b)
        assert words and all(structure.is_slang(w) for w in words)
        return
    assert a <= out.start < out.end <= b or out is span
    if out is not span:
        first = structure._SPAN_WORD.match(text, out.start).group()
        assert not structure.is_slang(first) and structure._SPAN_WORD.search(text, a, b)


@hsettings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(), max_size=200), st.data())
def test_a_run_opening_a_turn_or_a_parenthesis_holds_a_known_name(text, data):
    proper = frozenset(data.draw(st.lists(st.integers(0, max(0, len(text) - 1)), max_size=20)))
    known, surnames = first_names(), last_names()
    for s, e, _ in find_proper_noun_runs(text, proper):
        assert 0 <= s < e <= len(text)
        if re.search(r"(?::[ \t]*|[(*][ \t]*)\Z", text[max(0, s - 20):s]):
            assert any(w.rstrip(".") in known or w.rstrip(".").casefold() in surnames for w in text[s:e].split())


@hsettings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(), max_size=60), st.sampled_from(sorted(set(NRP_LIST) - {"South"})))
def test_a_text_holding_a_group_is_a_group(text, group):
    is_group(text)  # any text: no error
    assert is_group(f"{text} {group}")
