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
            ("created_at", pa.timestamp("us", tz="UTC")),
        ]
    ),
    (),
    "Append-only record of every privacy spend (JSON params/spend, serialized dp-accounting event).",
)

ALL_TABLES: tuple[TableSpec, ...] = (DOCUMENTS, QUARANTINE, PRIVACY_LEDGER)
