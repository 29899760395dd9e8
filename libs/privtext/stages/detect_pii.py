"""Stage ``detect_pii``: ``restricted.documents`` -> ``restricted.pii_spans`` (+ the views ``restricted.secrets``,
``restricted.document_split``).

Presidio (``pii.detect``) runs in ``mapInPandas`` with one analyzer per Python worker; every detected
span is written with its keyed hash (``secret_id``), never its value. When ``pii.secrets.mode`` is
``random_words`` or ``user_list`` the matched secret words/terms are written as spans too (their own
entity type), so the sanitizer and the audit keep the Presidio spans while SecPE uses the chosen
secrets. Random words are chosen from document frequencies computed in Spark (O(|V|) on the driver).

Canaries (``pii.canaries``): synthetic documents with known values are mixed into the batch, detected
in the same tasks, scored (recall and character coverage per type) and dropped before anything is
written; the scores go to the ledger (``detection_recall``, a measurement), MLflow and the publish gate.

The date's spans replace the date's partition and nothing else is written: the secret registry is the
view ``restricted.secrets`` over every night's spans, so the nightly cost does not grow with history and
a rerun of a date cannot double count (its partition is replaced). SecPE's public/private split (a
document is private when it holds at least one secret) is the view ``restricted.document_split``, never
a copy of the text. The stage reads only its date's documents and spans (``random_words`` also reads
every night's texts for the document frequencies its choice is defined on).
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from pyspark.sql import DataFrame, functions as F
from pyspark.sql.types import DoubleType, IntegerType, StringType, StructField, StructType

from privtext.ledger import Ledger
from privtext.lineage import documents_state, partition_state, settings_digest
from privtext.pii.canaries import make_canaries, score
from privtext.pii.hashing import load_hmac_key
from privtext.pii.secrets import secret_types, select_random_words, word_set
from privtext.pii.settings import PiiSettings
from privtext.platform.context import RunContext
from privtext.platform.spark import by_document
from privtext.platform.tables import DOCUMENTS, PII_SPANS
from privtext.privacy.budget import measurement

SPAN_SCHEMA = StructType(
    [
        StructField("doc_id", StringType()),
        StructField("entity_type", StringType()),
        StructField("start", IntegerType()),
        StructField("end", IntegerType()),
        StructField("score", DoubleType()),
        StructField("tier", StringType()),
        StructField("secret_id", StringType()),
    ]
)


@dataclass
class DetectResult:
    documents: int
    spans: int
    secrets: int  # distinct secret ids among tonight's spans
    private_documents: int
    spans_by_type: dict[str, int]
    canary_recall: float | None  # measured span recall on tonight's canaries (None: pii.canaries.count 0)
    canary_coverage: float | None


def _detect_partition(settings: PiiSettings, key: bytes, random_words: list[str] | None):
    def detect(frames):
        from privtext.pii.detect import detect_frame, get_analyzer
        from privtext.pii.secrets import match_frame, matcher_for

        analyzer = get_analyzer(settings)  # once per Python worker (module cache)
        matcher = matcher_for(settings, random_words) if settings.secrets.mode != "pii" else None
        for frame in frames:
            spans = [detect_frame(analyzer, frame, settings, key)]
            if matcher is not None:
                spans.append(match_frame(frame, matcher, key))
            out = pd.concat(spans, ignore_index=True)
            yield out.astype({"start": "int32", "end": "int32"})

    return detect


def choose_random_words(documents: DataFrame, settings: PiiSettings) -> list[str]:
    """SecPE's random-word secrets (Sec. 4.2): document frequencies in Spark, choice on the driver."""
    words = F.udf(lambda text: sorted(word_set(text or "")), "array<string>")
    freq = documents.select(F.explode(words("text")).alias("word")).groupBy("word").count()
    doc_freq = {row["word"]: row["count"] for row in freq.toLocalIterator()}  # O(|V|)
    rw = settings.secrets.random_words
    return select_random_words(doc_freq, rw.quantile, rw.n_words, rw.min_chars)


def register_split_view(lakehouse, pii: PiiSettings) -> str:
    """Create the view ``restricted.document_split`` (doc_id, ingest_date, n_secrets, is_private) over the
    current snapshots of documents and spans; returns its name."""
    lakehouse.register_views([DOCUMENTS, PII_SPANS])
    types = ", ".join("'" + t.replace("'", "''") + "'" for t in secret_types(pii)) or "NULL"
    lakehouse.spark.sql(f"""
        CREATE OR REPLACE VIEW restricted.document_split AS
        SELECT d.doc_id, d.ingest_date, COUNT(DISTINCT s.secret_id) AS n_secrets,
               COUNT(DISTINCT s.secret_id) > 0 AS is_private
        FROM restricted.documents d
        LEFT JOIN restricted.pii_spans s ON s.doc_id = d.doc_id AND s.entity_type IN ({types})
        GROUP BY d.doc_id, d.ingest_date""")
    return "restricted.document_split"


def register_registry_view(lakehouse) -> str:
    """Create the view ``restricted.secrets`` (secret_id, entity_type, tier, doc_count, user_count,
    first_date, last_date) over the current snapshots of spans and documents; returns its name.

    One row per keyed-hash secret id, counted over all nights: its most frequent entity type, ``PII`` if
    any span of it is PII, distinct documents and distinct users (a document without a user_id is its
    own user). Exact distinct users over all nights need every night's (secret, user) pairs, so the view
    reads them when queried; no stage reads it.
    """
    lakehouse.register_views([DOCUMENTS, PII_SPANS])
    lakehouse.spark.sql("""
        CREATE OR REPLACE VIEW restricted.secrets AS
        WITH spans AS (
            SELECT s.secret_id, s.entity_type, s.tier, s.doc_id, s.date,
                   COALESCE(d.user_id, CONCAT('doc:', s.doc_id)) AS user_key
            FROM restricted.pii_spans s LEFT JOIN (SELECT DISTINCT doc_id, user_id FROM restricted.documents) d
              ON d.doc_id = s.doc_id),
        typed AS (SELECT secret_id, entity_type, COUNT(*) AS n FROM spans GROUP BY secret_id, entity_type),
        main AS (SELECT secret_id, MAX_BY(entity_type, STRUCT(n, entity_type)) AS entity_type
                 FROM typed GROUP BY secret_id)
        SELECT spans.secret_id, main.entity_type,
               IF(ARRAY_CONTAINS(COLLECT_SET(tier), 'PII'), 'PII', 'PoII') AS tier,
               CAST(COUNT(DISTINCT doc_id) AS BIGINT) AS doc_count,
               CAST(COUNT(DISTINCT user_key) AS BIGINT) AS user_count,
               MIN(date) AS first_date, MAX(date) AS last_date
        FROM spans JOIN main ON main.secret_id = spans.secret_id
        GROUP BY spans.secret_id, main.entity_type""")
    return "restricted.secrets"


def run(ctx: RunContext) -> DetectResult:
    settings = ctx.settings.pii
    key = load_hmac_key(ctx.settings.run.hmac_key_env, ctx.settings.run.hmac_key_file, ctx.settings.run.deterministic)
    date = F.lit(ctx.date)
    # the documents read, and the lineage recorded, of one snapshot
    documents_version = ctx.lakehouse.version(DOCUMENTS)
    documents = ctx.lakehouse.read(DOCUMENTS, documents_version, date=ctx.date).select("doc_id", "text")
    random_words = None
    if settings.secrets.mode == "random_words":
        random_words = choose_random_words(
            ctx.lakehouse.read(DOCUMENTS, upto=ctx.date), settings)
    det = ctx.settings.run.deterministic
    canaries = make_canaries(settings.detected_entities(), settings.canaries.count,
                             ctx.settings.run.seed if det else None)
    ids = [c.doc_id for c in canaries]
    batch = documents
    if canaries:
        batch = documents.unionByName(ctx.spark.createDataFrame(
            pd.DataFrame({"doc_id": ids, "text": [c.text for c in canaries]}), "doc_id string, text string"))
    detected = by_document(batch, ctx.settings).mapInPandas(_detect_partition(settings, key, random_words),
                                                            SPAN_SCHEMA).persist()
    try:
        spans = (detected.where(~F.col("doc_id").isin(ids)).withColumn("run_id", F.lit(ctx.run_id))
                 .withColumn("date", date))
        written = ctx.lakehouse.replace_partitions(PII_SPANS, spans, {"date": [ctx.date]})
        found: dict[str, list[tuple[int, int]]] = {}
        for r in detected.where(F.col("doc_id").isin(ids)).select("doc_id", "start", "end").collect():  # O(canaries)
            found.setdefault(r["doc_id"], []).append((r["start"], r["end"]))
    finally:
        detected.unpersist()
    canary = _record_canaries(ctx, canaries, found, documents_version) if canaries else None

    tonight = ctx.lakehouse.read(PII_SPANS, date=ctx.date)
    by_type = {r["entity_type"]: r["count"] for r in tonight.groupBy("entity_type").count().collect()}
    secrets = tonight.select("secret_id").distinct().count()
    # tonight's private documents from tonight's spans alone (the split view joins every night's spans)
    private = tonight.where(F.col("entity_type").isin(secret_types(settings))).select("doc_id").distinct().count()
    ctx.tracked.log_params({"pii.secrets.mode": settings.secrets.mode, "pii.score_threshold": settings.score_threshold,
                            "pii.entities": ",".join(settings.detected_entities())})
    ctx.tracked.log_metrics({f"spans_{t}": n for t, n in by_type.items()})
    return DetectResult(documents=documents.count(), spans=written.rows, secrets=secrets,
                        private_documents=private, spans_by_type=by_type,
                        canary_recall=None if canary is None else canary["overall"]["recall"],
                        canary_coverage=None if canary is None else canary["overall"]["coverage"])


def _record_canaries(ctx: RunContext, canaries, found, documents_version: int) -> dict:
    """Score tonight's canaries; record the figures in the ledger (a measurement) and MLflow."""
    scores = score(canaries, found)
    ctx.tracked.log_metrics({"canary_recall": scores["overall"]["recall"],
                             "canary_coverage": scores["overall"]["coverage"],
                             **{f"canary_recall_{t}": v["recall"] for t, v in scores["by_type"].items()},
                             **{f"canary_coverage_{t}": v["coverage"] for t, v in scores["by_type"].items()}})
    Ledger(ctx.lakehouse, ctx.settings).charge(measurement(
        ctx.settings.run.dataset, "detect_pii", ctx.run_id, "canaries", guarantee="detection_recall", values=scores,
        params={"date": ctx.date.isoformat(), "canaries": len(canaries), **_lineage(ctx, documents_version)},
        deterministic=ctx.settings.run.deterministic))
    return scores


def _lineage(ctx: RunContext, documents_version: int | None = None) -> dict:
    """What the canary measurement measured (``privtext.lineage``): the spans partition this run wrote, its
    detection settings and the documents it read, so a release sanitized from these spans can name this
    measurement by content, and a re-delivery of the date's documents since is seen."""
    return {"spans_state": partition_state(ctx.lakehouse, PII_SPANS, ctx.date),
            "settings_digest": settings_digest(ctx.settings.pii),
            "documents_state": documents_state(ctx.lakehouse, ctx.date, documents_version),
            "entities": ctx.settings.pii.detected_entities()}
