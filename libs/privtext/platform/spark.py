"""The one SparkSession factory: local ``local[*]`` by default, everything overridable from conf.

Under ``spark-submit`` (the JVM is already up, ``PYSPARK_GATEWAY_PORT`` is set) the submitted master
wins; otherwise ``spark.master`` from conf applies, so the same jobs run unchanged in both places.

With a local master, Spark's scratch files (shuffle and spill blocks, broadcast and Python files: they
hold row data), and always its catalog warehouse, go to a private folder of the process,
``<tmp>/privtext-spark-<pid>-*`` (mode 0700), removed at exit after the session is stopped; folders left
by a process that died (kill -9) are removed by the next session on the host. ``spark.local.dir`` /
``spark.sql.warehouse.dir`` in ``spark.conf`` take precedence.
"""
from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile

from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession

from privtext.platform.config import Settings
from privtext.platform.leases import pid_alive

DEFAULT_CONF = {
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.execution.arrow.pyspark.fallback.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
    "spark.sql.adaptive.enabled": "true",
    "spark.ui.showConsoleProgress": "false",
}


RUN_DIR_PREFIX = "privtext-spark-"


def sweep_dead_run_dirs(parent: str | None = None) -> list[str]:
    """Remove this user's private Spark folders whose process is gone; returns the removed paths."""
    parent = parent or tempfile.gettempdir()
    removed = []
    for name in os.listdir(parent):
        pid = name[len(RUN_DIR_PREFIX):].split("-")[0]
        path = os.path.join(parent, name)
        if not (name.startswith(RUN_DIR_PREFIX) and pid.isdigit() and os.path.isdir(path)
                and os.stat(path).st_uid == os.getuid()):
            continue
        if not pid_alive(int(pid)):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _stop_and_remove(folder: str) -> None:
    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
    shutil.rmtree(folder, ignore_errors=True)


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
        master = settings.spark.master
    else:  # the JVM is up: its conf holds the submitted master
        SparkContext._ensure_initialized()  # connects to it (no SparkContext yet), so SparkConf reads its conf
        master = SparkConf().get("spark.master", "")
    sweep_dead_run_dirs()
    private = tempfile.mkdtemp(prefix=f"{RUN_DIR_PREFIX}{os.getpid()}-")  # mode 0700
    scratch = {"spark.sql.warehouse.dir": f"{private}/warehouse"}
    if master.startswith("local"):  # executors elsewhere use their cluster manager's local dirs
        scratch["spark.local.dir"] = f"{private}/local"
    for key, value in {**DEFAULT_CONF, **scratch, **settings.spark.conf}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    atexit.register(_stop_and_remove, private)  # runs before pyspark's own exit hooks (registered earlier)
    spark.sparkContext.setLogLevel("WARN")
    return spark
