"""The platform's table catalogue: every Delta table's zone, schema and partitioning, in one place."""
from __future__ import annotations

import pyarrow as pa

from privtext.platform.lakehouse import TableSpec

STR = pa.string()
METADATA = pa.map_(pa.string(), pa.string())

DOCUMENTS = TableSpec(
    "restricted",
    "documents",
    pa.schema(
        [
            ("doc_id", STR),
            ("user_id", STR),
            ("text", STR),
            ("label", STR),
            ("metadata", METADATA),
            ("ingest_date", pa.date32()),
            ("run_id", STR),
        ]
    ),
    ("ingest_date",),
    "Raw ingested documents (private text). Restricted zone only.",
)

QUARANTINE = TableSpec(
    "restricted",
    "quarantine",
    pa.schema(
        [
            ("raw_record", STR),
            ("reason", STR),
            ("source_file", STR),
            ("line_no", pa.int64()),
            ("ingest_date", pa.date32()),
            ("run_id", STR),
        ]
    ),
    ("ingest_date",),
    "Rejected input records with the reason; raw content, so restricted.",
)

PRIVACY_LEDGER = TableSpec(
    "protected",
    "privacy_ledger",
    pa.schema(
        [
            ("entry_id", STR),
            ("dataset", STR),
            ("stage", STR),
            ("run_id", STR),
            ("mechanism", STR),
            ("guarantee", STR),
            ("params", STR),
            ("spend", STR),
            ("dp_event", STR),
            ("exposures", pa.list_(pa.struct([("unit", STR), ("occurrences", pa.int64()), ("variant", pa.int32()),
                                              ("records", pa.int64())]))),
            ("created_at", pa.timestamp("us", tz="UTC")),
        ]
    ),
    (),
    "Append-only record of every privacy spend (JSON params with the dominating pair, spend, serialized "
    "dp-accounting event, the keyed units it exposed; null exposures = every unit).",
)

DATE = pa.date32()
F32_VECTOR = pa.list_(pa.float32())

PII_SPANS = TableSpec(
    "restricted",
    "pii_spans",
    pa.schema(
        [
            ("doc_id", STR),
            ("entity_type", STR),
            ("start", pa.int32()),
            ("end", pa.int32()),
            ("score", pa.float64()),
            ("tier", STR),
            ("secret_id", STR),
            ("run_id", STR),
            ("date", DATE),
        ]
    ),
    ("date",),
    "Detected sensitive spans (character offsets into documents.text, keyed hash of the value). Restricted.",
)

DOC_EMBEDDINGS = TableSpec(
    "restricted",
    "doc_embeddings",
    pa.schema(
        [
            ("doc_id", STR),
            ("embedding", F32_VECTOR),
            ("model", STR),
            ("dim", pa.int32()),
            ("run_id", STR),
            ("date", DATE),
        ]
    ),
    ("date",),
    "Sentence embeddings of documents (L2-normalised), one row per (doc_id, model). Restricted.",
)

SANITIZED_COLUMNS = [
    ("doc_id", STR),
    ("sanitized_text", STR),
    ("n_spans", pa.int32()),
    ("n_replaced", pa.int32()),
    ("method", STR),
    ("params", STR),
    ("run_id", STR),
    ("date", DATE),
]

STAGED_SANITIZED_DOCUMENTS = TableSpec(
    "restricted",
    "sanitized_documents",
    # verbatim: the document's draws whose value equals its input's; verbatim_expected: the mechanism's exact
    # probability of that, summed (the publish gate compares the two)
    pa.schema(SANITIZED_COLUMNS + [("verbatim", pa.int32()), ("verbatim_expected", pa.float64())]),
    ("date",),
    "Staged sanitized documents: not yet audited, so they stay restricted until publish.",
)

PUBLISHED_SANITIZED_DOCUMENTS = TableSpec(
    "published",
    "sanitized_documents",
    pa.schema(SANITIZED_COLUMNS),
    ("date",),
    "Sanitized documents whose date passed the leakage audit gate.",
)

LEAKAGE_AUDITS = TableSpec(
    "protected",
    "leakage_audits",
    pa.schema(
        [
            ("target", STR),
            ("date", DATE),
            ("adversary", STR),
            ("eps", pa.float64()),
            ("triplets", pa.int64()),
            ("violation_ratio", pa.float64()),
            ("delta_target", pa.float64()),
            ("log10_p_fail", pa.float64()),
            ("utility_loss", pa.float64()),
            ("passed", pa.bool_()),
            ("release", STR),  # candidate (the staged release) | control_identity | control_uniform
            ("valid", pa.bool_()),  # the run's negative controls behaved (identity failed, uniform passed)
            ("staged_runs", STR),  # the staged run ids the audit read (sorted, comma-joined): stale-audit check
            ("run_id", STR),
        ]
    ),
    ("date",),
    "mPL leakage audit results per target, date, adversary and release (aggregates only; a lower bound on leakage).",
)

SYNTHETIC_COLUMNS = [
    ("synthetic_id", STR),
    ("text", STR),
    ("label", STR),
    ("method", STR),
    ("round", pa.int32()),
    ("run_id", STR),
    ("date", DATE),
]

STAGED_SYNTHETIC_DOCUMENTS = TableSpec(
    "protected",
    "synthetic_documents",
    pa.schema(SYNTHETIC_COLUMNS),
    ("date",),
    "Synthetic documents released under (p,r)-secret protection / GDP, staged before evaluation.",
)

GENERATOR_SAMPLES = TableSpec(
    "protected",
    "generator_samples",
    pa.schema(SYNTHETIC_COLUMNS),
    ("date",),
    "The synthetic refresh's free baseline: round 0's samples written from the label prompts alone (no private "
    "data read, no budget), ceil(N_syn / labels) per label; evaluate scores them beside the table. Never published.",
)

PUBLISHED_SYNTHETIC_DOCUMENTS = TableSpec(
    "published",
    "synthetic_documents",
    pa.schema(SYNTHETIC_COLUMNS),
    ("date",),
    "Published synthetic documents (evaluated, ledger-charged).",
)

NOISY_CENTERS = TableSpec(
    "protected",
    "noisy_centers",
    pa.schema(
        [
            ("run_id", STR),
            ("round", pa.int32()),
            ("label", STR),
            ("center_id", pa.int32()),
            ("noisy_count", pa.float64()),
            ("center", F32_VECTOR),
            ("date", DATE),
        ]
    ),
    ("date",),
    "SecretClustering releases per round (noisy counts and centres, Alg. 2 / Eq. 7).",
)

UTILITY_REPORTS = TableSpec(
    "protected",
    "utility_reports",
    pa.schema(
        [
            ("target", STR),
            ("method", STR),
            ("metric", STR),
            ("value", pa.float64()),
            ("details", STR),
            ("run_id", STR),
            ("date", DATE),
        ]
    ),
    ("date",),
    "Utility metrics of a release (FID, length statistics, downstream accuracy...).",
)

EPS_FRONTIER = TableSpec(
    "protected",
    "eps_frontier",
    pa.schema(
        [
            ("target", STR),
            ("source", STR),  # tune: privtext tune sanitize's grid; retune: the nightly loop's rounds
            ("eps_pii", pa.float64()),
            ("eps_poii", pa.float64()),
            ("violation_ratio", pa.float64()),
            ("utility_loss", pa.float64()),  # tune: expected cosine loss (Eq. 14); retune: 1 - semantic similarity
            ("chosen", pa.bool_()),  # tune: the recommended point; retune: the setting staged for publishing
            ("run_id", STR),
            ("date", DATE),
        ]
    ),
    ("date",),
    "The sanitizer's eps -> leakage / utility points AmPL measured for a date (aggregates only).",
)

WORD_VECTOR_COLUMNS = [("word", STR), ("vector", F32_VECTOR), ("model_version", STR), ("run_id", STR)]

STAGED_WORD_VECTORS = TableSpec(
    "protected",
    "word_vectors",
    pa.schema(WORD_VECTOR_COLUMNS + [("method", STR), ("date", DATE)]),
    ("date",),
    "DPED word embeddings (the student's vectors, (eps, delta)-DP, ledger-charged), staged by train_dped.",
)

WORD_VECTORS = TableSpec(
    "published",
    "word_vectors",
    pa.schema(WORD_VECTOR_COLUMNS),
    ("model_version",),
    "DPED word embeddings (the student's vectors), published from the staged model versions.",
)

ERASURES = TableSpec(
    "protected",
    "erasures",
    pa.schema(
        [
            ("erasure_id", STR),  # one per privtext forget / retention run
            ("kind", STR),  # user | doc (a keyed subject) | retention (raw text older than a date)
            ("subject_key", STR),  # pii.hashing.subject_key: HMAC of the id, never the id; null for retention
            ("status", STR),  # tombstoned (written first: ingest quarantines the subject as `erased`) | erased
            ("rows", pa.map_(STR, pa.int64())),  # rows deleted per table (erased rows only)
            ("before", DATE),  # retention: data dates before this one were erased
            ("created_at", pa.timestamp("us", tz="UTC")),
        ]
    ),
    (),
    "Erasures (privtext forget, retention): keyed subject ids and row counts per table, no raw value; the "
    "tombstones ingest checks.",
)

ALL_TABLES: tuple[TableSpec, ...] = (
    DOCUMENTS, QUARANTINE, PRIVACY_LEDGER, PII_SPANS, DOC_EMBEDDINGS,
    STAGED_SANITIZED_DOCUMENTS, PUBLISHED_SANITIZED_DOCUMENTS, LEAKAGE_AUDITS,
    STAGED_SYNTHETIC_DOCUMENTS, PUBLISHED_SYNTHETIC_DOCUMENTS, GENERATOR_SAMPLES, NOISY_CENTERS, UTILITY_REPORTS,
    EPS_FRONTIER,
    STAGED_WORD_VECTORS, WORD_VECTORS, ERASURES,
)
