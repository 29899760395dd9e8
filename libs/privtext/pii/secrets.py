"""The three ways to define SecPE's secrets (Sec. 4.2-4.3), as per-document secret occurrences.

* ``pii`` (Sec. 4.3): every detected PII value is a secret (``detect.detect_frame``).
* ``random_words`` (Sec. 4.2): "sort all vocabulary items by frequency and designate words near the
  20% quantile as secrets; a sample is secret-containing if it includes any designated word". Two
  steps, so the document-frequency table can be computed in Spark: ``word_set`` per document ->
  word -> doc-frequency table -> ``select_random_words`` -> ``WordMatcher`` per worker. The vocabulary
  is ranked most frequent first, so the 20% position holds moderately common words that recur across
  documents (ranked the other way, the 20% position of a Zipfian vocabulary is all single-document words).
* ``user_list``: literal terms (case-insensitive, whole words) and regex patterns from conf.

Every mode yields the same frame as ``detect_frame`` (``SPAN_COLUMNS``); values only as keyed hashes.
"""
from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from typing import Iterable, Mapping, Sequence

import pandas as pd

from privtext.pii.detect import Span, detect_frame, get_analyzer, resolve_overlaps, spans_frame
from privtext.pii.hashing import normalize_value
from privtext.pii.settings import PiiSettings, UserTermSettings

WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")  # letters, with inner apostrophes


def words(text: str) -> Iterable[tuple[str, int, int]]:
    """``(lowercased word, start, end)`` for every word of ``text``."""
    for match in WORD.finditer(text):
        yield match.group().casefold(), match.start(), match.end()


def word_set(text: str) -> set[str]:
    """Distinct lowercased words of one document (its contribution to document frequencies)."""
    return {w for w, _, _ in words(text)}


def doc_frequencies(texts: Iterable[str]) -> dict[str, int]:
    """word -> number of documents containing it (local form; the stage computes it in Spark)."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(word_set(text))
    return dict(counts)


def select_random_words(doc_freq: Mapping[str, int], quantile: float = 0.2, n_words: int = 50,
                        min_chars: int = 3) -> list[str]:
    """The ``n_words`` words ranked closest to position ``quantile * (|V| - 1)`` of the vocabulary
    sorted by document frequency, most frequent first (ties broken alphabetically, so the choice is
    deterministic). Words shorter than ``min_chars`` are left out of the vocabulary."""
    vocab = sorted((w for w in doc_freq if len(w) >= min_chars), key=lambda w: (-doc_freq[w], w))
    if not vocab:
        return []
    n = min(n_words, len(vocab))
    centre = quantile * (len(vocab) - 1)
    first = min(max(0, int(round(centre - (n - 1) / 2))), len(vocab) - n)
    return vocab[first:first + n]


class TermMatcher:
    """Finds whole-word terms (case-insensitive) and regex patterns, each with its type and tier;
    overlapping matches are resolved as detected spans are."""

    def __init__(self, terms: Sequence[UserTermSettings]):
        self._literal: dict[str, UserTermSettings] = {}
        self._patterns = [(re.compile(t.pattern), t) for t in terms if t.pattern is not None]
        for t in terms:
            if t.term is not None:
                self._literal.setdefault(t.term.strip().lower(), t)
        alternatives = sorted(self._literal, key=len, reverse=True)
        self._terms = (re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, alternatives)) + r")(?!\w)", re.IGNORECASE)
                       if alternatives else None)

    def find(self, text: str) -> list[Span]:
        found = []
        if self._terms is not None:
            for m in self._terms.finditer(text):
                t = self._literal.get(m.group().lower()) or next(
                    v for k, v in self._literal.items() if re.fullmatch(re.escape(k), m.group(), re.IGNORECASE))
                found.append(Span(t.entity_type, m.start(), m.end(), 1.0, t.tier,
                                  normalize_value(t.entity_type, m.group())))
        for pattern, t in self._patterns:
            for m in pattern.finditer(text):
                if m.end() > m.start():
                    found.append(Span(t.entity_type, m.start(), m.end(), 1.0, t.tier,
                                      normalize_value(t.entity_type, m.group())))
        return resolve_overlaps(found)


class WordMatcher:
    """Finds the chosen random words, tokenized exactly as ``doc_frequencies`` counts them."""

    def __init__(self, chosen: Iterable[str], entity_type: str, tier: str):
        self._words = frozenset(w.casefold() for w in chosen)
        self._entity_type, self._tier = entity_type, tier

    def find(self, text: str) -> list[Span]:
        return [Span(self._entity_type, start, end, 1.0, self._tier, word)
                for word, start, end in words(text) if word in self._words]


@lru_cache(maxsize=8)
def _word_matcher(chosen: tuple[str, ...], entity_type: str, tier: str) -> WordMatcher:
    return WordMatcher(chosen, entity_type, tier)


def matcher_for(settings: PiiSettings, random_words: Sequence[str] | None = None) -> WordMatcher | TermMatcher:
    """The (per-worker cached) matcher of the ``random_words`` or ``user_list`` mode."""
    mode = settings.secrets.mode
    if mode == "random_words":
        if random_words is None:
            raise ValueError("secrets mode 'random_words' needs the chosen words (select_random_words)")
        rw = settings.secrets.random_words
        return _word_matcher(tuple(random_words), rw.entity_type, rw.tier)
    if mode == "user_list":
        return _user_list_matcher(tuple(settings.secrets.user_list))
    raise ValueError(f"secrets mode {mode!r} has no term matcher; use detect.detect_frame")


@lru_cache(maxsize=8)
def _user_list_matcher(terms: tuple[UserTermSettings, ...]) -> TermMatcher:
    return TermMatcher(terms)


def match_frame(frame: pd.DataFrame, matcher: WordMatcher | TermMatcher, key: bytes) -> pd.DataFrame:
    """``(doc_id, text)`` -> ``SPAN_COLUMNS`` (score 1.0), like ``detect.detect_frame``."""
    texts = ["" if pd.isna(t) else str(t) for t in frame["text"]]
    return spans_frame(frame["doc_id"], [matcher.find(t) for t in texts], key)


def secrets_frame(frame: pd.DataFrame, settings: PiiSettings, key: bytes,
                  random_words: Sequence[str] | None = None) -> pd.DataFrame:
    """Secret occurrences of ``(doc_id, text)`` rows under ``settings.secrets.mode``."""
    if settings.secrets.mode == "pii":
        return detect_frame(get_analyzer(settings), frame, settings, key)
    return match_frame(frame, matcher_for(settings, random_words), key)


def secret_types(settings: PiiSettings) -> list[str]:
    """The entity types that define SecPE secrets under ``pii.secrets.mode``."""
    mode = settings.secrets.mode
    if mode == "random_words":
        return [settings.secrets.random_words.entity_type]
    if mode == "user_list":
        return sorted({t.entity_type for t in settings.secrets.user_list})
    return [e for e in settings.detected_entities() if settings.tier_of(e) in settings.secrets.tiers]
