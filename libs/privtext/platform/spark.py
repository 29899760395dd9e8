"""The one SparkSession factory: local ``local[*]`` by default, everything overridable from conf.

Under ``spark-submit`` (the JVM is already up, ``PYSPARK_GATEWAY_PORT`` is set) the submitted master
wins; otherwise ``spark.master`` from conf applies, so the same jobs run unchanged in both places.
"""
from __future__ import annotations

import io
import os
import sys
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import BinaryType, StructField, StructType

if TYPE_CHECKING:  # the root settings live above the platform
    from privtext.settings import Settings

DEFAULT_CONF = {
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.execution.arrow.pyspark.fallback.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
    "spark.sql.adaptive.enabled": "true",
    "spark.ui.showConsoleProgress": "false",
}


def get_spark(settings: Settings) -> SparkSession:
    """Return the process's SparkSession built from ``settings.spark`` (reused if one is active)."""
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(settings.spark.app_name)
    if "PYSPARK_GATEWAY_PORT" not in os.environ:  # not launched by spark-submit: conf picks the master
        builder = builder.master(settings.spark.master)
    for key, value in {**DEFAULT_CONF, **settings.spark.conf}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def by_document(df: DataFrame, settings: Settings) -> DataFrame:
    """``df`` hashed by ``doc_id`` into (task slots x ``spark.partitions_per_slot``) partitions, so a
    per-document stage keeps every core busy: a date's table is one file, read back as one split."""
    slots = df.sparkSession.sparkContext.defaultParallelism
    return df.repartition(max(1, slots * settings.spark.partitions_per_slot), "doc_id")


STATS_SCHEMA = StructType([StructField("stats", BinaryType())])


def _pack(*arrays) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, *arrays)
    return buf.getvalue()


def _unpack(blob: bytes) -> tuple:
    with np.load(io.BytesIO(blob)) as z:
        return tuple(z[f"arr_{i}"] for i in range(len(z.files)))


def tree_sum(df: DataFrame, per_partition) -> tuple:
    """Run ``per_partition(frames) -> tuple of arrays`` on every partition and sum them with a tree
    reduction: the driver receives one O(K d) result, never rows."""

    def task(frames):
        yield pd.DataFrame({"stats": [_pack(*per_partition(frames))]})

    packed = df.mapInPandas(task, STATS_SCHEMA).rdd.map(lambda row: _unpack(row.stats))
    return packed.treeReduce(lambda a, b: tuple(x + y for x, y in zip(a, b)), depth=2)
