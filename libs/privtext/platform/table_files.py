"""Table files, written and read by Spark executors (or the driver) through ``pyarrow.fs``, so a zone may be
a local folder or an object store (see ``storage``). Each executor builds its filesystem from the zone's
``ObjectStoreSettings`` it is sent; credentials come from its own environment.

Writes stream batches into per-partition Parquet files, capped in rows and bytes, and yield one metadata
row per file (relative path, size, partition values, numRecords/minValues/maxValues/nullCount; no
string min/max: table logs would otherwise carry text prefixes). Reads turn a snapshot's files into rows,
partition columns from the Delta log's partition values.
"""
from __future__ import annotations

import json
import time
import uuid
from typing import Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from privtext.platform.config import ObjectStoreSettings
from privtext.platform.storage import filesystem
from privtext.platform.table_spec import TableSpec, json_scalar, partition_path

FILE_META_SCHEMA = pa.schema(
    [
        ("path", pa.string()),
        ("size", pa.int64()),
        ("partition_values", pa.string()),
        ("modification_time", pa.int64()),
        ("stats", pa.string()),
    ]
)
READ_SCHEMA = pa.schema([("uri", pa.string()), ("partition_values", pa.string())])  # one row per file to read
_STATS_TYPES = (pa.types.is_integer, pa.types.is_floating, pa.types.is_date, pa.types.is_timestamp, pa.types.is_boolean)


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
                "minValues": {k: json_scalar(v) for k, v in self.mins.items()},
                "maxValues": {k: json_scalar(v) for k, v in self.maxs.items()},
                "nullCount": self.nulls,
            }
        )


def file_writer_task(table_root: str, store: ObjectStoreSettings, spec: TableSpec, max_rows: int, max_bytes: int,
                     prefix: str):
    """The ``mapInArrow`` function: stream batches into per-partition Parquet files, yield their metadata."""
    data_schema = spec.data_schema
    partition_by = list(spec.partition_by)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        fs, root = filesystem(table_root, store)
        open_files: dict[tuple, dict] = {}
        finished: list[dict] = []

        def close(key):
            entry = open_files.pop(key)
            entry["writer"].close()
            size = fs.get_file_info(entry["abs_path"]).size
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
                folder = partition_path(partition_values)
                rel_path = f"{folder + '/' if folder else ''}{prefix}-{uuid.uuid4().hex}.parquet"
                abs_path = f"{root}/{rel_path}"
                if fs.type_name == "local":  # object stores have no folders
                    fs.create_dir(abs_path.rsplit("/", 1)[0], recursive=True)
                open_files[key] = {
                    "rel_path": rel_path,
                    "abs_path": abs_path,
                    "partition_values": partition_values,
                    "writer": pq.ParquetWriter(abs_path, data_schema, compression="zstd", filesystem=fs),
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
                partition_values = {c: (None if key_values[c] is None else str(json_scalar(key_values[c])))
                                    for c in partition_by}
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


def read_file(uri: str, partition_values: str, store: ObjectStoreSettings, spec: TableSpec) -> pa.Table:
    """One table file's rows in ``spec.schema``: partition columns from the log's values (a JSON object)."""
    fs, path = filesystem(uri, store)
    data = pq.read_table(path, filesystem=fs, schema=spec.data_schema)
    values = json.loads(partition_values)
    for name in spec.partition_by:
        column = pa.array([values.get(name)] * data.num_rows, pa.string())
        data = data.append_column(name, column.cast(spec.schema.field(name).type))
    return data.select(spec.schema.names).cast(spec.schema)


def file_reader_task(store: ObjectStoreSettings, spec: TableSpec):
    """The ``mapInArrow`` function over ``READ_SCHEMA`` rows: each file's rows in ``spec.schema``."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for item in batch.to_pylist():
                yield from read_file(item["uri"], item["partition_values"], store, spec).to_batches()

    return run


class SnapshotFiles(DataSource):
    """A Spark data source over the files of one snapshot of one table, read by executors through pyarrow.fs
    (SQL over object-store zones). Spark does not pass a catalog table's OPTIONS to Python data sources, so
    each table gets its own subclass (``for_snapshot``) carrying its files, and its own source name."""

    source_name = "privtext_files"
    files: list = []  # [uri, partition values as JSON]
    store = ObjectStoreSettings()
    spec: TableSpec | None = None

    @classmethod
    def for_snapshot(cls, spec: TableSpec, files: list, store: ObjectStoreSettings) -> type:
        return type(f"SnapshotFiles_{spec.zone}_{spec.name}", (cls,),
                    {"source_name": f"privtext_files_{spec.zone}_{spec.name}", "files": list(files), "store": store,
                     "spec": spec})

    @classmethod
    def name(cls) -> str:
        return cls.source_name

    def schema(self):
        from pyspark.sql.pandas.types import from_arrow_schema

        return from_arrow_schema(self.spec.schema)

    def reader(self, schema) -> DataSourceReader:
        return _SnapshotReader(self.files, self.store, self.spec)


class _SnapshotReader(DataSourceReader):
    def __init__(self, files: list, store: ObjectStoreSettings, spec: TableSpec):
        self.files, self.store, self.spec = files, store, spec

    def partitions(self):
        return [InputPartition(tuple(item)) for item in self.files]

    def read(self, partition):
        uri, partition_values = partition.value
        yield from read_file(uri, partition_values, self.store, self.spec).to_batches()
