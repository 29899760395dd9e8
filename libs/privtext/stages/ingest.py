"""Stage ``ingest``: JSONL / CSV / Parquet files -> ``restricted.documents`` + ``restricted.quarantine``.

Columns: ``text`` (required), ``doc_id``, ``user_id``, ``label`` (optional); any other column is kept
in the ``metadata`` map. A missing ``doc_id`` becomes a keyed pseudonym: HMAC-SHA256 of the source
file name and the text under the run's key (``run.hmac_key_env``), never an unkeyed hash, which
anyone could recompute from a guessed file name and text (the doc_id is published). Bad records never stop the load: malformed JSON lines, CSV rows with the wrong field count,
null/blank text, invalid UTF-8, text longer than ``ingest.max_chars`` and duplicate ``doc_id``s
within the load go to the quarantine with a reason. A file with no ``text`` column at all fails
the run before anything is written. Both tables are written by replacing the date's partition, so a
rerun of a date never duplicates.
"""
from __future__ import annotations

import csv
import hashlib
import hmac
import io
import json
import os
from dataclasses import dataclass

import pandas as pd
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, LongType, MapType, StringType, StructField, StructType

from privtext.pii.hashing import load_hmac_key
from privtext.platform.context import RunContext
from privtext.platform.tables import DOCUMENTS, QUARANTINE

KNOWN_COLUMNS = ("doc_id", "user_id", "text", "label")
FORMATS = {".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".parquet": "parquet"}

PARSED_SCHEMA = StructType(
    [
        StructField("doc_id", StringType()),
        StructField("user_id", StringType()),
        StructField("text", StringType()),
        StructField("label", StringType()),
        StructField("metadata", MapType(StringType(), StringType())),
        StructField("source_file", StringType()),
        StructField("line_no", LongType()),
        StructField("raw_record", StringType()),
        StructField("reason", StringType()),
        StructField("file_has_text", BooleanType()),
    ]
)


class IngestError(ValueError):
    """The load cannot proceed (no input, unknown format, a file without a ``text`` column)."""


@dataclass
class IngestResult:
    documents: int
    quarantined: int
    reasons: dict[str, int]


def keyed_doc_id(key: bytes, source_file: str, text: str) -> str:
    """A doc_id for rows without one: HMAC-SHA256 (run key) of the source file name and the text (32 hex)."""
    message = f"{source_file}\x00{text}".encode("utf-8", "surrogatepass")
    return hmac.new(key, message, hashlib.sha256).hexdigest()[:32]


def _as_str(value) -> str | None:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return str(value)


def _is_valid_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _record(fields: dict, source: str, line_no: int, raw: str, reason: str | None, has_text: bool) -> dict:
    text = _as_str(fields.get("text"))
    metadata = {k: _as_str(v) for k, v in fields.items() if k not in KNOWN_COLUMNS}
    if reason is None and text is not None and not _is_valid_unicode(text + "".join(v or "" for v in metadata.values())):
        reason = "invalid UTF-8"
    if reason is not None:
        text = None
        metadata = {}
    return {
        "doc_id": _as_str(fields.get("doc_id")) if reason is None else None,
        "user_id": _as_str(fields.get("user_id")) if reason is None else None,
        "text": text,
        "label": _as_str(fields.get("label")) if reason is None else None,
        "metadata": metadata,
        "source_file": source,
        "line_no": line_no,
        "raw_record": raw,
        "reason": reason,
        "file_has_text": has_text,
    }


def _parse_jsonl(content: bytes, source: str) -> list[dict]:
    records, has_text = [], False
    for line_no, line in enumerate(content.split(b"\n"), start=1):
        if not line.strip():
            continue
        raw = line.decode("utf-8", "backslashreplace")
        try:
            decoded = line.decode("utf-8")
        except UnicodeDecodeError:
            records.append(_record({}, source, line_no, raw, "invalid UTF-8", False))
            continue
        try:
            fields = json.loads(decoded)
        except json.JSONDecodeError as error:
            records.append(_record({}, source, line_no, raw, f"malformed JSON: {error.msg}", False))
            continue
        if not isinstance(fields, dict):
            records.append(_record({}, source, line_no, raw, "malformed JSON: not an object", False))
            continue
        has_text = has_text or "text" in fields
        records.append(_record(fields, source, line_no, raw, None, True))
    for record in records:
        record["file_has_text"] = has_text
    return records


def _parse_csv(content: bytes, source: str, delimiter: str) -> list[dict]:
    text = content.decode("utf-8", "surrogateescape")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    header = next(reader, None) or []
    has_text = "text" in header
    records = []
    for row in reader:
        line_no = reader.line_num
        if not row:
            continue
        raw = delimiter.join(row).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        if len(row) != len(header):
            records.append(_record({}, source, line_no, raw, f"wrong field count: {len(row)} (header has {len(header)})", has_text))
            continue
        if any(not _is_valid_unicode(value) for value in row):
            records.append(_record({}, source, line_no, raw, "invalid UTF-8", has_text))
            continue
        fields = {name: (value if value != "" else None) for name, value in zip(header, row)}
        records.append(_record(fields, source, line_no, raw, None, has_text))
    return records


def _parse_files(delimiter: str):
    def parse(batches):
        for batch in batches:
            for path, content in zip(batch["path"], batch["content"]):
                source = os.path.basename(path)
                if path.lower().endswith(".csv"):
                    rows = _parse_csv(bytes(content), source, delimiter)
                else:
                    rows = _parse_jsonl(bytes(content), source)
                if rows:
                    yield pd.DataFrame(rows, columns=PARSED_SCHEMA.names)
                else:  # an empty file still reports whether it had a text column
                    yield pd.DataFrame([_record({}, source, 0, "", "empty file", False)], columns=PARSED_SCHEMA.names)

    return parse


def _input_files(path: str) -> dict[str, list[str]]:
    if not os.path.exists(path):
        raise IngestError(f"input not found: {path}")
    paths = [path] if os.path.isfile(path) else sorted(
        os.path.join(root, name) for root, _, names in os.walk(path) for name in names if not name.startswith((".", "_"))
    )
    by_format: dict[str, list[str]] = {}
    for file in paths:
        fmt = FORMATS.get(os.path.splitext(file)[1].lower())
        if fmt is None:
            raise IngestError(f"unsupported input file {os.path.basename(file)!r}; allowed extensions: {', '.join(FORMATS)}")
        by_format.setdefault(fmt, []).append(os.path.abspath(file))
    if not by_format:
        raise IngestError(f"no input files under {path}")
    return by_format


def _read_parquet(ctx: RunContext, files: list[str]) -> DataFrame:
    df = ctx.spark.read.parquet(*files)
    if "text" not in df.columns:
        raise IngestError(f"input has no 'text' column (columns: {', '.join(df.columns)}); nothing was written")
    others = [c for c in df.columns if c not in KNOWN_COLUMNS]
    metadata = F.create_map(*[x for c in others for x in (F.lit(c), F.col(c).cast("string"))]) if others else F.create_map()
    return df.select(
        *[(F.col(c).cast("string") if c in df.columns else F.lit(None).cast("string")).alias(c) for c in KNOWN_COLUMNS],
        metadata.cast("map<string,string>").alias("metadata"),
        F.element_at(F.split(F.input_file_name(), "/"), -1).alias("source_file"),
        F.lit(None).cast("long").alias("line_no"),
        F.to_json(F.struct(*df.columns)).alias("raw_record"),
        F.lit(None).cast("string").alias("reason"),
        F.lit(True).alias("file_has_text"),
    ).select(*PARSED_SCHEMA.names)


def parse_inputs(ctx: RunContext, path: str) -> DataFrame:
    """All input records with a ``reason`` set for those that cannot be parsed."""
    frames = []
    for fmt, files in _input_files(path).items():
        if fmt == "parquet":
            frames.append(_read_parquet(ctx, files))
            continue
        raw = ctx.spark.read.format("binaryFile").load(files).select("path", "content")
        frames.append(raw.mapInPandas(_parse_files(ctx.settings.ingest.csv_delimiter), PARSED_SCHEMA))
    parsed = frames[0]
    for frame in frames[1:]:
        parsed = parsed.unionByName(frame)
    return parsed


def validate(parsed: DataFrame, max_chars: int, key: bytes) -> DataFrame:
    """Set ``reason`` for blank/too long text and duplicate doc_ids; fill missing doc_ids (keyed)."""
    doc_id_udf = F.udf(lambda source_file, text: keyed_doc_id(key, source_file, text), StringType())
    text_ok = F.col("reason").isNull()
    df = parsed.withColumn(
        "reason",
        F.when(~text_ok, F.col("reason"))
        .when(F.col("text").isNull() | (F.length(F.trim(F.regexp_replace("text", r"\s", " "))) == 0), F.lit("empty text"))
        .when(F.length("text") > max_chars, F.lit(f"text longer than ingest.max_chars={max_chars}")),
    )
    df = df.withColumn(
        "doc_id",
        F.when(F.col("reason").isNull() & F.col("doc_id").isNull(), doc_id_udf("source_file", "text")).otherwise(F.col("doc_id")),
    )
    first = Window.partitionBy("doc_id").orderBy("source_file", "line_no")
    df = df.withColumn("_rank", F.when(F.col("reason").isNull(), F.row_number().over(first)))
    return df.withColumn(
        "reason", F.when(F.col("_rank") > 1, F.lit("duplicate doc_id in this load")).otherwise(F.col("reason"))
    ).drop("_rank")


def add_arguments(parser) -> None:
    parser.add_argument("--input", dest="input_path", required=True, help="input file or folder")


def run(ctx: RunContext, input_path: str) -> IngestResult:
    run = ctx.settings.run
    key = load_hmac_key(run.hmac_key_env, run.hmac_key_file, run.deterministic)
    parsed = validate(parse_inputs(ctx, input_path), ctx.settings.ingest.max_chars, key).cache()
    try:
        files_without_text = [r.source_file for r in parsed.groupBy("source_file").agg(F.max("file_has_text").alias("t")).where(~F.col("t")).collect()]
        if files_without_text:
            raise IngestError(
                f"input file(s) without a 'text' column: {', '.join(sorted(files_without_text))}; nothing was written"
            )
        date, run_id = F.lit(ctx.date).cast("date"), F.lit(ctx.run_id)
        good = parsed.where(F.col("reason").isNull()).select(
            "doc_id", "user_id", "text", "label", "metadata", date.alias("ingest_date"), run_id.alias("run_id")
        )
        bad = parsed.where(F.col("reason").isNotNull()).select(
            F.coalesce("raw_record", F.lit("")).alias("raw_record"), "reason", "source_file", "line_no",
            date.alias("ingest_date"), run_id.alias("run_id"),
        )
        partition = {"ingest_date": [ctx.date]}
        quarantine = ctx.lakehouse.replace_partitions(QUARANTINE, bad, partition)
        documents = ctx.lakehouse.replace_partitions(DOCUMENTS, good, partition)
        reasons = {r["reason"]: r["count"] for r in bad.groupBy("reason").count().collect()}
    finally:
        parsed.unpersist()
    return IngestResult(documents=documents.rows, quarantined=quarantine.rows, reasons=reasons)
