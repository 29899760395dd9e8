"""Span sanitization with one CluSanT mechanism per entity type, and its privacy-ledger parameters.

Each configured entity type gets a public vocabulary (``vocabulary.py``), embedded once (cached), a
public clustering (``clustering.py``) and a mechanism (``mechanism.py``) with the eps of its tier
(PII stricter than PoII). ``replace`` maps a batch of (type, span embedding) to replacement phrases,
vectorised per type. Guarantee per span: eps_type-metric-LDP (see ``mechanism.py``); spans are
sanitized independently, so a document's spans of one secret compose additively in eps.

A type without a vocabulary (not configured, or no public source yields candidates) gets the typed
placeholder ``[TYPE]``: a deterministic mask that releases only the type and position of the span.
``merge_spans`` and ``splice`` rebuild a document: overlapping spans become one, everything outside
the spans is kept character for character (offsets are Python string indices, i.e. code points), and so are
the brackets, quotes and separators at a span's edges that belong to the text around it and a span without
any letter or digit (``replaced_region``: "(EDT)" keeps its brackets, a "--" stays "--").
``sanitize_documents`` does both for a batch, with one draw per distinct (document, type, value): the
value key is ``pii.hashing.normalize_value``, the key of the secret_id the ledger charges, so one
charged occurrence is exactly one draw. Each occurrence's draw is written in that occurrence's surface
format (``surface_format.py``: a date keeps its layout and the year ``clusant.date_keep`` keeps, a card its
length): post-processing, so the bound holds for inputs of the same type and format, and the format is
published as the type is (``ADJACENCY``).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from privtext.pii.hashing import normalize_value

from .clustering import cluster_vocabulary
from .mechanism import METRIC, CluSanT, build_mechanism
from .settings import ClusantSettings
from .surface_format import format_kept, render, surface_format
from .surrogates import value_rng
from .vocabulary import Encode, Generate, NoVocabulary, cached_vocabulary, embed_vocabulary, normalize

ADJACENCY = ("any two values of one occurrence of the same entity type and surface format (local model; the type "
             "and the format class, e.g. a date's layout, zone and the parts date_keep keeps, or a card's length "
             "and grouping, are published); a value in n documents: n * eps")


@dataclass(frozen=True)
class TypeSanitizer:
    entity_type: str
    tier: str
    phrases: tuple[str, ...]
    mechanism: CluSanT




def placeholder(entity_type: str) -> str:
    """The typed mask of a span whose type has no replacement vocabulary."""
    return f"[{entity_type}]"


def merge_spans(spans: Iterable[tuple[int, int, str, str, float]], length: int) -> list[tuple[int, int, str, str]]:
    """Disjoint, sorted (start, end, entity_type, tier) from possibly overlapping (start, end, type, tier, score).

    Offsets are clipped to [0, length]; empty spans are dropped; spans that overlap (share at least one
    character) become one span covering their union, with the type and tier of the member ranked first
    by: PII tier before PoII, higher score, longer, earlier. Touching spans (end == next start) stay apart.
    """
    clipped = sorted((max(0, int(s)), min(length, int(e)), t, tier, float(score))
                     for s, e, t, tier, score in spans if min(length, int(e)) > max(0, int(s)))
    groups: list[list[tuple]] = []
    for span in clipped:
        if groups and span[0] < max(m[1] for m in groups[-1]):
            groups[-1].append(span)
        else:
            groups.append([span])
    merged = []
    for group in groups:
        best = min(group, key=lambda m: (m[3] != "PII", -m[4], m[0] - m[1], m[0]))
        tier = best[3]
        merged.append((group[0][0], max(m[1] for m in group), best[2], tier))
    return merged


_PAIRS = {"(": ")", "[": "]", "{": "}", "<": ">", "«": "»", "“": "”", "‘": "’", "‹": "›"}
_CLOSERS = {v: k for k, v in _PAIRS.items()}
_QUOTES = "\"'`"


def replaced_region(text: str, start: int, end: int) -> tuple[int, int]:
    """The part of span [start, end) that is replaced: without the spaces, separators (``,;``, a final ``:``), quotes
    and brackets at its edges that belong to the text around the value (an opening bracket whose closing one is
    not in the span, a closing one whose opening one is not, a pair or quotes enclosing the whole span), so
    "(EDT)" or "<a@b.org>" keep their brackets. Empty (start == end) when the span holds no letter or digit
    (a dash run, an ellipsis): nothing personal there, it is left as written."""
    s, e = start, end
    while s < e:
        first, last = text[s], text[e - 1]
        if first.isspace() or first in ",;":
            s += 1
        elif last.isspace() or last in ",;" or last == ":" != text[e - 2]:  # "Bob:", never the "::" of IPv6
            e -= 1
        elif first in _PAIRS and _PAIRS[first] not in text[s + 1:e]:
            s += 1
        elif last in _CLOSERS and _CLOSERS[last] not in text[s:e - 1]:
            e -= 1
        elif e - s > 1 and (_PAIRS.get(first) == last and text[s + 1:e - 1].count(last) == 0
                            or first == last and first in _QUOTES):
            s, e = s + 1, e - 1
        elif first in _QUOTES and text.count(first, s, e) == 1:
            s += 1
        elif last in _QUOTES and text.count(last, s, e) == 1:
            e -= 1
        else:
            break
    return (s, e) if any(c.isalnum() for c in text[s:e]) else (start, start)


def splice(text: str, spans: Sequence[tuple[int, int]], replacements: Sequence[str]) -> str:
    """``text`` with each of the disjoint, sorted ``spans`` replaced; the rest is kept as is."""
    out, pos = [], 0
    for (start, end), replacement in zip(spans, replacements):
        out += [text[pos:start], replacement]
        pos = end
    out.append(text[pos:])
    return "".join(out)


@dataclass(frozen=True)
class SanitizedDocuments:
    texts: list[str]
    replaced: list[dict[str, int]]  # per document: replaced spans per type
    masked: list[dict[str, int]]  # per document: placeholder spans per type
    same_as_input: list[int]  # per document: draws (distinct values) whose key equals the input value's key
    same_expected: list[float]  # per document: the mechanism's own probability of that, summed over draws (exact)
    format_kept: list[int]  # per document: replacements (not placeholders) keeping the input's kind and format
    replacements: list[list[str]]  # per document: what each span's region became (its text where left as written)


def sanitize_documents(sanitizer: "ClusantSanitizer", encode: Encode, rng: np.random.Generator | None,
                       texts: Sequence[str], docs: Sequence[Sequence[tuple[int, int, str, str]]],
                       draw_key: bytes | None = None, keep=None) -> SanitizedDocuments:
    """Every span of ``docs`` (per document: disjoint, sorted (start, end, type, tier), see ``merge_spans``)
    replaced: one surrogate per distinct (document, type, value key), each distinct (type, key) of the
    batch encoded once; types without a vocabulary get their placeholder. With a
    ``draw_key`` (``surrogates.draw_key``): one surrogate per distinct (type, key) whatever the document or
    batch, drawn from the value's own generator (``surrogates.value_rng``) on the embedding of its key, so
    every batch reproduces it; ``same_as_input`` then counts each value once per batch (first document).
    ``keep(type, span text)`` False masks a span of a drawn type instead (``stages.sanitize.capped_strings``)."""
    keys = [[(t, normalize_value(t, texts[i][s:e])) for s, e, t, _ in spans] for i, spans in enumerate(docs)]
    regions = [[replaced_region(texts[i], s, e) for s, e, _, _ in spans] for i, spans in enumerate(docs)]
    drawn_spans = [[t in sanitizer.per_type and a < b and (keep is None or keep(t, texts[i][s:e]))
                    for (s, e, t, _), (a, b) in zip(spans, regions[i])] for i, spans in enumerate(docs)]
    groups = sorted({(i, t, k) for i, doc in enumerate(keys) for (t, k), d in zip(doc, drawn_spans[i]) if d})
    values: dict[tuple[str, str], str] = {}
    for i, spans in enumerate(docs):
        for (s, e, _, _), tk in zip(spans, keys[i]):
            values.setdefault(tk, tk[1] if draw_key is not None else texts[i][s:e])
    chosen: dict = {}
    expected: dict = {}
    if groups:
        distinct = sorted({(t, k) for _, t, k in groups})
        row = {tk: j for j, tk in enumerate(distinct)}
        emb = np.asarray(encode([values[tk] for tk in distinct]), dtype=np.float64)
        if draw_key is None:
            picks = sanitizer.replace(rng, [t for _, t, _ in groups], emb[[row[(t, k)] for _, t, k in groups]])
            chosen = dict(zip(groups, picks))
        else:
            by_value = {tk: sanitizer.replace(value_rng(draw_key, *tk), [tk[0]], emb[j : j + 1])[0]
                        for tk, j in row.items()}
            chosen = {g: by_value[g[1:]] for g in groups}
    out = SanitizedDocuments([], [], [], [], [], [], [])
    counted: set = set()
    keep_date = sanitizer.settings.date_keep
    for i, spans in enumerate(docs):
        text, region = texts[i], regions[i]
        picks = [render(t, chosen[(i, t, k)], surface_format(t, text[a:b], keep_date)) if d else None
                 for (a, b), (t, k), d in zip(region, keys[i], drawn_spans[i])]
        reps = [r if r is not None else placeholder(t) if a < b else ""
                for r, (a, b), (_, _, t, _) in zip(picks, region, spans)]
        out.texts.append(splice(text, region, reps))
        out.replacements.append([text[s:a] + r + text[b:e] for r, (a, b), (s, e, _, _) in zip(reps, region, spans)])
        replaced, masked = {}, {}
        for r, (a, b), (_, _, t, _) in zip(picks, region, spans):
            target = replaced if r is not None else masked if a < b else {}
            target[t] = target.get(t, 0) + 1
        out.replaced.append(replaced)
        out.masked.append(masked)
        drawn = {tk: r for r, tk in zip(picks, keys[i]) if r is not None and tk not in counted}  # one per draw
        if draw_key is not None:
            counted |= drawn.keys()
        out.same_as_input.append(sum(normalize_value(t, r) == k for (t, k), r in drawn.items()))
        written = {tk: surface_format(tk[0], text[a:b], keep_date) for (a, b), tk, r in zip(region, keys[i], picks)
                   if r is not None}  # the format of the occurrence ``drawn`` kept (the last)
        for tk in drawn:
            if (tk, written[tk]) not in expected:
                expected[(tk, written[tk])] = sanitizer.self_probability(tk[0], tk[1], emb[row[tk]], written[tk])
        out.same_expected.append(sum(expected[(tk, written[tk])] for tk in drawn))
        out.format_kept.append(sum(r is not None and format_kept(t, text[a:b], r, keep_date)
                                   for r, (a, b), (_, _, t, _) in zip(picks, region, spans)))
    return out


class ClusantSanitizer:
    def __init__(self, settings: ClusantSettings, per_type: Mapping[str, TypeSanitizer], missing: Iterable[str] = ()):
        self.settings = settings
        self.per_type = dict(per_type)
        self.missing = tuple(missing)  # configured types without a vocabulary (masked with a placeholder)
        self._keys: dict[tuple, dict[str, list[int]]] = {}  # per (type, format): a rendered phrase's key -> its rows

    def self_probability(self, entity_type: str, key: str, embedding: np.ndarray, fmt: str | None = None) -> float:
        """Pr[the draw for an input with value key ``key``, written in surface format ``fmt``, has that key]: the
        mechanism's exact probability of the vocabulary phrases whose rendering in ``fmt`` has the input's own
        key (a public phrase may be the private value, eps-LDP allows drawing it; a format keeps part of a draw,
        e.g. a year-only date its year, so every phrase of that year counts). What a correct sanitizer
        publishes verbatim, in expectation."""
        ts = self.per_type.get(entity_type)
        if ts is None:
            return 0.0
        if (entity_type, fmt) not in self._keys:
            index: dict[str, list[int]] = {}
            for row, phrase in enumerate(ts.phrases):
                index.setdefault(normalize_value(entity_type, render(entity_type, phrase, fmt)), []).append(row)
            self._keys[(entity_type, fmt)] = index
        rows = self._keys[(entity_type, fmt)].get(key)
        return float(ts.mechanism.probabilities(embedding)[rows].sum()) if rows else 0.0

    @classmethod
    def build(
        cls,
        settings: ClusantSettings,
        tier_of: Callable[[str], str],
        encode: Encode,
        model_name: str,
        generate: Generate | None = None,
        cache_dir: str | None = None,
    ) -> "ClusantSanitizer":
        """Vocabulary, embeddings (cached in ``cache_dir``, default ``settings.cache_dir``), clusters, mechanism per
        type."""
        vocabularies = build_vocabularies(settings, encode, model_name, generate, cache_dir)
        return cls.from_vocabularies(settings, vocabularies, tier_of)

    @classmethod
    def from_vocabularies(
        cls,
        settings: ClusantSettings,
        vocabularies: Mapping[str, tuple[Sequence[str], np.ndarray] | None],
        tier_of: Callable[[str], str],
    ) -> "ClusantSanitizer":
        """Clusters and mechanism per type over the given (phrases, embeddings); None: no vocabulary.

        ``settings.reserved_values`` (a fixed public list, never data) removes matching candidates
        (case- and space-insensitively), so the cached embeddings stay valid; the candidates, their
        clustering and the mechanism depend on the vocabulary version and conf only.
        """
        banned = {normalize(v) for v in settings.reserved_values}
        per_type, missing = {}, []
        for entity_type, vocabulary in vocabularies.items():
            keep = [] if vocabulary is None else [i for i, p in enumerate(vocabulary[0]) if normalize(p) not in banned]
            if len(keep) < 2:
                missing.append(entity_type)
                continue
            phrases, emb = [vocabulary[0][i] for i in keep], vocabulary[1][keep]
            rng = np.random.default_rng([settings.vocabulary.seed, len(phrases)])  # public clustering
            labels = cluster_vocabulary(emb, settings.clustering, settings.n_clusters, rng)
            tier = tier_of(entity_type)
            mech = build_mechanism(settings.method, emb, labels, settings.eps_for(entity_type, tier), settings.k)
            per_type[entity_type] = TypeSanitizer(entity_type, tier, tuple(phrases), mech)
        return cls(settings, per_type, missing)

    def replace(self, rng: np.random.Generator, entity_types: Sequence[str],
                embeddings: np.ndarray) -> list[str | None]:
        """A public replacement for every span (row i: type ``entity_types[i]``, embedding row i).

        None for a type without a configured vocabulary (the caller masks those spans)."""
        types = np.asarray(entity_types, dtype=object)
        out: list[str | None] = [None] * len(types)
        for entity_type, ts in self.per_type.items():
            rows = np.flatnonzero(types == entity_type)
            if rows.size:
                for row, idx in zip(rows, ts.mechanism.sample(rng, embeddings[rows])):
                    out[row] = ts.phrases[idx]
        return out

    def ledger_params(self) -> dict:
        """Parameters of the ledger record of a sanitization run (one 'mldp' entry per span type)."""
        return ledger_params(self.settings, {t: (ts.tier, ts.mechanism) for t, ts in self.per_type.items()})


def build_vocabularies(
    settings: ClusantSettings,
    encode: Encode,
    model_name: str,
    generate: Generate | None = None,
    cache_dir: str | None = None,
) -> dict[str, tuple[list[str], np.ndarray] | None]:
    """(phrases, unit-norm embeddings) of every configured type's full public vocabulary; None if it has none."""
    out: dict[str, tuple[list[str], np.ndarray] | None] = {}
    cache_dir = cache_dir or settings.cache_dir
    for entity_type in settings.entity_types:
        try:
            phrases = cached_vocabulary(entity_type, settings.vocabulary, cache_dir, generate)
        except NoVocabulary:
            out[entity_type] = None
            continue
        out[entity_type] = (phrases, embed_vocabulary(entity_type, phrases, encode, model_name, cache_dir))
    return out


def ledger_params(settings: ClusantSettings, mechanisms: Mapping[str, tuple[str, CluSanT]]) -> dict:
    """Ledger parameters: guarantee, metric, eps per tier and type, k, clusters, vocabulary sizes, bound note."""
    by_type = {t: m.guarantee() for t, (_, m) in mechanisms.items()}
    first = next(iter(by_type.values()), {})
    return {
        "guarantee": "mldp" if all(g["guarantee"] == "mldp" for g in by_type.values()) else "none",
        "mechanism": settings.method,
        "metric": METRIC,
        "k": first.get("k", settings.k),  # santext: 1, custext: inf
        "clustering": settings.clustering if settings.method != "santext" else "singletons",
        "eps_by_tier": dict(settings.eps),
        "eps_by_type": {t: g["eps"] for t, g in by_type.items()},
        "tier_by_type": {t: tier for t, (tier, _) in mechanisms.items()},
        "ldp_eps_by_type": {t: g["ldp_eps"] for t, g in by_type.items()},
        "n_clusters_by_type": {t: g["n_clusters"] for t, g in by_type.items()},
        "vocabulary_size_by_type": {t: g["vocabulary_size"] for t, g in by_type.items()},
        "bound_note": first.get("bound_note", ""),
        "adjacency": ADJACENCY,
        "date_keep": settings.date_keep,
    }
