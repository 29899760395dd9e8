"""What a Delta table is to privtext: its ``TableSpec`` (zone, Arrow schema, partition columns), schema
comparison as delta-rs stores schemas, and partition values / filters (Hive paths, Delta filters)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import pyarrow as pa
from deltalake import Schema as DeltaSchema

from privtext.errors import PrivtextError
from privtext.platform.config import ZONES


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


def normalize(schema: pa.Schema) -> pa.Schema:
    """The schema as delta-rs stores it (what a round trip through the Delta log gives)."""
    return pa.schema(DeltaSchema.from_arrow(schema).to_arrow())


def schema_diff(expected: pa.Schema, actual: pa.Schema) -> str:
    exp = {f.name: f.type for f in normalize(expected)}
    act = {f.name: f.type for f in normalize(actual)}
    problems = [f"missing column {n!r}" for n in exp if n not in act]
    problems += [f"unexpected column {n!r}" for n in act if n not in exp]
    problems += [f"column {n!r} is {act[n]}, table has {exp[n]}" for n in exp if n in act and exp[n] != act[n]]
    return "; ".join(problems)


def partition_path(partition_values: dict[str, str | None]) -> str:
    return "/".join(f"{k}={'__HIVE_DEFAULT_PARTITION__' if v is None else v}" for k, v in partition_values.items())


def json_scalar(value):
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def partition_filters(spec: TableSpec, partition_values: dict[str, list]) -> list[tuple]:
    filters = []
    for column, values in partition_values.items():
        if column not in spec.partition_by:
            raise LakehouseError(
                f"{spec.qualified_name}: {column!r} is not a partition column; "
                f"partition columns: {list(spec.partition_by)}"
            )
        values = [str(json_scalar(v)) for v in values]
        if not values:
            raise LakehouseError(f"{spec.qualified_name}: no partition values given for {column!r}")
        filters.append((column, "in", values) if len(values) > 1 else (column, "=", values[0]))
    return filters


def filter_matches(actual, op, expected) -> bool:
    actual = None if actual is None else str(json_scalar(actual))
    return actual in expected if op == "in" else actual == expected


def check_files_inside(spec: TableSpec, files: list[dict], partition_values: dict[str, list]) -> None:
    allowed = {col: {str(json_scalar(v)) for v in values} for col, values in partition_values.items()}
    for meta in files:
        values = json.loads(meta["partition_values"])
        for col, ok in allowed.items():
            if values.get(col) not in ok:
                raise LakehouseError(
                    f"{spec.qualified_name}: refusing to commit a file with {col}={values.get(col)!r} "
                    f"outside the replaced partitions {sorted(ok)}"
                )
