"""Lists' and roles' addresses, software headers and words that are no names (issue 44: precision on real mail).
Pure functions of ``pii.structure`` (no analyzer): seconds. Addresses and names are made up."""
from hypothesis import given, settings as hsettings, strategies as st

from privtext.pii import structure
from privtext.pii.detect import Span, _known_first_names, _not_names


def shape(text):
    return structure.analyze(text, _known_first_names(), _not_names())


def typed(text, kind):
    return [text[s:e] for k, s, e in shape(text).spans if k == kind]


def protected(text):
    return [text[s:e] for s, e in shape(text).protected]


FOOTER = ("From: Ann Berger <ann.berger@example.org>\nTo: fork@xent.com\nSubject: hi\n\nsee below\n\n"
          "_______________________________________________\nFoRK mailing list\nfork@xent.com\n"
          "http://xent.com/mailman/listinfo/fork\n")


def test_a_list_footer_makes_the_lists_address_public_in_every_occurrence():
    assert typed(FOOTER, "EMAIL_ADDRESS") == ["ann.berger@example.org"]
    assert protected(FOOTER).count("fork@xent.com") == 2
    assert "FoRK" in protected(FOOTER) and "http://xent.com/mailman/listinfo/fork" in protected(FOOTER)
    # without the footer the same header address is a value
    alone = FOOTER.split("\n\n_")[0]
    assert "fork@xent.com" in typed(alone, "EMAIL_ADDRESS")


def test_list_commands_role_mailboxes_and_list_hosts_are_public():
    for line in ["To unsubscribe, e-mail: users-unsubscribe@httpd.apache.org\n",
                 "For additional commands, e-mail: users-help@httpd.apache.org\n",
                 "To unsubscribe from this group, send an email to:\nforteana-unsubscribe@yahoogroups.com\n",
                 "Send razor-users mailing list submissions to\n\tfoo@example.net\n",
                 "write to postmaster@example.com or news@example-weekly.com\n",
                 "Cc: spamassassin-talk@lists.sourceforge.net\n", "To: exmh-users@redhat.com\n",
                 "To: forteana@yahoogroups.com\n"]:
        text = "Hi,\n\n" + line
        assert typed(text, "EMAIL_ADDRESS") == [], line
        assert any("@" in p for p in protected(text)), line


def test_a_persons_address_near_list_words_stays_a_value():
    for text in ["You are receiving this e-mail because you subscribed as jane.doe@example.org.\n",
                 "From: Jane Doe <jane.doe@example.org>\nTo: all\n\nI added you to the mailing list\n",
                 "This message was sent to jane.doe@example.org. To stop receiving these, reply REMOVE.\n",
                 "Cc: jane-doe@example.org, j.doe@lists-of-things.org, member7@lists.example.org\n"]:
        assert not any("jane" in p for p in protected(text)), text
        assert structure.public_addresses(text) == frozenset(), text
    # a list page with a query or an address in its path is not the list's own page
    opts = "http://xent.com/mailman/options/fork/jane%40example.org\n"
    assert protected(opts) == []


def test_a_role_addresss_display_name_is_no_person_unless_it_holds_a_first_name():
    text = 'From: "Weekly Tech News" <news@example-weekly.com>\nTo: Bo Lind <bo@example.org>\n\nhi\n'
    assert typed(text, "PERSON") == ["Bo Lind"] and "Weekly Tech News" in protected(text)
    text = "From: Mary Jones <support@example.com>\n\nhi\n"
    assert typed(text, "PERSON") == ["Mary Jones"] and typed(text, "EMAIL_ADDRESS") == []


def test_software_headers_and_message_ids_are_not_people():
    text = ("X-Mailer: Microsoft Outlook IMO, Build 9.0.2416\nUser-Agent: Ximian Evolution 1.0.8\n\n"
            "In message <20020814.GA3593@example.com>, Gail Rowe writes:\n> ok\n")
    assert "X-Mailer: Microsoft Outlook IMO, Build 9.0.2416" in protected(text)
    assert "User-Agent: Ximian Evolution 1.0.8" in protected(text)
    assert typed(text, "PERSON") == ["Gail Rowe"]


def test_relative_times_kinship_words_and_codes_are_no_names():
    for text in ["Can you call me tonight? My new number is 555.\n", "Mum says hello.\n\nMum\n",
                 "Subject: Q3 budget\n\nFYI -\n\nsee the numbers\n"]:
        assert typed(text, "PERSON") == [], text
    for value, kind in [("tonight", "PERSON"), ("Mum", "PERSON"), ("Q3", "PERSON"), ("TIME", "LOCATION"),
                        ("LIMITED TIME OFFER", "ORGANIZATION")]:
        text = f"x {value} y"
        assert structure.apply([Span(kind, 2, 2 + len(value), 0.85, "PII", "")], structure.Structure([], []),
                               text) == [], value
    text = "x Qiana y"  # a name with the same letters as a code word is still a name
    assert structure.apply([Span("PERSON", 2, 7, 0.85, "PII", "")], structure.Structure([], []), text)


@hsettings(max_examples=200, deadline=None)
@given(st.text(), st.sampled_from(["", "FoRK mailing list\n", "To unsubscribe, e-mail: ", "X-Mailer: "]),
       st.sampled_from(["", "a-request@x.org", "news@x.org", "b@lists.x.org", "c@x.org"]))
def test_public_regions_stay_inside_any_unicode_text(text, cue, address):
    text = text + "\n" + cue + address + "\n" + text
    public = structure.public_addresses(text)
    assert all("@" in a and a == a.casefold() for a in public)
    for s, e in shape(text).protected:
        assert 0 <= s < e <= len(text)
    for _, s, e in shape(text).spans:
        assert 0 <= s < e <= len(text)
