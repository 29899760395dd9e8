"""Spark's Python workers are forked from ``privtext.platform.spark_daemon`` on a local master, with its imports
done and frozen before the fork, and run pandas/Arrow UDFs as before; a daemon interpreter that cannot find the
module keeps ``pyspark.daemon``; the preloaded modules work in forked children (no thread is lost to the fork)."""
import gc
import os
import subprocess
import sys
import textwrap

import pandas as pd
from pyspark.sql import functions as F

from privtext.platform.local_cluster import project_zip
from privtext.platform.spark import DAEMON_MODULE, workers_find
from privtext.platform.spark_daemon import PRELOAD


def _worker_facts(frames):
    for frame in frames:
        with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
            parent = f.read().split(b"\0")
        preloaded = all(name in sys.modules for name in PRELOAD)
        yield pd.DataFrame({"parent": [b" ".join(parent).decode()], "frozen": [gc.get_freeze_count()],
                            "preloaded": [preloaded], "total": [int(frame["id"].sum())], "rows": [len(frame)]})


def test_workers_fork_from_the_preloading_daemon_and_compute_the_same(spark):
    assert spark.sparkContext.getConf().get("spark.python.daemon.module") == DAEMON_MODULE
    facts = spark.range(0, 1000, numPartitions=4).mapInPandas(
        _worker_facts, "parent string, frozen long, preloaded boolean, total long, rows long").toPandas()
    assert all(f"-m {DAEMON_MODULE} pyspark.worker" in parent for parent in facts["parent"])
    # pyspark.daemon freezes nothing: the frozen objects are the daemon's imports, made before the fork
    assert facts["frozen"].min() > 10_000 and facts["preloaded"].all()
    assert (facts["total"].sum(), facts["rows"].sum()) == (sum(range(1000)), 1000)
    # a pandas UDF and a row-at-a-time UDF give what they gave under pyspark.daemon
    square = F.pandas_udf(lambda s: s * s, "long")
    half = F.udf(lambda x: x / 2, "double")
    rows = spark.range(0, 300, numPartitions=3).select(square("id").alias("sq"), half("id").alias("h")).collect()
    assert sorted((r.sq, r.h) for r in rows) == [(i * i, i / 2) for i in range(300)]


def test_a_daemon_that_cannot_find_the_module_or_finds_another_copy_is_not_named(tmp_path):
    assert workers_find(DAEMON_MODULE, sys.executable)
    assert not workers_find("privtext.platform.no_such_daemon", sys.executable)
    assert not workers_find(DAEMON_MODULE, "/nonexistent/python")
    # privtext from a shipped zip (spark-submit's --py-files): a daemon would load the installed copy instead
    shipped = project_zip(tmp_path / "privtext.zip")
    probe = f"import sys; sys.path.insert(0, {str(shipped)!r}); from privtext.platform import spark; " \
            f"print(spark.__file__, spark.workers_find({DAEMON_MODULE!r}, sys.executable))"
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True).stdout.split()
    assert out == [f"{shipped}/privtext/platform/spark.py", "False"]


def test_forked_children_of_the_preloaded_process_run_numpy_arrow_and_pandas():
    """The preload's native threads (numpy's BLAS pool, pyarrow's jemalloc) survive a fork: each child's work
    ends in time and right."""
    script = textwrap.dedent("""
        import os, sys
        from privtext.platform.spark_daemon import preload
        preload()
        for i in range(3):
            pid = os.fork()
            if pid == 0:
                import numpy as np, pyarrow as pa, pyarrow.compute as pc
                a = np.arange(40_000, dtype=float).reshape(200, 200)
                t = pa.table({"x": np.arange(300_000), "s": [str(k % 7) for k in range(300_000)]})
                ok = (a @ a.T).trace() == (a * a).sum() and len(t.to_pandas()) == 300_000 \\
                    and pc.sum(t["x"]).as_py() == 299_999 * 300_000 // 2
                os._exit(0 if ok else 3)
            assert os.waitpid(pid, 0)[1] == 0, i
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
