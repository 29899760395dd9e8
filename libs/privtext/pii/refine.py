"""Span post-processing a sanitizer needs, after the recognizers (``refine``).

* Relative time is not PII: DATE_TIME spans that are durations or relative expressions ("a week",
  "this month", "two weeks", a range "2 - 12 hours", "10-ish years", "Sunday", "yesterday"), a month or
  feast alone ("in August", "Christmas"), or that hold no date element at all (no number of any script and
  no month or weekday name: "this past summer", "the other day", "later today") are dropped unless
  ``pii.relative_time_is_pii``: they identify no one (HIPAA Safe Harbor's date elements are a day, a month
  and a year), and replacing them with dates makes nonsense ("the summer" -> "02/21/1950").
* spaCy's DATE misreads of bare digit groups ("4746-3459", "7015", "07700 316") are dropped when they
  have no date shape, so the phone, postcode and address recognizers own those digits.
* A PERSON span is widened over adjacent capitalised name tokens (``widen_names``), so "Russell" in
  "Russell Mcclain" never leaves "Mcclain" behind.
* A STREET_ADDRESS span is widened into its address block (``widen_addresses``): house numbers
  before it and, after a comma or a line break, secondary units, city and country lines, state codes
  and postcodes -- what is left outside an address span is published verbatim.

* Spans of one type separated by blanks only become one span (``join_adjacent``): "Capital Gearing" and
  "Trust plc" are one company, replaced once, and the blank between them is no longer published as a
  gap inside a name; a line break still separates names, organisations, places and groups.

``plain_text`` gives the NLP a text of the same length in which escaped line breaks (a literal
backslash-n, frequent in exported tickets) are real ones, so "Kleist\\nACME" is two tokens.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import replace

from spacy.lang.en.stop_words import STOP_WORDS

_NUMBER_WORDS = ("one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|"
                 "few|several|couple|dozen|many|half|\\d+(?:[.,]\\d+)?")
# a count or a range of counts, maybe approximate: "2 - 12", "two or three", "10-ish", "5–6": a duration's length
_COUNT = (rf"(?:{_NUMBER_WORDS})(?:\s*(?:-|\u2013|\u2014|to|or)\s*(?:{_NUMBER_WORDS}))?(?:-?ish)?\+?")
_UNITS = ("seconds?|minutes?|hours?|days?|nights?|weeks?|weekends?|fortnights?|months?|years?|decades?|"
          "secs?|mins?|hrs?|wks?|yrs?")
_DAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
RELATIVE_TIME = re.compile(
    rf"(?i)^(?:the\s+)?(?:"
    rf"(?:(?:for|in|within|after|over|about|around|almost|nearly|another|(?:the\s+)?(?:last|past|next|first))\s+)*"
    rf"(?:an?\s+)?(?:{_COUNT}\s*)?(?:of\s+)?(?:an?\s+)?(?:more\s+)?(?:{_UNITS})(?:\s+and\s+a\s+half)?"
    rf"(?:\s+(?:ago|later|earlier|long|old|out|away|ahead|back|before|after|from\s+now|or\s+so))?"
    rf"|(?:this|last|next|past|coming|previous|every|each)\s+(?:{_UNITS}|{_DAYS}|morning|evening|night|time)"
    rf"|today|tonight|yesterday|tomorrow|now|recently|lately|soon|daily|weekly|monthly|yearly|annually"
    rf"|(?:on\s+)?(?:{_DAYS})s?(?:\s+(?:morning|afternoon|evening|night))?"
    rf"|(?:this\s+|the\s+)?(?:morning|afternoon|evening|night|weekend|overnight)"
    rf"|(?:(?:this|last|next|past|coming|the)\s+)?(?:summer|winter|spring|fall|autumn|holidays?)"
    rf")$")
# digits and separators only, but not a date: no d/m/y, y-m-d, hh:mm or 19xx/20xx year shape
_DIGITS_ONLY = re.compile(r"^[\d\s.,/:-]+$")
_DATE_SHAPE = re.compile(r"^(?:\d{1,4}[/.-]\d{1,2}[/.-]\d{1,4}(?:[ T]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?|"
                         r"\d{1,2}:\d{2}(?::\d{2})?|(?:19|20)\d{2}s?"
                         r"|\d{1,2}[/.-](?:19|20)\d{2}|(?:19|20)\d{2}[/.-]\d{1,2}|\d{1,2}\.\d{1,2}\.)$")  # "24.12."
# a month or a feast without a day or a year ("the numbers for August", "Christmas plans"): no date of anyone's, as
# coarse as a weekday; relative time unless pii.relative_time_is_pii
_MONTH_ALONE = re.compile(
    r"(?i)^(?:(?:in|of|for|since|until|by|during|the|this|last|next|early|mid|late|end\s+of)\s+)*"
    r"(?:january|february|march|april|may|june|july|august|september|october|november|december|christmas|easter|"
    r"thanksgiving|halloween|new\s+year'?s?(?:\s+(?:eve|day))?)$")
# a word naming a month or a weekday (in full or abbreviated): with a number, what makes a span a date
_CALENDAR_WORD = re.compile(
    r"(?i)(?<![^\W\d_])(?:january|february|march|april|may|june|july|august|september|october|november|december|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec|"
    r"mon|tues?|wed|thu(?:rs?)?|fri|sat|sun)(?![^\W\d_])")
_STATE_ZIP = re.compile(r"^[A-Z]{2}\s\d{5}(?:-\d{4})?$")  # "IL 84254": an address's state and ZIP, no date
_ESCAPED_BREAK = re.compile(r"\\([nrt])")
_NAME_TOKEN = re.compile(r"[^\W\d_]{2,}(?:['-][^\W\d_]+)?")  # a name word of any script: "Mcclain", "Петров"
_NAME_TOKEN_BEFORE = re.compile(rf"{_NAME_TOKEN.pattern}$")
NOT_NAMES = frozenset({"The", "A", "An", "And", "Or", "But", "I", "We", "You", "He", "She", "They", "It", "My",
                       "Our", "Your", "His", "Her", "Their", "Hi", "Hello", "Dear", "Thanks", "Thank", "Please",
                       "Regards", "Best", "Cheers", "Mr", "Mrs", "Ms", "Dr", "At", "In", "On", "To", "From",
                       "For", "With", "Is", "Was", "Call", "Ask", "Tell", "Let", "See", "Name", "Phone", "Email",
                       "Born", "Quoting"})
# address continuations: a separator, then one element of an address block
_PLACE_WORD = r"[A-Z\u00C0-\u00DE][\w\u00C0-\u024F'.-]*"
_PARTICLES = "de|da|do|dos|das|del|della|di|du|des|la|le|los|las|y|van|von|der|den"
PARTICLE = rf"(?:{_PARTICLES})"  # inside a street or place name: "Treinta y Tres", "Rua Cidade de Maracaja"
CONNECTOR = rf"(?:{_PARTICLES}|u|e|im|am|an|sur|upon|on)"  # also between place words: "Bystre u Policky"
_PLACE = rf"{_PLACE_WORD}(?:[ \t]+(?:{CONNECTOR}[ \t]+)?{_PLACE_WORD}){{0,3}}"  # "Teixeira de Freitas"
_UNIT = r"(?:Apt\.?|Apartment|Suite|Ste\.|Unit|Flat|Room|Floor)\s?#?\d{1,5}[A-Z]?"
_POSTCODE = r"(?:\d{3,6}(?:[- ]\d{2,4})?|[A-Z]{1,2}\d[A-Z\d]?\s\d[A-Z]{2})"
_MISSING = r"(?:nan|NaN|None|null|N/A)"  # an export's empty field inside an address block ("Egg, nan 78051")
_ELEMENT = rf"(?:{_UNIT}|{_POSTCODE}|[A-Z]{{2}}|{_MISSING}|{_PLACE})(?![\w\u00C0-\u024F:])"
_ADDRESS_NEXT = re.compile(
    rf"(?P<sep>[ \t]*[,\n][^\S\n]*(?:[^\w\s]{{1,4}}[ \t]+)?|[ \t]+)"  # a comma or a line break (a bullet), or blanks
    rf"(?P<element>{_ELEMENT})")
# the rest of the line is address elements only ("... Suite 303 Kaiata Greymouth"), up to a full stop or "?"
_PROSE_AFTER = r"(?:for|please|as|so|is|was|and|but|or|if|when|because|thanks?|in|on|at|to|from|by)\b"
_LINE_TAIL = re.compile(
    rf"(?:[ \t]*,?[ \t]+{_ELEMENT})+(?=[.?!;]?[ \t]*$|[.?!;][ \t]+[A-Z\"(]|[.?!;,]?[ \t]+{_PROSE_AFTER})", re.M)
_INTERSECTION_AFTER = re.compile(rf"[ \t]+and[ \t]+{_PLACE}(?![\w\u00C0-\u024F])")  # "... Meadow Drive and Pisano Row"
_INTERSECTION_BEFORE = re.compile(rf"(?<![\w\u00C0-\u024F]){_PLACE}[ \t]+and[ \t]+$")  # "Kerman and 3240 ..."
_CORNER_BEFORE = re.compile(r"(?i)\b(?:the[ \t]+)?corner[ \t]+of[ \t]+$")  # "the corner of X and Y" is one place
_LINE_END = re.compile(r"[ \t,]*[.?!;]?[ \t]*(?:\n|$)")
# after a blank line, only a "Country 12345" or postcode line still belongs to the block
_AFTER_BLANK_LINE = re.compile(rf"[ \t]*\n[ \t]*\n[^\S\n]*(?:{_PLACE}[ \t]+)?{_POSTCODE}"
                               r"(?=[ \t]*[.?!;]?[ \t]*(?:\n|$))")
_STRUCTURAL = re.compile(rf"{_UNIT}|{_POSTCODE}")
_HOUSE_NUMBER_BEFORE = re.compile(r"(?<![\w.,-])\d{1,6}[A-Za-z]?[ \t]+$")
_MAX_ADDRESS_PARTS = 6
_LOOK_BACK = 200  # characters searched before a span (a town line, a crossing): linear cost in a 1 MB document
_TOWN_LINE = re.compile(r"(?:^|\n)[^\S\n]*(?:[^\w\s]{1,4}[^\S\n]*)?(?P<town>[^\W\d_][^\W\d_'’.-]*"
                        r"(?:[ -](?:[^\W\d_][^\W\d_'’.-]*))?(?:[ -][^\W\d_][^\W\d_'’.-]*){0,2})[^\S\n]*\Z")
_LINE_CONTENT = re.compile(r"\S(?:[^\n]*\S)?")  # a line's text without its leading and trailing blanks
_UNIT_WORDS = frozenset({"Suite", "Apt", "Apartment", "Unit", "Room", "Floor", "Flat", "Box"})
_ONE_LINE_TYPES = frozenset({"PERSON", "ORGANIZATION", "LOCATION", "NRP", "TITLE"})
_POSTAL_PARTS = frozenset({"LOCATION", "ZIP_CODE"})  # joined to an address across commas and line breaks


def plain_text(text: str) -> str:
    """``text`` with each escaped break (backslash-n/r/t) as a blank and the break: same offsets."""
    return _ESCAPED_BREAK.sub(lambda m: " " + {"n": "\n", "r": "\r", "t": "\t"}[m.group(1)], text)


def refine(spans: list, text: str, settings) -> list:
    """Split NER spans at line breaks; drop relative-time and digit-only DATE_TIME spans; widen PERSON
    and STREET_ADDRESS spans."""
    out = []
    for span in (part for whole in spans for part in _lines_of(whole, text)):
        if span.entity_type == "DATE_TIME" and _not_a_date(text[span.start:span.end].strip(" .,;:!?"), settings):
            continue
        if span.entity_type == "PERSON" and settings.widen_names:
            span = _widen_name(span, text)
        if span.entity_type == "STREET_ADDRESS" and settings.widen_addresses:
            span = _widen_address(span, text)
        if span.entity_type == "LOCATION" and settings.widen_addresses:
            out += _place_line_above(span, text)
        out.append(span)
    return out


def join_adjacent(spans: list, text: str, addresses: bool = True) -> list:
    """Sorted, non-overlapping ``spans`` with neighbours merged into one span at the higher score: two
    names, organisations, places, groups or titles of one type separated by blanks only (two phone numbers
    stay two values); and, with ``addresses`` (``pii.widen_addresses``), two address parts across any
    whitespace and a street address with a place or postcode across whitespace or commas, which become
    part of the address."""
    out: list = []
    for span in spans:
        last = out[-1] if out else None
        kind = last and _joined_type(last.entity_type, span.entity_type, text[last.end:span.start], addresses)
        if kind:
            out[-1] = replace(last, entity_type=kind, end=span.end, score=max(last.score, span.score),
                              tier=span.tier if kind == span.entity_type else last.tier)
        else:
            out.append(span)
    return out


def _joined_type(left: str, right: str, gap: str, addresses: bool) -> str | None:
    if left == right in _ONE_LINE_TYPES:
        return left if gap.strip(" \t") == "" and gap else None
    if not addresses or "STREET_ADDRESS" not in (left, right):
        return None
    if left == right:
        return left if gap.isspace() else None
    part = right if left == "STREET_ADDRESS" else left
    return "STREET_ADDRESS" if part in _POSTAL_PARTS and gap.strip(" \t\n,") == "" else None


def _lines_of(span, text: str) -> list:
    """A name, organisation, place or group never runs over a line break ("Vittore Fiorentini\\nFood
    preparation worker" is a name, then a job): such a span becomes one span per line."""
    if span.entity_type not in _ONE_LINE_TYPES or "\n" not in text[span.start:span.end]:
        return [span]
    return [replace(span, start=span.start + m.start(), end=span.start + m.end())
            for m in _LINE_CONTENT.finditer(text[span.start:span.end])]


def _place_line_above(span, text: str) -> list:
    """A country alone on its line under a short line of capitalised words: that line is the town of
    the same postal block ("Jestetten\\nGermany", "HOREB\\nUnited Kingdom")."""
    line_start = text.rfind("\n", 0, span.start) + 1
    line_end = text.find("\n", span.end)
    if (line_start < 2 or text[line_start:span.start].strip()
            or text[span.end:len(text) if line_end < 0 else line_end].strip()):
        return []
    m = _TOWN_LINE.search(text, max(0, line_start - 1 - _LOOK_BACK), line_start - 1)
    if not m or not all(w[0].isupper() for w in re.split(r"[ -]", m.group("town"))):
        return []
    return [replace(span, start=m.start("town"), end=m.end("town"))]


def _not_a_date(value: str, settings) -> bool:
    if _DIGITS_ONLY.match(value) and not _DATE_SHAPE.match(value) or _STATE_ZIP.match(value):
        return True
    return not settings.relative_time_is_pii and bool(RELATIVE_TIME.match(value) or _MONTH_ALONE.match(value)
                                                      or not _date_element(value))


def _date_element(value: str) -> bool:
    """Whether ``value`` holds a number (any script: Unicode category N) or a month or weekday name."""
    return any(unicodedata.category(c)[0] == "N" for c in value) or bool(_CALENDAR_WORD.search(value))


def _widen_name(span, text: str):
    start, end = span.start, span.end
    while True:  # to the right: " Mcclain"
        m = _NAME_TOKEN.match(text, end + 1) if text[end:end + 1] == " " else None
        if not m or not _title_case(m.group()) or _no_name_word(m.group()) or m.group() in _UNIT_WORDS \
                or (m.end() < len(text) and text[m.end()].isalnum()):  # "Dr. Tiina Käyhkö Suite 595"
            break
        end = m.end()
    while start >= 2 and text[start - 1] == " ":  # to the left: "Russell ", "Иван "
        m = _NAME_TOKEN_BEFORE.search(text, max(0, start - 41), start - 1)
        if (not m or not _title_case(m.group()) or _no_name_word(m.group())  # "Does Harry Potter ..."
                or (m.start() > 0 and text[m.start() - 1].isalnum())):
            break
        start = m.start()
    return span if (start, end) == (span.start, span.end) else replace(span, start=start, end=end)


def _no_name_word(word: str) -> bool:
    """A form word or an English stop word ("Does", "Would", "Also"), which a capitalised run beside a name
    holds at a sentence's start: never widened into the name (it would be replaced with it)."""
    return word in NOT_NAMES or word.casefold() in STOP_WORDS


def _tail_end(text: str, pos: int) -> int:
    tail = _LINE_TAIL.match(text, pos)
    return tail.end() if tail else pos


def _title_case(word: str) -> bool:
    """A capitalised word, not an upper-case acronym: "Mcclain", "McDonald", "O'Neil", "Петров"."""
    return word[0].isupper() and any(c.islower() for c in word)


def _widen_address(span, text: str):
    """House numbers before, and "the corner of" before a crossing; after it, the rest of its line when
    that is address elements only, then up to ``_MAX_ADDRESS_PARTS`` block elements; a street it crosses
    ("X and Y"). Capitalised words join only after a comma or line break, at the end of an all-address
    line, or after a unit/postcode, so "12 Main St Thanks a lot" keeps "Thanks"."""
    start, end = span.start, span.end
    for _ in range(2):
        m = _HOUSE_NUMBER_BEFORE.search(text, max(0, start - 16), start)
        if not m:
            break
        start = m.start()
    m = _INTERSECTION_BEFORE.search(text, max(0, start - _LOOK_BACK), start)
    if m and m.group().split()[0] not in NOT_NAMES:
        start = m.start()
    m = _INTERSECTION_AFTER.match(text, end)
    if m and m.group().split()[1] not in NOT_NAMES:
        end = m.end()
    m = _CORNER_BEFORE.search(text, max(0, start - _LOOK_BACK), start)
    if m:
        start = m.start()
    m = _LINE_TAIL.match(text, end)
    if m and m.group().split()[0].strip(",") not in NOT_NAMES:
        end = m.end()
    structural = False  # the last element joined was a unit or postcode
    for _ in range(_MAX_ADDRESS_PARTS):
        m = _ADDRESS_NEXT.match(text, end)
        if not m:
            blank = _AFTER_BLANK_LINE.match(text, end)
            if blank:
                end = blank.end()
            break
        element, after_break = m.group("element"), bool(m.group("sep").strip(" \t"))
        is_structural = bool(_STRUCTURAL.fullmatch(element))
        if not (after_break or structural or is_structural) or element.split()[0] in NOT_NAMES:
            break
        if "\n" in m.group("sep") and not _LINE_END.match(text, _tail_end(text, m.end())):
            break  # the next line belongs to the block only if it is address elements alone ("0494 41 18 24" is
            # a phone, "Revision 1.2 fixed it" prose)
        end, structural = m.end(), is_structural
        tail = _LINE_TAIL.match(text, end)
        if tail:
            end = tail.end()
    return span if (start, end) == (span.start, span.end) else replace(span, start=start, end=end)
