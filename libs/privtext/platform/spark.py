"""The one SparkSession factory: local ``local[*]`` by default, everything overridable from conf.

Under ``spark-submit`` (the JVM is already up, ``PYSPARK_GATEWAY_PORT`` is set) the submitted master
wins; otherwise ``spark.master`` from conf applies, so the same jobs run unchanged in both places.

With a local master, Spark's scratch files (shuffle and spill blocks, broadcast and Python files: they
hold row data), and always its catalog warehouse, go to a private folder of the process,
``<tmp>/privtext-spark-<pid>-*`` (mode 0700), removed at exit after the session is stopped; folders left
by a process that died (kill -9) are removed by the next session on the host. ``spark.local.dir`` /
``spark.sql.warehouse.dir`` in ``spark.conf`` take precedence.

Python workers load their models once (``privtext.worker_cache``), so an idle worker holding them is
worth keeping and an extra one costs a full load: the idle pool is capped at the task slots of a local
master (``spark.python.factory.idleWorkerMaxPoolSize``). Without the cap, a stage whose tasks once
held two workers each (a Python UDF beside ``mapInPandas``) leaves twice the slots idle, and the next
stage's tasks, served round-robin, load the Presidio analyzer in every one of them.

On a local master the workers are forked from ``privtext.platform.spark_daemon`` (``spark.python.daemon.module``),
which has imported numpy, pyarrow, pandas and pyspark's worker once: a new worker no longer spends ~2 CPU s on them.
"""
from __future__ import annotations

import atexit
import importlib.util
import io
import os
import shutil
import subprocess
import sys
import tempfile
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from pyspark import SparkConf, SparkContext
from pyspark.sql import DataFrame, SparkSession, Window, functions as F
from pyspark.sql.types import BinaryType, StructField, StructType

from privtext.platform.leases import pid_alive

if TYPE_CHECKING:  # the root settings live above the platform
    from privtext.settings import Settings

DEFAULT_CONF = {
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.execution.arrow.pyspark.fallback.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
    "spark.sql.adaptive.enabled": "true",
    "spark.ui.showConsoleProgress": "false",
    # The driver JIT-compiles with C1 only: a nightly run is many short queries, and C2's compilations were
    # ~40% of the JVM's CPU on two cores with no per-document gain (benchmarks/platform/pipeline_scaling.py,
    # docs/benchmarks.md).
    # Applies where privtext starts the JVM; executors of a cluster keep the JVM's default.
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1",
}


RUN_DIR_PREFIX = "privtext-spark-"
DAEMON_MODULE = "privtext.platform.spark_daemon"  # forks the Python workers with their imports done


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


def local_slots(master: str) -> int | None:
    """Task slots of a local master (``local``, ``local[N]``, ``local[*]``, ``local[N,F]``); None otherwise."""
    if master == "local":
        return 1
    if not (master.startswith("local[") and master.endswith("]")):
        return None
    threads = master[len("local["):-1].split(",")[0].strip()
    if threads == "*":
        return os.cpu_count() or 1
    return int(threads) if threads.isdigit() else None


def workers_find(module: str, python: str) -> bool:
    """Whether ``python``, started in this process's environment and folder as Spark starts a local executor's
    worker daemon, finds ``module`` where this process does (not so where privtext came from a zip on this
    process's path only: a daemon loading another copy would shadow the shipped one in every worker)."""
    here = importlib.util.find_spec(module)
    probe = f"import importlib.util as u; s = u.find_spec({module!r}); print(s.origin if s else '')"
    try:
        found = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return False
    return here is not None and found.returncode == 0 and found.stdout.strip() == here.origin


def get_spark(settings: Settings) -> SparkSession:
    """Return the process's SparkSession built from ``settings.spark`` (reused if one is active).

    Python workers run this process's interpreter unless ``PYSPARK_PYTHON`` / ``PYSPARK_DRIVER_PYTHON``
    name another: PySpark reads them from the environment only (no Spark conf), so they are set there,
    before the session starts, where the caller's environment leaves them unset."""
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    for name in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON"):
        os.environ.setdefault(name, sys.executable)
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
    slots = local_slots(master)
    if slots:  # idle workers keep their models: as many as the slots, not more
        scratch["spark.python.factory.idleWorkerMaxPoolSize"] = str(slots)
    # Python workers forked with their imports done: where this process started the local executor, and no
    # shipped code (spark-submit's or spark.submit.pyFiles) could differ from the daemon's; else pyspark.daemon
    python = settings.spark.conf.get("spark.pyspark.python") or os.environ["PYSPARK_PYTHON"]
    if (slots and "PYSPARK_GATEWAY_PORT" not in os.environ and not settings.spark.conf.get("spark.submit.pyFiles")
            and workers_find(DAEMON_MODULE, python)):
        scratch["spark.python.daemon.module"] = DAEMON_MODULE
    for key, value in {**DEFAULT_CONF, **scratch, **settings.spark.conf}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    atexit.register(_stop_and_remove, private)  # runs before pyspark's own exit hooks (registered earlier)
    spark.sparkContext.setLogLevel("WARN")
    return spark


def by_document(df: DataFrame, settings: Settings) -> DataFrame:
    """``df`` hashed by ``doc_id`` into (task slots x ``spark.partitions_per_slot``) partitions, so a
    per-document stage keeps every core busy: a date's table is one file, read back as one split.

    The key is ``xxhash64(doc_id)``, not ``doc_id``: over a sort-merge join on doc_id (already hashed by
    doc_id into ``spark.sql.shuffle.partitions``) a repartition by doc_id into as many partitions is
    dropped as redundant, and adaptive execution then coalesces the join's small shuffle into one task."""
    slots = df.sparkSession.sparkContext.defaultParallelism
    return df.repartition(max(1, slots * settings.spark.partitions_per_slot), F.xxhash64("doc_id"))


def held_out(fraction: float):
    """True for the documents of the held-out split: a ``fraction`` of ``doc_id``s chosen by SHA-256 of the
    id alone (52 bits as a number in [0, 1)), so every stage, night and Spark version agrees on it and a
    document never changes side. Training uses ``~held_out(f)``, evaluation ``held_out(f)``."""
    share = F.conv(F.substring(F.sha2(F.concat(F.lit("privtext-holdout:"), F.col("doc_id")), 256), 1, 13), 16, 10)
    return share.cast("double") / float(16**13) < F.lit(float(fraction))


def latest_delivery(embeddings: DataFrame, documents: DataFrame) -> DataFrame:
    """Each document's embedding joined to the text of the SAME delivery (``date`` = ``ingest_date``), one row
    per ``doc_id``: its latest delivery. A corrected re-delivery replaces the earlier one, and an embedding is
    never paired with another delivery's text or label."""
    joined = embeddings.join(documents.withColumnRenamed("ingest_date", "date"), ["doc_id", "date"])
    latest = Window.partitionBy("doc_id").orderBy(F.col("date").desc())
    return joined.withColumn("_latest", F.row_number().over(latest)).where(F.col("_latest") == 1).drop("_latest")


STATS_SCHEMA = StructType([StructField("stats", BinaryType())])


def _pack(*arrays) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, *arrays)
    return buf.getvalue()


def _unpack(blob: bytes) -> tuple:
    with np.load(io.BytesIO(blob)) as z:
        return tuple(z[f"arr_{i}"] for i in range(len(z.files)))


def tree_sum(df: DataFrame, per_partition) -> tuple:
    """Run ``per_partition(frames) -> tuple of arrays`` on every partition and sum them: the driver receives
    one O(K d) result per partition, never rows, and adds them up in partition order. One Python operator
    per task: an RDD reduction beside ``mapInPandas`` held a second Python worker in every task."""

    def task(frames):
        yield pd.DataFrame({"stats": [_pack(*per_partition(frames))]})

    total = None
    for row in df.mapInPandas(task, STATS_SCHEMA).collect():  # O(partitions) rows of O(K d)
        part = _unpack(row.stats)
        total = part if total is None else tuple(x + y for x, y in zip(total, part))
    if total is None:
        raise ValueError("tree_sum of a DataFrame without partitions")
    return total
