"""Zone check: no published table may carry a column that exists only in the restricted zone.

Restricted-only columns are derived from the table catalogue: the columns of the restricted source
tables (a restricted table with the same name as a published one is that table's staging area, not a
source) that appear in no protected table, plus ``text`` and ``spans`` wherever they are. A published
table may carry one of them only as a reviewed release (``RELEASED``): a value produced by a privacy
mechanism, not a copy. The check runs on the specs (tests) and on the schemas stored in the Delta logs
(``check_lakehouse``, run by ``publisher`` before every publish), so a table written by any tool is covered.
"""
from __future__ import annotations

from privtext.errors import PrivtextError
from privtext.platform.tables import ALL_TABLES

PRIVATE_COLUMNS = frozenset({"text", "spans"})  # raw text and span lists, in whatever table they appear

RELEASED = {
    ("synthetic_documents", "text"): "synthetic text generated under (p,r)-secret protection, not a copy",
    ("sanitized_documents", "doc_id"): "a keyed pseudonym (HMAC) of the restricted doc_id, no content",
}


class ZoneViolation(PrivtextError, RuntimeError):
    """A published table has a restricted-only column."""


def restricted_only_columns(specs=ALL_TABLES) -> frozenset[str]:
    published = {s.name for s in specs if s.zone == "published"}
    sources = {n for s in specs if s.zone == "restricted" and s.name not in published for n in s.schema.names}
    protected = {n for s in specs if s.zone == "protected" for n in s.schema.names}
    return frozenset(sources - protected) | PRIVATE_COLUMNS


def violations(published: dict[str, list[str]], specs=ALL_TABLES) -> list[str]:
    """``published`` maps a published table's name to its columns; returns one line per offending column."""
    forbidden = restricted_only_columns(specs)
    return [f"published.{table}.{column}" for table, columns in sorted(published.items()) for column in columns
            if column in forbidden and (table, column) not in RELEASED]


def check_specs(specs=ALL_TABLES) -> None:
    found = violations({s.name: s.schema.names for s in specs if s.zone == "published"}, specs)
    if found:
        raise ZoneViolation(f"restricted-only columns in published tables: {', '.join(found)}")


def check_lakehouse(lakehouse, specs=ALL_TABLES) -> None:
    """The same check on the schemas stored in the Delta logs of the published zone's tables.

    Covers the catalogue's published tables and every table folder in the zone (local or object store).
    """
    import pyarrow.fs as pafs
    from deltalake import DeltaTable

    from privtext.platform import storage

    root, store = lakehouse.settings.zone_root("published"), lakehouse.settings.zone_store("published")
    options = storage.delta_options(root, store)
    fs, base = storage.filesystem(root, store)
    names = {s.name for s in specs if s.zone == "published"}
    names |= {i.base_name for i in fs.get_file_info(pafs.FileSelector(base, allow_not_found=True))
              if i.type == pafs.FileType.Directory}
    stored = {}
    for name in sorted(names):
        if DeltaTable.is_deltatable(f"{root}/{name}", storage_options=options):
            stored[name] = [f.name for f in DeltaTable(f"{root}/{name}", storage_options=options).schema().fields]
    found = violations(stored, specs)
    if found:
        raise ZoneViolation(f"restricted-only columns in stored published tables: {', '.join(found)}")


def publisher(lakehouse):
    """The handle that writes the published zone (``Lakehouse.as_publisher``), given once the stored
    published tables pass ``check_lakehouse``. Only the ``publish`` stage takes it."""
    check_lakehouse(lakehouse)
    return lakehouse.as_publisher()
