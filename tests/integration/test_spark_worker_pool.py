"""Idle Python workers are capped at the local master's task slots, so a model loaded once per worker
(``privtext.worker_cache``) is loaded in at most that many processes, whatever the stage before left.
The driver JVM that privtext starts compiles with C1 only."""
import os

import pandas as pd
from pyspark.sql import functions as F

from privtext.platform.spark import local_slots


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
