"""The nightly export on a real standalone Spark cluster (a master and two workers, separate JVMs, the project
shipped as a zip with spark.submit.pyFiles) over a real S3 store (SeaweedFS), with one worker killed mid-stage
(its lost tasks retried on the other), gives the same tables and ledger as local[2] over a local lakehouse
(that reference run: the CLI in the test's process, on the session's local[2] SparkSession). The cluster's
stages run in subprocesses through the CLI, as ``make cluster-demo`` does (privtext.platform.local_cluster, local_s3),
with the store's ``pipeline`` key only; the results are read back with the key of each reader's role
(officer: the ledger; analyst: the published table), and no key (store keys, HMAC key) shows in a process's
command line, the Spark event log (its environment dump is the UI's Environment page), MLflow or a log."""
import itertools
import json
import logging
import os
import re
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import duckdb
import pytest
import yaml
from deltalake import DeltaTable
from jvm_archive import java_options, spark_archive

from privtext.platform.lakehouse import Lakehouse
from privtext.platform.local_cluster import cluster_conf, project_zip, standalone_cluster
from privtext.platform.local_s3 import s3_conf
from privtext.platform.tables import (
    DOCUMENTS,
    PII_SPANS,
    PRIVACY_LEDGER,
    PUBLISHED_SANITIZED_DOCUMENTS,
    STAGED_SANITIZED_DOCUMENTS,
)
from privtext.settings import load_settings
from privtext.status import table_rows

DATE = "2026-01-15"
HMAC_KEY = secrets.token_hex(24)  # random: a hygiene scan finds it only where it leaked
# sanitize's quality and utility jobs off (their executors would load the sentence encoder; tests/integration/
# test_sanitize covers them): equal tables and ledgers are what this module checks
COMMON = {"tracking": {"enabled": False},
          "clusant": {"vocabulary": {"size": 60}, "n_clusters": 4,
                      "metrics": {"perplexity": False, "max_documents": 0, "utility_documents": 0}}}
# The cluster's JVMs (master, workers: SPARK_DAEMON_JAVA_OPTS; the driver and executors: their extraJavaOptions)
# JIT-compile with C1 only, as privtext's own driver JVMs do (platform.spark.DEFAULT_CONF), and map Spark's classes
# from a class-data archive (tests/jvm_archive.py) instead of loading them from the jars: short runs, two busy cores
# An executor (1 core) keeps one idle Python worker, as get_spark caps a local master's pool at its slots: without
# the cap detect_pii's tasks went round-robin to the idle workers ingest left and each loaded the analyzer again
# (~12 CPU s each; 4 tasks of ~50 s on two executors at load 13)
ONE_IDLE_WORKER = {"spark.python.factory.idleWorkerMaxPoolSize": "1"}
# publishable (never deterministic), the audit skipped. 5 canaries plant each of the 14 measurable types: random
# when not deterministic, but never in pii_spans, and ledger_totals compares their measurement's count, so the
# detect_pii run the worker kill hits records it once, as the local run does
PUBLISHABLE = {"pii": {"canaries": {"count": 5}},
               "publish": {"require_audit": False, "min_canary_recall": 0.0}}


def write_conf(conf: dict, folder: Path, extra: dict) -> Path:
    """``conf`` + the common test settings, a lakehouse and exports of its own under ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    merged = {**conf, **COMMON, **extra,
              "lakehouse": {"root": str(folder / "lake"), **conf.get("lakehouse", {})},
              "publish": {"export_path": str(folder / "exports"), "report_path": str(folder / "reports"),
                          **conf.get("publish", {}), **extra.get("publish", {})},
              "clusant": {**COMMON["clusant"], "cache_dir": str(folder.parent / "vocab-cache")}}
    (folder / "env.yaml").write_text(yaml.safe_dump(merged))
    return folder / "env.yaml"


def privtext(conf: Path, args: list[str], env: dict | None = None) -> subprocess.Popen:
    """The CLI in a subprocess; its output goes to ``err.log`` beside the config (a pipe left unread could block it)."""
    env = {**os.environ, **(env or {}), "PRIVTEXT_HMAC_KEY": HMAC_KEY, "HF_HUB_OFFLINE": "1",
           "PYSPARK_PYTHON": sys.executable}
    with open(conf.parent / "err.log", "w") as log:
        return subprocess.Popen([sys.executable, "-m", "privtext.cli", "--verbose", "--conf", str(conf), *args],
                                env=env, stdout=log, stderr=subprocess.STDOUT)


def finish(process: subprocess.Popen, conf: Path) -> str:
    process.wait(timeout=900)
    log = (conf.parent / "err.log").read_text()
    assert process.returncode == 0, log[-3000:]
    return log


def nightly_args(sample: Path, skip: tuple[str, ...]) -> list[str]:
    return ["pipeline", "run", "nightly_sanitized_export", "--date", DATE, "--input", str(sample),
            *(a for s in skip for a in ("--skip", s))]


def stage_times(log: str) -> dict[str, float]:
    """Each stage's wall time (s) from the pipeline's log."""
    return {m[0]: float(m[1]) for m in re.findall(r"nightly_sanitized_export: (\w+) done in ([\d.]+) s", log)}


def nightly_here(conf: Path, sample: Path, skip: tuple[str, ...], caplog, monkeypatch) -> dict[str, float]:
    """The nightly pipeline through the CLI in this process, on the session's local[2] SparkSession (the config's
    spark section does not apply to a session already started): the local reference a cluster run is
    compared with, without a second JVM and a cold set of Python workers. The HMAC key is in this
    process's environment for the run only (the cluster started after it must not inherit it)."""
    from privtext.cli import main

    with monkeypatch.context() as env, caplog.at_level(logging.INFO, logger="privtext"):
        env.setenv("PRIVTEXT_HMAC_KEY", HMAC_KEY)
        caplog.clear()
        assert main(["--conf", str(conf), *nightly_args(sample, skip)]) == 0
        return stage_times(caplog.text)


def ledger_totals(lake: Lakehouse) -> dict:
    """Charges per (stage, guarantee, mechanism): how many and their summed eps."""
    entries = lake.delta_table(PRIVACY_LEDGER).to_pyarrow_table().to_pylist()
    totals = Counter()
    for e in entries:
        key = (e["stage"], e["guarantee"], e["mechanism"])
        totals[key + ("charges",)] += 1
        totals[key + ("eps",)] += round(float(json.loads(e["params"]).get("eps") or 0), 9)
    return dict(totals)


def spans(lake: Lakehouse) -> list[tuple]:
    rows = lake.delta_table(PII_SPANS).to_pyarrow_table().to_pylist()
    return sorted((r["doc_id"], r["entity_type"], r["start"], r["end"], r["secret_id"]) for r in rows)


class CommandLines(threading.Thread):
    """Every process's command line (``/proc/*/cmdline``, what ``ps`` shows) until stopped: every 0.2 s those of
    the processes that appeared since the look before (read at two looks in a row: a fork's, then what it
    exec'd), every 2 s all of them (one exec'd later, e.g. ``spark-class``'s ``exec java``). A look at every
    process every 0.2 s took ~5 ms: ~10 CPU s of the test's process over a cluster run."""

    def __init__(self):
        super().__init__(daemon=True)
        self.seen: set[bytes] = set()
        self.done = threading.Event()

    def run(self):
        before: set[str] = set()
        recent: set[str] = set()
        for look in itertools.count():
            if self.done.is_set():
                break
            pids = {pid for pid in os.listdir("/proc") if pid.isdigit()}  # not Path.glob: a process ending raises
            new = pids - before
            for pid in pids if look % 10 == 0 else new | recent:
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                        self.seen.add(cmdline.read())
                except OSError:  # the process ended
                    pass
            before, recent = pids, new
            self.done.wait(0.2)

    def stop(self) -> set[bytes]:
        self.done.set()
        self.join()
        return self.seen


def hits(keys: list[str], blobs: dict[str, bytes]) -> list[tuple[str, str]]:
    """(where, which key) for every key found in a blob, as text or as bytes."""
    return [(where, key[:4] + "...") for where, blob in blobs.items() for key in keys if key.encode() in blob]


def files(*folders: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for folder in folders for p in folder.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def cluster(s3_server):
    """One standalone cluster (a master and two workers, 1 core each) for the module: its daemons and executors
    hold the store's ``pipeline`` key only. Its test kills worker-1. ``started.java``: the JVMs' options."""
    options = java_options(spark_archive())
    env = {**s3_server.env("pipeline"), "SPARK_DAEMON_JAVA_OPTS": options}
    with standalone_cluster(workers=2, cores=1, memory="1200m", env=env) as started:
        started.java = options
        yield started


@pytest.mark.cluster
def test_the_nightly_export_on_a_standalone_cluster_over_s3_with_a_worker_killed_equals_local(
        spark, tmp_path, s3_store, cluster, monkeypatch, caplog):
    """Once ingest is done, worker-1's process group (the worker JVM, its executor and Python workers) is SIGKILLed
    while its executor runs a task: the event log shows that task lost with its executor and every lost task's
    partition rerun successfully on worker-0, and every table, the spans, the documents and the ledger (the
    canary measurement of the detect_pii run the kill hit included) equal the local run's, nothing duplicated."""
    from privtext.sample_data import generate, write_jsonl

    sample = write_jsonl(generate(100, seed=5), tmp_path / "in" / "messages.jsonl")
    skip = ("embed", "audit")
    local_conf = write_conf({"spark": {"master": "local[2]", "conf": {"spark.sql.shuffle.partitions": "4"}}},
                            tmp_path / "local", PUBLISHABLE)
    local_times = nightly_here(local_conf, sample, skip, caplog, monkeypatch)
    pipeline = s3_store.env("pipeline")  # the only key the workers, executors and stages hold
    events = tmp_path / "events"
    events.mkdir()
    command_lines = CommandLines()  # the daemons started before it: sampled while they run, as the executors
    command_lines.start()
    conf = s3_conf(s3_store, cluster_conf(cluster, project_zip(tmp_path / "privtext.zip")))
    conf["spark"]["conf"].update({"spark.driver.extraJavaOptions": cluster.java,
                                  "spark.executor.extraJavaOptions": cluster.java, **ONE_IDLE_WORKER,
                                  "spark.task.maxFailures": "4",
                                  "spark.eventLog.enabled": "true", "spark.eventLog.dir": events.as_uri(),
                                  "spark.eventLog.compress": "false", "spark.eventLog.rolling.enabled": "false"})
    cluster_yaml = write_conf(conf, tmp_path / "cluster", {**PUBLISHABLE, "tracking": {"enabled": True}})
    assert int(cluster.state()["aliveworkers"]) == 2  # both workers up before the kill
    process = privtext(cluster_yaml, nightly_args(sample, skip), pipeline)
    log = cluster_yaml.parent / "err.log"
    killed = _kill_when_running(cluster, "worker-1", lambda: "nightly_sanitized_export: ingest done in" in
                                log.read_text(errors="replace"), time.monotonic() + 600)
    cluster_times = stage_times(finish(process, cluster_yaml))
    assert killed and killed["cores"] == 2  # killed while the application held a core on each worker
    finished = cluster.state()["completedapps"]
    executors = {w.name for w in (cluster.folder / "work").iterdir() if any(w.glob("app-*/*/stderr"))}
    worker_environ = Path(f"/proc/{cluster.pids['worker-0']}/environ").read_bytes()
    cluster_logs = files(cluster.folder)
    seen_command_lines = command_lines.stop()
    assert finished and executors == {"worker-0", "worker-1"}  # an executor JVM ran under each worker
    ends = [json.loads(line) for blob in files(events).values() for line in blob.decode().splitlines()
            if '"SparkListenerTaskEnd"' in line]
    lost, retried = lost_and_rerun(ends)
    print(f"\nkilled worker-1 at TID {killed['tid']}: {len(lost)} task(s) lost with its executor, their "
          f"partitions rerun by {sorted(retried.values())} (stage, stage attempt, task attempt, executor)")
    assert killed["tid"] in {e["Task Info"]["Task ID"] for e in lost}  # the kill hit a running task
    assert lost and set(retried) == {e["Task Info"]["Task ID"] for e in lost}

    # secrets hygiene: where the keys must be (a worker's environment: the scan finds them there) ...
    keys = [*s3_store.secrets(), HMAC_KEY]
    assert pipeline["AWS_SECRET_ACCESS_KEY"].encode() in worker_environ
    assert not [k for i in ("officer", "analyst") for k in s3_store.env(i).values() if k.encode() in worker_environ
                and k != "us-east-1"]  # the other roles' keys are not in the pipeline's processes
    # ... and nowhere else: command lines (executor JVMs and Python workers included), the event log (with
    # the environment dump), the generated config, MLflow's database and artifacts, every log, the store's log
    assert any(b"CoarseGrainedExecutorBackend" in c for c in seen_command_lines)  # the executors were sampled
    event_log = files(events)
    assert any(b'"SparkListenerEnvironmentUpdate"' in blob for blob in event_log.values())
    mlflow_files = {p: b for p, b in files(tmp_path / "cluster").items() if "mlflow.db" in p or "mlruns" in p}
    assert any(b"clusant.method" in blob for blob in mlflow_files.values())  # MLflow params were logged
    scanned = {**{f"cmdline {i}": c for i, c in enumerate(seen_command_lines)}, **event_log, **cluster_logs,
               **files(tmp_path / "cluster"), "weed.log": (s3_store.folder / "weed.log").read_bytes()}
    found = hits(keys, scanned)
    print(f"\nsecrets hygiene: {len(keys)} keys x {len(scanned)} command lines and files "
          f"({sum(map(len, scanned.values())) / 1e6:.1f} MB): {len(found)} hits")
    assert not found

    local_settings, s3_settings = load_settings(local_conf), load_settings(cluster_yaml)
    assert s3_settings.lakehouse.zone_root("published").startswith("s3://")
    local_lake, s3_lake = Lakehouse(None, local_settings.lakehouse), Lakehouse(None, s3_settings.lakehouse)

    def holding(identity: str) -> None:  # this process reads the buckets with one role's key at a time
        for name, value in s3_store.env(identity).items():
            monkeypatch.setenv(name, value)

    holding("pipeline")  # every zone's row counts, the documents and the keyed spans (restricted)
    local_rows, s3_rows = table_rows(local_settings), table_rows(s3_settings)
    print("\nrows (local[2] local disk | cluster S3):", [(n, r, c) for (n, r), (_, c) in zip(local_rows, s3_rows) if r])
    print("stage seconds (local[2] local disk | cluster S3):",
          {s: (local_times[s], cluster_times.get(s)) for s in local_times})
    assert s3_rows == local_rows
    assert dict(local_rows)["published.sanitized_documents"] >= 100
    assert spans(s3_lake) == spans(local_lake) and len(set(spans(s3_lake))) == len(spans(s3_lake)) > 50
    documents = [lake.delta_table(DOCUMENTS).to_pyarrow_table().column("doc_id").to_pylist()
                 for lake in (local_lake, s3_lake)]
    assert sorted(documents[1]) == sorted(documents[0]) and len(set(documents[1])) == len(documents[1]) >= 100
    holding("officer")  # the ledger (protected), as the privacy officer reads it
    assert ledger_totals(s3_lake) == ledger_totals(local_lake)
    print("ledger totals:", ledger_totals(s3_lake))

    # an analyst's read of the published table in the bucket, outside Spark: deltalake + DuckDB, analyst's key
    holding("analyst")
    uri = s3_lake.table_uri(PUBLISHED_SANITIZED_DOCUMENTS)
    published = DeltaTable(uri, storage_options=s3_lake.storage_options(PUBLISHED_SANITIZED_DOCUMENTS))
    dataset = published.to_pyarrow_dataset()  # read by name in the SQL  # noqa: F841
    count, docs = duckdb.sql("SELECT count(*), count(DISTINCT doc_id) FROM dataset").fetchall()[0]
    assert uri.startswith("s3://privtext-published/")
    assert count == docs == dict(local_rows)["published.sanitized_documents"]
    manifest = json.loads(s3_lake_read(s3_settings, f"sanitized_documents/{DATE}/manifest.json"))
    assert manifest["rows"] == count
    with pytest.raises(OSError, match="403|necessary privileges"):  # the staged (restricted) copy is out of reach
        s3_lake.delta_table(STAGED_SANITIZED_DOCUMENTS).to_pyarrow_table()


def s3_lake_read(settings, relative: str) -> bytes:
    from privtext.platform.storage import filesystem

    fs, root = filesystem(settings.publish.export_path, settings.lakehouse.zone_store("published"))
    with fs.open_input_stream(f"{root}/{relative}") as stream:
        return stream.read()


def _kill_when_running(cluster, worker: str, ready, deadline: float) -> dict | None:
    """Once ``ready()``, SIGKILL ``worker``'s process group (the worker JVM, its executor and Python workers) while
    its executor runs a task: one its stderr shows started since and not finished. Returns that task's id and the
    application's cores once ``ready()``; None if no task ran before the deadline."""
    folder = cluster.folder / "work" / worker
    while time.monotonic() < deadline:
        if ready():
            cores = cluster.state()["activeapps"][0]["cores"]
            seen = {p: len(p.read_text().splitlines()) for p in folder.glob("app-*/*/stderr")}
            while time.monotonic() < deadline:
                for log in folder.glob("app-*/*/stderr"):
                    new = "\n".join(log.read_text().splitlines()[seen.get(log, 0):])
                    running = set(re.findall(r"Running task [^(\n]*\(TID (\d+)\)", new))
                    running -= set(re.findall(r"Finished task [^(\n]*\(TID (\d+)\)", new))
                    if running:
                        os.killpg(cluster.pids[worker], signal.SIGKILL)
                        return {"tid": int(min(running, key=int)), "cores": cores}
                time.sleep(0.05)
        time.sleep(0.2)
    return None


def lost_and_rerun(ends: list[dict]) -> tuple[list[dict], dict[int, tuple]]:
    """The event log's tasks lost with their executor, and for each (by task id) the first later successful
    attempt of its partition on another executor: (stage, stage attempt, task attempt, executor). A lost task
    is retried as a later attempt of its task set, or, where its stage read shuffle output the lost executor
    held, its stage is resubmitted (fetch failure) and the partition reruns as attempt 0 of a later stage
    attempt: both are its rerun (the stage id and partition id name the same work)."""
    lost = [e for e in ends if e["Task End Reason"]["Reason"] == "ExecutorLostFailure"]
    rerun = {}
    for e in lost:
        info = e["Task Info"]
        for r in sorted(ends, key=lambda r: r["Task Info"]["Launch Time"]):
            again = r["Task Info"]
            if (r["Task End Reason"]["Reason"] == "Success" and r["Stage ID"] == e["Stage ID"]
                    and again["Partition ID"] == info["Partition ID"] and again["Executor ID"] != info["Executor ID"]
                    and again["Launch Time"] >= info["Launch Time"]):
                rerun[info["Task ID"]] = (r["Stage ID"], r["Stage Attempt ID"], again["Attempt"], again["Executor ID"])
                break
    return lost, rerun
