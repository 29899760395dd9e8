"""WNUT-2016 NER in CoNLL form (``../shared/data/ner``): tweets with gold spans, and its two parts.

Gold types map to Presidio types (``GOLD_MAP``): person -> PERSON, geo-loc and facility -> LOCATION,
company and sportsteam -> ORGANIZATION; the other WNUT types become ``IGNORED``. Text is the tokens
joined with single spaces (the data README's convention). ``part`` splits the file into a held-out
``test`` part (every third tweet) and a ``train`` part, the only one the trained detector learns from.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

GOLD_MAP = {"person": "PERSON", "geo-loc": "LOCATION", "facility": "LOCATION",
            "company": "ORGANIZATION", "sportsteam": "ORGANIZATION"}
TYPES = sorted(set(GOLD_MAP.values()))
IGNORED = "IGNORED"
TEST_EVERY = 3  # tweet i is in the held-out "test" part when i % 3 == 0; the trained detector sees only "train"
PARTS = ("test", "train", "all")


@dataclass(frozen=True)
class Document:
    text: str
    gold: frozenset  # (type, start, end), type in TYPES or IGNORED


def read_conll(path: Path) -> list[Document]:
    """One ``Document`` per tweet of a ``token<TAB>BIO-tag`` file (blank line between tweets)."""
    docs, tokens, tags = [], [], []
    for line in [*Path(path).read_text(encoding="utf-8").splitlines(), ""]:
        if line.strip():
            token, tag = line.rsplit("\t", 1)
            tokens.append(token)
            tags.append(tag.strip())
        elif tokens:
            docs.append(_document(tokens, tags))
            tokens, tags = [], []
    return docs


def part(docs: list[Document], name: str) -> list[Document]:
    """The ``test`` part (every third tweet, from the first), the ``train`` part (the others) or ``all``."""
    if name not in PARTS:
        raise ValueError(f"unknown WNUT part {name!r}; allowed: {', '.join(PARTS)}")
    if name == "all":
        return list(docs)
    return [d for i, d in enumerate(docs) if (i % TEST_EVERY == 0) == (name == "test")]


def _document(tokens: list[str], tags: list[str]) -> Document:
    spans, offset, current = [], 0, None
    for token, tag in zip(tokens, tags):
        start, end = offset, offset + len(token)
        offset = end + 1
        kind = tag[2:] if tag[:2] in ("B-", "I-") else None
        if tag.startswith("I-") and current and current[0] == kind:
            current[2] = end
            continue
        if current:
            spans.append(tuple(current))
        current = [kind, start, end] if kind else None
    if current:
        spans.append(tuple(current))
    return Document(" ".join(tokens), frozenset((GOLD_MAP.get(k, IGNORED), s, e) for k, s, e in spans))
