"""Surface formats: the mechanism's public draw written in the input span's format (post-processing).

CluSanT (``mechanism.py``) draws a public candidate y for an input x. ``render(type, y, fmt)`` writes y in
the surface format ``fmt = surface_format(type, x)`` of the input: a date in the input's layout ("born
1971-04-04" stays an ISO date, "March 3, 2024" a spelled-out one), a card number with the input's length and
grouping and a valid Luhn digit, a phone number, SSN or postcode in the input's digit layout (extensions and
separators kept), an order number in its letter/digit shape.

Guarantee. ``render`` is a deterministic function of (y, fmt) only. For two inputs x, x' of the same entity
type AND the same surface format, the rendered output is a post-processing of the same mechanism, so the
bound of ``mechanism.py`` (eps-metric-LDP in D_k, the recorded eps) holds unchanged. The format class (a date
layout, a card's length and grouping, a phone layout) is published, as the span's type already is:
adjacency is "values of the same entity type and surface format". Inputs of different formats give
disjoint rendered outputs (a test shows it), which is exactly what publishing the format means.
Sensitivity: nothing here adds noise; the format class is a deterministic function of x.

Any script, digit system and width. The format class is computed on the value folded by ``fold`` (NFKC,
so full-width forms become ASCII, then combining marks dropped): every Unicode digit or other number
(Arabic-Indic, Devanagari, full-width ...) is the placeholder ``9``, every letter of any script ``A``
(cased upper) or ``a``; only separators, punctuation and a phone extension's marker stay as written. So a
format class holds no digit or letter of the value, and ``render`` writes ASCII digits and letters drawn
from the public candidate only: no character of the input's digits or letters reaches the output.
``render`` is total (it never raises, whatever the class), so a span is never left unreplaced.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import re
import unicodedata
from itertools import chain, count

_DATE_LAYOUTS = ("%B %d, %Y", "%b %d, %Y", "%B %d %Y", "%d %B %Y", "%d %b %Y", "%A, %B %d, %Y", "%Y-%m-%d",
                 "%m/%d/%Y", "%d/%m/%Y", "%d.%m.%Y", "%m-%d-%Y", "%Y/%m/%d", "%m/%d/%y", "%B %Y", "%b %Y",
                 "%B %d", "%b %d", "%d %B", "%Y")
_TIME_LAYOUTS = ("%H:%M", "%H:%M:%S", "%I:%M %p", "%I:%M%p", "%I %p", "%I%p")
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


def surface_format(entity_type: str, value: str) -> str | None:
    """The surface format class of ``value`` (None: no format of its own, the draw is used as it is)."""
    value = fold(value)
    if entity_type == "DATE_TIME":
        layout = next((f for f in (*_DATE_LAYOUTS, *_TIME_LAYOUTS) if _parses(ascii_digits(value), f)), None)
        if layout is None:
            return None
        # the layout alone is the class (never whether a day is under 10): a spelled-out month takes an
        # unpadded day ("March 3, 2024"), numbers are padded ("03/04/2024")
        return layout.replace("%d", "%-d") if "%B" in layout or "%b" in layout else layout
    if entity_type in DIGIT_TYPES | CODE_TYPES and len(value) <= _MAX_SHAPE and sum(map(_is_number, value)) >= 2:
        kept = ({i for m in _EXTENSION.finditer(value) for i in range(m.start(), m.end())}
                if entity_type == "PHONE_NUMBER" else set())
        return "".join(c if i in kept
                       else "9" if _is_number(c) or (c.isalpha() and entity_type in DIGIT_TYPES)
                       else ("A" if c.isupper() else "a") if c.isalpha() else c
                       for i, c in enumerate(value))
    return None


def adjacency_group(entity_type: str, value: str) -> str:
    """The values CluSanT's recorded guarantee compares ``value`` with: its type and surface format."""
    return f"{entity_type}|{surface_format(entity_type, value) or ''}"


def render(entity_type: str, candidate: str, fmt: str | None) -> str:
    """``candidate`` (a public phrase the mechanism drew) written in surface format ``fmt``."""
    if fmt is None:
        return candidate
    if entity_type == "DATE_TIME":
        return _render_date(candidate, fmt)
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


def _parses(value: str, layout: str) -> bool:
    try:
        dt.datetime.strptime(value, layout)
    except ValueError:
        return False
    return True


def _candidate_date(candidate: str) -> dt.datetime:
    """The date a DATE_TIME candidate spells (candidates are full dates), else one derived from its hash."""
    for layout in _DATE_LAYOUTS:
        if "%Y" in layout and "%d" in layout and _parses(candidate, layout):
            return dt.datetime.strptime(candidate, layout)
    return dt.datetime(1970, 1, 1) + dt.timedelta(days=_hash_int(candidate) % 40000)


def _render_date(candidate: str, fmt: str) -> str:
    when = _candidate_date(candidate)
    if fmt.replace("%-", "%") in _TIME_LAYOUTS:  # a time of day: derived from the drawn candidate
        when = when.replace(hour=0, minute=0, second=0) + dt.timedelta(minutes=_hash_int(candidate) % 1440)
    return when.strftime(fmt)


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
    letters = chain((c.lower() for c in candidate if c.isascii() and c.isalpha()), derived("abcdefghijklmnopqrstuvwxyz"))
    return digits, letters
