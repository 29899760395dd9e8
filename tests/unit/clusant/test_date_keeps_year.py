"""A replaced date keeps its year (``clusant.date_keep``, issue 44; HIPAA Safe Harbor keeps "all elements of dates,
except year"): the year is part of the date's published format class, so the guarantee is between dates of the
same layout, zone and year, and the day, the month and the time stay the mechanism's draw.

The exact test pushes the mechanism's whole output distribution through ``render`` and compares the worst log
ratio with eps * D_k computed here from the vocabulary, its clusters and k (the module docstring's formula), not
from ``log_ratio_bound``. Negative controls: under "none" the year is drawn (the outputs' years vary); two dates of
different years are told apart with certainty (the guarantee is only within a year); a render that also leaks the
day breaks the bound. The property writes dates with its own writer (``strptime`` formats, not
``date_layout``) and reads the replacement back with ``datetime.strptime``. Dates here are made up."""
from __future__ import annotations

import calendar
import datetime as dt
import email.utils
import hashlib
import math
import unicodedata
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings as hsettings, strategies as st

from privtext.clusant.sanitizer import ClusantSanitizer, sanitize_documents
from privtext.clusant.settings import ClusantSettings
from privtext.clusant.surface_format import adjacency_group, format_kept, render, surface_format
from privtext.stages.audit import companion

EPS, K = 2.0, 8.0  # the eps and k of the date_mechanism fixture (conftest.py)
X = "Fri, 13 Sep 2002 15:01:18 -0400"
X_SAME_YEAR = "Mon, 2 Dec 2002 08:00:00 -0400"
X_OTHER_YEAR = "Sat, 13 Sep 2003 15:01:18 -0400"


def independent_bound(vocab, labels, a, b) -> float:
    """eps * D_k(a, b) of CluSanT with eps/2 per step (mechanism.py's docstring), from the public vocabulary,
    its clusters and k: f'(x) = f(x) + (k - 1) c_{C_x}, C_x the cluster of x's nearest phrase, Delta_u =
    max(1, diameter of the vocabulary)."""
    centroids = np.stack([vocab[labels == c].mean(axis=0) for c in range(labels.max() + 1)])
    lifted = [x + (K - 1) * centroids[labels[np.argmin(np.linalg.norm(vocab - x, axis=1))]] for x in (a, b)]
    delta_u = max(1.0, max(np.linalg.norm(vocab - v, axis=1).max() for v in vocab))
    return EPS / 2 * float(np.linalg.norm(lifted[0] - lifted[1])) + EPS / 2 * float(np.linalg.norm(a - b)) / delta_u


def rendered(mech, embedding, phrases, fmt, leak: str = "") -> dict[str, float]:
    """The exact distribution of what is written: the mechanism's probability vector pushed through render."""
    out: dict[str, float] = defaultdict(float)
    for phrase, p in zip(phrases, mech.probabilities(embedding)):
        out[render("DATE_TIME", phrase, fmt) + leak] += p
    return out


def worst_log_ratio(p: dict, q: dict) -> float:
    """max over every output of |log p - log q|; inf where one side can write what the other cannot."""
    return max(abs(math.log(p[o]) - math.log(q[o])) if p.get(o, 0) > 0 and q.get(o, 0) > 0 else math.inf
               for o in set(p) | set(q))


def year_of(out: str) -> int:
    return email.utils.parsedate_to_datetime(out).year


def test_same_layout_and_year_the_bound_holds_and_the_year_is_the_originals(date_mechanism):
    phrases, vocab, labels, inputs, mech = date_mechanism
    fmt = surface_format("DATE_TIME", X)
    assert fmt == surface_format("DATE_TIME", X_SAME_YEAR) != surface_format("DATE_TIME", X_OTHER_YEAR)
    p, q = (rendered(mech, inputs[i], phrases, fmt) for i in (0, 1))
    assert math.isclose(sum(p.values()), 1.0) and len(p) > 100
    bound = independent_bound(vocab, labels, inputs[0], inputs[1])
    assert math.isclose(bound, float(mech.log_ratio_bound(inputs[0], inputs[1])[0]), rel_tol=1e-9)
    worst = worst_log_ratio(p, q)
    assert worst <= bound + 1e-9 and worst > 0.1 * bound  # held, and not trivially
    for out in p:  # every output the mechanism can write: an RFC 2822 date of 2002, in the zone, its weekday right
        parsed = email.utils.parsedate_to_datetime(out)
        assert parsed.year == 2002 and out.endswith(" -0400") and out[:3] == parsed.strftime("%a"), out
        assert format_kept("DATE_TIME", X, out)
    months = {email.utils.parsedate_to_datetime(o).month for o in p}
    assert len(months) >= 6  # the month is drawn, not kept


def test_negative_controls_none_draws_the_year_and_other_years_are_told_apart(date_mechanism):
    phrases, vocab, labels, inputs, mech = date_mechanism
    fmt = surface_format("DATE_TIME", X)
    p = rendered(mech, inputs[0], phrases, fmt)
    # "none": the class is the layout alone, the year is the draw's
    loose = rendered(mech, inputs[0], phrases, surface_format("DATE_TIME", X, "none"))
    years = defaultdict(float)
    for out, mass in loose.items():
        years[year_of(out)] += mass
    assert len(years) >= 20 and years[2002] < 0.2
    # another year under "year": the same check sees certain distinction (disjoint supports), whatever the bound
    other = rendered(mech, inputs[2], phrases, surface_format("DATE_TIME", X_OTHER_YEAR))
    bound = independent_bound(vocab, labels, inputs[0], inputs[2])
    assert math.isfinite(bound) and worst_log_ratio(p, other) == math.inf > bound
    assert {year_of(o) for o in other} == {2003} and not set(other) & set(p)
    # a render that also wrote the value's own day (a leak beyond the class) breaks the bound within the class
    leaky = [rendered(mech, inputs[i], phrases, fmt, leak=f" ({x.split()[1]})") for i, x in ((0, X), (1, X_SAME_YEAR))]
    assert worst_log_ratio(*leaky) > independent_bound(vocab, labels, inputs[0], inputs[1])


def test_year_month_keeps_the_month_too_and_nothing_else(date_mechanism):
    phrases, _, _, inputs, mech = date_mechanism
    p = rendered(mech, inputs[0], phrases, surface_format("DATE_TIME", X, "year_month"))
    parsed = [email.utils.parsedate_to_datetime(o) for o in p]
    assert {(d.year, d.month) for d in parsed} == {(2002, 9)} and len({d.day for d in parsed}) >= 15


@pytest.mark.parametrize("value,candidate,expected", [
    ("13.09.2002", "February 29, 1952", "28.02.2002"),  # no 29 February in 2002: the month's last day
    ("13.09.2004", "February 29, 1952", "29.02.2004"),
    ("Fri, 13 Sep 2002", "July 12, 1989", "Fri, 12 Jul 2002"),  # the weekday is the written date's
    ("Wed, 8/14/02", "July 12, 1989", "Fri, 07/12/02"),  # two digits: 2002 (POSIX's century)
    ("Mon, 8/14/75", "July 12, 1989", "Sat, 07/12/75"),  # 1975
    ("Sun, 8 Sep 0001", "February 29, 1952", "Wed, 28 Feb 0001"),  # year 1 (proleptic Gregorian)
    ("Fri, 31 Dec 9999", "February 29, 1952", "Sun, 28 Feb 9999"),
    ("Wednesday the 14th", "July 12, 1989", "Wednesday the 12th"),  # no year: nothing to keep
    ("2002", "July 12, 1989", "1989"),  # a year alone keeps nothing: it would be written as it is
    ("EDT", "July 12, 1989", "EDT"),  # a zone alone stays itself
])
def test_kept_year_edge_cases(value, candidate, expected):
    out = render("DATE_TIME", candidate, surface_format("DATE_TIME", value))
    assert out == expected
    assert format_kept("DATE_TIME", value, out)


def test_time_only_values_and_the_setting():
    assert surface_format("DATE_TIME", "14:30") == surface_format("DATE_TIME", "14:30", "none") == "%H:%M"
    assert not format_kept("DATE_TIME", "13.09.2002", "28.02.2003")  # another year: not the value's format
    assert not format_kept("DATE_TIME", "13.09.2001", "29.02.2001")  # no such day
    assert not format_kept("DATE_TIME", "Fri, 13 Sep 2002", "Sat, 12 Jul 2002")  # the weekday of another day
    assert adjacency_group("DATE_TIME", X) != adjacency_group("DATE_TIME", X_OTHER_YEAR)
    assert adjacency_group("DATE_TIME", X, "none") == adjacency_group("DATE_TIME", X_OTHER_YEAR, "none")
    for keep in ("none", "year", "year_month"):  # the audit's public companion falls in the value's group
        group = adjacency_group("DATE_TIME", X, keep)
        assert any(c != X and adjacency_group("DATE_TIME", c, keep) == group
                   for c in (companion("DATE_TIME", X, i, keep) for i in range(8))), keep
    with pytest.raises(ValueError, match="none, year, year_month"):
        surface_format("DATE_TIME", X, "month")
    from privtext.errors import PrivtextError
    from privtext.sanitize_tasks import sanitizer_key
    from privtext.settings import load_settings

    settings = load_settings(None, environ={})
    assert settings.clusant.date_keep == "year"  # and another setting is another draw, charged anew
    other = settings.model_copy(update={"clusant": settings.clusant.model_copy(update={"date_keep": "none"})})
    assert sanitizer_key(other) != sanitizer_key(settings)
    with pytest.raises(PrivtextError, match=r"clusant\.date_keep.*'none', 'year' or 'year_month'"):
        load_settings(None, environ={}, overrides={"clusant": {"date_keep": "month"}})


# --- property: generated dates, layouts, digit systems and text around them, through the sanitizer ---

WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
# (writer, strptime format): the writer takes (year, month, day, hour, minute, second) and writes the weekday
# itself (from the calendar; a two-digit year in POSIX's century, as strptime reads it)
LAYOUTS = {
    "rfc2822": ("{a}, {d} {b} {Y} {H:02}:{M:02}:{S:02} -0400", "%a, %d %b %Y %H:%M:%S %z"),
    "spelled": ("{B} {d}, {Y}", "%B %d, %Y"),
    "iso": ("{Y}-{m:02}-{d:02}", "%Y-%m-%d"),
    "iso_time": ("{Y}-{m:02}-{d:02}T{H:02}:{M:02}:{S:02}Z", "%Y-%m-%dT%H:%M:%SZ"),
    "us": ("{m:02}/{d:02}/{Y}", "%m/%d/%Y"),
    "dotted": ("{d:02}.{m:02}.{Y}", "%d.%m.%Y"),
    "long": ("{A}, {B} {d}, {Y}", "%A, %B %d, %Y"),
    "ctime": ("{a} {b} {d} {H:02}:{M:02}:{S:02} {Y}", "%a %b %d %H:%M:%S %Y"),
    "us_short": ("{m}/{d}/{y:02}", "%m/%d/%y"),
    "us_short_time": ("{m:02}/{d:02}/{y:02} {I}:{M:02} {p}", "%m/%d/%y %I:%M %p"),
    "short_weekday": ("{a} {d} {b} {y:02}", "%a %d %b %y"),
}


def write_date(layout: str, year: int, month: int, day: int, hour: int = 9, minute: int = 5, second: int = 7) -> str:
    full = year if "{Y}" in LAYOUTS[layout][0] else year % 100 + (1900 if year % 100 >= 69 else 2000)
    weekday = dt.date(2000 + full % 400, month, day).weekday() if day <= calendar.monthrange(
        2000 + full % 400, month)[1] else 0  # 2000 + y % 400: y's calendar (400-year cycle), inside datetime's range
    return LAYOUTS[layout][0].format(
        a=WEEKDAYS[weekday][:3], A=WEEKDAYS[weekday], b=MONTHS[month - 1][:3], B=MONTHS[month - 1], d=day, m=month,
        Y=f"{year:04d}", y=year % 100, H=hour, M=minute, S=second, I=hour % 12 or 12, p="AM" if hour < 12 else "PM")


def read_date(layout: str, text: str) -> dt.datetime:
    """``strptime`` in the layout ("May" is also the abbreviation's layout, so %B may come back as %b)."""
    fmt = LAYOUTS[layout][1]
    for attempt in (fmt, fmt.replace("%B", "%b")):
        try:
            return dt.datetime.strptime(text, attempt)
        except ValueError:
            continue
    raise AssertionError(f"{text!r} is no date in {fmt!r}")


_ZEROS = [c for c in map(chr, range(0x10000)) if unicodedata.category(c) == "Nd" and unicodedata.digit(c) == 0]
_VOCABULARY = ["February 29, 1952", "July 12, 1989", "03 February 1961", "2027-11-30", "12/31/1999", "29.02.1952",
               "Aug 01, 2030", "May 17, 2004", "January 31, 1970", "not a date at all"]
_SANITIZER = {}


def _encode(values):
    rows = [np.random.default_rng(int(hashlib.sha256(v.encode()).hexdigest()[:8], 16)).normal(size=8) for v in values]
    return np.array(rows) / np.linalg.norm(rows, axis=1, keepdims=True)


def _sanitizer() -> ClusantSanitizer:
    if not _SANITIZER:
        settings = ClusantSettings(entity_types=("DATE_TIME",), n_clusters=3, k=4.0)
        _SANITIZER["s"] = ClusantSanitizer.from_vocabularies(
            settings, {"DATE_TIME": (_VOCABULARY, _encode(_VOCABULARY))}, lambda t: "PoII")
    return _SANITIZER["s"]


_DAYS = st.one_of(st.dates(dt.date(1, 1, 1), dt.date(9999, 12, 31)),
                  st.integers(1, 9999).filter(calendar.isleap).map(lambda y: dt.date(y, 2, 29)))  # leap days
_AROUND = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)


@hsettings(max_examples=400, deadline=None)
@given(_DAYS, st.sampled_from(sorted(LAYOUTS)), st.integers(0, 23), st.sampled_from([None] + _ZEROS[:40]),
       _AROUND, _AROUND, st.integers(0, 2**32 - 1))
def test_a_replaced_date_parses_in_its_layout_keeps_its_year_and_format_kept_tells_the_truth(
        day, layout, hour, zero, before, after, seed):
    """Any year 1-9999 the layout writes (two-digit years too), leap days, any digit system, any text around it:
    the sanitizer's replacement reads back with ``strptime`` in the same layout, on a day of the calendar, in the
    value's year, with the weekday of the date it writes; ``format_kept`` says so, and says no for the same
    replacement in another year or on a day the year does not have."""
    value = write_date(layout, day.year, day.month, day.day, hour)
    if zero is not None:  # the value's digits in another script (full-width, Arabic-Indic, ...)
        value = "".join(chr(ord(zero) + int(c)) if c.isdigit() else c for c in value)
    text = f"{before} {value} {after}"
    start = len(before) + 1
    out = sanitize_documents(_sanitizer(), _encode, np.random.default_rng(seed), [text],
                             [[(start, start + len(value), "DATE_TIME", "PoII")]])
    written = out.replacements[0][0]
    assert out.texts[0] == f"{before} {written} {after}"  # the text around is kept as it is
    parsed = read_date(layout, written)
    two_digits = "{y" in LAYOUTS[layout][0]
    year = parsed.year % 100 if two_digits else parsed.year
    assert year == (day.year % 100 if two_digits else day.year), (value, written)
    if "{a}" in LAYOUTS[layout][0] or "{A}" in LAYOUTS[layout][0]:
        assert written.split()[0].rstrip(",") in (parsed.strftime("%a"), parsed.strftime("%A")), written
    assert format_kept("DATE_TIME", value, written) and out.format_kept == [1]
    shifted = parsed.year + (400 if parsed.year + 400 <= 9999 else -400)  # same calendar, another year
    if two_digits:
        shifted = parsed.year + (4 if parsed.year % 100 + 4 <= 68 or 69 <= parsed.year % 100 <= 95 else -4)
    other_year = write_date(layout, shifted, parsed.month, parsed.day, parsed.hour, parsed.minute, parsed.second)
    assert not format_kept("DATE_TIME", value, other_year), (value, other_year)
    if not calendar.isleap(parsed.year):
        no_such_day = write_date(layout, parsed.year, 2, 29, parsed.hour, parsed.minute, parsed.second)
        assert not format_kept("DATE_TIME", value, no_such_day), (value, no_such_day)
