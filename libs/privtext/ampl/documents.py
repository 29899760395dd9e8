"""Token sequences of real documents for the audit: original text + detected spans + sanitized text.

A document becomes a sequence of tokens in reading order: the words of the text outside the spans
(context, kept as released) and one token per detected span (the sensitive token; a multi-word span
is one phrase). Its release is the same sequence with every span token replaced by the phrase the
sanitizer wrote in its place (Sec. 2.4, Fig. 1: released sensitive tokens plus context).

``align_replacements`` recovers those phrases from the sanitized text: a sanitizer replaces the spans
left to right and keeps the text between them, so sanitized = lit_0 r_1 lit_1 ... r_m lit_m with
lit_i the original text between spans. The pieces are matched left to right with the shortest
replacement that lets the rest match (a lazy, anchored regular expression). When the text between two
spans also occurs inside the first replacement (adjacent spans separated by a space) the split between
the two replacements is ambiguous and the first one is taken: both replacements still enter the
sequence, only their boundary may be off. A document whose sanitized text does not parse this way
(the sanitizer changed context) is left out and counted.

``embed_documents`` encodes each distinct token once (context words, span values, replacements) and
lays the documents out as padded arrays; the candidate set of the audit is the set of distinct
secrets (keyed-hash ``secret_id``s) of the sample, each with the embedding of its value, plus, for a
secret alone in its adjacency group, public companions of that group (``companion``: e.g. a public draw
written in the secret's format), so that every audited secret has another value it must not be told
apart from and no secret is skipped by the audit. Everything
here is private (raw tokens): it lives in memory inside the restricted-zone job and is never written.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from privtext.ampl.sequences import ReleasedSequences, SecretSequences

WORD = re.compile(r"\w+")
TIER_LEVEL = {"PII": 1, "PoII": 2}


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    secret_id: str
    tier: str  # PII | PoII
    entity_type: str


@dataclass(frozen=True)
class DocTokens:
    """original: tokens in reading order; released: the same with replacements at span positions;
    spans: the Span at each position (None for context); draw: the surrogate draw epoch of the document's
    date (a value's surrogate repeats within one epoch: ``clusant.surrogates``)."""

    original: tuple[str, ...]
    released: tuple[str, ...]
    spans: tuple[Span | None, ...]
    draw: int = 0


def clean_spans(spans: Sequence[Span]) -> list[Span]:
    """Sorted by start, empty and overlapping spans dropped (the earlier-starting one is kept)."""
    out: list[Span] = []
    for span in sorted(spans, key=lambda s: (s.start, -s.end)):
        if span.end > span.start and (not out or span.start >= out[-1].end):
            out.append(span)
    return out


def align_replacements(text: str, spans: Sequence[Span], sanitized: str) -> list[str] | None:
    """The phrase written in place of each span (``spans`` as returned by ``clean_spans``), or None."""
    cuts = [0] + [p for s in spans for p in (s.start, s.end)] + [len(text)]
    literals = [text[cuts[2 * i]:cuts[2 * i + 1]] for i in range(len(spans) + 1)]
    pattern = "(.*?)".join(re.escape(lit) for lit in literals)
    match = re.fullmatch(pattern, sanitized, flags=re.DOTALL)
    return None if match is None else list(match.groups())


def document_tokens(text: str, spans: Sequence[Span], replacements: Sequence[str], max_tokens: int) -> DocTokens:
    """Tokens of one document; if longer than ``max_tokens`` a window starting a quarter window before
    the first span is kept (so the sensitive tokens and their context stay in)."""
    original: list[str] = []
    released: list[str] = []
    kinds: list[Span | None] = []
    pos = 0
    for span, replacement in zip(spans, replacements):
        words = WORD.findall(text[pos:span.start])
        original += words
        released += words
        kinds += [None] * len(words)
        original.append(text[span.start:span.end].strip())
        released.append(replacement.strip())
        kinds.append(span)
        pos = span.end
    words = WORD.findall(text[pos:])
    original += words
    released += words
    kinds += [None] * len(words)
    if len(original) > max_tokens:
        first = next(i for i, k in enumerate(kinds) if k is not None)
        start = max(0, min(first - max_tokens // 4, len(original) - max_tokens))
        window = slice(start, start + max_tokens)
        original, released, kinds = original[window], released[window], kinds[window]
    return DocTokens(tuple(original), tuple(released), tuple(kinds))


@dataclass(frozen=True)
class DocumentBatch:
    """Padded arrays of a document sample (private, in memory only).

    secrets: the original side (secret index into ``candidates`` and tier level per position);
    release: what the sanitizer published, paired with the originals; candidates [K, d]: one
    embedding per distinct secret (then the public companions, which no position holds);
    candidate_types [K]: its entity type; candidate_groups [K]: its adjacency group (the secrets an
    audit may pair it with: by default its type); companions: how many candidates are companions."""

    secrets: SecretSequences
    release: ReleasedSequences
    candidates: np.ndarray
    candidate_types: tuple[str, ...]
    candidate_groups: tuple[str, ...]
    companions: int = 0
    candidate_values: tuple[str, ...] = ()  # the raw value of each candidate (private, in memory only)


Companion = Callable[[str, str, int], str]  # (entity_type, value, i) -> the i-th public value of value's group


def companions_for(first: dict[str, tuple[str, str]], counts: dict[str, int], group_of: Callable[[str, str], str],
                   companion: Companion, tries: int = 8) -> list[tuple[str, str, str]]:
    """(group, entity_type, phrase): one public companion for every group whose secrets are a single point
    (``counts``: group -> distinct embeddings; ``first``: group -> (type, value) of a secret); a companion
    must fall in the same group."""
    out = []
    for group, (entity_type, value) in sorted(first.items()):
        if counts[group] > 1:
            continue
        phrase = next((p for p in (companion(entity_type, value, i) for i in range(tries))
                       if p != value and group_of(entity_type, p) == group), None)
        if phrase is not None:
            out.append((group, entity_type, phrase))
    return out


def embed_documents(docs: Sequence[DocTokens], encode: Callable[[list[str]], np.ndarray],
                    group_of: Callable[[str, str], str] | None = None,
                    companion: Companion | None = None) -> DocumentBatch:
    """Encode every distinct token once and lay the documents out (``encode`` returns [n, d] rows);
    ``group_of(entity_type, original value)``: a secret's adjacency group (default: its type);
    ``companion``: public values of a group, added as candidates for the groups holding one secret."""
    docs = [d for d in docs if any(k is not None for k in d.spans)]
    if not docs:
        raise ValueError("no document with a sensitive token to audit")
    group_of = group_of or (lambda entity_type, _: entity_type)
    secret_index: dict[str, int] = {}
    secret_value: list[str] = []
    secret_type: list[str] = []
    secret_group: list[str] = []
    for d in docs:
        for token, span in zip(d.original, d.spans):
            if span is not None and span.secret_id not in secret_index:
                secret_index[span.secret_id] = len(secret_value)
                secret_value.append(token)
                secret_type.append(span.entity_type)
                secret_group.append(group_of(span.entity_type, token))
    vocab = sorted({t for d in docs for t in (*d.original, *d.released)})
    index = {t: i for i, t in enumerate(vocab)}
    table = np.asarray(encode(vocab), dtype=np.float32)
    candidates = table[[index[v] for v in secret_value]]
    # a group needs a companion when its secrets are one point to the encoder (a single secret, or values the
    # encoder maps to one embedding, e.g. digits of a script it has no token for)
    points: dict[str, set] = {}
    for g, row in zip(secret_group, candidates):
        points.setdefault(g, set()).add(row.tobytes())
    first = {g: (t, v) for g, t, v in reversed(list(zip(secret_group, secret_type, secret_value)))}
    extra = companions_for(first, {g: len(p) for g, p in points.items()}, group_of, companion) if companion else []
    if extra:
        candidates = np.concatenate([candidates, np.asarray(encode([p for _, _, p in extra]), dtype=np.float32)])
    secret_type += [t for _, t, _ in extra]
    secret_group += [g for g, _, _ in extra]
    n, length, dim = len(docs), max(len(d.original) for d in docs), table.shape[1]
    original = np.zeros((n, length, dim), dtype=np.float32)
    released = np.zeros((n, length, dim), dtype=np.float32)
    ids = np.full((n, length), -1, dtype=np.int64)
    tiers = np.zeros((n, length), dtype=np.int8)
    for row, d in enumerate(docs):
        original[row, :len(d.original)] = table[[index[t] for t in d.original]]
        released[row, :len(d.released)] = table[[index[t] for t in d.released]]
        for col, span in enumerate(d.spans):
            if span is not None:
                ids[row, col] = secret_index[span.secret_id]
                tiers[row, col] = TIER_LEVEL.get(span.tier, 1)
                original[row, col] = candidates[ids[row, col]]  # one embedding per secret
    lengths = np.array([len(d.original) for d in docs], dtype=np.int64)
    secrets = SecretSequences(original, ids, tiers, lengths)
    release = ReleasedSequences(released, ids >= 0, original, lengths)
    return DocumentBatch(secrets, release, candidates.astype(np.float64), tuple(secret_type), tuple(secret_group),
                         len(extra), tuple(secret_value + [p for _, _, p in extra]))
