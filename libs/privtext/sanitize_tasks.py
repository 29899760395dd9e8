"""The sanitize stage's Spark task bodies (``mapInPandas``) and the per-document rules they apply, apart from
the stage (``privtext.stages.sanitize``) so that a Spark Python worker imports only what they use: unpickling
a body imports this module, not the stage's ledger, budget (dp_accounting, scipy.stats) and lakehouse.
"""
from __future__ import annotations

import hashlib
import json

import numpy as np
import pandas as pd

from privtext.clusant.sanitizer import ClusantSanitizer, merge_spans, sanitize_documents
from privtext.clusant.surrogates import AllowList
from privtext.metrics.export_utility import ACCURACY_METRICS, TEST_FRACTION, downstream_accuracy, is_test
from privtext.pii.hashing import normalize_value, secret_id
from privtext.platform.config import resolve_uri
from privtext.sanitizer_setup import phrase_encoder, tier_function
from privtext.worker_cache import per_process


def sanitizer_key(settings) -> str:
    """The mechanism's fingerprint in the draw id: a setting that can change a surrogate changes it (a new draw,
    charged anew); the quality metrics and the encoder's batch size and cache folder cannot, and a night that
    only changes them reuses the epoch's draw (and its charge)."""
    clusant = settings.clusant.model_dump(mode="json", exclude={"metrics"})
    embed = settings.embed.model_dump(mode="json", exclude={"batch_size", "cache_dir"})
    return hashlib.sha256(json.dumps([clusant, embed, settings.pii.model_dump(mode="json")]).encode()).hexdigest()


def doc_spans(text: str, spans, allow: AllowList) -> tuple[list[tuple[int, int, str, str]], int]:
    """The document's merged spans to rewrite, and how many merged spans equal an allow-list entry (left as written)."""
    raw = [] if spans is None else [(s["start"], s["end"], s["entity_type"], s["tier"] or "PII", s["score"] or 0.0)
                                    for s in spans]
    merged = merge_spans(raw, len(text))
    kept = [m for m in merged if text[m[0]:m[1]] not in allow]
    return kept, len(merged) - len(kept)


def planned_values(texts, spans_per_doc, allow: AllowList, drawn_types, key: bytes) -> set[tuple[str, str, str]]:
    """The distinct (type, secret_id, string_id) the documents draw: merged spans not allow-listed, of a type with
    a vocabulary; ``secret_id`` keys the type's ``normalize_value`` (the draw's and the spans' secret_id),
    ``string_id`` the string's own (``normalize_value`` of no type: the ledger's unit across types). They differ
    where a code type keys letters and digits only."""
    out = set()
    for text, spans in zip(texts, spans_per_doc):
        for s, e, t, _ in doc_spans(text, spans, allow)[0]:
            if t in drawn_types:
                value = text[s:e]
                out.add((t, secret_id(key, normalize_value(t, value)), secret_id(key, normalize_value("", value))))
    return out


def plan_batches(settings, key: bytes, drawn_types: frozenset):
    """mapInPandas body of the plan job: the distinct (type, secret_id, string_id) each batch draws
    (``planned_values``)."""
    allow = AllowList(settings.clusant.allow_list)

    def run(frames):
        for frame in frames:
            seen = planned_values(frame["text"], frame["spans"], allow, drawn_types, key)
            yield pd.DataFrame(sorted(seen), columns=["entity_type", "secret_id", "string_id"], dtype=object)

    return run


def sanitize_batches(settings, shared, dkey: bytes, key: bytes, capped: frozenset):
    """mapInPandas body: the worker's sanitizer is built once per Python process from the broadcast
    (vocabularies, static piece table): the driver's candidate list, never rebuilt on a worker. Each value's
    draw comes from ``dkey`` (the epoch's draw key), so every batch draws it alike; a span whose (type, string)
    is ``capped`` (``capped_strings``) is masked, not drawn."""
    allow = AllowList(settings.clusant.allow_list)

    def keep(entity_type: str, value: str) -> bool:
        return (entity_type, secret_id(key, normalize_value("", value))) not in capped

    def run(frames):
        vocabularies, table = shared.value
        sanitizer = per_process(("sanitizer", sanitizer_key(settings)), lambda: ClusantSanitizer.from_vocabularies(
            settings.clusant, vocabularies, tier_function(settings)))
        encode, _ = phrase_encoder(settings, table)
        for frame in frames:
            planned = [doc_spans(text, spans, allow) for text, spans in zip(frame["text"], frame["spans"])]
            docs = [kept for kept, _ in planned]
            out = sanitize_documents(sanitizer, encode, None, list(frame["text"]), docs, draw_key=dkey,
                                     keep=keep if capped else None)
            yield pd.DataFrame({
                "doc_id": frame["doc_id"], "sanitized_text": out.texts,
                "n_spans": [len(kept) + allowed for kept, allowed in planned],
                "n_replaced": [sum(r.values()) for r in out.replaced],
                "replaced": out.replaced, "masked": out.masked, "verbatim": out.same_as_input,
                "verbatim_expected": out.same_expected,
                "format_kept": out.format_kept,
                # a masked span of a type with a vocabulary is a capped one (the keys are not hashed again)
                "capped": [sum(n for t, n in m.items() if t in sanitizer.per_type) for m in out.masked],
            })

    return run


def _perplexity_fn(settings):
    """``privtext.generate.perplexity`` and its settings, or None when the generator is not installed."""
    generate_settings = getattr(settings, "generate", None)
    try:
        from privtext.generate import perplexity
    except ImportError:
        return None
    if generate_settings is None:
        return None
    if generate_settings.cache_dir:  # workers may run elsewhere than the project: the cache sits under it
        cache = resolve_uri(generate_settings.cache_dir)
        generate_settings = generate_settings.model_copy(update={"cache_dir": cache})
    return lambda texts: perplexity(texts, generate_settings, settings.clusant.metrics.perplexity_tokens)


def quality_batches(settings):
    """mapInPandas body of the metrics job: cosine of sentence embeddings original vs sanitized and the
    perplexity of the sanitized text under the local LM (NaN where off or the LM is not installed)."""
    metrics = settings.clusant.metrics

    def run(frames):
        from privtext.embed.encoder import encode_texts

        perplexity = _perplexity_fn(settings) if metrics.perplexity else None
        for frame in frames:
            similarity = np.full(len(frame), np.nan)
            ppl = np.full(len(frame), np.nan)
            if metrics.similarity and len(frame):
                a = encode_texts(list(frame["text"]), settings.embed).astype(np.float64)
                similarity = (a * encode_texts(list(frame["sanitized_text"]), settings.embed)).sum(axis=1)
            if perplexity is not None and len(frame):
                try:
                    ppl = np.asarray(perplexity(list(frame["sanitized_text"])), dtype=np.float64)
                except (ImportError, RuntimeError):  # the local LM is not installed: no perplexity metric
                    perplexity = None
            yield pd.DataFrame({"similarity": similarity, "perplexity": ppl})

    return run


def accuracy_batches(seed: int):
    """mapInPandas body (one partition): a classifier trained on the sanitized vs the original text, one row of
    aggregates (``metrics.export_utility.downstream_accuracy``); no text leaves the executor."""

    def run(frames):
        frame = pd.concat(list(frames), ignore_index=True)
        if len(frame):
            test = [is_test(d, TEST_FRACTION) for d in frame["doc_id"]]
            yield pd.DataFrame([downstream_accuracy(frame["text"].tolist(), frame["sanitized_text"].tolist(),
                                                    frame["label"].tolist(), test, seed)])[list(ACCURACY_METRICS)]

    return run
