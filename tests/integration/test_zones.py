"""Zones: no published table carries a restricted-only column (specs and stored Delta schemas)."""
import dataclasses

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from privtext.platform import zones
from privtext.platform.lakehouse import Lakehouse, LakehouseError
from privtext.platform.tables import ALL_TABLES, PUBLISHED_SANITIZED_DOCUMENTS, WORD_VECTORS
from tests_support import make_budget_settings


def test_restricted_only_columns_cover_raw_text_spans_and_secret_ids():
    forbidden = zones.restricted_only_columns()
    assert {"text", "spans", "user_id", "secret_id", "start", "end", "embedding", "raw_record"} <= forbidden
    assert not forbidden & {"run_id", "date", "label", "sanitized_text"}  # shared or released columns
    zones.check_specs()  # the catalogue as it stands


@pytest.mark.parametrize("column", ["text", "start", "secret_id", "user_id"])
def test_a_published_table_with_a_restricted_column_is_refused(column):
    leaky = dataclasses.replace(PUBLISHED_SANITIZED_DOCUMENTS,
                                schema=PUBLISHED_SANITIZED_DOCUMENTS.schema.append(pa.field(column, pa.string())))
    specs = [s for s in ALL_TABLES if s is not PUBLISHED_SANITIZED_DOCUMENTS] + [leaky]
    with pytest.raises(zones.ZoneViolation, match=f"published.sanitized_documents.{column}"):
        zones.check_specs(specs)


def test_stored_published_tables_are_checked_including_unknown_ones(tmp_path):
    lake = Lakehouse(None, make_budget_settings(tmp_path).lakehouse)  # delta-rs only: no Spark needed
    lake.create_tables(ALL_TABLES)
    zones.check_lakehouse(lake)
    rogue = dataclasses.replace(PUBLISHED_SANITIZED_DOCUMENTS, name="copied_documents",
                                schema=pa.schema([("doc_id", pa.string()), ("text", pa.string())]), partition_by=())
    lake.create(rogue)  # a table some other tool wrote into the published zone
    with pytest.raises(zones.ZoneViolation, match="published.copied_documents.doc_id, published.copied_documents.text"):
        zones.check_lakehouse(lake)


def test_only_the_publisher_handle_writes_published_and_only_after_the_zone_check(tmp_path):
    lake = Lakehouse(None, make_budget_settings(tmp_path).lakehouse)
    lake.create_tables(ALL_TABLES)
    row = {"word": "order", "vector": [0.1, 0.2], "model_version": "v1", "run_id": "r"}
    with pytest.raises(LakehouseError,
                       match="published.word_vectors: only the publish stage writes the published zone"):
        lake.append_rows(WORD_VECTORS, [row])
    assert len(DeltaTable(lake.table_uri(WORD_VECTORS)).file_uris()) == 0  # refused before any file was written
    zones.publisher(lake).append_rows(WORD_VECTORS, [row])
    assert DeltaTable(lake.table_uri(WORD_VECTORS)).to_pyarrow_table().column("word").to_pylist() == ["order"]
    rogue = dataclasses.replace(PUBLISHED_SANITIZED_DOCUMENTS, name="copied_documents",
                                schema=pa.schema([("doc_id", pa.string()), ("text", pa.string())]), partition_by=())
    lake.create(rogue)
    with pytest.raises(zones.ZoneViolation, match="published.copied_documents.text"):
        zones.publisher(lake)
