"""The lakehouse layer on real local Spark + real Delta tables (delta-rs log)."""
import datetime as dt
import json
import subprocess
import sys
import textwrap

import duckdb
import pyarrow as pa
import pytest
from deltalake import DeltaTable

from privtext.platform.lakehouse import Lakehouse, LakehouseError, TableSpec

SPEC = TableSpec(
    "restricted", "events",
    pa.schema([("id", pa.string()), ("n", pa.int64()), ("tags", pa.map_(pa.string(), pa.string())),
               ("day", pa.date32())]),
    ("day",),
)
D1, D2 = dt.date(2026, 1, 1), dt.date(2026, 1, 2)
DDL = "id string, n long, tags map<string,string>, day date"


@pytest.fixture
def lake(spark, settings):
    lakehouse = Lakehouse(spark, settings.lakehouse)
    assert lakehouse.create(SPEC) is True
    assert lakehouse.create(SPEC) is False  # created once; the second call only checks it
    return lakehouse


def rows(lake, version=None):
    return sorted((r.id, r.n, r.day) for r in lake.read(SPEC, version).collect())


def test_empty_table_reads_with_schema(lake):
    df = lake.read(SPEC)
    assert df.count() == 0
    assert df.columns == ["id", "n", "tags", "day"]


def test_append_is_one_commit_with_stats_and_readable_by_duckdb(spark, lake):
    result = lake.append(SPEC,
                         spark.createDataFrame([("a", 1, {}, D1), ("b", 2, {"k": "v"}, D2), ("c", 3, {}, D2)], DDL))
    assert (result.version, result.rows, result.files) == (1, 3, 2)
    table = DeltaTable(lake.table_uri(SPEC))
    assert [h["operation"] for h in table.history()][:2] == ["WRITE", "CREATE TABLE"]
    actions = pa.table(table.get_add_actions(flatten=True)).to_pylist()
    assert sorted(a["num_records"] for a in actions) == [1, 2]
    assert {a["max.n"] for a in actions} == {1, 3}
    assert rows(lake) == [("a", 1, D1), ("b", 2, D2), ("c", 3, D2)]
    got = duckdb.sql(f"SELECT id, n, day FROM delta_scan('{lake.table_uri(SPEC)}') ORDER BY id").fetchall() \
        if _duckdb_has_delta() else _deltalake_rows(lake)
    assert sorted(got) == rows(lake)


def _duckdb_has_delta():
    try:
        duckdb.sql("INSTALL delta; LOAD delta;")
        return True
    except Exception:  # the delta extension is downloaded from the internet; not reachable here
        return False


def _deltalake_rows(lake):
    """delta-rs's own reader (a second, independent implementation of the Delta protocol)."""
    dataset = DeltaTable(lake.table_uri(SPEC)).to_pyarrow_dataset()  # read by name in the SQL  # noqa: F841
    table = duckdb.sql("SELECT id, n, day FROM dataset").arrow()
    return [tuple(r.values()) for r in pa.table(table).to_pylist()]


def test_read_by_date_keeps_the_date_partitions(spark, lake):
    D3 = dt.date(2026, 1, 3)
    lake.append(SPEC, spark.createDataFrame([("a", 1, {}, D1), ("b", 2, {}, D2), ("c", 3, {}, D3)], DDL))
    ids = lambda df: sorted(r.id for r in df.collect())  # noqa: E731
    assert SPEC.date_column == "day"
    assert ids(lake.read(SPEC, date=D2)) == ["b"]
    assert ids(lake.read(SPEC, upto=D2)) == ["a", "b"]
    assert ids(lake.read(SPEC, since=D2)) == ["b", "c"]
    assert ids(lake.read(SPEC, since=D2, upto=D2)) == ["b"]
    assert ids(lake.read(SPEC, version=0, date=D2)) == []
    # only the bounded partitions' files are read (chosen from the log), not every file then filtered
    assert [f.split("/")[-2] for f in lake.read(SPEC, date=D2).inputFiles()] == ["day=2026-01-02"]
    assert sorted(f.split("/")[-2] for f in lake.read(SPEC, since=D2).inputFiles()) == ["day=2026-01-02",
                                                                                        "day=2026-01-03"]
    assert len(lake.read(SPEC).inputFiles()) == 3
    with pytest.raises(LakehouseError, match="needs a datetime.date, got '2026-01-02'"):
        lake.read(SPEC, date="2026-01-02")
    undated = TableSpec("restricted", "undated", pa.schema([("id", pa.string())]))
    lake.create(undated)
    with pytest.raises(LakehouseError, match="restricted.undated has no date partition column"):
        lake.read(undated, upto=D1)


def test_replace_partition_leaves_other_partitions_and_removes_old_files(spark, lake):
    lake.append(SPEC, spark.createDataFrame([("a", 1, {}, D1), ("b", 2, {}, D2)], DDL))
    result = lake.replace_partitions(SPEC, spark.createDataFrame([("x", 9, {}, D1)], DDL), {"day": [D1]})
    assert result.removed_files == 1
    assert rows(lake) == [("b", 2, D2), ("x", 9, D1)]
    assert DeltaTable(lake.table_uri(SPEC)).history()[0]["operationParameters"]["mode"] == "Overwrite"
    # time travel to before the replace
    assert rows(lake, version=1) == [("a", 1, D1), ("b", 2, D2)]


def test_concurrent_replaces_never_double_rows_nor_lose_other_dates(spark, lake):
    """Replaces committed from the same stale snapshot, as two concurrent runs would: another date's
    replace conflicts in delta-rs and is rebased; two replaces of one partition conflict (also on its
    first write) and the later one replaces the earlier one's rows instead of adding to them."""
    lake.append(SPEC, spark.createDataFrame([("a", 1, {}, D1), ("b", 2, {}, D2)], DDL))
    stale = lake.delta_table(SPEC)
    lake.replace_partitions(SPEC, spark.createDataFrame([("a2", 1, {}, D1)], DDL), {"day": [D1]})
    lake.replace_partitions(SPEC, spark.createDataFrame([("b2", 2, {}, D2)], DDL), {"day": [D2]}, snapshot=stale)
    assert rows(lake) == [("a2", 1, D1), ("b2", 2, D2)]
    d3 = dt.date(2026, 1, 3)
    for first_write in (True, False):
        stale = lake.delta_table(SPEC)
        lake.replace_partitions(SPEC, spark.createDataFrame([("c", 3, {}, d3), ("d", 4, {}, d3)], DDL), {"day": [d3]})
        lake.replace_partitions(SPEC, spark.createDataFrame([("c", 3, {}, d3), ("d", 5, {}, d3)], DDL), {"day": [d3]},
                                snapshot=stale)
        assert [r for r in rows(lake) if r[2] == d3] == [("c", 3, d3), ("d", 5, d3)], first_write


def test_file_outside_partition_filter_is_refused_and_cleaned_up(spark, lake):
    before = DeltaTable(lake.table_uri(SPEC)).version()
    with pytest.raises(LakehouseError, match="outside the replaced partitions"):
        lake.replace_partitions(SPEC, spark.createDataFrame([("x", 9, {}, D2)], DDL), {"day": [D1]})
    assert DeltaTable(lake.table_uri(SPEC)).version() == before
    import pathlib
    assert not list(pathlib.Path(lake.table_uri(SPEC)).rglob("*.parquet"))  # nothing partial left


def test_schema_mismatch_is_refused_with_the_column(spark, lake):
    with pytest.raises(LakehouseError, match="column 'n' is string"):
        lake.append(SPEC, spark.createDataFrame([("a", "1", {}, D1)],
                                                "id string, n string, tags map<string,string>, day date"))
    with pytest.raises(LakehouseError, match="missing column 'tags'"):
        lake.append(SPEC, spark.createDataFrame([("a", 1, D1)], "id string, n long, day date"))
    assert DeltaTable(lake.table_uri(SPEC)).version() == 0


def test_table_with_different_stored_schema_is_refused(spark, settings, lake):
    other = TableSpec("restricted", "events", pa.schema([("id", pa.string()), ("day", pa.date32())]), ("day",))
    with pytest.raises(LakehouseError, match="stored schema differs"):
        Lakehouse(spark, settings.lakehouse).read(other)


def test_views_in_zone_database(spark, lake):
    lake.append(SPEC, spark.createDataFrame([("a", 1, {}, D1), ("b", 2, {}, D2)], DDL))
    lake.replace_partitions(SPEC, spark.createDataFrame([("z", 5, {}, D1)], DDL), {"day": [D1]})
    assert lake.register_views([SPEC]) == ["restricted.events"]
    got = sorted(tuple(r) for r in spark.sql("SELECT id, n, day FROM restricted.events").collect())
    assert got == [("b", 2, D2), ("z", 5, D1)]  # the replaced file is still on disk but not in the view


CONCURRENT = textwrap.dedent("""
    import sys, json, datetime as dt
    import pyarrow as pa
    from privtext.settings import load_settings
    from privtext.platform.lakehouse import Lakehouse, TableSpec
    from deltalake.exceptions import CommitFailedError
    spec = TableSpec("protected", "counter", pa.schema([("writer", pa.string()), ("seq", pa.int64())]))
    settings = load_settings(None, overrides={"lakehouse": {"root": sys.argv[1], "compact_files": 3}}, environ={})
    lake = Lakehouse(None, settings.lakehouse)
    retries = 0
    for i in range(int(sys.argv[3])):
        while True:
            snapshot = lake.delta_table(spec)
            seq = lake.read_rows(spec, snapshot).num_rows  # read-modify-write: next sequence number
            try:
                lake.append_rows(spec, [{"writer": sys.argv[2], "seq": seq}], guard="counter", snapshot=snapshot)
                break
            except CommitFailedError:
                retries += 1
    print(json.dumps({"retries": retries}))
""")


def test_two_concurrent_writer_processes_keep_all_rows_without_lost_updates(tmp_path):
    """Guarded appends and the compactions they trigger (``lakehouse.compact_files`` 3), from two processes."""
    from privtext.settings import load_settings

    root = tmp_path / "lake"
    spec = TableSpec("protected", "counter", pa.schema([("writer", pa.string()), ("seq", pa.int64())]))
    lake = Lakehouse(None, load_settings(None, overrides={"lakehouse": {"root": str(root)}}, environ={}).lakehouse)
    lake.create(spec)
    script = tmp_path / "writer.py"
    script.write_text(CONCURRENT)
    procs = [subprocess.Popen([sys.executable, str(script), str(root), name, "15"], stdout=subprocess.PIPE, text=True)
             for name in ("w1", "w2")]
    outputs = [json.loads(p.communicate(timeout=300)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    table = lake.read_rows(spec).to_pylist()
    assert len(table) == 30  # every row of both writers kept, none doubled by the compactions between them
    # guarded read-modify-write: no two commits saw the same state, so sequence numbers are unique
    assert sorted(r["seq"] for r in table) == list(range(30))
    operations = [h["privtext.operation"] for h in DeltaTable(lake.table_uri(spec)).history() if h["version"] > 0]
    assert operations.count("APPEND") == 30 and operations.count("COMPACT") >= 5  # every 3 files, both writers
    assert DeltaTable(lake.table_uri(spec)).get_add_actions().num_rows < 3
    print("conflicts retried:", sum(o["retries"] for o in outputs))


CREATE_ALL = """
import sys, time
from privtext.platform.config import LakehouseSettings
from privtext.platform.lakehouse import Lakehouse
from privtext.platform.tables import ALL_TABLES
time.sleep(max(0.0, float(sys.argv[2]) - time.time()))  # all processes start creating at the same instant
print(len(Lakehouse(None, LakehouseSettings(root=sys.argv[1])).create_tables(ALL_TABLES)), flush=True)
"""


def test_processes_creating_the_tables_at_once_create_each_exactly_once(tmp_path):
    """Unserialized, delta-rs let two creators commit CREATE TABLE twice or fail with CommitFailedError."""
    import os
    import time

    from privtext.platform.tables import ALL_TABLES

    start = str(time.time() + 5)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [subprocess.Popen([sys.executable, "-c", CREATE_ALL, str(tmp_path), start], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for _ in range(3)]
    results = [(p.wait(), p.stdout.read(), p.stderr.read()) for p in procs]
    assert [code for code, _, _ in results] == [0, 0, 0], results
    assert sum(int(out) for _, out, _ in results) == len(ALL_TABLES)
    for spec in ALL_TABLES:
        assert DeltaTable(f"{tmp_path}/{spec.zone}/{spec.name}").version() == 0, spec.qualified_name
