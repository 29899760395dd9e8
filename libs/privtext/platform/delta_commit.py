"""Delta commits with delta-rs: the files executors wrote become one transaction (append, or overwrite with
partition filters = replaceWhere), optionally guarded by a Delta application transaction."""
from __future__ import annotations

import json
from typing import Callable

import pyarrow as pa
from deltalake import DeltaTable, Schema as DeltaSchema
from deltalake.exceptions import CommitFailedError, DeltaError
from deltalake.transaction import AddAction, CommitProperties, Transaction

from privtext.platform.table_spec import TableSpec, WriteResult, filter_matches


def add_actions(files: list[dict]) -> list[AddAction]:
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


def files_matching(table: DeltaTable, partition_filters) -> list[dict]:
    """The snapshot's add actions (flattened) inside the partition filters (all without filters)."""
    actions = pa.table(table.get_add_actions(flatten=True)).to_pylist()
    if not partition_filters:
        return actions
    return [a for a in actions
            if all(filter_matches(a.get(f"partition.{col}"), op, val) for col, op, val in partition_filters)]


def commit(spec: TableSpec, table: DeltaTable, files: list[dict], mode: str, *, retries: int,
           reload: Callable[[], DeltaTable], discard: Callable[[list[dict]], None], partition_filters=None,
           operation: str = "WRITE", guard: str | None = None, rebase: bool = False) -> WriteResult:
    """Commit ``files`` against the snapshot ``table`` was loaded at.

    ``guard`` names a serialization point: the commit carries a Delta application transaction
    (``txn``) for it, so two guarded commits from the same snapshot conflict and the later one
    fails with ``CommitFailedError`` instead of both passing (read-modify-write safety).
    With ``rebase`` (partition replaces, whose files do not depend on what they replace) a conflict
    is retried against a fresh snapshot (``reload``) up to ``retries`` times: the replace then
    removes whatever the partitions hold by then, so the result is one set of rows. Files of a
    commit that finally fails are ``discard``-ed before the error is raised.
    """
    attempts = retries + 1 if rebase else 1
    for attempt in range(attempts):
        removed = len(files_matching(table, partition_filters)) if mode == "overwrite" else 0
        app_transactions = None
        if guard is not None:
            app_transactions = [Transaction(guard, (table.transaction_version(guard) or 0) + 1)]
        try:
            table.create_write_transaction(
                add_actions(files),
                mode=mode,
                schema=DeltaSchema.from_arrow(spec.schema),
                partition_by=list(spec.partition_by) or None,
                partition_filters=partition_filters,
                commit_properties=CommitProperties(
                    custom_metadata={"privtext.operation": operation},
                    max_commit_retries=retries,
                    app_transactions=app_transactions,
                ),
            )
            break
        except CommitFailedError:
            if attempt + 1 == attempts:
                discard(files)
                raise
            table = reload()
        except DeltaError:
            discard(files)
            raise
    table.update_incremental()
    return WriteResult(
        version=table.version(),
        files=len(files),
        rows=sum(json.loads(m["stats"])["numRecords"] for m in files),
        removed_files=removed,
        paths=[m["path"] for m in files],
    )
