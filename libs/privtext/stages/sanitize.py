"""Stage ``sanitize``: ``restricted.documents`` + ``restricted.pii_spans`` -> staged ``restricted.sanitized_documents``.

Every detected span of the date's documents is replaced; the rest of the text is kept character for
character (overlapping spans are merged first, ``clusant.sanitizer.merge_spans``). A span whose type
has a public replacement vocabulary (``clusant.entity_types``) gets a CluSanT replacement
(``clusant.method``: clusant, santext or custext); any other span gets the typed placeholder
``[TYPE]``. Span values and candidates are embedded by ``clusant.phrase_encoder`` (default: static
wordpiece vectors distilled from ``embed.model``, ``embed.static_phrases``). The driver builds the
vocabularies once (phrases and embeddings cached on disk in ``clusant.cache_dir``) and broadcasts
them with the piece table; sanitization runs in ``mapInPandas`` with one
``ClusantSanitizer`` per Python worker built from the broadcast (``clusant.sanitizer.sanitize_documents``;
the task bodies live in ``privtext.sanitize_tasks``, light enough for the workers to import).

Guarantee: each (type, value) draw is released under eps_T-metric-LDP (T = its type, eps_T from its
tier, PII stricter than PoII) for the metric D_k of ``clusant.mechanism`` with its k (within a
cluster at most the Euclidean distance of phrase embeddings; between clusters it grows linearly with
k), and under pure eps'-LDP with eps' = ``ldp_epsilon`` (worst case over all input pairs). Budget policy
(``clusant.surrogates``, docs/privacy-model.md): a merged span equal to a ``clusant.allow_list`` entry
(after NFC only) is left as written and charged nothing; every other drawn span gets its value's ONE
draw of the epoch (``clusant.surrogate_epoch_days``), keyed by the value's ``normalize_value`` key (the
one the ledger's secret_id hashes) and reproduced by every batch, night and rerun of the epoch. Adjacency:
the value x replaced by x' in all its occurrences of the epoch (the equality of spans is disclosed, as
type and format are). The ledger gets, BEFORE anything is written and in one all-or-nothing commit, one
``mldp`` charge per span type with the keyed values drawn tonight that no earlier entry of the same draw
charged (occurrences 1; a code type's span names its string's key too: the ledger composes per string,
across types), every entry naming the draw (``params.draw``, ``draw_eps``, ``draw_string_eps``); a night
with nothing new records the draw in a ``none`` entry. A value string is drawn in at most
``clusant.types_per_value`` types per draw (``capped_strings``; its spans in further types are masked). No
decision depends on private counts: which spans are replaced, left (allow-list) or masked (a type without
vocabulary, a string's extra type) depends on the configuration, the spans' types and their text, and the
ledger's earlier charges of that same string only, and the night is refused (``BudgetExceeded``) only when the
ledger's public schedule (``budget.mldp_schedule``: the sum over its distinct draws of the sum of the
``types_per_value`` largest eps of the mechanism, ``string_draw_eps``) would pass the strictest ``mldp_eps_max``;
that bound holds for every value string whatever occurred, so the
ledger's own per-value check can never be the one refusing. ``custext`` has no guarantee across
clusters: it is recorded as ``none`` and ``publish`` refuses its output. Placeholders are deterministic masks.

Candidates never depend on the data: the vocabulary, its clustering and the mechanism depend on the
vocabulary version and conf only; ``clusant.reserved_values`` (a fixed public list, e.g. the
organisation's own names) is excluded from every vocabulary. Every replacement is written with ASCII
digits and letters drawn from the public candidate in the input's format class, whatever the input's
script, digit system or width (``clusant.surface_format``). Each staged row counts its replacements
whose value has the input value's key (``verbatim``, one per distinct value drawn; ``same_as_input`` in
the result) and the mechanism's exact probability of that (``verbatim_expected``: a public phrase can be
the private value, and eps-LDP allows drawing it): the publish gate refuses a release with more than
the mechanism explains (``publish.verbatim_significance``) beyond ``publish.max_verbatim_share``.

Metrics (MLflow, aggregates only): replaced and masked span counts per type, spans per second (the
whole stage), and, in a small job after the write over at most ``clusant.metrics.max_documents``
documents with spans, mean cosine similarity of sentence embeddings original vs sanitized and mean
perplexity of the sanitized text under the local LM (``privtext.generate.perplexity``, when installed);
then ``_export_utility`` writes the date's ``sanitized_documents`` utility rows (classifier trained
on sanitized vs original text, that similarity, the share of replacements kept in their surface format).
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field

from pyspark import StorageLevel
from pyspark.sql import DataFrame, functions as F
from pyspark.sql.types import DoubleType, IntegerType, MapType, StringType, StructField, StructType

from privtext.clusant.masking import summary as masking_summary
from privtext.clusant.sanitizer import ClusantSanitizer
from privtext.clusant.surrogates import draw_id, draw_key, epoch_of
from privtext.ledger import Ledger
from privtext.lineage import detection_lineage
from privtext.metrics.export_utility import ACCURACY_METRICS, TEST_FRACTION
from privtext.pii.hashing import load_hmac_key
from privtext.pii.settings import DEFAULT_TIERS
from privtext.platform.context import RunContext
from privtext.platform.spark import by_document
from privtext.platform.tables import DOCUMENTS, PII_SPANS, STAGED_SANITIZED_DOCUMENTS
from privtext.platform.utility_reports import write_utility
from privtext.privacy.budget import BudgetExceeded, exceeds, mldp_charge, mldp_schedule, none_charge
from privtext.sanitize_tasks import accuracy_batches, plan_batches, quality_batches, sanitize_batches, sanitizer_key
from privtext.sanitizer_setup import phrase_encoder, piece_table, tier_function, vocabularies

TARGET = "sanitized_documents"
OUT_SCHEMA = StructType([
    StructField("doc_id", StringType()),
    StructField("sanitized_text", StringType()),
    StructField("n_spans", IntegerType()),
    StructField("n_replaced", IntegerType()),
    StructField("replaced", MapType(StringType(), IntegerType())),
    StructField("masked", MapType(StringType(), IntegerType())),
    StructField("verbatim", IntegerType()),
    StructField("verbatim_expected", DoubleType()),
    StructField("format_kept", IntegerType()),
    StructField("capped", IntegerType()),
])
# what a charge's eps protects (the ledger records it): one keyed draw per (type, value) and epoch
ADJACENCY = ("a value x replaced by any x' of the same entity type and surface format (for a date: its layout, zone "
             "and the parts params.date_keep keeps, its year by default) in all its occurrences of the "
             "draw's epoch (one draw, reused; the type, the format class and which spans hold equal values are "
             "published); one occurrence alone against the others is not protected")
PLAN_SCHEMA = StructType([StructField("entity_type", StringType()), StructField("secret_id", StringType()),
                          StructField("string_id", StringType())])
QUALITY_SCHEMA = StructType([StructField("similarity", DoubleType()), StructField("perplexity", DoubleType())])


@dataclass
class SanitizeResult:
    documents: int
    spans: int
    replaced: int
    masked: int
    same_as_input: int  # replaced occurrences whose surrogate has the input value's key
    format_kept: int  # replaced occurrences written in their input's type and surface format
    semantic_similarity: float | None
    perplexity: float | None
    spans_per_second: float  # the whole stage, the metrics job included
    metrics_seconds: float  # of which the quality-metrics job after the write
    allowed: int = 0  # spans left as written: equal to a clusant.allow_list entry
    replaced_by_type: dict[str, int] = field(default_factory=dict)
    masked_by_type: dict[str, int] = field(default_factory=dict)  # [TYPE]: types without a replacement vocabulary
    draw: str = ""  # the surrogate draw (epoch:mechanism) tonight's values were drawn in
    mldp_schedule: float = 0.0  # the schedule's bound on any value string's spend (across types) after tonight
    mldp_limit: float = 0.0


def drawn_pairs(planned: set[tuple[str, str, str]], capped: frozenset = frozenset()) -> set[tuple[str, str]]:
    """The (type, unit) pairs a night charges: each planned draw under its type key and its string key, except
    the (type, string) pairs ``capped`` (``capped_strings``: masked, not drawn)."""
    return {(t, u) for t, tid, sid in planned if (t, sid) not in capped for u in (tid, sid)}


def capped_strings(entries: list[dict], draw: str, planned: set[tuple[str, str, str]],
                   types_per_value: int) -> frozenset:
    """The (type, string_id) pairs of tonight masked instead of drawn: a value string is drawn in at most
    ``types_per_value`` types per draw (``clusant.types_per_value``), the types the ledger charged it with
    earlier in the draw first, then tonight's new ones in name order. This bounds a string's spend per draw by
    the sum of the ``types_per_value`` largest eps (``string_draw_eps``), whatever the detector typed it as. The
    decision reads the string's own spans' types and the ledger's earlier charges of it (the types and the
    equality of spans are published by design), never another value's counts."""
    earlier: dict[str, set[str]] = {}
    for e in entries:
        if e["guarantee"] == "mldp" and e["params"].get("draw") == draw:
            for x in e.get("exposures") or []:
                earlier.setdefault(x["unit"], set()).add(e["params"].get("entity_type"))
    tonight: dict[str, set[str]] = {}
    for t, _, sid in planned:
        tonight.setdefault(sid, set()).add(t)
    out = set()
    for sid, types in tonight.items():
        allowed = set(earlier.get(sid, ()))
        for t in sorted(types - allowed):
            if len(allowed) < types_per_value:
                allowed.add(t)
            else:
                out.add((t, sid))
    return frozenset(out)


def string_draw_eps(type_eps, types_per_value: int) -> float:
    """The most one value string can spend in one draw: the sum of the ``types_per_value`` largest eps."""
    return float(sum(sorted(type_eps, reverse=True)[:types_per_value]))


def new_draws(entries: list[dict], draw: str, drawn: set[tuple[str, str]]) -> dict[str, dict[str, int]]:
    """Tonight's (type, value) draws that no ledger entry of the same ``draw`` charged: type -> {secret_id: 1}."""
    charged = {(e["params"].get("entity_type"), x["unit"]) for e in entries
               if e["guarantee"] == "mldp" and e["params"].get("draw") == draw for x in e.get("exposures") or []}
    out: dict[str, dict[str, int]] = {}
    for t, v in sorted(drawn - charged):
        out.setdefault(t, {})[v] = 1
    return out


def check_schedule(entries: list[dict], draw: str, string_eps: float, limit: float, dataset: str) -> dict:
    """Refuse (``BudgetExceeded``) when the ledger's public schedule with tonight's draw would pass ``limit``;
    ``string_eps``: the most one string can spend in the draw (``string_draw_eps``)."""
    schedule = mldp_schedule(entries + [{"guarantee": "none", "params": {"draw": draw, "draw_string_eps": string_eps},
                                         "spend": {}}])
    if exceeds(schedule["bound"], limit):
        raise BudgetExceeded(
            f"privacy budget of dataset {dataset!r} would be exceeded: {schedule['draws']} surrogate draw(s) "
            f"(epochs x mechanisms) at up to eps {string_eps:g} per value string each (drawn in up to "
            f"clusant.types_per_value types), plus {schedule['older'] + schedule['legacy']:.4g} of older charges, "
            f"bound every value at {schedule['bound']:.4g} > mldp_eps_max = {limit:g}; the schedule does not depend "
            "on the data: lengthen clusant.surrogate_epoch_days, lower clusant.eps or clusant.types_per_value, "
            "or end the export")
    return schedule


def quality_spread(metrics) -> bool:
    """Whether the metrics job spreads its documents over every slot: with the perplexity (the LM costs ~0.2 s of
    a core per document); the similarity alone encodes at most ``max_documents`` texts, little beside the sentence
    encoder's load in each task's Python worker (~18-20 CPU s), so they run in one task: one load."""
    return metrics.perplexity


def _quality(ctx: RunContext, out: DataFrame) -> tuple[float | None, float | None]:
    """Mean similarity and perplexity over a bounded sample (``clusant.metrics.max_documents``, the
    documents with spans first by hash of doc_id): their own small job after the write, off the main path."""
    metrics = ctx.settings.clusant.metrics
    if metrics.max_documents == 0 or not (metrics.similarity or metrics.perplexity):
        return None, None
    sample = (out.where(F.col("n_spans") > 0).select("doc_id", "sanitized_text")
              .orderBy(F.sha2("doc_id", 256)).limit(metrics.max_documents))
    texts = ctx.lakehouse.read(DOCUMENTS, date=ctx.date).select("doc_id", "text")
    joined = sample.join(texts, "doc_id")
    row = ((by_document(joined, ctx.settings) if quality_spread(metrics) else joined.coalesce(1))
           .mapInPandas(quality_batches(ctx.settings), QUALITY_SCHEMA)
           .agg(F.avg("similarity").alias("similarity"), F.avg("perplexity").alias("perplexity")).first())
    return row["similarity"], row["perplexity"]


ACCURACY_SCHEMA = StructType([StructField(name, DoubleType()) for name in ACCURACY_METRICS])


def _export_utility(ctx: RunContext, staged: DataFrame, similarity: float | None, format_kept_share: float) -> None:
    """What an analyst loses with the sanitized export, as the date's ``sanitized_documents`` rows (aggregates
    only): a classifier trained on the sanitized vs the original text of at most
    ``clusant.metrics.utility_documents`` labelled documents of the date (first by hash of doc_id; split by
    doc_id hash; both scored on the original test texts), in one small job after sanitize's write, with
    sanitize's sampled similarity and its share of replacements kept in their type and surface format.
    ``staged``: sanitize's output (doc_id, sanitized_text). An empty training or test split (no labelled
    document) gives no accuracy rows."""
    limit = ctx.settings.clusant.metrics.utility_documents
    if limit == 0:
        return
    labelled = (ctx.lakehouse.read(DOCUMENTS, date=ctx.date).where(F.col("label").isNotNull())
                .select("doc_id", "text", "label"))
    sample = (labelled.join(staged.select("doc_id", "sanitized_text"), "doc_id")
              .orderBy(F.sha2("doc_id", 256)).limit(limit).coalesce(1))
    row = sample.mapInPandas(accuracy_batches(ctx.settings.run.seed), ACCURACY_SCHEMA).first()
    measured = {**(row.asDict() if row is not None else {}), "format_kept_share": format_kept_share,
                "semantic_similarity": similarity}
    metrics = {k: v for k, v in measured.items() if v is not None and math.isfinite(v)}  # an empty split: no row
    write_utility(ctx, TARGET, ctx.settings.clusant.method, metrics, {
        "classifier": "tfidf_logistic_regression", "trained_on": "sanitized vs original text, same split",
        "scored_on": "original test texts", "max_documents": limit, "test_fraction": TEST_FRACTION,
        "split_rule": "sha256('privtext-holdout:' + doc_id)[:13 hex] / 16^13 < test_fraction",
        "similarity_documents": ctx.settings.clusant.metrics.max_documents})


def _inputs(ctx: RunContext, spans_version: int, documents_version: int) -> DataFrame:
    """The date's documents, each with the list of its spans (empty for documents without spans)."""
    documents = ctx.lakehouse.read(DOCUMENTS, documents_version, date=ctx.date).select("doc_id", "text")
    spans = (ctx.lakehouse.read(PII_SPANS, spans_version, date=ctx.date)
             .groupBy("doc_id")
             .agg(F.collect_list(F.struct("start", "end", "entity_type", "tier", "score")).alias("spans")))
    return documents.join(spans, "doc_id", "left")


def _charge(ctx: RunContext, sanitizer: ClusantSanitizer, new: dict[str, dict[str, int]], draw_params: dict) -> None:
    """One ledger record per span type with new draws, all committed at once: ``mldp`` with the keyed values
    drawn (secret_id -> 1), ``none`` for CusText; every record names the draw (``draw_params``); a night with
    no new draw records the draw in one ``none`` entry (the schedule counts nights that ran, not values)."""
    det, dataset = ctx.settings.run.deterministic, ctx.settings.run.dataset
    items = []
    for entity_type in sorted(t for t in new if t in sanitizer.per_type):
        ts = sanitizer.per_type[entity_type]
        g = ts.mechanism.guarantee()
        values = new[entity_type]
        params = {**g, **draw_params, "entity_type": entity_type, "tier": ts.tier, "target": TARGET,
                  "date": ctx.date.isoformat(), "clustering": ctx.settings.clusant.clustering,
                  "phrase_encoder": ctx.settings.clusant.phrase_encoder, "spans": len(values), "adjacency": ADJACENCY,
                  "date_keep": ctx.settings.clusant.date_keep,
                  "reserved_values": len(ctx.settings.clusant.reserved_values)}
        if g["guarantee"] == "mldp":
            items.append((mldp_charge(dataset, "sanitize", ctx.run_id, g["mechanism"], epsilon=g["eps"],
                                      pure_epsilon=g["ldp_eps"], metric=g["metric"], k=g["k"], params=params,
                                      deterministic=det), values))
        else:
            items.append((none_charge(dataset, "sanitize", ctx.run_id, g["mechanism"], reason=g["bound_note"],
                                      params=params, deterministic=det), None))
    if not items:
        items.append((none_charge(dataset, "sanitize", ctx.run_id, ctx.settings.clusant.method, params={
            **draw_params, "target": TARGET, "date": ctx.date.isoformat()}, deterministic=det,
            reason="no new surrogate draw: every value drawn tonight was drawn and charged earlier in this epoch"
        ), None))
    Ledger(ctx.lakehouse, ctx.settings).charge_many(items, tracked=ctx.tracked)


def _row_params(sanitizer: ClusantSanitizer, lineage: dict, masking: dict) -> str:
    """The staged rows' ``params``: the mechanism's, the detection lineage (``privtext.lineage``) and the
    release's span counts (``clusant.masking``: what the verdicts say about [TYPE] masks)."""
    p = sanitizer.ledger_params()
    keep = ("guarantee", "mechanism", "metric", "k", "clustering", "eps_by_type", "n_clusters_by_type")
    return json.dumps({**{k: p[k] for k in keep}, "placeholder_types": sorted(sanitizer.missing),
                       "phrase_encoder": sanitizer.settings.phrase_encoder, "lineage": lineage, "masking": masking},
                      sort_keys=True)


def _sum_maps(df: DataFrame, column: str) -> dict[str, int]:
    rows = df.select(F.explode(column).alias("t", "n")).groupBy("t").agg(F.sum("n").alias("n")).collect()
    return {r["t"]: int(r["n"]) for r in rows}


def run(ctx: RunContext) -> SanitizeResult:
    started = time.perf_counter()  # spans_per_second is of the whole stage: vocabularies, charges, write, metrics
    settings = ctx.settings
    spans_version = ctx.lakehouse.version(PII_SPANS)  # the spans read, and the lineage recorded, of one snapshot
    documents_version = ctx.lakehouse.version(DOCUMENTS)  # so are the documents (lineage.documents_state)
    ledger = Ledger(ctx.lakehouse, settings)
    entries = ledger.entries()  # one read: the lineage's (this dataset's) and the draws' (every dataset's)
    lineage = detection_lineage(ctx.lakehouse, settings, [e for e in entries if e["dataset"] == settings.run.dataset],
                                ctx.date, spans_version, documents_version)  # DocumentsChanged: nothing charged
    inputs = _inputs(ctx, spans_version, documents_version)
    table = piece_table(settings)
    encode, encoder_name = phrase_encoder(settings, table)
    vocabs = vocabularies(settings, encode, encoder_name)
    sanitizer = ClusantSanitizer.from_vocabularies(settings.clusant, vocabs, tier_function(settings))
    key = load_hmac_key(settings.run.hmac_key_env, settings.run.hmac_key_file, settings.run.deterministic)
    epoch, fingerprint = epoch_of(ctx.date, settings.clusant.surrogate_epoch_days), sanitizer_key(settings)
    draw = draw_id(epoch, fingerprint)
    draw_eps = max((ts.mechanism.epsilon for ts in sanitizer.per_type.values()), default=0.0)
    per_string = settings.clusant.types_per_value
    string_eps = string_draw_eps([ts.mechanism.epsilon for ts in sanitizer.per_type.values()], per_string)
    limit = ledger.limits(settings.run.dataset, entries).mldp_eps_max
    schedule = check_schedule(entries, draw, string_eps, limit, settings.run.dataset)  # data-independent
    planned = {(r["entity_type"], r["secret_id"], r["string_id"]) for r in  # O(distinct values)
               by_document(inputs, settings).mapInPandas(plan_batches(settings, key, frozenset(sanitizer.per_type)),
                                                         PLAN_SCHEMA).distinct().toLocalIterator()}
    capped = capped_strings(entries, draw, planned, per_string)
    draw_params = {"draw": draw, "draw_eps": draw_eps, "draw_string_eps": string_eps, "string_units": True,
                   "types_per_value": per_string, "epoch": epoch,
                   "surrogate_epoch_days": settings.clusant.surrogate_epoch_days,
                   "allow_list": len(settings.clusant.allow_list)}
    _charge(ctx, sanitizer, new_draws(entries, draw, drawn_pairs(planned, capped)), draw_params)  # before any write

    shared = ctx.spark.sparkContext.broadcast((vocabs, table))
    out = (by_document(inputs, settings)
           .mapInPandas(sanitize_batches(settings, shared, draw_key(key, epoch, fingerprint), key, capped),
                        OUT_SCHEMA)
           .withColumn("method", F.lit(settings.clusant.method))
           .withColumn("run_id", F.lit(ctx.run_id)).withColumn("date", F.lit(ctx.date).cast("date"))
           .persist(StorageLevel.MEMORY_AND_DISK))
    try:
        agg = out.agg(F.sum("n_spans").alias("spans"), F.sum("n_replaced").alias("replaced"),
                      F.sum("verbatim").alias("same"), F.sum("format_kept").alias("format_kept"),
                      F.sum("capped").alias("capped")).first()
        replaced_by_type, masked_by_type = _sum_maps(out, "replaced"), _sum_maps(out, "masked")
        spans, replaced = int(agg["spans"] or 0), int(agg["replaced"] or 0)
        masking = masking_summary(spans, replaced, masked_by_type, spans - replaced - sum(masked_by_type.values()),
                                  len(settings.clusant.allow_list),
                                  [t for t in DEFAULT_TIERS if t not in lineage["entities"]],
                                  capped=int(agg["capped"] or 0), types_per_value=per_string)
        staged = out.withColumn("params", F.lit(_row_params(sanitizer, lineage, masking)))
        written = ctx.lakehouse.replace_partitions(STAGED_SANITIZED_DOCUMENTS,
                                                   staged.select(*STAGED_SANITIZED_DOCUMENTS.schema.names),
                                                   {"date": [ctx.date]})
        metrics_started = time.perf_counter()
        similarity, perplexity = _quality(ctx, out)
        _export_utility(ctx, out, similarity, int(agg["format_kept"] or 0) / max(1, int(agg["replaced"] or 0)))
        metrics_seconds = time.perf_counter() - metrics_started
    finally:
        out.unpersist()
        shared.destroy()
    masked = masking["masked"]
    result = SanitizeResult(
        documents=written.rows, spans=spans, replaced=replaced, masked=masked,
        same_as_input=int(agg["same"] or 0), format_kept=int(agg["format_kept"] or 0),
        semantic_similarity=similarity, perplexity=perplexity,
        spans_per_second=spans / max(time.perf_counter() - started, 1e-9), metrics_seconds=metrics_seconds,
        allowed=masking["allowed"], replaced_by_type=replaced_by_type,
        masked_by_type=masked_by_type, draw=draw, mldp_schedule=schedule["bound"], mldp_limit=limit)
    ctx.tracked.log_params({"clusant.method": settings.clusant.method, "clusant.k": settings.clusant.k,
                            "clusant.n_clusters": settings.clusant.n_clusters,
                            "clusant.clustering": settings.clusant.clustering,
                            "clusant.eps": json.dumps(settings.clusant.eps),
                            "placeholder_types": ",".join(sanitizer.missing),
                            "perplexity_measured": perplexity is not None, "surrogate_draw": draw,
                            "clusant.surrogate_epoch_days": settings.clusant.surrogate_epoch_days,
                            "clusant.allow_list": len(settings.clusant.allow_list)})
    ctx.tracked.log_metrics({"same_as_input_share": result.same_as_input / max(1, result.replaced),
                             "format_kept_share": result.format_kept / max(1, result.replaced),
                             "masked_share": masked / max(1, spans), "allowed_spans": result.allowed,
                             "mldp_schedule_bound": schedule["bound"],
                             **{f"replaced_{t}": n for t, n in replaced_by_type.items()},
                             **{f"masked_{t}": n for t, n in masked_by_type.items()}})
    return result
