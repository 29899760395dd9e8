"""Surface formats: the mechanism's public draw written in the input span's format (post-processing).

CluSanT (``mechanism.py``) draws a public candidate y for an input x. ``render(type, y, fmt)`` writes y in
the surface format ``fmt = surface_format(type, x)`` of the input: a date or time in the input's layout
(``date_layout.py``: "Fri, 13 Sep 2002 15:01:18 -0400" stays an RFC 2822 date with its zone, "born
1971-04-04" an ISO date, "March 3, 2024" a spelled-out one, "EDT" stays "EDT"; its year kept, see below), an IP
address in its version
(IPv4 stays IPv4, with a port if it had one), a card number with the input's length and grouping and a valid
Luhn digit, a phone number, SSN or postcode in the input's digit layout (extensions and separators kept), an
order number in its letter/digit shape, an e-mail address at a mass-market mailbox provider
(``MAIL_PROVIDERS``: "x@gmail.com") at that provider. ``format_kept`` says whether a replacement kept its
input's kind and format (the stage's ``format_kept_share``).

Guarantee. ``render`` is a deterministic function of (y, fmt) only. For two inputs x, x' of the same entity
type AND the same surface format, the rendered output is a post-processing of the same mechanism, so the
bound of ``mechanism.py`` (eps-metric-LDP in D_k, the recorded eps) holds unchanged. The format class (a date
layout with its time zone as written, an IP version, a card's length and grouping, a phone layout) is
published, as the span's type already is:
adjacency is "values of the same entity type and surface format". Inputs of different formats give
disjoint rendered outputs (a test shows it), which is exactly what publishing the format means.
Sensitivity: nothing here adds noise; the format class is a deterministic function of x.

Dates keep their year (``date_keep``, the setting ``clusant.date_keep``: "year" by default, as HIPAA's Safe
Harbor keeps "all elements of dates, except year"; "year_month" the month too, which Safe Harbor does not
allow; "none" neither). The kept year is part of a DATE_TIME value's class (``date_layout.layout``), so the
adjacency for a date is "dates of the same layout, zone and year": the eps per date is unchanged, the
adjacency narrower, and dates of different years have disjoint outputs (the year is published). The day,
the month and the time of day stay the mechanism's draw; a weekday is the written date's.

E-mail provider. An address whose domain is in ``MAIL_PROVIDERS`` (a fixed public list of consumer mailbox
providers, each with millions of mailboxes, never built from data) has the class "email:<domain>" and is
written as the drawn address's local part at that domain; any other address (a company's, a university's:
identifying) has no class and is replaced whole by the draw (reserved ``example.*`` domains). So what is
published beyond the type is "a consumer mailbox at this provider", a set of millions; the local part, the
person's own, is the mechanism's draw. Adjacency for a provider address: addresses of the same provider.
The candidates never depend on the data (the list is code, not counted from the corpus).

Any script, digit system and width. The format class is computed on the value folded by ``fold`` (NFKC,
so full-width forms become ASCII, then combining marks dropped): every Unicode digit or other number
(Arabic-Indic, Devanagari, full-width ...) is the placeholder ``9``, every letter of any script ``A``
(cased upper) or ``a``; only separators, punctuation and a phone extension's marker stay as written. So a
format class holds no digit or letter of the value but a date's kept year (month), written in ASCII digits,
and ``render`` writes ASCII digits and letters drawn from the public candidate and the class only: no other
character of the input's digits or letters reaches the output.
``render`` is total (it never raises, whatever the class), so a span is never left unreplaced.
"""
from __future__ import annotations

import hashlib
import ipaddress
import re
import unicodedata
from itertools import chain, count

from . import date_layout

# consumer mailbox providers (a fixed public list, each with millions of mailboxes): an address there keeps its domain
MAIL_PROVIDERS = frozenset(
    "gmail.com googlemail.com yahoo.com yahoo.co.uk yahoo.fr yahoo.de ymail.com rocketmail.com hotmail.com "
    "hotmail.co.uk hotmail.fr outlook.com live.com msn.com aol.com icloud.com me.com mac.com proton.me "
    "protonmail.com zoho.com gmx.de gmx.net gmx.com web.de t-online.de freenet.de free.fr orange.fr wanadoo.fr "
    "laposte.net sfr.fr libero.it virgilio.it tiscali.it alice.it mail.ru yandex.ru rambler.ru qq.com 163.com "
    "126.com sina.com naver.com daum.net hanmail.net rediffmail.com comcast.net verizon.net att.net "
    "sbcglobal.net bellsouth.net earthlink.net cox.net charter.net juno.com netzero.net netscape.net "
    "btinternet.com virginmedia.com sky.com talktalk.net ntlworld.com blueyonder.co.uk eircom.net "
    "bigpond.com shaw.ca rogers.com sympatico.ca terra.com.br uol.com.br bol.com.br".split())
# digits (and letters, as digits: "1-800-FLOWERS") are drawn; separators, "+" and an extension's marker are kept
DIGIT_TYPES = frozenset({"CREDIT_CARD", "PHONE_NUMBER", "US_SSN", "CARD_LAST4", "US_BANK_NUMBER"})
# digits and letters are drawn (letters keep their case); other characters are kept
CODE_TYPES = frozenset({"ZIP_CODE", "ORDER_NUMBER"})
_MAX_SHAPE = 40
_EXTENSION = re.compile(r"(?i)(?:ext(?:ension)?\.?|x)(?=\s*\d+$)")  # a phone extension's marker, kept as written


def fold(value: str) -> str:
    """``value`` in NFKC (full-width and compatibility forms become their plain characters) without
    combining marks and control, format, private-use, surrogate or unassigned characters, space runs of
    any kind one ASCII space: what the format class is read from."""
    text = unicodedata.normalize("NFKC", value)
    text = "".join(c for c in text if unicodedata.category(c)[0] not in "MC")
    return re.sub(r"\s+", " ", text).strip()


def ascii_digits(value: str) -> str:
    """``fold(value)`` with every decimal digit of any script written as its ASCII digit."""
    return "".join(str(unicodedata.decimal(c)) if unicodedata.decimal(c, None) is not None else c for c in fold(value))


def _is_number(c: str) -> bool:
    return unicodedata.category(c).startswith("N")  # Nd digits of every script, Nl, No


def surface_format(entity_type: str, value: str, date_keep: str = date_layout.DEFAULT_KEEP) -> str | None:
    """The surface format class of ``value`` (None: no format of its own, the draw is used as it is); a date's
    with the parts ``date_keep`` keeps (``clusant.date_keep``)."""
    value = fold(value)
    if entity_type == "DATE_TIME":
        return date_layout.layout(ascii_digits(value), date_keep)
    if entity_type == "IP_ADDRESS":
        return _ip_class(ascii_digits(value))
    if entity_type == "URL":
        return _url_class(value)
    if entity_type == "PERSON":
        return _name_class(value)
    if entity_type == "EMAIL_ADDRESS":
        domain = value.rpartition("@")[2].casefold()
        return f"email:{domain}" if "@" in value and domain in MAIL_PROVIDERS else None
    if entity_type in DIGIT_TYPES | CODE_TYPES and len(value) <= _MAX_SHAPE and sum(map(_is_number, value)) >= 2:
        kept = ({i for m in _EXTENSION.finditer(value) for i in range(m.start(), m.end())}
                if entity_type == "PHONE_NUMBER" else set())
        return "".join(c if i in kept
                       else "9" if _is_number(c) or (c.isalpha() and entity_type in DIGIT_TYPES)
                       else ("A" if c.isupper() else "a") if c.isalpha() else c
                       for i, c in enumerate(value))
    return None


def adjacency_group(entity_type: str, value: str, date_keep: str = date_layout.DEFAULT_KEEP) -> str:
    """The values CluSanT's recorded guarantee compares ``value`` with: its type and surface format (a date's
    with its kept year)."""
    return f"{entity_type}|{surface_format(entity_type, value, date_keep) or ''}"


def render(entity_type: str, candidate: str, fmt: str | None) -> str:
    """``candidate`` (a public phrase the mechanism drew) written in surface format ``fmt``."""
    if fmt is None:
        return candidate
    if entity_type == "DATE_TIME":
        return date_layout.write(fmt, candidate)
    if entity_type == "IP_ADDRESS":
        return _render_ip(candidate, fmt)
    if entity_type == "URL":
        return _render_url(candidate, fmt)
    if entity_type == "PERSON":
        return _render_name(candidate, fmt)
    if entity_type == "EMAIL_ADDRESS":
        local = candidate.strip().rpartition("@")[0] or f"user{_hash_int('email:' + candidate) % 100000}"
        return f"{local}@{fmt[len('email:'):]}"
    digits, letters = _streams(candidate)
    out = [next(digits) if c == "9" else next(letters).upper() if c == "A" else next(letters) if c == "a" else c
           for c in fmt]
    slots = [i for i, c in enumerate(fmt) if c == "9"]
    if entity_type == "CREDIT_CARD" and slots:
        out[slots[-1]] = luhn_digit("".join(out[i] for i in slots[:-1]))
    return "".join(out)


def luhn_digit(payload: str) -> str:
    """The check digit that makes ``payload`` + digit pass the Luhn test."""
    total = sum(d if i % 2 else (2 * d - 9 if d > 4 else 2 * d) for i, d in enumerate(map(int, reversed(payload))))
    return str(-total % 10)


def _hash_int(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def _streams(candidate: str):
    """The candidate's own digits and letters, continued by ones derived from its hash (deterministic)."""
    seed = hashlib.sha256(candidate.encode("utf-8")).digest()

    def derived(alphabet: str):
        for i in count():
            block = hashlib.sha256(seed + i.to_bytes(4, "big")).digest()
            yield from (alphabet[b % len(alphabet)] for b in block)

    digits = chain((str(unicodedata.digit(c)) for c in candidate if c.isdigit() and c.isascii()), derived("0123456789"))
    letters = chain((c.lower() for c in candidate if c.isascii() and c.isalpha()),
                    derived("abcdefghijklmnopqrstuvwxyz"))
    return digits, letters


_IP_PORT = re.compile(r"(?P<ip>[0-9.]+)(?P<port>:\d{1,5})?|\[(?P<ip6>[0-9A-Fa-f:.]+)\](?P<port6>:\d{1,5})?"
                      r"|(?P<bare6>[0-9A-Fa-f:.]+)")


def _ip_class(value: str) -> str | None:
    """"ipv4" / "ipv6", "[ipv6]" when bracketed, with ":port" when a port follows; None: not an address."""
    m = _IP_PORT.fullmatch(value)
    if m is None:
        return None
    try:
        version = ipaddress.ip_address(m.group("ip") or m.group("ip6") or m.group("bare6")).version
    except ValueError:
        return None
    port = ":port" if m.group("port") or m.group("port6") else ""
    return (f"[ipv{version}]" if m.group("ip6") else f"ipv{version}") + port


def _render_ip(candidate: str, fmt: str) -> str:
    """An address of the class's version: the candidate when it is one, else one derived from its hash
    (IPv4: first octet 11..223, never 127)."""
    version = 6 if "ipv6" in fmt else 4
    try:
        address = ipaddress.ip_address(candidate.strip())
    except ValueError:
        address = None
    if address is None or address.version != version:
        h = _hash_int("ip:" + candidate)
        if version == 4:
            first = 11 + h % 212
            address = ipaddress.IPv4Address(((first + (first == 127)) << 24) | (h >> 8) & 0xFFFFFF)
        else:
            address = ipaddress.IPv6Address((0x2001 << 112) | (0x0DB9 << 96) | (h & ((1 << 96) - 1)))
    text = f"[{address}]" if fmt.startswith("[") else str(address)
    return text + (f":{1024 + _hash_int('port:' + candidate) % 64000}" if fmt.endswith(":port") else "")


_URL = re.compile(r"(?i)(?P<scheme>(?:https?|ftp)://)?(?P<www>www\d?\.)?(?P<host>[^/\s?#:@]+\.[^/\s?#:@]+)(?P<rest>[/?#:]\S*)?")


def _url_class(value: str) -> str | None:
    """"url:SCHEME;WWW;PATH": the scheme (http, https, ftp) and "www." as written, "/" if a path or port follows."""
    m = _URL.fullmatch(value)
    if m is None:
        return None
    return (f"url:{(m.group('scheme') or '').lower()};{'www.' if m.group('www') else ''};"
            f"{'/' if m.group('rest') else ''}")


def _render_url(candidate: str, fmt: str) -> str:
    """The candidate's host (without "www.") and path in the class's scheme, "www." and path-or-not."""
    scheme, www, slash = fmt[len("url:"):].split(";")
    m = _URL.fullmatch(fold(candidate).strip())  # as surface_format reads it (no control or format characters)
    host = m.group("host") if m else f"site{_hash_int('url:' + candidate) % 100000}.example.com"
    path = (m.group("rest") if m and m.group("rest") else "/") if slash else ""
    return scheme + www + host + path


_AFFIXES = frozenset({"mr", "mrs", "ms", "miss", "mx", "dr", "prof", "md", "phd", "dds", "dvm", "jr", "sr", "ii", "iii",
                      "iv", "v"})


def _name_class(value: str) -> str | None:
    """"name:" with the layout ("F": one word, "L, F": last name first, as display names write it, "F L") and
    the case (``^`` upper, ``_`` lower); None for "First Last" in title case (the draw as it is)."""
    comma = re.fullmatch(r"[^,]*[^\W\d_][^,]*, ?[^,]*[^\W\d_][^,]*", value) is not None
    layout = "L, F" if comma else "F" if len(value.split()) == 1 else "F L"
    letters = [c for c in value if c.isalpha()]
    case = ("^" if len(letters) > 1 and all(c.isupper() for c in letters)
            else "_" if letters and all(c.islower() for c in letters) else "")
    return None if layout == "F L" and not case else f"name:{layout}{case}"


def _render_name(candidate: str, fmt: str) -> str:
    """The drawn name without honorifics and suffixes: its first word for "F", last name first for "L, F",
    in the class's case."""
    tokens = [t for t in candidate.split() if t.strip(".,").lower() not in _AFFIXES] or candidate.split() or ["Alex"]
    layout = fmt[len("name:"):].rstrip("^_")
    name = (tokens[0] if layout == "F"
            else f"{tokens[-1]}, {' '.join(tokens[:-1])}" if layout == "L, F" and len(tokens) > 1
            else " ".join(tokens))
    return name.upper() if fmt.endswith("^") else name.lower() if fmt.endswith("_") else name


_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
FORMATTED_TYPES = DIGIT_TYPES | CODE_TYPES | {"DATE_TIME", "IP_ADDRESS", "URL"}


def format_kept(entity_type: str, before: str, after: str, date_keep: str = date_layout.DEFAULT_KEEP) -> bool:
    """Whether ``after`` replaced ``before`` keeping its kind and surface format: the same format class
    where the type has classes (a value of such a type that is in no class was not kept: "the summer" ->
    "02/21/1950", "apt" typed URL -> a web address); a date fitting the input's layout with the parts
    ``date_keep`` keeps, on a day of the calendar (``date_layout.fits``); an e-mail by an
    e-mail (at the input's provider, if it has one); a name in its layout and case; other free text (a place,
    a company) by a phrase of its vocabulary, which is of its kind by construction."""
    fmt = surface_format(entity_type, before, date_keep)
    if entity_type == "DATE_TIME":
        return fmt is not None and date_layout.fits(fmt, ascii_digits(after))
    if entity_type in FORMATTED_TYPES:
        return fmt is not None and surface_format(entity_type, after) == fmt
    if entity_type == "EMAIL_ADDRESS":
        return (bool(_EMAIL.fullmatch(fold(before))) == bool(_EMAIL.fullmatch(fold(after)))
                and (fmt is None or surface_format(entity_type, after) == fmt))
    return fmt == surface_format(entity_type, after)  # a name keeps its layout and case; other free text: None
