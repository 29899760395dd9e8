"""Delta tables through Spark + delta-rs, without the Delta Spark jars: the ``Lakehouse`` facade.

Writes: Spark executors write Parquet files into the table folder inside ``mapInArrow`` through
``pyarrow.fs`` (``table_files``), and return one metadata row per file; the driver commits them in ONE
delta-rs transaction (``delta_commit``): create, append, or overwrite with partition filters (Delta's
replaceWhere). Driver state is O(files), never O(rows). Zones are local folders or object-store URIs
(``storage``: pyarrow.fs filesystems and delta-rs storage options from ``lakehouse.object_store``).

Reads: the snapshot's file list (``DeltaTable.file_uris()``, any ``version=``); local files go to Spark's
Parquet reader, object-store files are read by executors through ``pyarrow.fs`` (the pyspark package has no
Hadoop S3 connector, and none is needed).

Guards delta-rs does not give: the written schema must equal the table's (a write never changes
table metadata); every added file must lie inside the partition filter it replaces; tables with
deletion vectors or column mapping are refused; tables are created once, by ``create_tables``.
Files written by a failed write are deleted before the error is raised, so nothing partial is left
visible (they were never committed) or lying around; files of a killed write (no error handler ran)
are deleted by the table's next commit once ``ORPHAN_MIN_HOURS`` old (``_remove_orphans``).
Only a publisher handle (``as_publisher``; ``zones.publisher`` gives one to the ``publish`` stage)
writes the ``published`` zone.
"""
from __future__ import annotations

import datetime as dt
import json
import operator
import os
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable, Schema as DeltaSchema
from deltalake.exceptions import CommitFailedError, TableNotFoundError
from deltalake.transaction import create_table_with_add_actions
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

from privtext.platform import delta_commit, storage
from privtext.platform.config import LakehouseSettings
from privtext.platform.leases import LeaseLost, check_held, stage_lease
from privtext.platform.table_files import (
    FILE_META_SCHEMA,
    READ_SCHEMA,
    SnapshotFiles,
    file_reader_task,
    file_writer_task,
)
from privtext.platform.table_spec import (
    LakehouseError,
    TableSpec,
    WriteResult,
    check_files_inside,
    partition_filters,
    schema_diff,
)

__all__ = ["CREATE_WAIT_S", "ORPHAN_MIN_HOURS", "Lakehouse", "LakehouseError", "TableSpec", "WriteResult"]

CREATE_WAIT_S = 120  # how long a process waits for another one creating tables
ORPHAN_MIN_HOURS = 24  # files of writes never committed are removed only once this old (a write may be in flight)


class Lakehouse:
    """Delta tables of the three zones, read and written through Spark + delta-rs. Only a publisher
    handle (``as_publisher``; ``zones.publisher`` gives one to the ``publish`` stage) writes ``published``."""

    def __init__(self, spark: SparkSession, settings: LakehouseSettings, writes_published: bool = False):
        self.spark = spark
        self.settings = settings
        self.writes_published = writes_published

    def as_publisher(self) -> "Lakehouse":
        """This lakehouse as the writer of the ``published`` zone."""
        return Lakehouse(self.spark, self.settings, writes_published=True)

    def _check_writer(self, spec: TableSpec) -> None:
        if spec.zone == "published" and not self.writes_published:
            raise LakehouseError(f"{spec.qualified_name}: only the publish stage writes the published zone "
                                 "(zones.publisher); stage the rows in restricted/protected and publish them")

    # -- locations and metadata -------------------------------------------------------------
    def table_uri(self, spec: TableSpec) -> str:
        return f"{self.settings.zone_root(spec.zone)}/{spec.name}"

    def storage_options(self, spec: TableSpec) -> dict[str, str]:
        """delta-rs options of the table's zone (endpoint, region, commit mode; never credentials)."""
        return storage.delta_options(self.table_uri(spec), self.settings.zone_store(spec.zone))

    def exists(self, spec: TableSpec) -> bool:
        return DeltaTable.is_deltatable(self.table_uri(spec), self.storage_options(spec))

    def delta_table(self, spec: TableSpec, version: int | None = None) -> DeltaTable:
        try:
            table = DeltaTable(self.table_uri(spec), version=version, storage_options=self.storage_options(spec))
        except TableNotFoundError:
            raise LakehouseError(
                f"table {spec.qualified_name} does not exist at {self.table_uri(spec)}; "
                "run `privtext init` (or any stage) to create the zone's tables"
            ) from None
        self._check_supported(spec, table)
        return table

    def _check_supported(self, spec: TableSpec, table: DeltaTable) -> None:
        config = table.metadata().configuration or {}
        features = set(table.protocol().reader_features or []) | set(table.protocol().writer_features or [])
        if config.get("delta.enableDeletionVectors") == "true" or "deletionVectors" in features:
            raise LakehouseError(f"{spec.qualified_name}: tables with deletion vectors are not supported")
        if config.get("delta.columnMapping.mode", "none") != "none" or "columnMapping" in features:
            raise LakehouseError(f"{spec.qualified_name}: tables with column mapping are not supported")
        diff = schema_diff(spec.schema, pa.schema(table.schema().to_arrow()))
        if diff:
            raise LakehouseError(f"{spec.qualified_name}: stored schema differs from the code's: {diff}")
        if list(table.metadata().partition_columns) != list(spec.partition_by):
            raise LakehouseError(
                f"{spec.qualified_name}: stored partitioning {table.metadata().partition_columns} "
                f"differs from the code's {list(spec.partition_by)}"
            )

    def create(self, spec: TableSpec) -> bool:
        """Create the table once (empty). Returns False if it already exists (after checking it).

        delta-rs must not race on table creation (two creators both commit a CREATE TABLE): a missing
        table is created under the lakehouse's ``create-tables`` lease, other processes wait for it.
        """
        uri = self.table_uri(spec)
        if self.exists(spec):
            self.delta_table(spec)
            return False
        with stage_lease(self.settings, "create-tables", uuid.uuid4().hex, wait_s=CREATE_WAIT_S):
            if self.exists(spec):  # created by another process while we waited
                self.delta_table(spec)
                return False
            if storage.is_local(uri):
                os.makedirs(uri, exist_ok=True)
            create_table_with_add_actions(
                uri,
                DeltaSchema.from_arrow(spec.schema),
                [],
                mode="error",
                partition_by=list(spec.partition_by) or None,
                name=spec.name,
                description=spec.description or None,
                storage_options=self.storage_options(spec),
            )
        return True

    def create_tables(self, specs) -> list[str]:
        """Create the zone's missing tables (see ``create``); returns their names."""
        return [spec.qualified_name for spec in specs if self.create(spec)]

    # -- reads --------------------------------------------------------------------------------
    def read(self, spec: TableSpec, version: int | None = None, *, date: dt.date | None = None,
             since: dt.date | None = None, upto: dt.date | None = None) -> DataFrame:
        """The table (at ``version``); ``date`` keeps that data date's partition, ``since``/``upto`` the
        partitions from/up to a date (inclusive), on the spec's ``date_column``. Only those partitions'
        files are read (chosen from the log), so a read of a few dates costs the same however many
        dates the table holds, on a local zone and on an object store alike."""
        bounds = [(op, d) for op, d in ((operator.eq, date), (operator.ge, since), (operator.le, upto))
                  if d is not None]
        if bounds and spec.date_column is None:
            raise LakehouseError(f"{spec.qualified_name} has no date partition column to read by date")
        for _, day in bounds:
            if not isinstance(day, dt.date) or isinstance(day, dt.datetime):
                raise LakehouseError(f"reading {spec.qualified_name} by date needs a datetime.date, got {day!r}")
        actions = delta_commit.files_matching(self.delta_table(spec, version), None)
        if bounds:
            column = f"partition.{spec.date_column}"
            actions = [a for a in actions if a.get(column) is not None
                       and all(op(a[column], day) for op, day in bounds)]
        return self._read_files(spec, actions)

    def _read_files(self, spec: TableSpec, actions: list[dict]) -> DataFrame:
        """Rows of these files of the snapshot: local files through Spark's Parquet reader, others
        through pyarrow.fs tasks."""
        spark_schema = from_arrow_schema(spec.schema)
        if not actions:
            return self.spark.createDataFrame([], spark_schema)
        root = self.table_uri(spec)
        if storage.is_local(root):
            uris = [f"{root}/{a['path']}" for a in actions]
            return (self.spark.read.schema(spark_schema).option("basePath", root).parquet(*uris)
                    .select(*spec.schema.names))
        files = self._file_list(spec, actions)
        slices = min(len(files), 4 * self.spark.sparkContext.defaultParallelism)
        listing = self.spark.sparkContext.parallelize(files, slices).toDF(from_arrow_schema(READ_SCHEMA))
        return listing.mapInArrow(file_reader_task(self.settings.zone_store(spec.zone), spec), spark_schema)

    def partition_rows(self, spec: TableSpec, partition_values: dict[str, list]) -> int:
        """Rows the current snapshot holds in the given partitions (from the log's file statistics)."""
        files = delta_commit.files_matching(self.delta_table(spec), partition_filters(spec, partition_values))
        return sum(int(f["num_records"]) for f in files)

    def version(self, spec: TableSpec) -> int:
        return self.delta_table(spec).version()

    # -- writes -------------------------------------------------------------------------------
    def _check_frame(self, spec: TableSpec, df: DataFrame) -> DataFrame:
        incoming = to_arrow_schema(df.schema, timezone="UTC")
        diff = schema_diff(spec.schema, incoming)
        if diff:
            raise LakehouseError(f"schema mismatch writing {spec.qualified_name}: {diff}")
        return df.select(*spec.schema.names)

    def _write_files(self, spec: TableSpec, df: DataFrame) -> list[dict]:
        self._check_writer(spec)
        df = self._check_frame(spec, df)
        if spec.partition_by:
            df = df.repartition(*spec.partition_by)
        task = self._writer(spec, f"part-{uuid.uuid4().hex[:8]}")
        rows = df.mapInArrow(task, from_arrow_schema(FILE_META_SCHEMA)).collect()
        return [row.asDict() for row in rows]

    def _writer(self, spec: TableSpec, prefix: str):
        return file_writer_task(self.table_uri(spec), self.settings.zone_store(spec.zone), spec,
                                self.settings.max_file_rows, self.settings.max_file_bytes, prefix)

    def _delete_files(self, spec: TableSpec, files: list[dict]) -> None:
        storage.delete_files(self.table_uri(spec), self.settings.zone_store(spec.zone), [m["path"] for m in files])

    def _commit(self, spec, table: DeltaTable, files, mode, partition_filters=None, operation="WRITE",
                guard: str | None = None, rebase: bool = False) -> WriteResult:
        """``delta_commit.commit`` with this lakehouse's retries; failed writes' files are deleted. Refused
        (``LeaseLost``, files deleted) when the stage lease this run holds is no longer its own."""
        try:
            check_held()
        except LeaseLost:
            self._delete_files(spec, files)
            raise
        result = delta_commit.commit(spec, table, files, mode, retries=self.settings.commit_retries,
                                     reload=lambda: self.delta_table(spec),
                                     discard=lambda failed: self._delete_files(spec, failed),
                                     partition_filters=partition_filters, operation=operation, guard=guard,
                                     rebase=rebase)
        self._remove_orphans(spec, self.delta_table(spec))
        return result

    def _remove_orphans(self, spec: TableSpec, table: DeltaTable) -> int:
        """Delete the files of failed writes (killed, never committed) once ``ORPHAN_MIN_HOURS`` old: files in
        the table folder that no version of the log references. Younger ones may belong to a write still in
        flight (another date's, another process's) and are kept; files a commit removed are left to
        ``vacuum`` (time travel). Called after every commit, so the next write of a table cleans up."""
        args = {"retention_hours": ORPHAN_MIN_HOURS, "dry_run": True, "enforce_retention_duration": False}
        orphans = set(table.vacuum(**args, full=True)) - set(table.vacuum(**args))
        self._delete_files(spec, [{"path": path} for path in sorted(orphans)])
        return len(orphans)

    def append(self, spec: TableSpec, df: DataFrame, guard: str | None = None,
               snapshot: DeltaTable | None = None) -> WriteResult:
        """Append the rows of ``df`` in one commit.

        With ``guard`` (and the ``snapshot`` the caller read its state from) the append conflicts with
        any other guarded commit made since that snapshot (see ``_commit``).
        """
        table = snapshot if snapshot is not None else self.delta_table(spec)
        files = self._write_files(spec, df)
        return self._commit(spec, table, files, "append", operation="APPEND", guard=guard)

    def replace_partitions(self, spec: TableSpec, df: DataFrame, partition_values: dict[str, list],
                           snapshot: DeltaTable | None = None, claim: str | None = None) -> WriteResult:
        """Replace the rows whose partition columns take the given values (replaceWhere), one commit.

        ``partition_values`` maps a partition column to the values being replaced, e.g.
        ``{"ingest_date": ["2026-11-21"]}``; every row of ``df`` must fall inside them. Two concurrent
        replaces of the same partitions always conflict (an application transaction per table and
        partitions), also on a partition's first write; a conflict with any concurrent commit is
        rebased on the new snapshot (see ``_commit``), so neither rows are doubled nor other dates lost.
        With ``claim`` (and the ``snapshot`` the caller computed ``df`` from) the replace is guarded by that
        name instead, not rebased: any other commit claiming it since ``snapshot``, whatever partitions it
        wrote, makes this one fail (``CommitFailedError``), so rows computed from a stale snapshot never land.
        """
        filters = partition_filters(spec, partition_values)
        table = snapshot if snapshot is not None else self.delta_table(spec)
        files = self._write_files(spec, df)
        try:
            check_files_inside(spec, files, partition_values)
        except LakehouseError:
            self._delete_files(spec, files)
            raise
        guard = claim or f"privtext.replace.{spec.qualified_name}.{json.dumps(filters, default=str)}"
        return self._commit(spec, table, files, "overwrite", filters, operation="REPLACE", guard=guard,
                            rebase=claim is None)

    # -- retention ----------------------------------------------------------------------------
    def vacuum(self, spec: TableSpec, retention_hours: int, dry_run: bool = False) -> dict[str, int]:
        """Delete the files no current version references: files a commit removed (a replaced partition,
        a withdrawn publication) once ``retention_hours`` old, and files of failed writes that were never
        committed once ``max(retention_hours, ORPHAN_MIN_HOURS)`` old. Older versions can then no longer
        be read (time travel ends at the retention)."""
        table = self.delta_table(spec)
        removed = table.vacuum(retention_hours, dry_run=dry_run, enforce_retention_duration=False)
        orphans = table.vacuum(max(retention_hours, ORPHAN_MIN_HOURS), dry_run=dry_run,
                               enforce_retention_duration=False, full=True)
        return {"removed": len(removed), "orphans": len(set(orphans) - set(removed))}

    # -- small driver-side tables (the ledger): no Spark needed -------------------------------
    def append_rows(self, spec: TableSpec, rows: list[dict], guard: str | None = None,
                    snapshot: DeltaTable | None = None) -> WriteResult:
        """Append a handful of rows written by the driver itself (same file writer, same commit path)."""
        self._check_writer(spec)
        table = snapshot if snapshot is not None else self.delta_table(spec)
        data = pa.Table.from_pylist(rows, schema=spec.schema)
        result = self._commit(spec, table, self._write_rows(spec, data), "append", operation="APPEND", guard=guard)
        self._compact_rows(spec, table)  # the commit brought ``table`` to its own version
        return result

    def _write_rows(self, spec: TableSpec, data: pa.Table) -> list[dict]:
        return [m for batch in self._writer(spec, "rows")(iter(data.to_batches())) for m in batch.to_pylist()]

    def _compact_rows(self, spec: TableSpec, table: DeltaTable) -> None:
        """Once a driver-side table holds ``lakehouse.compact_files`` files (one per commit), rewrite its rows
        into one file and checkpoint the log, so that reading it (the ledger: before every charge) costs a
        few files however many nights it has seen. The rewrite replaces exactly the files of the snapshot it
        read (an append committed meanwhile stays) and carries its own application transaction, so of two
        compactions of one snapshot the later fails and gives way. (delta-rs's OPTIMIZE let both land and
        doubled rows in a two-writer run.)"""
        if len(delta_commit.files_matching(table, None)) < self.settings.compact_files:
            return
        files = self._write_rows(spec, self.read_rows(spec, table))
        try:
            self._commit(spec, table, files, "overwrite", operation="COMPACT",
                         guard=f"privtext.compact.{spec.qualified_name}")
        except CommitFailedError:
            return
        table.create_checkpoint()  # at the compaction's version: the log is read from here, not from version 0

    def read_rows(self, spec: TableSpec, snapshot: DeltaTable | None = None) -> pa.Table:
        """All rows of a small unpartitioned table, read from the snapshot's files with pyarrow."""
        if spec.partition_by:
            raise LakehouseError(f"{spec.qualified_name}: read_rows is for small unpartitioned tables; use read()")
        table = snapshot if snapshot is not None else self.delta_table(spec)
        fs, root = storage.filesystem(self.table_uri(spec), self.settings.zone_store(spec.zone))
        parts = [pq.read_table(f"{root}/{a['path']}", filesystem=fs, schema=spec.schema)
                 for a in delta_commit.files_matching(table, None)]
        return pa.concat_tables(parts) if parts else spec.schema.empty_table()

    # -- catalog ------------------------------------------------------------------------------
    def register_views(self, specs) -> list[str]:
        """Expose each table as ``<zone>.<name>`` in the Spark catalog over its current snapshot: a view on a
        local zone, a ``privtext_files`` table (files read through pyarrow.fs) on an object-store zone."""
        registered = []
        for spec in specs:
            if not self.exists(spec):
                continue
            self.spark.sql(f"CREATE DATABASE IF NOT EXISTS {spec.zone}")
            if storage.is_local(self.table_uri(spec)):
                self.spark.sql(f"CREATE OR REPLACE VIEW {spec.zone}.{spec.name} AS {self._snapshot_sql(spec)}")
            else:
                self._register_files_table(spec)
            registered.append(spec.qualified_name)
        return registered

    def _file_list(self, spec: TableSpec, actions: list[dict]) -> list[tuple[str, str]]:
        """(uri, partition values as JSON) of each file (add action)."""
        root = self.table_uri(spec)
        return [(f"{root}/{a['path']}",
                 json.dumps({c: a.get(f"partition.{c}") for c in spec.partition_by}, default=str))
                for a in actions]

    def _register_files_table(self, spec: TableSpec) -> None:
        source = SnapshotFiles.for_snapshot(
            spec, self._file_list(spec, delta_commit.files_matching(self.delta_table(spec), None)),
            self.settings.zone_store(spec.zone))
        self.spark.dataSource.register(source)
        self.spark.sql(f"DROP TABLE IF EXISTS {spec.zone}.{spec.name}")
        self.spark.sql(f"CREATE TABLE {spec.zone}.{spec.name} USING {source.name()}")

    def _snapshot_sql(self, spec: TableSpec) -> str:
        """SQL over the snapshot's live files: the table folder filtered to the snapshot's file names."""
        spark_schema = from_arrow_schema(spec.schema)
        cols = ", ".join(f"CAST(`{f.name}` AS {f.dataType.simpleString()}) AS `{f.name}`" for f in spark_schema.fields)
        live = [os.path.basename(a["path"]) for a in delta_commit.files_matching(self.delta_table(spec), None)]
        if not live:
            nulls = ", ".join(f"CAST(NULL AS {f.dataType.simpleString()}) AS `{f.name}`" for f in spark_schema.fields)
            return f"SELECT {nulls} WHERE 1 = 0"
        names = ", ".join(f"'{name}'" for name in live)
        return f"SELECT {cols} FROM parquet.`{self.table_uri(spec)}` WHERE _metadata.file_name IN ({names})"

