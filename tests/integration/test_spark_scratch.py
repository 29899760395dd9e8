"""Spark's scratch files (shuffle blocks hold row data) live in a private 0700 folder of the process,
removed at exit; a folder left by a killed process is removed by the next session's sweep."""
import os
import signal
import stat
import subprocess
import sys

from jvm_archive import java_options, spark_archive
from pyspark.sql import functions as F

from privtext.platform.spark import sweep_dead_run_dirs

SESSION = """
import sys, time
from privtext.settings import load_settings
from privtext.platform.spark import get_spark
conf = {"spark.ui.enabled": "false", "spark.driver.extraJavaOptions": sys.argv[2]}
spark = get_spark(load_settings(None, overrides={"spark": {"master": "local[1]", "conf": conf}}, environ={}))
spark.range(1000).repartition(2).groupBy("id").count().collect()
print(spark.sparkContext.getConf().get("spark.local.dir"), flush=True)
if sys.argv[1] == "hang":
    time.sleep(300)
"""


def test_shuffle_blocks_go_to_the_private_folder(spark):
    local = spark.sparkContext.getConf().get("spark.local.dir")
    private = os.path.dirname(local)
    assert os.path.basename(private).startswith(f"privtext-spark-{os.getpid()}-")
    assert stat.S_IMODE(os.stat(private).st_mode) == 0o700
    spark.range(1000).repartition(3).groupBy(F.col("id") % 7).count().collect()
    assert any(name.startswith("blockmgr-") for name in os.listdir(local))


def _session(mode: str, tmp_path):
    """A process with a session of its own (a cold JVM: Spark's classes mapped from the tests' archive,
    tests/jvm_archive.py, as the killed stage runs' JVMs)."""
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.Popen([sys.executable, "-c", SESSION, mode, java_options(spark_archive())],
                            stdout=subprocess.PIPE, text=True, env=env)


def test_private_folder_removed_at_exit_and_swept_after_a_kill(tmp_path):
    clean, killed = _session("exit", tmp_path), _session("hang", tmp_path)  # both JVMs start at once
    private = os.path.dirname(clean.stdout.readline().strip())
    assert clean.wait() == 0 and private.startswith(str(tmp_path)) and not os.path.exists(private)
    private = os.path.dirname(killed.stdout.readline().strip())
    assert os.path.basename(private).startswith(f"privtext-spark-{killed.pid}-")  # the killed one's, not the other's
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait()
    assert os.path.isdir(os.path.join(private, "local"))  # kill -9: no exit hook ran
    assert sweep_dead_run_dirs(str(tmp_path)) == [private]
    assert not os.path.exists(private)
