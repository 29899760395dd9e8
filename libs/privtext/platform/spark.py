"""The one SparkSession factory: local ``local[*]`` by default, everything overridable from conf.

Under ``spark-submit`` (the JVM is already up, ``PYSPARK_GATEWAY_PORT`` is set) the submitted master
wins; otherwise ``spark.master`` from conf applies, so the same jobs run unchanged in both places.
"""
from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

from privtext.platform.config import Settings

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
