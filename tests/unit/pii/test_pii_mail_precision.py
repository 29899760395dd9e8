"""Spans on real mail that name no one (issue 44: precision, and the character similarity it costs), one rule per
cause: an organisation's bulk or numbered role sender ("offers726@", "sales2@") at no free-mail host; a list's own
address when the mail holds one of its command addresses ("users@" beside "users-unsubscribe@"); a number the
text calls toll-free. Through the default analyzer, each with a negative control (the personal value of the same
shape still detected), and the rules as properties over generated Unicode. Addresses and numbers are made up."""
from hypothesis import given, settings as hsettings, strategies as st

from privtext.pii import structure
from privtext.pii.detect import _known_first_names, _not_names, detect_spans
from tests_support import rules_only

SETTINGS = rules_only()
BODY = "The build on the staging box failed again; the log is on the share.\n"


def found(analyzer, text, kind):
    return [text[s.start:s.end] for s in detect_spans(analyzer, text, SETTINGS) if s.entity_type == kind]


def test_an_organisations_bulk_or_numbered_sender_is_no_ones_address(analyzer):
    for sender in ["offers726@mail-deals.biz", "newsletter@example-weekly.com", "sales2@acme-tools.com",
                   "deals@promo4u.net"]:
        text = f"From: {sender}\nTo: Jane Roe <jane.roe@example.org>\nSubject: LOWEST RATES\n\n{BODY}"
        assert found(analyzer, text, "EMAIL_ADDRESS") == ["jane.roe@example.org"], sender
    # the same shapes that are someone's own mailbox: a free-mail account, a person's name with a number
    for sender in ["offers726@gmail.com", "news12@yahoo.co.uk", "deals4u@hotmail.com", "jane726@mail-deals.biz",
                   "jroe2@acme-tools.com"]:
        text = f"From: {sender}\nTo: Jane Roe <jane.roe@example.org>\nSubject: hi\n\n{BODY}"
        assert sender in found(analyzer, text, "EMAIL_ADDRESS"), sender


def test_a_lists_own_address_beside_its_command_address_is_public(analyzer):
    head = "From: Ann Berger <ann.berger@example.org>\nTo: users@httpd.apache.org\nSubject: mod_rewrite\n\n"
    footer = ("\n---------------------------------------------------------------------\n"
              "To unsubscribe, e-mail: users-unsubscribe@httpd.apache.org\n")
    assert found(analyzer, head + BODY + footer, "EMAIL_ADDRESS") == ["ann.berger@example.org"]
    # without its list's command address the same header address is a value; another list's command says nothing
    assert "users@httpd.apache.org" in found(analyzer, head + BODY, "EMAIL_ADDRESS")
    other = footer.replace("users-unsubscribe@httpd", "dev-unsubscribe@httpd")
    assert "users@httpd.apache.org" in found(analyzer, head + BODY + other, "EMAIL_ADDRESS")


def test_a_toll_free_service_number_is_no_ones_phone(analyzer):
    for line in ["Call toll free 1-858-650-1811 now, operators are standing by.",
                 "Call toll-free at 1-888-560-3881 now.", "Order on our freephone line: 0800 123 4567."]:
        assert found(analyzer, f"{BODY}{line}\n", "PHONE_NUMBER") == [], line
    # a person's number of the same shape, and the same digits without the toll-free cue, stay a value
    for line, phone in [("Call me on 1-858-650-1811 tonight.", "1-858-650-1811"),
                        ("Her direct line is (212) 555-0199.", "(212) 555-0199"),
                        ("My cell: 1-858-560-3881, toll free for you.", "1-858-560-3881"),
                        ("Questions? (877) 555-0142.", "(877) 555-0142")]:
        assert phone in found(analyzer, f"{BODY}{line}\n", "PHONE_NUMBER"), line


def shape(text):
    return structure.analyze(text, _known_first_names(), _not_names())


@hsettings(max_examples=150, deadline=None)
@given(st.text(max_size=80), st.text(max_size=80),
       st.sampled_from(["offers7@x-deals.biz", "users@x.org users-unsubscribe@x.org", "Call toll free 1-858-650-1811",
                        "freephone: 0800 123 4567", ""]))
def test_public_values_never_reach_a_persons_value_in_any_unicode_text(before, after, public):
    """Whatever surrounds them, the rules' regions stay inside the text, and a personal mailbox and a personal
    phone number in the same text are never made public."""
    text = f"{before}\n{public}\nJane Roe <jane.roe@example.org>, (212) 555-0199\n{after}"
    regions = shape(text).protected
    assert all(0 <= s < e <= len(text) for s, e in regions)
    mine = [(text.index(v), text.index(v) + len(v)) for v in ("jane.roe@example.org", "(212) 555-0199")]
    assert not any(s < b and a < e for s, e in regions for a, b in mine)
    assert "jane.roe@example.org" not in structure.public_addresses(text)


def test_a_webmails_quoting_attribution_keeps_its_word_and_replaces_the_writer(analyzer):
    """"Quoting Ahmed, Toby <...>:" (a published night read before/after) lost "Quoting", widened into the
    name and replaced with it; the word is the form's, the writer and the address are values."""
    for line, names in [("Quoting Ahmed, Toby <tahmed@web.de>:", ["Ahmed", "Toby"]),
                        ("> Quoting Toby Ahmed <tahmed@web.de>:", ["Toby Ahmed"]),
                        ("Quoting jsmith <j.smith@example.org>:", ["jsmith"])]:
        text = f"{line}\n> Filed as bug 1234, it is a duplicate.\n\nThanks for the pointer.\n"
        spans = detect_spans(analyzer, text, SETTINGS)
        assert not any(text[s.start:s.end].startswith("Quoting") for s in spans), line
        assert found(analyzer, text, "PERSON")[:len(names)] == names, line
    # negative control: the attribution's structure is what names the writer; prose "quoting" names no one
    text = "I am quoting the manual here: run it twice.\n"
    assert found(analyzer, text, "PERSON") == []


@hsettings(max_examples=100, deadline=None)
@given(st.from_regex(r"[A-Z][a-z]{2,9}", fullmatch=True), st.from_regex(r"[A-Z][a-z]{2,9}", fullmatch=True))
def test_quoting_is_outside_any_attributions_name(first, last):
    text = f"Quoting {first} {last} <{first.lower()}@example.org>:\n> hello\n"
    shape = structure.analyze(text, _known_first_names(), _not_names())
    people = [(s, e) for kind, s, e in shape.spans if kind == "PERSON"]
    assert people == [(len("Quoting "), len(f"Quoting {first} {last}"))]
    assert any(s <= 0 and len("Quoting") <= e for s, e in shape.protected)
