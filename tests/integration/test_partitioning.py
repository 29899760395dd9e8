"""Per-document stages spread a date's documents over every task slot (a date is one file, one split)."""
from privtext.platform.spark import by_document, latest_delivery


def test_documents_are_spread_over_task_slots_by_doc_id(spark, settings):
    df = spark.createDataFrame([(f"d{i}", "x") for i in range(200)], "doc_id string, text string").coalesce(1)
    assert df.rdd.getNumPartitions() == 1
    spread = by_document(df, settings)
    slots = spark.sparkContext.defaultParallelism
    assert spread.rdd.getNumPartitions() == slots * settings.spark.partitions_per_slot == 4
    sizes = spread.rdd.glom().map(len).collect()
    assert sum(sizes) == 200 and min(sizes) > 0  # every partition has work, nothing lost or doubled
    owner = dict(spread.rdd.mapPartitionsWithIndex(lambda i, rows: ((r.doc_id, i) for r in rows)).collect())
    again = dict(by_document(df.repartition(3), settings).rdd
                 .mapPartitionsWithIndex(lambda i, rows: ((r.doc_id, i) for r in rows)).collect())
    assert owner == again  # a document's partition depends on its doc_id only
    one = settings.model_copy(update={"spark": settings.spark.model_copy(update={"partitions_per_slot": 1})})
    assert by_document(df, one).rdd.getNumPartitions() == slots


def _partition_sizes(frames):
    import pandas as pd
    from pyspark import TaskContext

    rows = sum(len(frame) for frame in frames)
    yield pd.DataFrame({"partition": [TaskContext.get().partitionId()], "rows": [rows]})


def test_spread_survives_a_join_on_doc_id_and_adaptive_coalescing(spark, settings, tmp_path):
    """A sort-merge join on doc_id already hash-partitions by doc_id, so a plain repartition(n, doc_id) over
    it is dropped as redundant, and adaptive execution then coalesces the join's small shuffle into one
    task (embed's first night: its table is empty; sanitize: documents joined with their spans)."""
    spark.createDataFrame([(f"d{i}", "x") for i in range(200)],
                          "doc_id string, text string").write.parquet(str(tmp_path / "d"))
    docs = spark.read.parquet(str(tmp_path / "d"))
    # RDD-backed sides have no size estimate: sort-merge joins, as over a lakehouse table read by tasks
    spans = spark.createDataFrame(spark.sparkContext.parallelize([(f"d{i}", i) for i in range(0, 200, 3)]),
                                  "doc_id string, start int")
    empty = spark.createDataFrame([], "doc_id string")
    spread = spark.sparkContext.defaultParallelism * settings.spark.partitions_per_slot
    previous = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", str(spread))  # the join's exchange then matches the spread
    try:
        for joined in (docs.join(spans.groupBy("doc_id").count(), "doc_id", "left"),
                       docs.join(empty, "doc_id", "left_anti")):
            sizes = by_document(joined, settings).mapInPandas(_partition_sizes, "partition int, rows long").collect()
            busy = [r.rows for r in sizes if r.rows > 0]
            assert sum(busy) == 200 and len(busy) == spread
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", previous)


def test_latest_delivery_pairs_each_embedding_with_its_own_delivery(spark):
    """A corrected re-delivery of doc a (2 Feb) replaces its 1 Feb text; b keeps its only delivery; an
    embedding whose delivery is gone (c, erased) is dropped, never paired with another date's text."""
    import datetime as dt

    d1, d2 = dt.date(2026, 2, 1), dt.date(2026, 2, 2)
    emb = spark.createDataFrame([("a", [1.0], d1), ("a", [2.0], d2), ("b", [3.0], d1), ("c", [4.0], d2)],
                                "doc_id string, embedding array<double>, date date")
    docs = spark.createDataFrame([("a", "old", d1), ("a", "new", d2), ("b", "only", d1), ("c", "gone", d1)],
                                 "doc_id string, text string, ingest_date date")
    rows = {r.doc_id: (r.embedding, r.text, r.date) for r in latest_delivery(emb, docs).collect()}
    assert rows == {"a": ([2.0], "new", d2), "b": ([3.0], "only", d1)}
