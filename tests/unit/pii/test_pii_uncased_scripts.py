"""Names in scripts without case (Han, Hangul, Thai, Devanagari, Arabic, Hebrew) in mail and chat (issue 44).
Pure functions of ``pii.structure`` (no analyzer): seconds. Names are made up."""
import unicodedata

from hypothesis import given, settings as hsettings, strategies as st

from privtext.pii import structure
from privtext.pii.detect import _known_first_names, _not_names

NAMES = ["王秀英", "김민준", "राहुल शर्मा", "สมชาย ใจดี", "محمد علي", "דוד כהן"]


def people(text):
    shape = structure.analyze(text, _known_first_names(), _not_names())
    return sorted({text[s:e] for kind, s, e in shape.spans if kind == "PERSON"})


def test_cues_take_whole_names_of_any_script_marks_included():
    for name in NAMES:
        for text in [f"Thanks,\n{name}\n", f"Hi all,\n\nsee you.\n\n-- \n{name}\n", f"Dear {name},\n\nok\n",
                     f"my name is {name}", f"Hello, this is {name}."]:
            assert name in people(text) or name.split()[0] in people(text), (name, text)
    # the vowel signs of Devanagari and Thai (combining marks, which \\w lacks) stay inside the name
    assert people("Thanks,\nराहुल\n") == ["राहुल"] and people("Cheers, สมชาย\n") == ["สมชาย"]


def test_a_run_of_an_uncased_script_in_latin_text_is_a_name_but_not_in_its_own_script():
    assert people("Forwarded on behalf of 王秀英 from the night shift.") == ["王秀英"]
    assert people("The caller gave the name ดวงใจ ศรีสุข yesterday.") == ["ดวงใจ ศรีสุข"]
    # a text written in that script: every word would be a "name"; the rule stays off
    assert people("今天天气很好，我们去公园散步吧。") == []
    assert people("שלום, מה שלומך היום? הכל בסדר.") == []
    # Latin text alone: nothing from the rule
    assert people("The build is green again, see the log.") == []


@hsettings(max_examples=200, deadline=None)
@given(st.text(), st.sampled_from(NAMES), st.sampled_from(["Thanks,\n", "my name is ", "on behalf of ", ""]))
def test_uncased_spans_stay_inside_and_never_split_a_letter_from_its_marks(text, name, cue):
    text = f"{text} {cue}{name}\n{text}"
    for kind, s, e in structure.analyze(text, _known_first_names(), _not_names()).spans:
        assert 0 <= s < e <= len(text)
        if kind == "PERSON" and e < len(text):
            assert not unicodedata.category(text[e]).startswith("M") or not text[e - 1].isalpha(), text[s:e + 1]
