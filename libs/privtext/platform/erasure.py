"""Erasure in the Delta tables: delete the rows a condition selects, then delete the files that held them, so
that no version of the table (time travel) can read them back, on a local zone and on an object store alike.

``delete_where`` rewrites each date partition holding a selected row without it: one partition replace
(``Lakehouse.replace_partitions``) per date, computed from one snapshot and claiming the same application
transaction as any other replace of that partition (ingest's, a stage rerun's), so a concurrent rewrite of
the same date makes one of the two fail and the erasure re-reads and retries instead of overwriting it.
``purge`` then vacuums the table with a retention of 0: the files the rewrites removed are deleted now.

Not delta-rs ``DELETE``: its commit records the predicate, i.e. the subject's ids, in the table's log, which
no vacuum removes. A replace's commit carries only ``privtext.operation``, and the log's file statistics hold
no string values (``table_files``), so after the purge no byte of the erased rows is left in the table folder.
Readers of a snapshot older than the purge lose its removed files (their read fails; they rerun).
"""
from __future__ import annotations

import json

from deltalake.exceptions import CommitFailedError
from pyspark.sql import Column, functions as F

from privtext.platform.lakehouse import Lakehouse
from privtext.platform.table_spec import LakehouseError, TableSpec, partition_filters
from privtext.platform.tables import ERASURES

ERASE_RETRIES = 5  # a partition rewritten concurrently (another run's replace) is re-read and retried this often


def replace_guard(spec: TableSpec, partition_values: dict[str, list]) -> str:
    """The application transaction every replace of these partitions claims (``Lakehouse.replace_partitions``)."""
    filters = json.dumps(partition_filters(spec, partition_values), default=str)
    return f"privtext.replace.{spec.qualified_name}.{filters}"


def _selected(condition: Column) -> Column:
    return F.coalesce(condition, F.lit(False))


def matches(lakehouse: Lakehouse, spec: TableSpec, condition: Column, key: Column, version: int | None = None,
            upto=None) -> dict:
    """{date: {key: rows}} of the rows ``condition`` selects (``key`` names each row's subject), in the data dates
    up to ``upto`` (all without it: only those partitions' files are read)."""
    date = spec.date_column
    rows = (lakehouse.read(spec, version, upto=upto).where(_selected(condition))
            .groupBy(F.col(date).alias("_date"), key.cast("string").alias("_key")).count().collect())
    found: dict = {}
    for r in rows:
        found.setdefault(r["_date"], {})[r["_key"]] = r["count"]
    return found


def _erase_date(lakehouse: Lakehouse, spec: TableSpec, condition: Column, key: Column, day, snapshot,
                counts: dict[str, int]) -> dict[str, int]:
    """Rewrite one date partition of ``snapshot`` without the selected rows (``counts`` of them per key); on a
    conflict, re-read the table and retry. Returns the rows deleted per key."""
    partition = {spec.date_column: [day]}
    for _ in range(ERASE_RETRIES + 1):
        if snapshot is None:  # a concurrent commit claimed the partition: re-read it
            snapshot = lakehouse.delta_table(spec)
            counts = {r["_key"]: r["count"] for r in lakehouse.read(spec, snapshot.version(), date=day)
                      .where(_selected(condition)).groupBy(key.cast("string").alias("_key")).count().collect()}
        if not counts:
            return {}
        kept = lakehouse.read(spec, snapshot.version(), date=day).where(~_selected(condition))
        try:
            lakehouse.replace_partitions(spec, kept, partition, snapshot=snapshot, claim=replace_guard(spec, partition))
            return counts
        except CommitFailedError:
            snapshot = None
    raise LakehouseError(f"{spec.qualified_name} {day}: the partition was rewritten by another run "
                         f"{ERASE_RETRIES + 1} times while erasing; rerun the erasure")


def delete_where(lakehouse: Lakehouse, spec: TableSpec, condition: Column, key: Column, upto=None) -> dict[str, int]:
    """Delete the rows of ``spec`` (a date-partitioned table) that ``condition`` selects (in the dates up to
    ``upto``): each date holding one is rewritten without them, one commit per date, from one snapshot. Returns
    the rows deleted per ``key`` value. The old files stay readable by time travel until ``purge``."""
    if spec.date_column is None:
        raise LakehouseError(f"{spec.qualified_name}: erasure rewrites date partitions; the table has none")
    snapshot = lakehouse.delta_table(spec)
    deleted: dict[str, int] = {}
    for day, counts in sorted(matches(lakehouse, spec, condition, key, snapshot.version(), upto).items()):
        for k, n in _erase_date(lakehouse, spec, condition, key, day, snapshot, counts).items():
            deleted[k] = deleted.get(k, 0) + n
    return deleted


def purge(lakehouse: Lakehouse, spec: TableSpec) -> int:
    """Delete now every file no current version of the table references (vacuum, retention 0): older versions
    can no longer be read. Files of writes still in flight (never committed) are left alone. Returns the count."""
    return lakehouse.vacuum(spec, 0)["removed"]


def raw_record_ids(raw: Column) -> tuple[Column, Column]:
    """(user_id, doc_id) a raw input record (``restricted.quarantine.raw_record``) carries: its JSON fields, else
    the text of a ``"user_id": "..."`` field of a line that is not valid JSON. CSV rows name no fields: null."""
    return tuple(F.coalesce(F.get_json_object(raw, f"$.{name}"),
                            F.nullif(F.regexp_extract(raw, f'"{name}"' + r'\s*:\s*"((?:[^"\\]|\\.)*)"', 1), F.lit("")))
                 for name in ("user_id", "doc_id"))


def erasure_rows(lakehouse: Lakehouse) -> list[dict]:
    """The rows of ``protected.erasures`` (tombstones and records); none before the first erasure."""
    if not lakehouse.exists(ERASURES):
        return []
    return lakehouse.read_rows(ERASURES).to_pylist()


def tombstoned_keys(lakehouse: Lakehouse) -> frozenset[str]:
    """The keyed subject ids (``pii.hashing.subject_key``) an erasure has tombstoned: ingest quarantines them."""
    return frozenset(r["subject_key"] for r in erasure_rows(lakehouse) if r["subject_key"])
