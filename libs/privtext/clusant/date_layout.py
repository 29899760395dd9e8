"""Date and time layouts: the layout class of a DATE_TIME value, and a drawn date written in that layout.

``layout(value)`` reads a date or time as mail and chat write it ("Fri, 13 Sep 2002 15:01:18 -0400 (EDT)",
"Wed, Aug 14, 2002 at 10:23:11AM", "8/14/02 10:23 AM", "Wednesday the 14th", "2002-09-13T15:01:18Z", "March
3, 2024", "14:30", "EDT") token by token into a strftime-like class: ``%a``/``%A`` weekday, ``%b``/``%B``
month (``^``: upper case, ``_``: lower case, as written), ``%-d`` day beside a month name, ``%d``/``%m``
numeric day and month, ``%o`` ordinal day, ``%Y``/``%y`` year, ``%H``/``%-I``/``%M``/``%S``/``%p``/``%_p``
time; separators, the connectors "at", "of", "the" and the time zone (an offset or a zone name) are kept as
written. Numeric dates are read year-first when the year leads, else day-first when the first number is over
12 or the separator is ".", else month-first (US). Anything else (an unknown word, a letter of another
script, a number without a role) gives None: no layout.

``layout(value, keep)`` also keeps the parts of the date ``keep`` names (``clusant.date_keep``): "year" (the
default, HIPAA Safe Harbor's "all elements of dates, except year") writes the value's year into the class
(``%=2002Y``, a two-digit ``%=02y``), "year_month" its month as well (``%=9m``, ``%=9b``: not Safe Harbor),
"none" nothing. A layout without a year (or month) has nothing to keep there; a time or a zone alone is
unchanged; a class keeps no more than leaves a part to the draw (a month and year under "year_month" keep the
year, a year alone, "in 2002", nothing): else the value would be published as written, an audit would have
nothing to test there, and a number detection typed DATE_TIME by mistake (a house number, a PIN) would pass
through.

``write(fmt, candidate)`` writes the date that the drawn candidate spells (a vocabulary date; any other
candidate: a date derived from its hash) and a time of day derived from the candidate's hash in ``fmt``,
in English names and ASCII digits; a kept year (month) replaces the candidate's, the day is the
candidate's, the last of the month where the month is shorter in that year (29 February in a year that
has none: the 28th), and a weekday is the written date's (a two-digit year read in the century POSIX
gives it: 69-99 the 1900s, 00-68 the 2000s). A class holding only a time zone (and separators) is
written as it is: a time zone stays itself.

What the class publishes: the layout (which parts, their order, names' case), the separators, the
connectors, the time zone as written and the kept parts; no other digit of the date or time, nor whether a
day or month is under 10 (numbers are padded or not by the layout alone). Guarantee: the class is a
deterministic function of the value and is published, so the mechanism's bound holds between dates of the
same class (``surface_format``: adjacency "dates of the same layout, zone and year" under "year").
"""
from __future__ import annotations

import calendar
import datetime as dt
import hashlib
import re

WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
ZONES = frozenset({"UT", "UTC", "GMT", "Z", "EST", "EDT", "CST", "CDT", "MST", "MDT", "PST", "PDT", "AKST", "AKDT",
                   "HST", "AST", "ADT", "NST", "NDT", "BST", "IST", "WET", "WEST", "CET", "CEST", "MET", "MEST", "EET",
                   "EEST", "MSK", "JST", "KST", "HKT", "SGT", "AEST", "AEDT", "ACST", "ACDT", "AWST", "NZST", "NZDT"})
CONNECTORS = frozenset({"at", "of", "the", "T"})
KEEP = ("none", "year", "year_month")  # what of a date its class keeps (``clusant.date_keep``)
DEFAULT_KEEP = "year"
CANDIDATE_LAYOUTS = ("%B %d, %Y", "%d %B %Y", "%Y-%m-%d", "%m/%d/%Y", "%d.%m.%Y", "%b %d, %Y")  # the vocabulary's
_TOKEN = re.compile(r"(?P<time>\d{1,2}:\d{2}(?::\d{2})?)"
                    r"|(?P<zone>(?<![\w:+-])[+-]\d{2}:?\d{2}(?!\d))"
                    r"|(?P<num>\d+)(?P<ord>st|nd|rd|th)?"
                    r"|(?P<ampm>[AaPp]\.?[Mm]\.?)(?![A-Za-z])"
                    r"|(?P<word>[A-Za-z]+)"
                    r"|(?P<sep>[ ,./()\-'])"
                    r"|(?P<other>.)", re.S)
_CODE = re.compile(r"%(=\d+)?([-_^]?)([a-zA-Z%])")  # "%=2002Y": a code with its kept value
_ORDINAL = {1: "st", 2: "nd", 3: "rd"}


def _name(word: str, names: tuple[str, ...]) -> tuple[str, bool] | None:
    """(full name, abbreviated) if ``word`` is one of ``names`` or its 3-letter (or "Sept"/"Tues"...) form."""
    low = word.lower()
    if low == "may" and names is MONTHS:  # three letters, as headers write every month: the abbreviation's layout
        return "May", True
    for full in names:
        if low == full.lower():
            return full, False
        if len(low) >= 3 and full.lower().startswith(low) and len(low) <= 4:
            return full, True
    return None


def _case(word: str) -> str:
    return "^" if word.isupper() and len(word) > 1 else "_" if word.islower() else ""


def layout(value: str, keep: str = DEFAULT_KEEP) -> str | None:
    """The layout class of ``value`` (ASCII digits, folded), with the parts ``keep`` keeps; or None."""
    if keep not in KEEP:
        raise ValueError(f"date keep must be one of {', '.join(KEEP)}, not {keep!r}")
    parts: list = []  # class pieces; a bare number as [its digits] until its role is known
    numbers: list[int] = []
    month_names: dict[int, int] = {}  # index in parts -> the month a name spells
    twelve_hour = bool(re.search(r"(?<![A-Za-z])[AaPp]\.?[Mm]\.?(?![A-Za-z])", value))
    for m in _TOKEN.finditer(value):
        kind, text = m.lastgroup, m.group(0)
        if kind == "time":
            parts.append(("%-I" if twelve_hour else "%H") + ":%M" + (":%S" if text.count(":") == 2 else ""))
        elif kind in ("num", "ord"):
            if m.group("ord"):
                parts.append("%o")
            else:
                numbers.append(len(parts))
                parts.append([text])
        elif kind == "ampm":
            if "." in text or not (text.isupper() or text.islower()):
                return None
            parts.append("%_p" if text.islower() else "%p")
        elif kind == "word":
            day, month = _name(text, WEEKDAYS), _name(text, MONTHS)
            if text in ZONES or text in CONNECTORS:
                parts.append(text)
            elif day:
                parts.append(f"%{_case(text)}{'a' if day[1] else 'A'}")
            elif month:
                month_names[len(parts)] = MONTHS.index(month[0]) + 1
                parts.append(f"%{_case(text)}{'b' if month[1] else 'B'}")
            else:
                return None
        elif kind in ("zone", "sep"):
            parts.append(text)
        else:
            return None
    digits = {i: parts[i][0] for i in numbers}
    if numbers and not _number_roles(parts, numbers, twelve_hour):
        return None
    zone = any(p in ZONES or re.fullmatch(r"[+-]\d{2}:?\d{2}", p) for p in parts)
    if not _CODE.search("".join(parts)) and not zone:
        return None
    for level in KEEP[KEEP.index(keep)::-1]:  # the most of ``keep`` that leaves a part to the draw
        kept = "".join(f"%={digits[i]}{part[1:]}" if level != "none" and part in ("%Y", "%y")
                       else f"%={int(digits[i]) if part == '%m' else month_names[i]}{part[1:]}"
                       if level == "year_month" and (part == "%m" or i in month_names) else part
                       for i, part in enumerate(parts))
        if level == "none" or any(not v for v, _, _ in _CODE.findall(kept)):
            return kept


def _number_roles(parts: list, numbers: list[int], twelve_hour: bool) -> bool:
    """Give every bare number its role in place (year, day, month, hour); False when one has none."""
    if any(len(parts[i][0]) not in (1, 2, 4) for i in numbers):
        return False
    years = [i for i in numbers if len(parts[i][0]) == 4]
    rest = [i for i in numbers if i not in years]
    if len(years) > 1:
        return False
    for i in years:
        parts[i] = "%Y"
    values = [int(parts[i][0]) for i in rest]
    if not rest:
        return True
    if any(isinstance(p, str) and re.fullmatch(r"%[_^]?[bB]", p) for p in parts):  # a month name
        if not 1 <= values[0] <= 31 or len(rest) > (1 if years else 2):
            return False
        parts[rest[0]] = "%-d"
        if len(rest) == 2:
            parts[rest[1]] = "%y"
        return True
    if len(rest) == 1 and twelve_hour and not years and 1 <= values[0] <= 12:  # "5 pm"
        parts[rest[0]] = "%-I"
        return True
    if years and years[0] < rest[0]:  # 2002-09-13, 2002/9/13
        roles = ["%m", "%d"]
    else:
        if len(rest) == 3 and not years:  # 8/14/02
            parts[rest[2]] = "%y"
            rest, values = rest[:2], values[:2]
        following = parts[rest[0] + 1] if rest[0] + 1 < len(parts) else ""
        day_first = values[0] > 12 or (len(values) == 2 and values[1] <= 12 and following == ".")
        roles = ["%d", "%m"] if day_first else ["%m", "%d"]
    if len(rest) != 2:
        return False
    for i, role, v in zip(rest, roles, values):
        if not 1 <= v <= (12 if role == "%m" else 31):
            return False
        parts[i] = role
    return True


def _hash_int(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def candidate_datetime(candidate: str) -> dt.datetime:
    """The date the candidate spells (a vocabulary date), else one derived from its hash; the time of day
    derived from its hash."""
    when = None
    for fmt in CANDIDATE_LAYOUTS:
        try:
            when = dt.datetime.strptime(candidate, fmt)
            break
        except ValueError:
            continue
    if when is None:
        when = dt.datetime(1970, 1, 1) + dt.timedelta(days=_hash_int(candidate) % 40000)
    return when + dt.timedelta(seconds=_hash_int("time:" + candidate) % 86400)


def full_year(kept: str) -> int:
    """The year a kept year code spells: four digits as written, two in POSIX's century (69-99: 19xx)."""
    return int(kept) if len(kept) > 2 else int(kept) + (1900 if int(kept) >= 69 else 2000)


def _calendar_year(year: int) -> int:
    """A year of ``datetime``'s range with ``year``'s weekdays and leap day: the Gregorian calendar repeats
    every 400 years (146,097 days, 20,871 weeks), so 0002 and 9999 are computed as 2002 and 2399."""
    return 2000 + year % 400


def kept_date(fmt: str, when: dt.datetime) -> dt.datetime:
    """``when`` with the year and month ``fmt`` keeps (a calendar-equivalent year, see ``_calendar_year``), its
    day the last of that month where the month is shorter."""
    kept = {c: v[1:] for v, _, c in _CODE.findall(fmt) if v}
    year = next((full_year(kept[c]) for c in "Yy" if c in kept), None)
    month = next((int(kept[c]) for c in "mbB" if c in kept), None)
    year = when.year if year is None else _calendar_year(year)
    month = when.month if month is None else month
    return when.replace(year=year, month=month, day=min(when.day, calendar.monthrange(year, month)[1]))


def write(fmt: str, candidate: str) -> str:
    """``candidate``'s date and a time derived from it, written in layout ``fmt`` (with its kept parts)."""
    when = kept_date(fmt, candidate_datetime(candidate))

    def code(m: re.Match) -> str:
        value, flag, c = m.groups()
        if value and c in "Yy":
            return value[1:]
        if value and c in "mbB":
            return _month(int(value[1:]), flag, c)
        if c in "aAbB":
            name = WEEKDAYS[when.weekday()] if c in "aA" else MONTHS[when.month - 1]
            name = name[:3] if c in "ab" else name
            return name.upper() if flag == "^" else name.lower() if flag == "_" else name
        if c == "p":
            ampm = "AM" if when.hour < 12 else "PM"
            return ampm.lower() if flag == "_" else ampm
        if c == "o":
            return f"{when.day}{'th' if 10 <= when.day % 100 <= 20 else _ORDINAL.get(when.day % 10, 'th')}"
        if c == "d":
            return str(when.day) if flag == "-" else f"{when.day:02d}"
        if c == "I":
            return str(when.hour % 12 or 12)
        values = {"m": f"{when.month:02d}", "Y": f"{when.year:04d}", "y": f"{when.year % 100:02d}",
                  "H": f"{when.hour:02d}", "M": f"{when.minute:02d}", "S": f"{when.second:02d}", "%": "%"}
        return values[c]

    return _CODE.sub(code, fmt)


def _month(month: int, flag: str, c: str) -> str:
    name = MONTHS[month - 1][:3] if c == "b" else MONTHS[month - 1]
    return f"{month:02d}" if c == "m" else name.upper() if flag == "^" else name.lower() if flag == "_" else name


def _pattern(value: str | None, flag: str, c: str) -> str:
    if value:  # a kept part: exactly as ``write`` writes it
        return re.escape(value[1:] if c in "Yy" else _month(int(value[1:]), flag, c))
    if c in "aAbB":
        names = WEEKDAYS if c in "aA" else MONTHS
        names = [n[:3] if c in "ab" else n for n in names]
        return "(?:" + "|".join(n.upper() if flag == "^" else n.lower() if flag == "_" else n for n in names) + ")"
    day = r"(?:[1-9]|[12]\d|3[01])"
    return {"d": day if flag == "-" else r"(?:0[1-9]|[12]\d|3[01])", "o": day + "(?:st|nd|rd|th)",
            "m": r"(?:0[1-9]|1[0-2])", "Y": r"\d{4}", "y": r"\d{2}", "H": r"(?:[01]\d|2[0-3])",
            "I": r"(?:[1-9]|1[0-2])",
            "M": r"[0-5]\d", "S": r"[0-5]\d", "p": "(?:am|pm)" if flag == "_" else "(?:AM|PM)", "%": "%"}[c]


def fits(fmt: str, value: str) -> bool:
    """Whether ``value`` is written in layout ``fmt`` (names, number ranges, separators, zone and kept parts as
    the layout says) and is a day of the calendar (no 29 February in a year without one, a weekday that is
    the date's where the year is known): the check of a replacement, independent of how ``layout`` reads an
    ambiguous "05/08/2002"."""
    pattern, codes, pos = [], [], 0
    for m in _CODE.finditer(fmt):
        pattern += [re.escape(fmt[pos:m.start()]), f"({_pattern(*m.groups())})"]
        codes.append(m.group(3))
        pos = m.end()
    pattern.append(re.escape(fmt[pos:]))
    match = re.fullmatch("".join(pattern), value)
    if match is None:
        return False
    read: dict[str, str] = {}
    for c, text in zip(codes, match.groups()):
        read.setdefault({"o": "d", "b": "B", "a": "A"}.get(c, c), text)
    return _a_day(read, any(v and c == "y" for v, _, c in _CODE.findall(fmt)))


def _a_day(read: dict[str, str], century_known: bool) -> bool:
    """Whether the day, month, year and weekday read (the first of each) are one day of the calendar."""
    if "d" not in read or not {"m", "B"} & read.keys():
        return True
    day = int(read["d"].rstrip("stndrh"))
    month = int(read["m"]) if "m" in read else [m[:3].lower() for m in MONTHS].index(read["B"][:3].lower()) + 1
    four = "Y" in read
    year = int(read["Y"]) if four else full_year(read["y"]) if "y" in read else 2000  # no year: 29 Feb may be
    if day > calendar.monthrange(_calendar_year(year), month)[1]:
        return False
    if "A" not in read or not (four or "y" in read and century_known):
        return True
    weekday = dt.date(_calendar_year(year), month, day).weekday()
    return [w[:3].lower() for w in WEEKDAYS][weekday] == read["A"][:3].lower()
