"""Real mail and chat: the false positives and misses of issue 44 (each example asserts its exact type, or that
no span touches it), and values written in other widths and digit systems (issue 46 item 4), through the
default analyzer (one per module). Names, addresses and numbers are made up."""
import pytest

from privtext.pii.detect import detect_spans
from tests_support import rules_only

SETTINGS = rules_only()


def spans_of(analyzer, text):
    return [(s.entity_type, text[s.start:s.end]) for s in detect_spans(analyzer, text, SETTINGS)]


def touching(analyzer, text, part):
    """The spans that overlap ``part`` of ``text`` (its first occurrence)."""
    start = text.index(part)
    end = start + len(part)
    return [(s.entity_type, text[s.start:s.end]) for s in detect_spans(analyzer, text, SETTINGS)
            if s.start < end and start < s.end]


HEADERS = ('From: John Whitaker <jwhitaker@example.com>\n'
           'To: "Doe, Jane" <jane.doe@example.org>, rbaker@example.net\n'
           'Cc: Alice Warburton <awarburton@example.com>\n'
           'Date: Fri, 13 Sep 2002 15:01:18 -0400\n'
           'Subject: Re: build breaks\n\nHi all, the build broke again.\n')


def test_date_header_is_one_date(analyzer):
    line = HEADERS.splitlines()[3]
    assert touching(analyzer, HEADERS, line) == [("DATE_TIME", "Fri, 13 Sep 2002 15:01:18 -0400")]


def test_address_headers_give_names_and_addresses(analyzer):
    found = spans_of(analyzer, HEADERS)
    for kind, value in [("PERSON", "John Whitaker"), ("EMAIL_ADDRESS", "jwhitaker@example.com"),
                        ("PERSON", "Doe, Jane"), ("EMAIL_ADDRESS", "jane.doe@example.org"),
                        ("EMAIL_ADDRESS", "rbaker@example.net"), ("PERSON", "Alice Warburton")]:
        assert (kind, value) in found


@pytest.mark.parametrize("text, date", [
    ("Received it on Sun, 8 Sep 2002 10:12:33 -0500 (CDT) from the list.", "Sun, 8 Sep 2002 10:12:33 -0500 (CDT)"),
    ("Sent: Wednesday, August 14, 2002 3:45 PM\n", "Wednesday, August 14, 2002 3:45 PM"),
    ("logged Wed Aug 14 10:12:33 2002 by cron", "Wed Aug 14 10:12:33 2002"),
    ("due 14/08/2002 10:12, not later", "14/08/2002 10:12"),
])
def test_dates_with_weekdays_times_and_zones_are_one_date(analyzer, text, date):
    assert touching(analyzer, text, date) == [("DATE_TIME", date)]


def test_a_time_zone_or_weekday_alone_is_nothing_else(analyzer):
    text = "The call is Mon at 10:00 (EDT), or Sun. after lunch, all of Dec is free."
    assert all(kind == "DATE_TIME" for kind, _ in touching(analyzer, text, "10:00 (EDT)"))
    assert touching(analyzer, text, "(EDT)")[0][1].endswith("(EDT)")  # the parenthesis is never cut off
    for word in ("Mon", "Sun", "Dec"):
        assert not [k for k, _ in touching(analyzer, text, word) if k != "DATE_TIME"], word


def test_quote_attribution_keeps_its_date_and_names_its_writer(analyzer):
    text = "On Wed, 14 Aug 2002, Whitaker, John wrote:\n> the patch is fine\n"
    assert spans_of(analyzer, text) == [("DATE_TIME", "Wed, 14 Aug 2002"), ("PERSON", "Whitaker, John")]


@pytest.mark.parametrize("text, part", [
    ("Thanks!\n-- \nsent from a phone", "-- "),
    ("Yeah...It's a problem.", "..."),
    ("hahaha that is so true hahahaha", "hahaha"),
    ("lol ok", "lol"),
    ("Make sure you run make install first.", "make install"),
    ("I had a bad teacher in the summer.", "teacher"),
    ("I had a bad teacher in the summer.", "the summer"),
    ("CVS revision 1.2.3.4 of the file", "1.2.3.4"),
    ("$Id: main.c,v 1.12.2.3 2002/08/14 10:12:33 Exp $", "1.12.2.3"),
    ("This is fixed in 1.12.2.4, see the ChangeLog.", "1.12.2.4"),
    ("Has anybody tried this with the 4.3.2.1 RPMs?", "4.3.2.1"),
    ("edit /etc/apt/apt.conf and rerun", "apt.conf"),
    ("then run python setup.py install", "setup.py"),
    ("see you @08:53 tomorrow", "@08"),
    ("______________________________\nExmh-users mailing list", "_____"),
])
def test_punctuation_laughter_common_words_and_versions_are_not_entities(analyzer, text, part):
    assert [k for k, _ in touching(analyzer, text, part) if k != "DATE_TIME"] == []


def test_real_values_next_to_the_noise_are_still_found(analyzer):
    text = "Logged in from 203.0.113.45 (see example.com), ping @jwhitaker at 08:53."
    found = spans_of(analyzer, text)
    assert ("IP_ADDRESS", "203.0.113.45") in found and ("URL", "example.com") in found
    assert ("USERNAME", "@jwhitaker") in found


@pytest.mark.parametrize("text, name", [
    ("See you there.\n\nThanks,\nBob\n", "Bob"),
    ("Regards,\n\nMaria Kowalczyk\nAcme support\n", "Maria Kowalczyk"),
    ("Cheers, Ann\n", "Ann"),
    ("hi, this is mike from upstairs", "mike"),
    ("you can call me jojo", "jojo"),
    ("my name is sam kowalski", "sam kowalski"),
    ("Anna: who is this?\nB: me\n", "Anna"),
])
def test_names_in_sign_offs_and_chat_turns(analyzer, text, name):
    assert ("PERSON", name) in [(k, v) for k, v in touching(analyzer, text, name)]


@pytest.mark.parametrize("text, phone", [
    ("Tel 555-123-4567W (work)", "555-123-4567"),
    ("Fax555-123-4568 any time", "555-123-4568"),
])
def test_phones_glued_to_letters(analyzer, text, phone):
    assert [k for k, v in touching(analyzer, text, phone) if phone in v] == ["PHONE_NUMBER"]


@pytest.mark.parametrize("url", ["www.physics.example.edu/~jwhitaker", "http://example.com/a/b?c=d",
                                 "https://www.example.org/users/jwhitaker/cv.pdf",
                                 "http://lists.example.org/mailman/options/exmh-users/jw%40example.org"])
def test_whole_urls_host_and_path(analyzer, url):
    assert touching(analyzer, f"Visit {url} for details.", url) == [("URL", url)]


def test_a_lists_own_page_is_no_value(analyzer):
    url = "https://lists.example.org/mailman/listinfo/exmh-users"
    assert touching(analyzer, f"Visit {url} for details.", url) == []


def test_house_number_goes_with_its_street(analyzer):
    text = "I live at 742 Evergreen Terrace, Springfield."
    assert [v for k, v in touching(analyzer, text, "742") if k == "STREET_ADDRESS"][0].startswith("742 Evergreen")


@pytest.mark.parametrize("text, kind, value", [
    ("SSN ５３６－２２－８７５６ on file", "US_SSN", "５３６－２２－８７５６"),
    ("SSN ५३६-२२-८७५६ on file", "US_SSN", "५३६-२२-८७५६"),
    ("mail ｊｗｈｉｔａｋｅｒ＠ｅｘａｍｐｌｅ．ｃｏｍ today", "EMAIL_ADDRESS",
     "ｊｗｈｉｔａｋｅｒ＠ｅｘａｍｐｌｅ．ｃｏｍ"),
    ("IBAN ＤＥ８９ ３７０４ ００４４ ０５３２ ０１３０ ００ please", "IBAN_CODE",
     "ＤＥ８９ ３７０４ ００４４ ０５３２ ０１３０ ００"),
    ("your order ＃１２３４５６７ shipped", "ORDER_NUMBER", "＃１２３４５６７"),
    ("Postleitzahl 10115, danke", "ZIP_CODE", "10115"),
    ("wohnt in 80331 München seit Mai", "ZIP_CODE", "80331"),
])
def test_other_widths_digit_systems_and_postcodes(analyzer, text, kind, value):
    assert (kind, value) in spans_of(analyzer, text)


def _digest(messages: int) -> tuple[str, list[tuple[str, str]]]:
    """A mailing-list digest of ``messages`` mails and its planted (type, value) pairs, in order."""
    parts, planted = [], []
    for i in range(messages):
        address, phone = f"member{i:04d}@lists.example.org", f"555-{100 + i % 900:03d}-{1000 + i:04d}"
        date = f"Mon, {1 + i % 28} Sep 2002 {i % 24:02d}:{i % 60:02d}:07 -0400"
        parts.append(f"From: Member {i:04d} <{address}>\nDate: {date}\nSubject: Re: weekly build {i}\n\n"
                     f"The build broke again on revision 1.{i}.2.3; call {phone} if you see it. "
                     + "The log says nothing new about the parser or the cache. " * 4 + "\n\n-- \nlist footer\n\n")
        planted += [("EMAIL_ADDRESS", address), ("DATE_TIME", date), ("PHONE_NUMBER", phone)]
    return "".join(parts), planted


def test_a_long_digest_across_many_windows_keeps_every_value_once(analyzer):
    text, planted = _digest(150)  # about 70,000 characters, 9 windows of 8,000
    settings = rules_only(max_chunk_chars=8_000, chunk_overlap_chars=200)
    spans = detect_spans(analyzer, text, settings)
    assert all(a.end <= b.start for a, b in zip(spans, spans[1:]))
    found = [(s.entity_type, text[s.start:s.end]) for s in spans]
    missing = [p for p in planted if p not in found]
    assert not missing, missing[:5]
    assert all(found.count(p) == 1 for p in planted[::3])  # an address in two windows is reported once
    assert not any(kind == "IP_ADDRESS" for kind, _ in found)  # revisions
    assert not any(v.strip("- \n") == "" for _, v in found)
