"""Delta tables through Spark + delta-rs, without the Delta Spark jars.

Writes: Spark executors write Parquet files into the table folder inside ``mapInArrow``, streaming
per partition key with a row/byte cap per file, and return one metadata row per file (relative
path, size, partition values, numRecords/minValues/maxValues/nullCount stats). The driver commits
them in ONE delta-rs transaction: create, append, or overwrite with partition filters (Delta's
replaceWhere). Driver state is O(files), never O(rows).

Reads: the snapshot's file list (``DeltaTable.file_uris()``, any ``version=``) goes to
``spark.read.schema(...).option("basePath", root).parquet(...)``.

Guards delta-rs does not give: the written schema must equal the table's (a write never changes
table metadata); every added file must lie inside the partition filter it replaces; tables with
deletion vectors or column mapping are refused; tables are created once, by ``create_tables``.
Files written by a failed write are deleted before the error is raised, so nothing partial is left
visible (they were never committed) or lying around; files of a killed write (no error handler ran)
are deleted by the table's next commit once ``ORPHAN_MIN_HOURS`` old (``_remove_orphans``).

String min/max statistics are not written: table logs would otherwise carry text prefixes.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import time
import uuid
from dataclasses import dataclass, field
from typing import Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from deltalake import DeltaTable, Schema as DeltaSchema
from deltalake.exceptions import CommitFailedError, DeltaError, TableNotFoundError
from deltalake.transaction import AddAction, CommitProperties, Transaction, create_table_with_add_actions
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

from privtext.errors import PrivtextError
from privtext.platform.config import ZONES, LakehouseSettings
from privtext.platform.leases import stage_lease

FILE_META_SCHEMA = pa.schema(
    [
        ("path", pa.string()),
        ("size", pa.int64()),
        ("partition_values", pa.string()),
        ("modification_time", pa.int64()),
        ("stats", pa.string()),
    ]
)
_STATS_TYPES = (pa.types.is_integer, pa.types.is_floating, pa.types.is_date, pa.types.is_timestamp, pa.types.is_boolean)


CREATE_WAIT_S = 120  # how long a process waits for another one creating tables
ORPHAN_MIN_HOURS = 24  # files of writes never committed are removed only once this old (a write may be in flight)


class LakehouseError(PrivtextError, RuntimeError):
    """A refused or failed table operation (schema mismatch, bad partition, conflict...)."""


@dataclass(frozen=True)
class TableSpec:
    """A Delta table: zone, name, Arrow schema (source of truth) and partition columns."""

    zone: str
    name: str
    schema: pa.Schema
    partition_by: tuple[str, ...] = ()
    description: str = ""

    def __post_init__(self):
        if self.zone not in ZONES:
            raise LakehouseError(f"unknown zone {self.zone!r}; allowed: {', '.join(ZONES)}")
        missing = [c for c in self.partition_by if c not in self.schema.names]
        if missing:
            raise LakehouseError(f"{self.qualified_name}: partition columns {missing} not in the schema")

    @property
    def qualified_name(self) -> str:
        return f"{self.zone}.{self.name}"

    @property
    def data_schema(self) -> pa.Schema:
        """Columns stored in the Parquet files (partition values live in the log and the path)."""
        return pa.schema([f for f in self.schema if f.name not in self.partition_by])

    @property
    def date_column(self) -> str | None:
        """The partition column holding the data date (``date``, ``ingest_date``), if any."""
        return next((c for c in self.partition_by if pa.types.is_date(self.schema.field(c).type)), None)


@dataclass
class WriteResult:
    version: int
    files: int
    rows: int
    removed_files: int = 0
    paths: list[str] = field(default_factory=list)


def _normalize(schema: pa.Schema) -> pa.Schema:
    """The schema as delta-rs stores it (what a round trip through the Delta log gives)."""
    return pa.schema(DeltaSchema.from_arrow(schema).to_arrow())


def _schema_diff(expected: pa.Schema, actual: pa.Schema) -> str:
    exp = {f.name: f.type for f in _normalize(expected)}
    act = {f.name: f.type for f in _normalize(actual)}
    problems = [f"missing column {n!r}" for n in exp if n not in act]
    problems += [f"unexpected column {n!r}" for n in act if n not in exp]
    problems += [f"column {n!r} is {act[n]}, table has {exp[n]}" for n in exp if n in act and exp[n] != act[n]]
    return "; ".join(problems)


def _partition_path(partition_values: dict[str, str | None]) -> str:
    return "/".join(f"{k}={'__HIVE_DEFAULT_PARTITION__' if v is None else v}" for k, v in partition_values.items())


def _json_scalar(value):
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


class _FileStats:
    """numRecords, minValues, maxValues, nullCount over the batches of one file."""

    def __init__(self, schema: pa.Schema):
        self.columns = [f.name for f in schema if any(t(f.type) for t in _STATS_TYPES)]
        self.all_columns = [f.name for f in schema if not pa.types.is_nested(f.type)]
        self.rows = 0
        self.mins: dict = {}
        self.maxs: dict = {}
        self.nulls = {c: 0 for c in self.all_columns}

    def update(self, batch: pa.RecordBatch) -> None:
        self.rows += batch.num_rows
        for name in self.all_columns:
            self.nulls[name] += batch.column(name).null_count
        for name in self.columns:
            mm = pc.min_max(batch.column(name))
            lo, hi = mm["min"].as_py(), mm["max"].as_py()
            if lo is not None:
                self.mins[name] = lo if name not in self.mins else min(self.mins[name], lo)
                self.maxs[name] = hi if name not in self.maxs else max(self.maxs[name], hi)

    def to_json(self) -> str:
        return json.dumps(
            {
                "numRecords": self.rows,
                "minValues": {k: _json_scalar(v) for k, v in self.mins.items()},
                "maxValues": {k: _json_scalar(v) for k, v in self.maxs.items()},
                "nullCount": self.nulls,
            }
        )


def _file_writer_task(table_root: str, spec: TableSpec, max_rows: int, max_bytes: int, prefix: str):
    """The ``mapInArrow`` function: stream batches into per-partition Parquet files, yield their metadata."""
    data_schema = spec.data_schema
    partition_by = list(spec.partition_by)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        open_files: dict[tuple, dict] = {}
        finished: list[dict] = []

        def close(key):
            entry = open_files.pop(key)
            entry["writer"].close()
            size = os.path.getsize(entry["abs_path"])
            finished.append(
                {
                    "path": entry["rel_path"],
                    "size": size,
                    "partition_values": json.dumps(entry["partition_values"]),
                    "modification_time": int(time.time() * 1000),
                    "stats": entry["stats"].to_json(),
                }
            )

        def writer_for(key, partition_values):
            if key not in open_files:
                folder = _partition_path(partition_values)
                rel_path = f"{folder + '/' if folder else ''}{prefix}-{uuid.uuid4().hex}.parquet"
                abs_path = os.path.join(table_root, rel_path)
                os.makedirs(os.path.dirname(abs_path), exist_ok=True)
                open_files[key] = {
                    "rel_path": rel_path,
                    "abs_path": abs_path,
                    "partition_values": partition_values,
                    "writer": pq.ParquetWriter(abs_path, data_schema, compression="zstd"),
                    "stats": _FileStats(data_schema),
                    "bytes": 0,
                }
            return open_files[key]

        for batch in batches:
            if batch.num_rows == 0:
                continue
            table = pa.Table.from_batches([batch])
            if partition_by:
                keys = table.select(partition_by).group_by(partition_by).aggregate([]).to_pylist()
            else:
                keys = [{}]
            for key_values in keys:
                part = table
                for col, value in key_values.items():
                    part = part.filter(pc.is_null(part[col]) if value is None else pc.equal(part[col], value))
                partition_values = {c: (None if key_values[c] is None else str(_json_scalar(key_values[c]))) for c in partition_by}
                key = tuple(partition_values.values())
                data = part.select(data_schema.names).cast(data_schema)
                for chunk in data.to_batches(max_chunksize=max(1, min(max_rows, 65536))):
                    entry = writer_for(key, partition_values)
                    entry["writer"].write_batch(chunk)
                    entry["stats"].update(chunk)
                    entry["bytes"] += chunk.nbytes
                    if entry["stats"].rows >= max_rows or entry["bytes"] >= max_bytes:
                        close(key)
        for key in list(open_files):
            close(key)
        if finished:
            yield pa.RecordBatch.from_pylist(finished, schema=FILE_META_SCHEMA)

    return run


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

    def exists(self, spec: TableSpec) -> bool:
        return DeltaTable.is_deltatable(self.table_uri(spec))

    def delta_table(self, spec: TableSpec, version: int | None = None) -> DeltaTable:
        try:
            table = DeltaTable(self.table_uri(spec), version=version)
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
        diff = _schema_diff(spec.schema, pa.schema(table.schema().to_arrow()))
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
        if DeltaTable.is_deltatable(uri):
            self.delta_table(spec)
            return False
        with stage_lease(self.settings, "create-tables", uuid.uuid4().hex, wait_s=CREATE_WAIT_S):
            if DeltaTable.is_deltatable(uri):  # created by another process while we waited
                self.delta_table(spec)
                return False
            if "://" not in uri:
                os.makedirs(uri, exist_ok=True)
            create_table_with_add_actions(
                uri,
                DeltaSchema.from_arrow(spec.schema),
                [],
                mode="error",
                partition_by=list(spec.partition_by) or None,
                name=spec.name,
                description=spec.description or None,
            )
        return True

    def create_tables(self, specs) -> list[str]:
        """Create the zone's missing tables (see ``create``); returns their names."""
        return [spec.qualified_name for spec in specs if self.create(spec)]

    # -- reads --------------------------------------------------------------------------------
    def read(self, spec: TableSpec, version: int | None = None, *, date: dt.date | None = None,
             since: dt.date | None = None, upto: dt.date | None = None) -> DataFrame:
        """The table (at ``version``); ``date`` keeps that data date's partition, ``since``/``upto`` the
        partitions from/up to a date (inclusive), on the spec's ``date_column``."""
        table = self.delta_table(spec, version)
        df = self._read_files(spec, table.file_uris())
        bounds = [(op, d) for op, d in (("==", date), (">=", since), ("<=", upto)) if d is not None]
        if bounds and spec.date_column is None:
            raise LakehouseError(f"{spec.qualified_name} has no date partition column to read by date")
        for op, day in bounds:
            if not isinstance(day, dt.date) or isinstance(day, dt.datetime):
                raise LakehouseError(f"reading {spec.qualified_name} by date needs a datetime.date, got {day!r}")
            column, value = F.col(spec.date_column), F.lit(day)
            df = df.where(column == value if op == "==" else column >= value if op == ">=" else column <= value)
        return df

    def _read_files(self, spec: TableSpec, uris: list[str]) -> DataFrame:
        spark_schema = from_arrow_schema(spec.schema)
        if not uris:
            return self.spark.createDataFrame([], spark_schema)
        df = self.spark.read.schema(spark_schema).option("basePath", self.table_uri(spec)).parquet(*uris)
        return df.select(*spec.schema.names)

    def partition_rows(self, spec: TableSpec, partition_values: dict[str, list]) -> int:
        """Rows the current snapshot holds in the given partitions (from the log's file statistics)."""
        files = self._files_matching(self.delta_table(spec), _partition_filters(spec, partition_values))
        return sum(int(f["num_records"]) for f in files)

    def version(self, spec: TableSpec) -> int:
        return self.delta_table(spec).version()

    # -- writes -------------------------------------------------------------------------------
    def _check_frame(self, spec: TableSpec, df: DataFrame) -> DataFrame:
        incoming = to_arrow_schema(df.schema, timezone="UTC")
        diff = _schema_diff(spec.schema, incoming)
        if diff:
            raise LakehouseError(f"schema mismatch writing {spec.qualified_name}: {diff}")
        return df.select(*spec.schema.names)

    def _write_files(self, spec: TableSpec, df: DataFrame) -> list[dict]:
        self._check_writer(spec)
        df = self._check_frame(spec, df)
        if spec.partition_by:
            df = df.repartition(*spec.partition_by)
        prefix = f"part-{uuid.uuid4().hex[:8]}"
        task = _file_writer_task(
            self.table_uri(spec), spec, self.settings.max_file_rows, self.settings.max_file_bytes, prefix
        )
        spark_meta_schema = from_arrow_schema(FILE_META_SCHEMA)
        rows = df.mapInArrow(task, spark_meta_schema).collect()
        return [row.asDict() for row in rows]

    def _delete_files(self, spec: TableSpec, files: list[dict]) -> None:
        root = self.table_uri(spec)
        for meta in files:
            if "://" not in root:
                try:
                    os.remove(os.path.join(root, meta["path"]))
                except FileNotFoundError:
                    pass

    @staticmethod
    def _add_actions(files: list[dict]) -> list[AddAction]:
        return [
            AddAction(
                path=meta["path"],
                size=meta["size"],
                partition_values=json.loads(meta["partition_values"]),
                modification_time=meta["modification_time"],
                data_change=True,
                stats=meta["stats"],
            )
            for meta in files
        ]

    def _commit(self, spec, table: DeltaTable, files, mode, partition_filters=None, operation="WRITE",
                guard: str | None = None, rebase: bool = False) -> WriteResult:
        """Commit ``files`` against the snapshot ``table`` was loaded at.

        ``guard`` names a serialization point: the commit carries a Delta application transaction
        (``txn``) for it, so two guarded commits from the same snapshot conflict and the later one
        fails with ``CommitFailedError`` instead of both passing (read-modify-write safety).
        With ``rebase`` (partition replaces, whose files do not depend on what they replace) a conflict
        is retried against a fresh snapshot up to ``lakehouse.commit_retries`` times: the replace then
        removes whatever the partitions hold by then, so the result is one set of rows.
        """
        attempts = self.settings.commit_retries + 1 if rebase else 1
        for attempt in range(attempts):
            removed = len(self._files_matching(table, partition_filters)) if mode == "overwrite" else 0
            app_transactions = None
            if guard is not None:
                app_transactions = [Transaction(guard, (table.transaction_version(guard) or 0) + 1)]
            try:
                table.create_write_transaction(
                    self._add_actions(files),
                    mode=mode,
                    schema=DeltaSchema.from_arrow(spec.schema),
                    partition_by=list(spec.partition_by) or None,
                    partition_filters=partition_filters,
                    commit_properties=CommitProperties(
                        custom_metadata={"privtext.operation": operation},
                        max_commit_retries=self.settings.commit_retries,
                        app_transactions=app_transactions,
                    ),
                )
                break
            except CommitFailedError:
                if attempt + 1 == attempts:
                    self._delete_files(spec, files)
                    raise
                table = self.delta_table(spec)
            except DeltaError:
                self._delete_files(spec, files)
                raise
        table.update_incremental()
        self._remove_orphans(spec, table)
        return WriteResult(
            version=table.version(),
            files=len(files),
            rows=sum(json.loads(m["stats"])["numRecords"] for m in files),
            removed_files=removed,
            paths=[m["path"] for m in files],
        )

    def _remove_orphans(self, spec: TableSpec, table: DeltaTable) -> int:
        """Delete the files of failed writes (killed, never committed) once ``ORPHAN_MIN_HOURS`` old: files in
        the table folder that no version of the log references. Younger ones may belong to a write still in
        flight (another date's, another process's) and are kept; files a commit removed are left to
        ``vacuum`` (time travel). Called after every commit, so the next write of a table cleans up."""
        args = {"retention_hours": ORPHAN_MIN_HOURS, "dry_run": True, "enforce_retention_duration": False}
        orphans = set(table.vacuum(**args, full=True)) - set(table.vacuum(**args))
        self._delete_files(spec, [{"path": path} for path in sorted(orphans)])
        return len(orphans)

    @staticmethod
    def _files_matching(table: DeltaTable, partition_filters) -> list[dict]:
        actions = pa.table(table.get_add_actions(flatten=True)).to_pylist()
        if not partition_filters:
            return actions
        keep = []
        for action in actions:
            if all(_filter_matches(action.get(f"partition.{col}"), op, val) for col, op, val in partition_filters):
                keep.append(action)
        return keep

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
                           snapshot: DeltaTable | None = None) -> WriteResult:
        """Replace the rows whose partition columns take the given values (replaceWhere), one commit.

        ``partition_values`` maps a partition column to the values being replaced, e.g.
        ``{"ingest_date": ["2026-11-21"]}``; every row of ``df`` must fall inside them. Two concurrent
        replaces of the same partitions always conflict (an application transaction per table and
        partitions), also on a partition's first write; a conflict with any concurrent commit is
        rebased on the new snapshot (see ``_commit``), so neither rows are doubled nor other dates lost.
        """
        filters = _partition_filters(spec, partition_values)
        table = snapshot if snapshot is not None else self.delta_table(spec)
        files = self._write_files(spec, df)
        try:
            _check_files_inside(spec, files, partition_values)
        except LakehouseError:
            self._delete_files(spec, files)
            raise
        guard = f"privtext.replace.{spec.qualified_name}.{json.dumps(filters, default=str)}"
        return self._commit(spec, table, files, "overwrite", filters, operation="REPLACE", guard=guard, rebase=True)

    def merge(self, spec: TableSpec, updates: DataFrame, keys: list[str], partition_column: str | None = None,
              combine=None) -> WriteResult:
        """Upsert ``updates`` by ``keys``: computed in Spark over the touched partitions, committed as one replace.

        The replace is committed from the snapshot that was read, so a concurrent commit to the same
        partitions makes this commit fail (and the caller's retry re-reads) instead of losing rows.
        ``combine(existing_matches, updates) -> DataFrame`` may fold existing rows into the updates
        (e.g. counters); by default an update row replaces the existing row with the same keys.
        Unpartitioned tables are rewritten whole. Conflicting commits are retried from a fresh
        snapshot up to ``lakehouse.commit_retries`` times.
        """
        for attempt in range(self.settings.commit_retries + 1):
            try:
                return self._merge_once(spec, updates, keys, partition_column, combine)
            except CommitFailedError:
                if attempt == self.settings.commit_retries:
                    raise

    def _merge_once(self, spec, updates, keys, partition_column, combine) -> WriteResult:
        table = self.delta_table(spec)
        current = self._read_files(spec, table.file_uris())
        updates = self._check_frame(spec, updates)
        if partition_column:
            touched = [r[0] for r in updates.select(partition_column).distinct().collect()]
            current = current.where(F.col(partition_column).isin(touched))
            partition_values = {partition_column: touched}
        else:
            partition_values = {}
        if combine is not None:
            matches = current.join(updates.select(*keys), on=keys, how="left_semi")
            updates = self._check_frame(spec, combine(matches, updates))
        kept = current.join(updates.select(*keys), on=keys, how="left_anti")
        merged = kept.unionByName(updates)
        files = self._write_files(spec, merged)
        filters = _partition_filters(spec, partition_values) if partition_values else None
        if partition_values:
            try:
                _check_files_inside(spec, files, partition_values)
            except LakehouseError:
                self._delete_files(spec, files)
                raise
        return self._commit(spec, table, files, "overwrite", filters, operation="MERGE",
                            guard=f"privtext.merge.{spec.qualified_name}")

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
        task = _file_writer_task(self.table_uri(spec), spec, self.settings.max_file_rows,
                                 self.settings.max_file_bytes, "rows")
        files = [m for batch in task(iter(data.to_batches())) for m in batch.to_pylist()]
        return self._commit(spec, table, files, "append", operation="APPEND", guard=guard)

    def read_rows(self, spec: TableSpec, snapshot: DeltaTable | None = None) -> pa.Table:
        """All rows of a small unpartitioned table, read from the snapshot's files with pyarrow."""
        if spec.partition_by:
            raise LakehouseError(f"{spec.qualified_name}: read_rows is for small unpartitioned tables; use read()")
        table = snapshot if snapshot is not None else self.delta_table(spec)
        parts = [pq.read_table(uri, schema=spec.schema) for uri in table.file_uris()]
        return pa.concat_tables(parts) if parts else spec.schema.empty_table()

    # -- catalog ------------------------------------------------------------------------------
    def register_views(self, specs) -> list[str]:
        """Expose each table as ``<zone>.<name>`` in the Spark catalog (a view over its current snapshot)."""
        registered = []
        for spec in specs:
            if not self.exists(spec):
                continue
            self.spark.sql(f"CREATE DATABASE IF NOT EXISTS {spec.zone}")
            self.spark.sql(f"CREATE OR REPLACE VIEW {spec.zone}.{spec.name} AS {self._snapshot_sql(spec)}")
            registered.append(spec.qualified_name)
        return registered

    def _snapshot_sql(self, spec: TableSpec) -> str:
        """SQL over the snapshot's live files: the table folder filtered to the snapshot's file names."""
        spark_schema = from_arrow_schema(spec.schema)
        cols = ", ".join(f"CAST(`{f.name}` AS {f.dataType.simpleString()}) AS `{f.name}`" for f in spark_schema.fields)
        live = [os.path.basename(a["path"]) for a in self._files_matching(self.delta_table(spec), None)]
        if not live:
            return f"SELECT {', '.join(f'CAST(NULL AS {f.dataType.simpleString()}) AS `{f.name}`' for f in spark_schema.fields)} WHERE 1 = 0"
        names = ", ".join(f"'{name}'" for name in live)
        return f"SELECT {cols} FROM parquet.`{self.table_uri(spec)}` WHERE _metadata.file_name IN ({names})"


def _partition_filters(spec: TableSpec, partition_values: dict[str, list]) -> list[tuple]:
    filters = []
    for column, values in partition_values.items():
        if column not in spec.partition_by:
            raise LakehouseError(
                f"{spec.qualified_name}: {column!r} is not a partition column; partition columns: {list(spec.partition_by)}"
            )
        values = [str(_json_scalar(v)) for v in values]
        if not values:
            raise LakehouseError(f"{spec.qualified_name}: no partition values given for {column!r}")
        filters.append((column, "in", values) if len(values) > 1 else (column, "=", values[0]))
    return filters


def _filter_matches(actual, op, expected) -> bool:
    actual = None if actual is None else str(_json_scalar(actual))
    return actual in expected if op == "in" else actual == expected


def _check_files_inside(spec: TableSpec, files: list[dict], partition_values: dict[str, list]) -> None:
    allowed = {col: {str(_json_scalar(v)) for v in values} for col, values in partition_values.items()}
    for meta in files:
        values = json.loads(meta["partition_values"])
        for col, ok in allowed.items():
            if values.get(col) not in ok:
                raise LakehouseError(
                    f"{spec.qualified_name}: refusing to commit a file with {col}={values.get(col)!r} "
                    f"outside the replaced partitions {sorted(ok)}"
                )
