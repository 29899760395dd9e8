"""Idle Python workers are capped at the local master's task slots, so a model loaded once per worker
(``privtext.worker_cache``) is loaded in at most that many processes, whatever the stage before left.
The driver JVM that privtext starts compiles with C1 only. ``tree_sum`` runs one Python operator per task."""
import os

import numpy as np
import pandas as pd
from pyspark.sql import functions as F

from privtext.platform.spark import STATS_SCHEMA, _pack, _unpack, local_slots, tree_sum


def test_local_slots():
    assert [local_slots(m) for m in ("local", "local[2]", "local[3,2]", "local[*]", "spark://h:7077", "yarn")] == \
        [1, 2, 3, os.cpu_count(), None, None]


def _pids(frames):
    for frame in frames:
        yield pd.DataFrame({"pid": [os.getpid()] * len(frame)})


def test_a_stage_after_a_two_worker_stage_runs_in_at_most_slots_workers(spark):
    slots = local_slots(spark.sparkContext.master)
    assert spark.sparkContext.getConf().get("spark.python.factory.idleWorkerMaxPoolSize") == str(slots)
    # a Python UDF beside mapInPandas in one task: each task holds two workers at once
    plus_one = F.udf(lambda x: x + 1, "long")
    two_per_task = spark.range(0, 400, numPartitions=2 * slots).withColumn("y", plus_one("id"))
    two_per_task.mapInPandas(_pids, "pid long").collect()
    # the next stage: twice the slots in tasks, served from the idle pool
    pids = {r.pid for r in spark.range(0, 400, numPartitions=4 * slots).mapInPandas(_pids, "pid long").collect()}
    assert len(pids) <= slots


def test_the_driver_jvm_it_starts_compiles_with_c1_only(spark):
    """``DEFAULT_CONF``'s JIT flag reaches the JVM that ``get_spark`` launches (given before it starts)."""
    runtime = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    assert "-XX:TieredStopAtLevel=1" in list(runtime.getInputArguments())


def test_tree_sum_equals_the_rdd_tree_reduction_it_replaced(spark):
    """``tree_sum`` adds the partitions' results on the driver in partition order: bit for bit the arrays of the
    RDD ``treeReduce`` beside ``mapInPandas`` it replaced (a second Python worker in every task; up to 4
    partitions that reduction is the same left fold), and the sums of the rows themselves."""
    rows = np.random.default_rng(7).normal(size=(300, 4))

    def per_partition(frames):
        n, s = np.zeros(1, np.int64), np.zeros(4)
        for f in frames:
            n, s = n + len(f), s + (np.stack(f["x"].to_numpy()).sum(axis=0) if len(f) else 0)
        return n, s

    def task(frames):
        yield pd.DataFrame({"stats": [_pack(*per_partition(frames))]})

    for parts in (1, 2, 4):
        df = spark.createDataFrame(pd.DataFrame({"x": list(rows)})).repartition(parts).cache()
        old = (df.mapInPandas(task, STATS_SCHEMA).rdd.map(lambda row: _unpack(row.stats))
               .treeReduce(lambda a, b: tuple(x + y for x, y in zip(a, b)), depth=2))
        new = tree_sum(df, per_partition)
        df.unpersist()
        assert len(new) == 2 and new[0].tolist() == old[0].tolist() == [300]
        assert new[1].tobytes() == old[1].tobytes()
        np.testing.assert_allclose(new[1], rows.sum(axis=0), rtol=1e-12)
