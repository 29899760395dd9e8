"""Stage ``ingest``: JSONL / CSV / Parquet files -> ``restricted.documents`` + ``restricted.quarantine``.

Columns: ``text`` (required), ``doc_id``, ``user_id``, ``label`` (optional); any other column is kept
in the ``metadata`` map. A missing ``doc_id`` becomes a keyed pseudonym: HMAC-SHA256 of the source
file name and the text under the run's key (``run.hmac_key_env``), never an unkeyed hash, which
anyone could recompute from a guessed file name and text (publish replaces it by its own pseudonym).
Spark distributes the file paths only: each file is opened and parsed in a Python worker, so a text
longer than ``ingest.max_chars`` is quarantined by size (file and line/record number, no raw text)
before it could become a Spark row. Bad records never stop the load: malformed JSON lines, a JSON
object that repeats a key, CSV rows with the wrong field count or a stray quote, null or blank text
(white space of any script, NUL and other control or format characters only), a ``text`` that is not a
string (a JSON object, list, number), invalid UTF-8, oversized text, a ``doc_id``/``user_id``/``label``
over ``MAX_ID_CHARS``, a lone surrogate (an unpaired ``\\ud800`` escape) in ``doc_id``/``user_id``/
``label``/a field name/a value, JSON nested deeper than the interpreter's recursion limit and duplicate
``doc_id``s within the load go to the quarantine with a reason (every quarantined string keeps bad
characters as backslash escapes). A JSONL file whose first line is a JSON array is read line by line
(the array line is quarantined, the rest lands). The CSV reader goes row by row: a record it cannot parse
is quarantined naming the line it starts on and reading resumes on the next line (a quote left open runs
to the end of the file: that is one record); a field of any length is parsed whole. Per-file problems
stay with that file: a file without a ``text`` column, an empty, 0-byte or blank file, a malformed JSON
array, a CSV header that repeats a column quarantine its records (or one row naming the file) and the
rest of the load lands; an unreadable file (permissions, a symlink loop) and a Parquet file whose schema
does not unify with the earlier files' (the column and both types named), a CSV header that is not UTF-8,
a file name that is not UTF-8 (shown escaped, e.g. ``caf\\xe9.jsonl``) and any error a parser did not
foresee (its type named) are one quarantine row each. Parquet values of any type (Decimal, timestamps
inside structs) become JSON text in ``metadata``. The run refuses, writing nothing, a load with no usable
record (unless ``--allow-empty``) or one smaller than ``ingest.min_ratio_of_previous`` of what the date
already holds (unless ``--allow-smaller``). UTF-8 with or without BOM and UTF-16/32 with BOM are read;
JSON arrays and JSON Lines both; files with other extensions or hidden/``_`` names and anything that is
not a regular file (a FIFO, which would block the reader, a socket, a device) are skipped and listed.
Both tables are written by replacing the date's partition, so a rerun of a date never duplicates.
"""
from __future__ import annotations

import contextlib
import csv
import decimal
import errno
import hashlib
import hmac
import io
import json
import logging
import os
import stat
import sys
import unicodedata
from dataclasses import dataclass, field

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, Window, functions as F
from pyspark.sql.types import BooleanType, LongType, MapType, StringType, StructField, StructType

from privtext.errors import Refused
from privtext.pii.hashing import load_hmac_key, subject_key
from privtext.platform.context import RunContext
from privtext.platform.erasure import raw_record_ids, tombstoned_keys
from privtext.platform.tables import DOCUMENTS, QUARANTINE

log = logging.getLogger("privtext")
KNOWN_COLUMNS = ("doc_id", "user_id", "text", "label")
FORMATS = (".jsonl", ".json", ".ndjson", ".csv", ".parquet")
MAX_ID_CHARS = 256  # doc_id, user_id, label: longer is quarantined (generated doc_ids are 32 characters)
BLANK_CATEGORIES = frozenset({"Cc", "Cf", "Zs", "Zl", "Zp"})  # controls, format characters, separators

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


class IngestError(Refused, ValueError):
    """The load cannot proceed (no input, no usable record, a load much smaller than the date holds)."""


@dataclass
class IngestResult:
    documents: int
    quarantined: int
    reasons: dict[str, int]
    skipped_files: list[str] = field(default_factory=list)  # unsupported extensions, hidden or _ names


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
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)  # Decimal, datetime ...
    return str(value)


def _is_valid_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _printable(value: str) -> str:
    """``value`` with lone surrogates as backslash escapes: an undecodable byte (a file name's) as ``\\xe9``,
    an unpaired JSON escape as ``\\ud800``."""
    if _is_valid_unicode(value):
        return value
    try:
        return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return value.encode("utf-8", "backslashreplace").decode("utf-8")


def _invalid_field(fields: dict, metadata: dict) -> str | None:
    """The first known column, metadata key or value that is not valid Unicode (a lone surrogate)."""
    for name in KNOWN_COLUMNS:
        value = _as_str(fields.get(name))
        if value is not None and not _is_valid_unicode(value):
            return name
    for key, value in metadata.items():
        if not _is_valid_unicode(str(key)):
            return "a field name"
        if value is not None and not _is_valid_unicode(value):
            return "a metadata value"
    return None


def _is_blank(text: str) -> bool:
    """Nothing but white space (any script's: NBSP, em spaces, ideographic space), control and format
    characters (NUL, zero-width space, BOM): no word to process."""
    return all(c.isspace() or unicodedata.category(c) in BLANK_CATEGORIES for c in text)


def _kind(value) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return "a boolean"
    return "a number" if isinstance(value, (int, float, decimal.Decimal)) else f"a {type(value).__name__}"


def _content_problem(fields: dict) -> str | None:
    """Why a record's values cannot be a document: a ``text`` that is not a string (a JSON object, list,
    number or boolean; a Parquet column of another type) or is blank; an id or label over ``MAX_ID_CHARS``."""
    text = fields.get("text")
    if _as_str(text) is not None and not isinstance(text, str):
        return f"text is {_kind(text)}, not a string"
    if isinstance(text, str) and _is_blank(text):
        return "empty text"
    for name in ("doc_id", "user_id", "label"):
        value = _as_str(fields.get(name))
        if value is not None and len(value) > MAX_ID_CHARS:
            return f"{name} longer than {MAX_ID_CHARS} characters"
    return None


def _record(fields: dict, source: str, line_no: int, raw: str, reason: str | None, has_text: bool) -> dict:
    """One parsed record; every string in it is valid Unicode (a field that is not quarantines the record,
    the raw record and file name keep their bad characters as backslash escapes)."""
    text = _as_str(fields.get("text"))
    metadata = {str(k): _as_str(v) for k, v in fields.items() if k not in KNOWN_COLUMNS}
    invalid = _invalid_field(fields, metadata) if reason is None else None
    if invalid is not None:
        reason = "invalid UTF-8" if invalid in ("text", "a metadata value") else f"invalid Unicode in {invalid}"
    if reason is None:
        reason = _content_problem(fields)
    if reason is not None:
        text = None
        metadata = {}
    return {
        "doc_id": _as_str(fields.get("doc_id")) if reason is None else None,
        "user_id": _as_str(fields.get("user_id")) if reason is None else None,
        "text": text,
        "label": _as_str(fields.get("label")) if reason is None else None,
        "metadata": metadata,
        "source_file": _printable(source),
        "line_no": line_no,
        "raw_record": _printable(raw),
        "reason": reason,
        "file_has_text": has_text,
    }


def _decode_bom(content: bytes) -> tuple[bytes, str | None]:
    """(content without a UTF-8 BOM, None) or, for a UTF-16/32 file with its BOM, (b"", decoded text)."""
    import codecs

    for bom, codec in ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
                       (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16")):
        if content.startswith(bom):
            return b"", content.decode(codec, "replace")
    return (content[3:] if content.startswith(codecs.BOM_UTF8) else content), None


def _mark_without_text(records: list[dict], has_text: bool) -> list[dict]:
    """Records of a file without a ``text`` column are quarantined (the rest of the load lands)."""
    for record in records:
        record["file_has_text"] = has_text
        if not has_text and record["reason"] is None:
            record.update(_record({}, record["source_file"], record["line_no"], record["raw_record"],
                                  "file has no 'text' column", False))
    return records


class _DuplicateKeys(dict):
    """A JSON object that repeats a key (``json`` would keep the last value silently)."""


def _object(pairs: list) -> dict:
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    duplicated = _DuplicateKeys(obj)
    duplicated.pairs = pairs
    return duplicated


def _dumps(item) -> str:
    """An array item as JSON, every value of a repeated key kept."""
    if not isinstance(item, _DuplicateKeys):
        return json.dumps(item, ensure_ascii=False)
    return "{" + ", ".join(f"{json.dumps(k, ensure_ascii=False)}: {json.dumps(v, ensure_ascii=False)}"
                           for k, v in item.pairs) + "}"


def _has_duplicate_keys(value) -> bool:
    """Whether any object in ``value`` (a parsed JSON value, at any depth) repeated a key."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _DuplicateKeys):
            return True
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


DUPLICATE_KEY = "malformed JSON: duplicate key in an object"


def _loads(text: str):
    """``json.loads``, objects marked when they repeat a key; nesting deeper than the interpreter's recursion
    limit is a ``ValueError`` saying so."""
    try:
        return json.loads(text, object_pairs_hook=_object)
    except RecursionError:
        raise ValueError(f"nested deeper than {sys.getrecursionlimit()} levels") from None


def _parse_json_array(text: str, source: str) -> list[dict] | None:
    """The records of a JSON array; None when the text is not one JSON value or nests too deeply (e.g. JSON
    Lines whose first line is an array: each line is then its own record, judged on its own)."""
    try:
        items = _loads(text)
    except json.JSONDecodeError as error:
        if error.msg == "Extra data":
            return None
        return [_record({}, source, error.lineno, text[:2000], f"malformed JSON: {error.msg}", False)]
    except ValueError:
        return None
    records = []
    for i, item in enumerate(items, start=1):
        raw = _dumps(item)
        if not isinstance(item, dict):
            records.append(_record({}, source, i, raw, "malformed JSON: not an object", False))
        elif _has_duplicate_keys(item):
            records.append(_record({}, source, i, raw, DUPLICATE_KEY, False))
        else:
            records.append(_record(item, source, i, raw, None, True))
    return _mark_without_text(records, any(isinstance(x, dict) and "text" in x for x in items))


def _parse_jsonl(content: bytes, source: str) -> list[dict]:
    """JSON Lines or a JSON array of objects; UTF-8 with or without BOM, UTF-16/32 with BOM."""
    content, decoded_text = _decode_bom(content)
    lines = (decoded_text.encode("utf-8", "surrogatepass") if decoded_text is not None else content)
    if lines.lstrip()[:1] == b"[":
        try:
            array = _parse_json_array(lines.decode("utf-8"), source)
        except UnicodeDecodeError:
            array = None  # each line on its own: the bad ones are quarantined, the good ones land
        if array is not None:
            return array
    records, has_text = [], False
    for line_no, line in enumerate(lines.split(b"\n"), start=1):
        if not line.strip():
            continue
        raw = line.decode("utf-8", "backslashreplace")
        try:
            decoded = line.decode("utf-8")
        except UnicodeDecodeError:
            records.append(_record({}, source, line_no, raw, "invalid UTF-8", False))
            continue
        try:
            fields = _loads(decoded)
        except json.JSONDecodeError as error:
            records.append(_record({}, source, line_no, raw, f"malformed JSON: {error.msg}", False))
            continue
        except ValueError as error:
            records.append(_record({}, source, line_no, raw, f"malformed JSON: {error}", False))
            continue
        if not isinstance(fields, dict):
            records.append(_record({}, source, line_no, raw, "malformed JSON: not an object", False))
            continue
        if _has_duplicate_keys(fields):
            records.append(_record({}, source, line_no, raw, DUPLICATE_KEY, False))
            continue
        has_text = has_text or "text" in fields
        records.append(_record(fields, source, line_no, raw, None, True))
    return _mark_without_text(records, has_text)


@contextlib.contextmanager
def _no_field_limit():
    """The csv module's field limit lifted while a file already read into memory is parsed: a long field is
    parsed whole (and quarantined by ``ingest.max_chars`` if it is the text) instead of breaking the parser
    in the middle of a quoted field."""
    previous = csv.field_size_limit(sys.maxsize)
    try:
        yield
    finally:
        csv.field_size_limit(previous)


def _parse_csv(content: bytes, source: str, delimiter: str) -> list[dict]:
    """CSV rows as records, row by row: a record the parser cannot read (a stray quote) is quarantined
    naming the line it starts on, and reading resumes on the next line; a quote left open runs to the end
    of the file, which is then that one record. A header that is not UTF-8 or repeats a column name
    quarantines every record of the file."""
    content, decoded_text = _decode_bom(content)
    text = decoded_text if decoded_text is not None else content.decode("utf-8", "surrogateescape")
    lines = io.StringIO(text, newline="").readlines()  # as the reader counts them (\n, \r\n, \r)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    records = []
    with _no_field_limit():
        try:
            header = next(reader, None) or []
        except csv.Error as error:
            return [_record({}, source, 1, "".join(lines[:reader.line_num]),
                            f"CSV parse error in the header: {error} (file quarantined)", True)]
        if not all(_is_valid_unicode(name) for name in header):
            return [_record({}, source, 1, delimiter.join(header), "invalid UTF-8 in the CSV header (file quarantined)",
                            True)]
        repeated = sorted({name for name in header if header.count(name) > 1})
        file_reason = (f"duplicate column {_printable(repeated[0])[:50]!r} in the CSV header (file quarantined)"
                       if repeated else None)
        has_text = "text" in header
        while True:
            start = reader.line_num + 1
            try:
                row = next(reader, None)
            except csv.Error as error:
                end = reader.line_num if reader.line_num >= start else len(lines)  # none read: the rest
                records.append(_record({}, source, start, _printable("".join(lines[start - 1:end])),
                                       f"CSV parse error in the record starting at line {start}: {error}", has_text))
                if reader.line_num < start:
                    break
                continue
            if row is None:
                break
            if not row:
                continue
            raw = delimiter.join(row).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            if file_reason is not None:
                records.append(_record({}, source, start, raw, file_reason, has_text))
            elif len(row) != len(header):
                records.append(_record({}, source, start, raw,
                                       f"wrong field count: {len(row)} (header has {len(header)})", has_text))
            elif any(not _is_valid_unicode(value) for value in row):
                records.append(_record({}, source, start, raw, "invalid UTF-8", has_text))
            else:
                fields = {name: (value if value != "" else None) for name, value in zip(header, row)}
                records.append(_record(fields, source, start, raw, None, has_text))
    return _mark_without_text(records, has_text or not header)


def _parse_parquet(path: str, source: str, batch_rows: int = 10_000):
    """Lists of records of a Parquet file, numbered from 1 (record number in the file)."""
    parquet = pq.ParquetFile(path)
    has_text = "text" in parquet.schema_arrow.names
    line_no = 0
    for batch in parquet.iter_batches(batch_size=batch_rows):
        records = []
        for fields in batch.to_pylist():
            line_no += 1
            raw = json.dumps(fields, ensure_ascii=False, default=str)
            records.append(_record(fields, source, line_no, raw, None, has_text))
        yield _mark_without_text(records, has_text)


NOT_REGULAR = {stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a character device",
               stat.S_IFBLK: "a block device"}


def _not_regular(path: str) -> str | None:
    """What ``path`` is when it is not a regular file (a FIFO would block its reader forever); None for a
    regular file or one that cannot be stat'ed (quarantined as unreadable by ``file_problems``)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    return None if stat.S_ISREG(mode) else NOT_REGULAR.get(stat.S_IFMT(mode), "not a regular file")


def _read_regular(path: str) -> bytes:
    """The bytes of a regular file; opened without blocking, so a file swapped for a FIFO meanwhile is an
    error instead of a hang."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        return file.read()


def _parsed_chunks(path: str, source: str, delimiter: str):
    """A file's records, in lists: CSV and JSON files in one, Parquet per batch of rows."""
    if path.lower().endswith(".parquet"):
        yield from _parse_parquet(path, source)
        return
    content = _read_regular(path)
    yield _parse_csv(content, source, delimiter) if path.lower().endswith(".csv") else _parse_jsonl(content, source)


def _limit_size(records: list[dict], max_chars: int) -> list[dict]:
    """Records whose text is longer than ``max_chars`` are quarantined by size here, in the Python worker:
    neither their text nor their raw record becomes part of a Spark row. Raw records of other quarantined
    rows are cut to ``max_chars``."""
    for r in records:
        if r["reason"] is None and r["text"] is not None and len(r["text"]) > max_chars:
            r.update(_record({}, r["source_file"], r["line_no"], "", f"text longer than ingest.max_chars={max_chars}",
                             r["file_has_text"]))
        elif r["reason"] is not None and len(r["raw_record"]) > max_chars:
            r["raw_record"] = r["raw_record"][:max_chars] + " [cut at ingest.max_chars]"
    return records


def _with_keyed_ids(records: list[dict], key: bytes) -> list[dict]:
    """A usable record without a doc_id gets ``keyed_doc_id`` here, in the parsing worker (a separate Python
    UDF would hold a second Python worker per task, started again at every load)."""
    for r in records:
        if r["reason"] is None and r["doc_id"] is None and r["text"] is not None:
            r["doc_id"] = keyed_doc_id(key, r["source_file"], r["text"])
    return records


def _parse_files(delimiter: str, max_chars: int, problems: dict[str, str], key: bytes):
    """``mapInPandas`` over input paths: each file is opened and parsed in the Python worker (its bytes never
    travel through the JVM); a file in ``problems`` (unreadable, a conflicting Parquet schema) is one
    quarantine row with its reason. Usable records without a doc_id get their keyed one."""
    def parse(batches):
        for batch in batches:
            for path in batch["path"]:
                source = os.path.basename(path)
                if path in problems:
                    yield pd.DataFrame([_record({}, source, 0, "", problems[path], True)], columns=PARSED_SCHEMA.names)
                    continue
                empty = True
                try:
                    for records in _parsed_chunks(path, source, delimiter):
                        if records:
                            empty = False
                            yield pd.DataFrame(_with_keyed_ids(_limit_size(records, max_chars), key),
                                               columns=PARSED_SCHEMA.names)
                except Exception as error:  # noqa: BLE001  a file the parsers did not foresee: quarantined whole
                    empty = False  # (the type only: a message may quote the file's text)
                    yield pd.DataFrame([_record({}, source, 0, "", f"could not parse the file: {type(error).__name__}",
                                                True)], columns=PARSED_SCHEMA.names)
                if empty:  # an empty or blank file: one quarantine row, so the run summary lists it
                    yield pd.DataFrame([_record({}, source, 0, "", "empty file", True)], columns=PARSED_SCHEMA.names)

    return parse


def _input_files(path: str) -> tuple[list[str], list[str]]:
    """Input files (absolute paths), and the files skipped (unsupported extension, hidden or ``_`` names, not
    a regular file: a FIFO, a socket, a device)."""
    if not os.path.lexists(path):
        raise IngestError(f"input not found: {path}")
    if not os.path.isdir(path):
        kind = _not_regular(path)
        if kind is not None:
            raise IngestError(f"input {path} is {kind}, not a regular file or a folder; nothing was read")
        paths, skipped = [path], []
    else:
        names = sorted(os.path.join(root, name) for root, _, files in os.walk(path) for name in files)
        paths = [p for p in names if not os.path.basename(p).startswith((".", "_"))]
        skipped = [os.path.relpath(p, path) for p in names if p not in paths]
    inputs = []
    for file in paths:
        kind = _not_regular(file)
        if kind is not None:
            skipped.append(f"{os.path.basename(file)} ({kind})")
        elif os.path.splitext(file)[1].lower() in FORMATS:
            inputs.append(os.path.abspath(file))
        else:
            skipped.append(os.path.basename(file))
    if not inputs:
        raise IngestError(f"no input files under {path} (allowed extensions: {', '.join(FORMATS)}; "
                          f"skipped: {', '.join(skipped) or 'none'})")
    return inputs, skipped


def file_problems(files: list[str]) -> dict[str, str]:
    """Files that cannot be loaded, each with why: unreadable (permissions, a symlink loop), an unreadable
    Parquet footer, or a Parquet schema that does not unify with the earlier files' (a column whose types
    no permissive promotion joins, e.g. string vs int64; int32 vs int64 or extra columns unify)."""
    problems: dict[str, str] = {}
    seen: dict[str, tuple[pa.Field, str]] = {}  # column -> (type, the first file that had it)
    for path in files:
        try:
            os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
            schema = pq.read_schema(path) if path.lower().endswith(".parquet") else None
        except OSError as error:
            problems[path] = f"unreadable file: {error.strerror or type(error).__name__}"
            continue
        except (pa.ArrowException, ValueError) as error:
            problems[path] = f"unreadable Parquet file: {type(error).__name__}"
            continue
        for column in (schema or []):
            other = seen.get(column.name)
            try:
                if other is not None:
                    pa.unify_schemas([pa.schema([other[0]]), pa.schema([column])], promote_options="permissive")
            except (pa.ArrowTypeError, pa.ArrowInvalid):
                problems[path] = (f"Parquet schema conflicts with the other files: column {column.name!r} is "
                                  f"{column.type} here and {other[0].type} in {other[1]} (file quarantined)")
                break
        else:
            for column in (schema or []):
                seen.setdefault(column.name, (column, os.path.basename(path)))
    return problems


def parse_inputs(ctx: RunContext, path: str, key: bytes) -> tuple[DataFrame, list[str]]:
    """All input records with a ``reason`` set for those that cannot be parsed, and the skipped files.
    Spark distributes the file paths only: each file is read and parsed in a Python worker, which gives a
    usable record without a doc_id its keyed one (HMAC under ``key``)."""
    files, skipped = _input_files(path)
    skipped = [_printable(name) for name in skipped]
    if skipped:
        log.warning("ingest: skipped %d file(s) (unsupported or hidden names, not regular files): %s", len(skipped),
                    ", ".join(skipped))
    problems = file_problems(files)
    for i, file in enumerate(files):  # a name Spark cannot carry: the file is one quarantine row, shown escaped
        if not _is_valid_unicode(file):
            problems.pop(file, None)
            files[i] = _printable(file)
            problems[files[i]] = "file name is not valid UTF-8 (file quarantined: rename it to load it)"
    if problems:
        log.warning("ingest: %d file(s) quarantined whole: %s", len(problems),
                    "; ".join(f"{os.path.basename(f)}: {why}" for f, why in sorted(problems.items())))
    paths = ctx.spark.createDataFrame([(f,) for f in files], "path string")
    ingest = ctx.settings.ingest
    return paths.mapInPandas(_parse_files(ingest.csv_delimiter, ingest.max_chars, problems, key),
                             PARSED_SCHEMA), skipped


def validate(parsed: DataFrame) -> DataFrame:
    """Set ``reason`` for missing text and duplicate doc_ids (missing doc_ids were filled, keyed, by the parser)."""
    text_ok = F.col("reason").isNull()
    df = parsed.withColumn(
        "reason",
        F.when(~text_ok, F.col("reason"))
        .when(F.col("text").isNull(), F.lit("empty text")),  # blank text: quarantined by the parser (_is_blank)
    )
    first = Window.partitionBy("doc_id").orderBy("source_file", "line_no")
    df = df.withColumn("_rank", F.when(F.col("reason").isNull(), F.row_number().over(first)))
    return df.withColumn(
        "reason", F.when(F.col("_rank") > 1, F.lit("duplicate doc_id in this load")).otherwise(F.col("reason"))
    ).drop("_rank")


def mark_erased(parsed: DataFrame, key: bytes, erased: frozenset[str]) -> DataFrame:
    """Records of an erased subject (``privtext forget``: the keyed user or doc id tombstoned in
    ``protected.erasures``), parsed or not, are quarantined with the reason ``erased`` and without their raw record."""
    if not erased:
        return parsed
    hit = F.udf(lambda kind, value: value is not None and subject_key(key, kind, value) in erased, BooleanType())
    user_id, doc_id = raw_record_ids(F.col("raw_record"))  # a bad record's ids, read from its raw text
    gone = hit(F.lit("user"), F.coalesce("user_id", user_id)) | hit(F.lit("doc"), F.coalesce("doc_id", doc_id))
    return (parsed.withColumn("_erased", gone)
            .withColumn("raw_record", F.when(F.col("_erased"), F.lit("")).otherwise(F.col("raw_record")))
            .withColumn("reason", F.when(F.col("_erased"), F.lit("erased")).otherwise(F.col("reason"))).drop("_erased"))


def add_arguments(parser) -> None:
    parser.add_argument("--input", dest="input_path", required=True, help="input file or folder")
    parser.add_argument("--allow-empty", dest="allow_empty", action="store_true",
                        help="accept a load without any usable document (the date is then emptied)")
    parser.add_argument("--allow-smaller", dest="allow_smaller", action="store_true",
                        help="accept a load below ingest.min_ratio_of_previous of what the date already holds")


def check_load_size(usable: int, previous: int, reasons: dict[str, int], min_ratio: float,
                    allow_empty: bool = False, allow_smaller: bool = False) -> None:
    """Refuse (``IngestError``) a load with no usable document, or one that would shrink the date's
    ``previous`` documents below ``min_ratio`` of them, unless explicitly allowed."""
    held = f"the date holds {previous} document(s)" if previous else "the date holds no documents yet"
    why = "; ".join(f"{reason}: {n}" for reason, n in sorted(reasons.items())) or "no records"
    if usable == 0 and not allow_empty:
        raise IngestError(f"no usable document in this load ({why}) and {held}; nothing was written "
                          "(--allow-empty accepts an empty load)")
    if 0 < usable < min_ratio * previous and not allow_smaller:
        raise IngestError(f"this load has {usable} usable document(s), fewer than ingest.min_ratio_of_previous="
                          f"{min_ratio} of the {previous} the date holds; nothing was written "
                          "(--allow-smaller accepts it)")


def run(ctx: RunContext, input_path: str, allow_empty: bool = False, allow_smaller: bool = False) -> IngestResult:
    run = ctx.settings.run
    key = load_hmac_key(run.hmac_key_env, run.hmac_key_file, run.deterministic)
    raw, skipped = parse_inputs(ctx, input_path, key)
    parsed = mark_erased(validate(raw), key, tombstoned_keys(ctx.lakehouse)).cache()
    try:
        date, run_id = F.lit(ctx.date).cast("date"), F.lit(ctx.run_id)
        good = parsed.where(F.col("reason").isNull()).select(
            "doc_id", "user_id", "text", "label", "metadata", date.alias("ingest_date"), run_id.alias("run_id")
        )
        bad = parsed.where(F.col("reason").isNotNull()).select(
            F.coalesce("raw_record", F.lit("")).alias("raw_record"), "reason", "source_file", "line_no",
            date.alias("ingest_date"), run_id.alias("run_id"),
        )
        reasons = {r["reason"]: r["count"] for r in bad.groupBy("reason").count().collect()}
        usable = good.count()
        files_without_text = [r.source_file for r in parsed.groupBy("source_file")
                              .agg(F.max("file_has_text").alias("t")).where(~F.col("t")).collect()]
        if files_without_text and usable == 0:
            raise IngestError(
                f"input file(s) without a 'text' column: {', '.join(sorted(files_without_text))}; nothing was written"
            )
        partition = {"ingest_date": [ctx.date]}
        check_load_size(usable, ctx.lakehouse.partition_rows(DOCUMENTS, partition), reasons,
                        ctx.settings.ingest.min_ratio_of_previous, allow_empty, allow_smaller)
        quarantine = ctx.lakehouse.replace_partitions(QUARANTINE, bad, partition)
        documents = ctx.lakehouse.replace_partitions(DOCUMENTS, good, partition)
    finally:
        parsed.unpersist()
    return IngestResult(documents=documents.rows, quarantined=quarantine.rows, reasons=reasons, skipped_files=skipped)
