"""Replacements keep the kind and format of what they replace, on the values real mail holds (issue 44):
RFC 2822 dates and quote attributions stay dates in their layout, time zones stay as written, IPv4 stays IPv4,
brackets and punctuation around a span are never eaten, and ``format_kept`` says so truthfully.

The checks are independent of the code under test: ``email.utils.parsedate_tz`` (the standard library's
RFC 2822 parser), ``dateutil``'s parser and ``ipaddress``."""
from __future__ import annotations

import email.utils
import hashlib
import ipaddress
import re

import numpy as np
import pytest
from dateutil import parser as dateparser
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from privtext.clusant.sanitizer import ClusantSanitizer, placeholder, replaced_region, sanitize_documents
from privtext.clusant.settings import ClusantSettings, VocabularySettings
from privtext.clusant.surface_format import fold, format_kept, render, surface_format

CANDIDATES = ("July 12, 1989", "03 February 1961", "2027-11-30", "12/31/1999", "29.02.1952", "Aug 01, 2030",
              "not a date at all")
HEADER_DATES = ("Fri, 13 Sep 2002 15:01:18 -0400", "Sun, 8 Sep 2002 10:22:01 -0500 (CDT)", "13 Sep 2002 15:01:18 +0100",
                "Fri, 13 Sep 2002 15:01:18 GMT", "Fri, 13 Sep 2002 15:01 -0400", "Fri, 13 Sep 02 15:01:18 EDT",
                "Mon, 02 Sep 2002 09:03:44 +0000 (GMT)", "Fri,13 Sep 2002 15:01:18 -0400",
                "Tue, 3 Dec 2002 23:59:59 +0530",
                "Fri, 31 May 02 02:45:00 EST")
OTHER_DATES = ("Wed, 14 Aug 2002", "Wed, Aug 14, 2002 at 10:23:11AM -0700", "8/14/02 10:23 AM",
               "Wednesday, August 14, 2002, at 10:23", "14/08/2002 10:23", "Wednesday, August 14, 2002 10:23 AM",
               "2002-09-13T15:01:18Z", "SEP 13, 2002", "Sept 3", "7/14", "3 March 2024", "14:30", "9:15 am")


def _shape(text: str) -> str:
    return re.sub(r"[A-Za-z]+", "A", re.sub(r"\d+", "9", text))


def _zones(text: str) -> list[str]:
    return re.findall(r"[+-]\d{4}|\b[A-Z]{2,4}T\b|\bGMT\b|\bUTC\b|\bZ\b", text)


@pytest.mark.parametrize("value", HEADER_DATES)
@pytest.mark.parametrize("candidate", CANDIDATES)
def test_a_header_date_stays_an_rfc2822_date_in_its_layout_with_its_zone(value, candidate):
    out = render("DATE_TIME", candidate, surface_format("DATE_TIME", value))
    parsed = email.utils.parsedate_tz(out)
    assert parsed is not None and _shape(out) == _shape(value) and _zones(out) == _zones(value), out
    assert email.utils.parsedate_tz(value)[9] == parsed[9]  # the same offset from UTC
    assert format_kept("DATE_TIME", value, out)


@pytest.mark.parametrize("value", OTHER_DATES)
def test_attribution_and_body_dates_stay_dates_in_their_layout(value):
    out = render("DATE_TIME", "July 12, 1989", surface_format("DATE_TIME", value))
    assert _shape(out) == _shape(value) and out != value
    dateparser.parse(out.replace(" at ", " "))  # raises if it is no date or time
    assert format_kept("DATE_TIME", value, out)


@pytest.mark.parametrize("zone", ["EDT", "-0400", "+0530", "GMT", "UTC"])
def test_a_time_zone_alone_stays_itself(zone):
    assert render("DATE_TIME", "July 12, 1989", surface_format("DATE_TIME", zone)) == zone


@pytest.mark.parametrize("value", ["the summer", "1.12.2.4", "hahaha", "make", "yesterday", "Bob", "13 Foo 2002"])
def test_values_that_are_no_date_have_no_layout_and_a_date_replacing_them_does_not_keep_their_format(value):
    assert surface_format("DATE_TIME", value) is None
    assert not format_kept("DATE_TIME", value, "02/21/1950")  # "the summer" -> "02/21/1950" is not kept


# --- IPv4 stays IPv4, and format_kept says what happened -------------------------------------------------

def hash_encode(phrases):
    rows = [np.random.default_rng(int(hashlib.sha256(p.encode()).hexdigest()[:8], 16)).normal(size=16) for p in phrases]
    x = np.array(rows)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def ip_sanitizer(tmp_path_factory):
    """The IP_ADDRESS vocabulary as configured (Faker IPv4 and IPv6 addresses, half and half)."""
    settings = ClusantSettings(entity_types=("IP_ADDRESS",), n_clusters=4, k=8.0, eps={"PII": 2.0, "PoII": 6.0},
                               vocabulary=VocabularySettings(size=80))
    san = ClusantSanitizer.build(settings, lambda t: "PII", hash_encode, "hash",
                                 cache_dir=str(tmp_path_factory.mktemp("ip")))
    assert {ipaddress.ip_address(p).version for p in san.per_type["IP_ADDRESS"].phrases} == {4, 6}
    return san


def _version(text: str) -> int | None:
    try:
        return ipaddress.ip_address(text).version
    except ValueError:
        return None


@hsettings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.ip_addresses().filter(lambda a: str(a) != "::"), st.sampled_from(["", "[", "("]),
                          st.booleans()), min_size=1, max_size=8),
       st.integers(0, 2**32 - 1))
def test_an_ipv4_stays_ipv4_and_format_kept_counts_exactly_the_kept_ones(ip_sanitizer, addresses, seed):
    """Property over generated addresses of both versions (but "::", which holds no digit), bracketed or not:
    every replacement is an address
    of the input's version (checked by ``ipaddress``), the brackets around it are kept, and ``format_kept``
    equals the number of replacements of the input's version. Fails on a sanitizer that writes the drawn
    candidate as it is (an IPv6 draw for an IPv4 input) while counting it as kept."""
    pieces, spans, inputs = [], [], []
    pos = 0
    for address, bracket, covered in addresses:
        closing = {"": "", "[": "]", "(": ")"}[bracket]
        value = str(address)
        start = pos + len("host ") + (0 if covered else len(bracket))
        chunk = f"host {bracket}{value}{closing} up. "
        spans.append((start, start + len(value) + (len(bracket) + len(closing) if covered else 0), "IP_ADDRESS", "PII"))
        inputs.append((address.version, bracket, closing))
        pieces.append(chunk)
        pos += len(chunk)
    text = "".join(pieces)
    out = sanitize_documents(ip_sanitizer, hash_encode, np.random.default_rng(seed), [text], [spans])
    written = re.findall(r"host (.*?) up\. ", out.texts[0])
    assert len(written) == len(inputs)
    same_version = 0
    for (version, bracket, closing), w in zip(inputs, written):
        assert w.startswith(bracket) and w.endswith(closing)  # brackets never eaten
        core = w[len(bracket):len(w) - len(closing)]
        assert _version(core) == version, (w, version)
        same_version += _version(core) == version
    assert out.format_kept == [same_version] and out.replaced == [{"IP_ADDRESS": len(inputs)}]


# --- brackets and punctuation around a span are never eaten ----------------------------------------------

@pytest.mark.parametrize("text,span,expected", [
    ("Date: Sun, 8 Sep 2002 (CDT) x", (23, 27), "Date: Sun, 8 Sep 2002 ([DATE_TIME]) x"),  # "CDT)" -> "([...])"
    ("Mail <bob@example.org>, ok", (5, 22), "Mail <[EMAIL_ADDRESS]>, ok"),
    ("Sig:\n-- \nBob", (5, 7), "Sig:\n-- \nBob"),  # a dash run holds nothing personal: left as written
    ("Yeah...It's a problem", (4, 7), "Yeah...It's a problem"),
    ("ask 'Maria' now", (4, 11), "ask '[PERSON]' now"),
    ("the (555) 123-4567 line", (4, 18), "the [PHONE_NUMBER] line"),  # a bracket inside the value is the value's
])
def test_brackets_quotes_and_punctuation_around_a_span_are_kept(text, span, expected):
    empty = ClusantSanitizer(ClusantSettings(), {})
    kind = re.search(r"\[(\w+)\]", expected)
    entity_type = kind.group(1) if kind else "ORGANIZATION"
    out = sanitize_documents(empty, hash_encode, np.random.default_rng(0), [text], [[(*span, entity_type, "PII")]])
    assert out.texts == [expected]
    assert out.masked == [{entity_type: 1} if kind else {}]  # a span left as written is neither masked nor replaced


@hsettings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=40), st.integers(0, 40), st.integers(1, 20))
def test_a_replaced_region_drops_only_edge_punctuation_and_spaces(text, start, width):
    """Property over generated Unicode: the region lies inside the span; what it leaves out at either edge
    holds no letter or digit; an empty region means the span held none."""
    end = min(len(text), start + width)
    start = min(start, end)
    a, b = replaced_region(text, start, end)
    if a == b:
        assert a == start and not any(c.isalnum() for c in text[start:end])
        return
    assert start <= a < b <= end
    assert not any(c.isalnum() for c in text[start:a] + text[b:end])
    assert text[a:b].strip() == text[a:b]
    assert placeholder("X") == "[X]"


# --- web addresses and display names keep their layout ---------------------------------------------------

@pytest.mark.parametrize("value,candidate,expected", [
    ("http://www.physics.uiuc.edu/~jdoe/", "https://www.smith.com/", "http://www.smith.com/"),
    ("www.x.org", "https://www.smith.com/about/", "www.smith.com"),
    ("https://github.com/jdoe", "http://www.lee.net/", "https://lee.net/"),
    ("apt.conf", "http://jones.biz/", "jones.biz"),
])
def test_a_web_address_keeps_its_scheme_www_and_path_or_not(value, candidate, expected):
    out = render("URL", candidate, surface_format("URL", value))
    assert out == expected and format_kept("URL", value, out)
    assert not format_kept("URL", value,
                           "http://elsewhere.example.com/x" if not value.startswith("http://") else "x.org")


@pytest.mark.parametrize("value,expected", [("Jensen, William", "Lopez, Maria"), ("KAYLA BRYANT", "MARIA LOPEZ"),
                                            ("william", "maria"), ("Bob", "Maria"), ("kayla bryant", "maria lopez"),
                                            ("Kayla Bryant", "Dr. Maria Lopez MD")])
def test_a_display_name_keeps_its_layout_and_case(value, expected):
    assert render("PERSON", "Dr. Maria Lopez MD", surface_format("PERSON", value)) == expected


_SCHEMES = st.sampled_from(["", "http://", "https://", "ftp://", "HTTP://"])
# a host label as the class reads it: letters and digits of any script that NFKC does not turn into marks,
# spaces or separators ("\ufc5e" folds to a space and two marks: that host has no class, by design)
_LABELS = st.text(st.characters(categories=("Ll", "Lu", "Nd", "Lo")), min_size=1, max_size=8).filter(
    lambda label: re.fullmatch(r"[^\s./?#:@]+", fold(f"a{label}a")) is not None)


@hsettings(max_examples=200, deadline=None)
@given(_SCHEMES, st.booleans(),
       st.lists(_LABELS, min_size=2, max_size=4).filter(lambda ls: not ls[0].lower().startswith("www")),
       st.sampled_from(["", "/", "/~u/x.html", ":8080/a"]),
       st.text(max_size=30))
def test_a_web_address_class_holds_nothing_of_the_value_and_every_render_keeps_it(scheme, www, labels, path, candidate):
    """Property over generated hosts (any script) and candidates: the class names only the scheme, "www." and
    whether a path follows; whatever the candidate (control characters too: '0.\x1b' rendered itself, out of
    the class, before the render read it as the class does), the rendered address is in the input's class."""
    value = scheme + ("www." if www else "") + ".".join(labels) + path
    fmt = surface_format("URL", value)
    assert fmt is not None and fmt.split(";")[1:] == ["www." if www else "", "/" if path else ""]
    assert fmt.startswith("url:" + scheme.lower() + ";")
    assert format_kept("URL", value, render("URL", candidate, fmt))


@given(st.text(max_size=30), st.text(max_size=30))
def test_a_name_class_is_one_of_nine_and_render_never_fails(value, candidate):
    fmt = surface_format("PERSON", value)
    assert fmt in {None, "name:F", "name:F^", "name:F_", "name:L, F", "name:F L^", "name:F L_", "name:L, F^",
                   "name:L, F_"}
    assert isinstance(render("PERSON", candidate, fmt), str)
