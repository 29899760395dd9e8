"""A class-data archive (AppCDS, JDK 13+) of the classes a Spark JVM loads, for the short-lived JVMs tests start
in subprocesses (killed stage runs, a standalone cluster's daemons, driver and executors): each maps the
archived classes instead of loading, parsing and verifying them from Spark's jars again. Measured on this
2-core machine (load ~24): a cold driver running a few small queries 26.8 -> 11.1 JVM CPU s, a cold
``privtext run ingest`` of 10,000 lines 20-25 -> 13.9.

The archive is written once per JDK and Spark jar folder (``-XX:ArchiveClassesAtExit`` of one small local job
that exits normally; ~40 CPU s, once) under the temporary folder, and reused by later test sessions and both
xdist workers (one makes it while the other waits; a new file is renamed into place). The JVM checks it (JDK
build, class path) and runs without it, as before, where it does not match; nothing is read from it but classes."""
from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

# The dump's job: Spark SQL (aggregate, join, shuffle), Arrow (pandas in and out, mapInPandas, a Python UDF),
# Parquet written and read back, as a stage's driver and local executor run them
JOB = """
import sys
import pandas as pd
from pyspark.sql import SparkSession, functions as F
spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "2").config("spark.sql.adaptive.enabled", "true")
         .config("spark.sql.execution.arrow.pyspark.enabled", "true")
         .config("spark.sql.sources.partitionOverwriteMode", "dynamic")
         .config("spark.driver.extraJavaOptions", sys.argv[2]).getOrCreate())
df = spark.createDataFrame(pd.DataFrame({"id": range(2000), "t": [f"message {i}" for i in range(2000)]}))
df = df.withColumn("k", F.col("id") % 7).withColumn("d", F.lit("2026-01-01").cast("date"))
twice = df.mapInPandas(lambda frames: (f.assign(id=f["id"] * 2) for f in frames), df.schema)
twice.groupBy("k").agg(F.count("*"), F.max("t")).collect()
twice.write.mode("overwrite").partitionBy("d").parquet(sys.argv[1] + "/p")
back = spark.read.parquet(sys.argv[1] + "/p")
back.join(df.select("id", F.udf(len)("t").alias("n")), "id").where(F.col("n") > 0).count()
list(back.select("t").distinct().toLocalIterator())
spark.stop()
"""


@functools.cache  # once a process: the settings of every test ask
def _key() -> str:
    """The JDK and the Spark jars (their folder: the class path the JVM checks) the archive is valid for."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr
    # the jars' times too: a reinstalled venv at the same path has other files, whose archive the JVM refuses
    listing = sorted(f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in jars.glob("*.jar"))
    return hashlib.sha256("\n".join([java, str(jars), *listing]).encode()).hexdigest()[:16]


def spark_archive() -> Path | None:
    """The archive's path (made now if missing), or None where the JVM could not write one."""
    path = Path(tempfile.gettempdir()) / f"privtext-spark-cds-{os.getuid()}-{_key()}.jsa"
    if path.exists():
        return path
    with open(path.with_suffix(".lock"), "w") as lock, tempfile.TemporaryDirectory(prefix="privtext-cds-") as tmp:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one dump: the other xdist worker waits for it
        if path.exists():
            return path
        dump = Path(tmp) / "spark.jsa"
        options = f"-XX:TieredStopAtLevel=1 -XX:ArchiveClassesAtExit={dump}"
        # output through a pipe: run() returns at its end of file, once the JVM (which writes the archive after
        # the Python process has ended) has exited too
        subprocess.run([sys.executable, "-c", JOB, tmp, options], env={**os.environ, "TMPDIR": tmp},
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900)
        if not dump.exists():
            return None
        os.replace(dump, path)  # complete when it appears: another session reads a whole file or none
    return path


def java_options(archive: Path | None) -> str:
    """A test JVM's options: C1 only (as privtext's drivers, platform.spark.DEFAULT_CONF), the serial collector
    (no concurrent marking or refinement threads beside the tests' small heaps on two busy cores) and the archive,
    without the JVM's class-sharing log (an archive it refuses is a warning on stdout, which tests read)."""
    return "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC" + (
        f" -XX:SharedArchiveFile={archive} -Xlog:cds=off -Xlog:cds+dynamic=off" if archive else "")
