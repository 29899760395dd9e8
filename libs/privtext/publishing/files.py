"""An export date folder on a store: each publish writes its files into a fresh version folder, then renames
``manifest.json`` over the previous one (the commit) and removes the other versions. The order of the writes:
docs/products/export.md, "How publish runs"."""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import uuid

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from pyspark.sql.types import LongType, StringType, StructField, StructType

from privtext.platform.config import ObjectStoreSettings
from privtext.platform.storage import filesystem

FILE_SCHEMA = StructType([StructField(n, t) for n, t in (("path", StringType()), ("format", StringType()),
                                                         ("rows", LongType()), ("bytes", LongType()),
                                                         ("sha256", StringType()))])


def sha256(fs: pafs.FileSystem, path: str) -> str:
    digest = hashlib.sha256()
    with fs.open_input_stream(path) as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def export_task(folder_uri: str, store: ObjectStoreSettings, formats: tuple[str, ...], schema: pa.Schema):
    """``mapInArrow``: write this task's rows as one file per format, yield (path, format, rows, bytes, sha256)."""

    def run(batches):
        batches = [b for b in batches if b.num_rows]
        if not batches:
            return
        table = pa.Table.from_batches(batches).select(schema.names).cast(schema)
        fs, folder = filesystem(folder_uri, store)
        fs.create_dir(folder, recursive=True)
        name = f"part-{uuid.uuid4().hex}"
        out = []
        for fmt in formats:
            path = f"{folder}/{name}.{fmt}"
            if fmt == "parquet":
                pq.write_table(table, path, filesystem=fs, compression="zstd")
            else:
                with fs.open_output_stream(path) as stream:
                    for row in table.to_pylist():
                        line = json.dumps({k: v.isoformat() if isinstance(v, dt.date) else v for k, v in row.items()},
                                          ensure_ascii=False)
                        stream.write(line.encode("utf-8") + b"\n")
            out.append({"path": f"{name}.{fmt}", "format": fmt, "rows": table.num_rows,
                        "bytes": fs.get_file_info(path).size, "sha256": sha256(fs, path)})
        yield pa.RecordBatch.from_pylist(out, schema=pa.schema([("path", pa.string()), ("format", pa.string()),
                                                                ("rows", pa.int64()), ("bytes", pa.int64()),
                                                                ("sha256", pa.string())]))

    return run


def commit_manifest(fs: pafs.FileSystem, date_dir: str, manifest: dict) -> str:
    """Write ``manifest.json`` under a temporary name and rename it over the previous one (the commit)."""
    tmp = f"{date_dir}/_manifest-{uuid.uuid4().hex}.json"
    with fs.open_output_stream(tmp) as stream:
        stream.write(json.dumps(manifest, indent=2, sort_keys=True, default=str).encode())
    fs.move(tmp, f"{date_dir}/manifest.json")
    return f"{date_dir}/manifest.json"


def delete_dir(fs: pafs.FileSystem, path: str) -> None:
    if fs.get_file_info(path).type == pafs.FileType.Directory:
        fs.delete_dir(path)


def committed_by(fs: pafs.FileSystem, date_dir: str) -> str | None:
    """The publish run whose manifest is the date's committed one now."""
    with fs.open_input_stream(f"{date_dir}/manifest.json") as stream:
        return json.loads(stream.read()).get("publish_run_id")


def remove_other_versions(fs: pafs.FileSystem, date_dir: str, keep: str) -> None:
    for info in fs.get_file_info(pafs.FileSelector(date_dir)):
        if info.base_name != keep:
            delete_dir(fs, info.path)
