"""Stage ``sanitize``: ``restricted.documents`` + ``restricted.pii_spans`` -> staged ``restricted.sanitized_documents``.

Every detected span of the date's documents is replaced; the rest of the text is kept character for
character (overlapping spans are merged first, ``clusant.sanitizer.merge_spans``). A span whose type
has a public replacement vocabulary (``clusant.entity_types``) gets a CluSanT replacement
(``clusant.method``: clusant, santext or custext); any other span gets the typed placeholder
``[TYPE]``. Sanitization runs in ``mapInPandas`` with one ``ClusantSanitizer`` per Python worker,
built once from the disk cache of vocabulary embeddings (``clusant.cache_dir``, which executors must
be able to read on a cluster; otherwise each worker re-embeds the vocabularies once).

Guarantee: each replaced occurrence is released under eps_T-metric-LDP (T = its type, eps_T from its
tier, PII stricter than PoII) for the metric D_k of ``clusant.mechanism`` with its k (within a
cluster at most the Euclidean distance of phrase embeddings; between clusters it grows linearly with
k), and under pure eps'-LDP with eps' = ``ldp_epsilon`` (worst case over all input pairs). Adjacency:
any two values of one occurrence (local model). One draw per distinct value (``match_key``) per
document: the same value is replaced by the same surrogate throughout a document (one occurrence);
documents are randomised independently, so a value in n documents is protected at n * eps_T. The
ledger gets, BEFORE anything is written and in one all-or-nothing commit, one ``mldp`` charge per span
type with the keyed values it exposed (secret_id -> documents), composed per value across documents
and nights (a rerun of a date charges again). ``custext`` has no guarantee across clusters: it is
recorded as ``none`` and ``publish`` refuses its output. Placeholders are deterministic masks.

Candidates never depend on the data: the vocabulary, its clustering and the mechanism depend on the
vocabulary version and conf only; ``clusant.reserved_values`` (a fixed public list, e.g. the
organisation's own names) is excluded from every vocabulary. The share of occurrences whose
replacement equals the input value (``same_as_input``) is measured and reported.

Metrics (MLflow, aggregates only): replaced and masked span counts per type, mean cosine similarity
of sentence embeddings original vs sanitized, mean perplexity of sanitized documents under the local
LM (``privtext.generate.perplexity``, when that module is installed), spans per second; over the
documents with spans, sampled by ``clusant.metrics.sample_rate``.
"""
from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (DoubleType, IntegerType, MapType, StringType, StructField, StructType)

from privtext.clusant.sanitizer import ClusantSanitizer, build_vocabularies, merge_spans, placeholder, splice
from privtext.pii.hashing import normalize_text as match_key  # comparison key of a span value and a candidate
from privtext.platform.context import RunContext
from privtext.platform.spark import by_document
from privtext.ledger import Ledger
from privtext.privacy.budget import mldp_charge, none_charge
from privtext.platform.tables import DOCUMENTS, PII_SPANS, STAGED_SANITIZED_DOCUMENTS

TARGET = "sanitized_documents"
OUT_SCHEMA = StructType([
    StructField("doc_id", StringType()),
    StructField("sanitized_text", StringType()),
    StructField("n_spans", IntegerType()),
    StructField("n_replaced", IntegerType()),
    StructField("similarity", DoubleType()),
    StructField("perplexity", DoubleType()),
    StructField("replaced", MapType(StringType(), IntegerType())),
    StructField("masked", MapType(StringType(), IntegerType())),
    StructField("same_as_input", IntegerType()),
])
_SANITIZERS: dict[str, ClusantSanitizer] = {}  # one per Python worker and settings


@dataclass
class SanitizeResult:
    documents: int
    spans: int
    replaced: int
    masked: int
    same_as_input: int  # replaced occurrences whose surrogate equals the input value (match_key)
    semantic_similarity: float | None
    perplexity: float | None
    spans_per_second: float
    replaced_by_type: dict[str, int] = field(default_factory=dict)
    masked_by_type: dict[str, int] = field(default_factory=dict)


def _tier_of(ctx_settings):
    pii = ctx_settings.pii

    def tier_of(entity_type: str) -> str:
        try:
            return pii.tier_of(entity_type)
        except KeyError:
            return "PII"  # unknown type: the stricter tier

    return tier_of


def _encoder(embed_settings):
    from privtext.embed.encoder import encode_phrases

    return lambda phrases: encode_phrases(phrases, embed_settings)


def get_sanitizer(settings) -> ClusantSanitizer:
    """The worker's sanitizer for these settings (built once, then reused)."""
    key = hashlib.sha256(json.dumps([settings.clusant.model_dump(mode="json"), settings.embed.model_dump(mode="json"),
                                     settings.pii.model_dump(mode="json")]).encode()).hexdigest()
    if key not in _SANITIZERS:
        vocabularies = build_vocabularies(settings.clusant, _encoder(settings.embed), settings.embed.model,
                                          cache_dir=_cache_dir(settings))
        _SANITIZERS[key] = ClusantSanitizer.from_vocabularies(settings.clusant, vocabularies, _tier_of(settings))
    return _SANITIZERS[key]


def _cache_dir(settings) -> str:
    from privtext.settings import resolve_uri

    return resolve_uri(settings.clusant.cache_dir)


def _doc_spans(text: str, spans) -> list[tuple[int, int, str, str]]:
    raw = [] if spans is None else [(s["start"], s["end"], s["entity_type"], s["tier"] or "PII", s["score"] or 0.0)
                                   for s in spans]
    return merge_spans(raw, len(text))


def _sampled(doc_id: str, rate: float) -> bool:
    return rate >= 1.0 or int(hashlib.sha256(doc_id.encode()).hexdigest()[:8], 16) < rate * 2**32


def _perplexity_fn(settings):
    """``privtext.generate.perplexity`` and its settings, or None when the generator is not installed."""
    generate_settings = getattr(settings, "generate", None)
    try:
        from privtext.generate import perplexity
    except ImportError:
        return None
    if generate_settings is None:
        return None
    return lambda texts: perplexity(texts, generate_settings)


def _draw(sanitizer: ClusantSanitizer, encode, rng, texts: list[str], docs: list) -> tuple[list, list]:
    """One surrogate per distinct (document, type, value); each distinct (type, value) of the batch is
    encoded once. Returns per document the list of replacements (None: placeholder) and per span
    whether the surrogate equals the input value."""
    keys = [[(t, match_key(texts[i][s:e])) for s, e, t, _ in spans] for i, spans in enumerate(docs)]
    groups = sorted({(i, t, k) for i, doc in enumerate(keys) for t, k in doc if t in sanitizer.per_type})
    values = {}
    for i, spans in enumerate(docs):
        for (s, e, t, _), (_, k) in zip(spans, keys[i]):
            values.setdefault((t, k), texts[i][s:e])
    distinct = sorted({(t, k) for _, t, k in groups})
    chosen: dict = {}
    if groups:
        row = {tk: j for j, tk in enumerate(distinct)}
        emb = encode([values[tk] for tk in distinct]).astype(np.float64)
        picks = sanitizer.replace(rng, [t for _, t, _ in groups], emb[[row[(t, k)] for _, t, k in groups]])
        chosen = dict(zip(groups, picks))
    out = [[chosen.get((i, t, k)) for t, k in doc] for i, doc in enumerate(keys)]
    same = [[r is not None and match_key(r) == k for r, (_, k) in zip(out[i], doc)] for i, doc in enumerate(keys)]
    return out, same


def _sanitize_batches(settings, seed_material: str):
    metrics = settings.clusant.metrics

    def run(frames):
        from privtext.embed.encoder import encode_texts
        from privtext.privacy.mechanisms import make_rng

        sanitizer = get_sanitizer(settings)
        encode = _encoder(settings.embed)
        perplexity = _perplexity_fn(settings) if metrics.perplexity else None
        for frame in frames:
            seed = int.from_bytes(hashlib.sha256((seed_material + "".join(frame["doc_id"])).encode()).digest()[:8], "little")
            rng = make_rng(settings.run.deterministic, seed)
            docs = [_doc_spans(text, spans) for text, spans in zip(frame["text"], frame["spans"])]
            texts = list(frame["text"])
            picks, same = _draw(sanitizer, encode, rng, texts, docs)
            out_text, replaced, masked, same_count = [], [], [], []
            for i, spans in enumerate(docs):
                out_text.append(splice(texts[i], [(s, e) for s, e, _, _ in spans],
                                       [r if r is not None else placeholder(t) for r, (_, _, t, _) in zip(picks[i], spans)]))
                rep, msk = {}, {}
                for r, (_, _, t, _) in zip(picks[i], spans):
                    target = rep if r is not None else msk
                    target[t] = target.get(t, 0) + 1
                replaced.append(rep)
                masked.append(msk)
                same_count.append(int(sum(same[i])))
            measured = [i for i, spans in enumerate(docs) if spans and _sampled(frame["doc_id"].iloc[i], metrics.sample_rate)]
            similarity = np.full(len(docs), np.nan)
            ppl = np.full(len(docs), np.nan)
            if measured and metrics.similarity:
                a = encode_texts([texts[i] for i in measured], settings.embed)
                b = encode_texts([out_text[i] for i in measured], settings.embed)
                similarity[measured] = (a.astype(np.float64) * b).sum(axis=1)
            if measured and perplexity is not None:
                try:
                    ppl[measured] = perplexity([out_text[i] for i in measured])
                except (ImportError, RuntimeError):  # the local LM is not installed: no perplexity metric
                    perplexity = None
            yield pd.DataFrame({
                "doc_id": frame["doc_id"], "sanitized_text": out_text,
                "n_spans": [len(s) for s in docs], "n_replaced": [sum(r.values()) for r in replaced],
                "similarity": similarity, "perplexity": ppl, "replaced": replaced, "masked": masked,
                "same_as_input": same_count,
            })

    return run


def _inputs(ctx: RunContext) -> DataFrame:
    """The date's documents, each with the list of its spans (empty for documents without spans)."""
    documents = ctx.lakehouse.read(DOCUMENTS, date=ctx.date).select("doc_id", "text")
    spans = (ctx.lakehouse.read(PII_SPANS, date=ctx.date)
             .groupBy("doc_id").agg(F.collect_list(F.struct("start", "end", "entity_type", "tier", "score")).alias("spans")))
    return documents.join(spans, "doc_id", "left")


def _charge(ctx: RunContext, sanitizer: ClusantSanitizer, values_by_type: dict[str, dict[str, int]]) -> None:
    """One ledger record per span type present, all committed at once: ``mldp`` per replaced
    occurrence with the keyed values it exposed (secret_id -> occurrences), ``none`` for CusText."""
    det = ctx.settings.run.deterministic
    items = []
    for entity_type in sorted(t for t in values_by_type if t in sanitizer.per_type):
        ts = sanitizer.per_type[entity_type]
        g = ts.mechanism.guarantee()
        values = values_by_type[entity_type]
        params = {**g, "entity_type": entity_type, "tier": ts.tier, "target": TARGET, "date": ctx.date.isoformat(),
                  "clustering": ctx.settings.clusant.clustering, "spans": sum(values.values()),
                  "adjacency": "any two values of one occurrence (local model); a value in n documents: n * eps",
                  "reserved_values": len(ctx.settings.clusant.reserved_values)}
        if g["guarantee"] == "mldp":
            charge = mldp_charge(ctx.settings.run.dataset, "sanitize", ctx.run_id, g["mechanism"], epsilon=g["eps"],
                                 pure_epsilon=g["ldp_eps"], metric=g["metric"], k=g["k"], params=params,
                                 deterministic=det)
            items.append((charge, values))
        else:
            items.append((none_charge(ctx.settings.run.dataset, "sanitize", ctx.run_id, g["mechanism"],
                                      reason=g["bound_note"], params=params, deterministic=det), None))
    if items:
        Ledger(ctx.lakehouse, ctx.settings).charge_many(items, tracked=ctx.tracked)


def _row_params(sanitizer: ClusantSanitizer) -> str:
    p = sanitizer.ledger_params()
    keep = ("guarantee", "mechanism", "metric", "k", "clustering", "eps_by_type", "n_clusters_by_type")
    return json.dumps({**{k: p[k] for k in keep}, "placeholder_types": sorted(sanitizer.missing)}, sort_keys=True)


def _sum_maps(df: DataFrame, column: str) -> dict[str, int]:
    rows = df.select(F.explode(column).alias("t", "n")).groupBy("t").agg(F.sum("n").alias("n")).collect()
    return {r["t"]: int(r["n"]) for r in rows}


def run(ctx: RunContext) -> SanitizeResult:
    started = time.perf_counter()  # spans_per_second is of the whole stage: vocabularies, charges, write
    settings = ctx.settings
    inputs = _inputs(ctx)
    vocabularies = build_vocabularies(settings.clusant, _encoder(settings.embed), settings.embed.model,
                                      cache_dir=_cache_dir(settings))  # warms the disk cache for the workers
    sanitizer = ClusantSanitizer.from_vocabularies(settings.clusant, vocabularies, _tier_of(settings))
    values_by_type: dict[str, dict[str, int]] = {}  # occurrences = documents holding the value (one draw each)
    for r in (ctx.lakehouse.read(PII_SPANS, date=ctx.date)
              .groupBy("entity_type", "secret_id").agg(F.countDistinct("doc_id").alias("docs"))
              .toLocalIterator()):  # O(distinct values)
        values_by_type.setdefault(r["entity_type"], {})[r["secret_id"]] = int(r["docs"])
    _charge(ctx, sanitizer, values_by_type)  # before anything is written

    seed_material = f"{settings.run.seed}:{ctx.date.isoformat()}"
    out = (by_document(inputs, settings).mapInPandas(_sanitize_batches(settings, seed_material), OUT_SCHEMA)
           .withColumn("method", F.lit(settings.clusant.method)).withColumn("params", F.lit(_row_params(sanitizer)))
           .withColumn("run_id", F.lit(ctx.run_id)).withColumn("date", F.lit(ctx.date).cast("date"))
           .persist(StorageLevel.MEMORY_AND_DISK))
    try:
        written = ctx.lakehouse.replace_partitions(STAGED_SANITIZED_DOCUMENTS, out.select(*STAGED_SANITIZED_DOCUMENTS.schema.names),
                                                   {"date": [ctx.date]})
        agg = out.agg(F.sum("n_spans").alias("spans"), F.sum("n_replaced").alias("replaced"),
                      F.avg("similarity").alias("similarity"), F.avg("perplexity").alias("perplexity"),
                      F.sum("same_as_input").alias("same")).first()
        replaced_by_type, masked_by_type = _sum_maps(out, "replaced"), _sum_maps(out, "masked")
    finally:
        out.unpersist()
    spans = int(agg["spans"] or 0)
    result = SanitizeResult(
        documents=written.rows, spans=spans, replaced=int(agg["replaced"] or 0), masked=sum(masked_by_type.values()),
        same_as_input=int(agg["same"] or 0), semantic_similarity=agg["similarity"], perplexity=agg["perplexity"],
        spans_per_second=spans / max(time.perf_counter() - started, 1e-9),
        replaced_by_type=replaced_by_type, masked_by_type=masked_by_type)
    ctx.tracked.log_params({"clusant.method": settings.clusant.method, "clusant.k": settings.clusant.k,
                            "clusant.n_clusters": settings.clusant.n_clusters, "clusant.clustering": settings.clusant.clustering,
                            "clusant.eps": json.dumps(settings.clusant.eps), "placeholder_types": ",".join(sanitizer.missing),
                            "perplexity_measured": agg["perplexity"] is not None})
    ctx.tracked.log_metrics({"same_as_input_share": result.same_as_input / max(1, result.replaced),
                             **{f"replaced_{t}": n for t, n in replaced_by_type.items()},
                             **{f"masked_{t}": n for t, n in masked_by_type.items()}})
    return result
