"""The verbatim gate's expectation counts draws a surface format makes equal to their input (issue 46, item 5).

A year-only date ("2019") is written as the year of the drawn date: every vocabulary date of 2019 gives the
input back. ``verbatim_expected`` must be the mechanism's exact probability of those phrases. Independent
computation: the phrases' years read with ``datetime`` (not ``render``), their probabilities summed, and a
Monte Carlo of the real draws (4 sigma). Negative control: the old rule (only phrases whose own key is the
input's) expects 0 while the draws are verbatim in a measurable share.
"""
import datetime as dt
import hashlib

import numpy as np
import pytest

from privtext.clusant.sanitizer import ClusantSanitizer, sanitize_documents
from privtext.clusant.settings import ClusantSettings, VocabularySettings
from privtext.pii.hashing import normalize_value


def hash_encode(phrases):
    """Deterministic stand-in encoder: unit vectors seeded by each phrase's hash."""
    rows = [np.random.default_rng(int(hashlib.sha256(p.encode()).hexdigest()[:8], 16)).normal(size=16) for p in phrases]
    x = np.array(rows)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def dates():
    """A DATE_TIME sanitizer over 80 public dates of 2017-2021 (eps low enough to draw across years)."""
    start = dt.date(2017, 1, 1)
    phrases = [(start + dt.timedelta(days=23 * i)).isoformat() for i in range(80)]
    settings = ClusantSettings(entity_types=("DATE_TIME",), n_clusters=4, k=4.0, eps={"PII": 1.0, "PoII": 1.0},
                               vocabulary=VocabularySettings(size=80))
    return ClusantSanitizer.from_vocabularies(settings, {"DATE_TIME": (phrases, hash_encode(phrases))},
                                              lambda t: "PoII"), phrases


@pytest.mark.parametrize("year", ["2019", "2020"])
def test_a_year_only_date_expects_the_probability_of_every_date_of_its_year(dates, year):
    san, phrases = dates
    text = f"We moved in {year} and stayed."
    spans = [[(12, 16, "DATE_TIME", "PoII")]]
    n = 4000
    out = sanitize_documents(san, hash_encode, np.random.default_rng(7), [text] * n, spans * n)
    probs = san.per_type["DATE_TIME"].mechanism.probabilities(hash_encode([year])[0])
    by_year = sum(p for phrase, p in zip(san.per_type["DATE_TIME"].phrases, probs)
                  if dt.date.fromisoformat(phrase).year == int(year))
    assert 0.02 < by_year < 0.9
    assert out.same_expected == pytest.approx([by_year] * n, rel=1e-9)
    observed = sum(out.same_as_input) / n
    assert abs(observed - by_year) <= 4 * np.sqrt(by_year * (1 - by_year) / n)
    # negative control: the phrases whose own key is the input's (the old expectation) hold no probability
    old = sum(p for phrase, p in zip(san.per_type["DATE_TIME"].phrases, probs)
              if normalize_value("DATE_TIME", phrase) == year)
    assert old == 0 and observed > 4 * np.sqrt(by_year * (1 - by_year) / n)


def test_a_full_date_expects_only_its_own_phrase(dates):
    """A full date in the vocabulary's own layout: only that phrase renders to it (the format keeps it all)."""
    san, phrases = dates
    value = phrases[11]
    text = f"Due {value}."
    out = sanitize_documents(san, hash_encode, np.random.default_rng(3), [text] * 500,
                             [[(4, 14, "DATE_TIME", "PoII")]] * 500)
    probs = san.per_type["DATE_TIME"].mechanism.probabilities(hash_encode([value])[0])
    assert out.same_expected == pytest.approx([probs[san.per_type["DATE_TIME"].phrases.index(value)]] * 500, rel=1e-9)
