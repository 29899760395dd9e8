"""Per-document stages spread a date's documents over every task slot (a date is one file, one split)."""
from privtext.platform.spark import by_document


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
