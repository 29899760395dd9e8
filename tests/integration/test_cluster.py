"""The nightly export on a real standalone Spark cluster (a master and two workers, separate JVMs, the project
shipped as a zip with spark.submit.pyFiles) over a real S3 store (SeaweedFS) gives the same tables and ledger
as local[2] over a local lakehouse; a worker killed mid-stage changes nothing. The stages run in
subprocesses through the CLI, as ``make cluster-demo`` does (privtext.platform.local_cluster, local_s3)."""
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import duckdb
import pytest
import yaml
from deltalake import DeltaTable

from privtext.platform.lakehouse import Lakehouse
from privtext.platform.local_cluster import cluster_conf, project_zip, standalone_cluster
from privtext.platform.local_s3 import s3_conf
from privtext.platform.processes import free_port
from privtext.platform.tables import DOCUMENTS, PII_SPANS, PRIVACY_LEDGER, PUBLISHED_SANITIZED_DOCUMENTS
from privtext.settings import load_settings
from privtext.status import table_rows

DATE = "2026-01-15"
COMMON = {"tracking": {"enabled": False},
          "clusant": {"vocabulary": {"size": 60}, "n_clusters": 4, "metrics": {"perplexity": False}}}
# publishable (never deterministic), so canaries (random when not deterministic) are off and the audit skipped
PUBLISHABLE = {"pii": {"canaries": {"count": 0}},
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
    env = {**os.environ, **(env or {}), "PRIVTEXT_HMAC_KEY": "k" * 32, "HF_HUB_OFFLINE": "1",
           "PYSPARK_PYTHON": sys.executable}
    with open(conf.parent / "err.log", "w") as log:
        return subprocess.Popen([sys.executable, "-m", "privtext.cli", "--verbose", "--conf", str(conf), *args],
                                env=env, stdout=log, stderr=subprocess.STDOUT)


def finish(process: subprocess.Popen, conf: Path) -> str:
    process.wait(timeout=900)
    log = (conf.parent / "err.log").read_text()
    assert process.returncode == 0, log[-3000:]
    return log


def nightly(conf: Path, sample: Path, skip: tuple[str, ...], env: dict | None = None) -> dict[str, float]:
    """Run the nightly pipeline; returns each stage's wall time (s) from the pipeline's log."""
    process = privtext(conf, ["pipeline", "run", "nightly_sanitized_export", "--date", DATE, "--input", str(sample),
                              *(a for s in skip for a in ("--skip", s))], env)
    log = finish(process, conf)
    return {m[0]: float(m[1]) for m in re.findall(r"nightly_sanitized_export: (\w+) done in ([\d.]+) s", log)}


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


@pytest.mark.cluster
def test_the_nightly_export_on_a_standalone_cluster_over_s3_equals_local(tmp_path, s3_store, monkeypatch):
    from privtext.sample_data import generate, write_jsonl

    sample = write_jsonl(generate(100, seed=5), tmp_path / "in" / "messages.jsonl")
    skip = ("embed", "audit")
    local_conf = write_conf({"spark": {"master": "local[2]", "conf": {"spark.sql.shuffle.partitions": "4"}}},
                            tmp_path / "local", PUBLISHABLE)
    local_times = nightly(local_conf, sample, skip)
    with standalone_cluster(workers=2, cores=1, memory="1200m", env=s3_store.env) as cluster:
        conf = s3_conf(s3_store, cluster_conf(cluster, project_zip(tmp_path / "privtext.zip")))
        cluster_yaml = write_conf(conf, tmp_path / "cluster", PUBLISHABLE)
        cluster_times = nightly(cluster_yaml, sample, skip, s3_store.env)
        finished = cluster.state()["completedapps"]
        executors = {w.name for w in (cluster.folder / "work").iterdir() if any(w.glob("app-*/*/stderr"))}
    assert finished and finished[0]["cores"] == 2  # the application held a core on each worker
    assert executors == {"worker-0", "worker-1"}  # an executor JVM ran under each worker
    assert "AWS_SECRET_ACCESS_KEY" not in cluster_yaml.read_text() and s3_store.env["AWS_SECRET_ACCESS_KEY"] \
        not in cluster_yaml.read_text()  # credentials only in the environment

    for name, value in s3_store.env.items():  # this process reads the bucket too (delta-rs, DuckDB)
        monkeypatch.setenv(name, value)
    local_settings, s3_settings = load_settings(local_conf), load_settings(cluster_yaml)
    assert s3_settings.lakehouse.zone_root("published").startswith("s3://")
    local_lake, s3_lake = Lakehouse(None, local_settings.lakehouse), Lakehouse(None, s3_settings.lakehouse)
    local_rows, s3_rows = table_rows(local_settings), table_rows(s3_settings)
    print("\nrows (local[2] local disk | cluster S3):", [(n, r, c) for (n, r), (_, c) in zip(local_rows, s3_rows) if r])
    print("stage seconds (local[2] local disk | cluster S3):",
          {s: (local_times[s], cluster_times.get(s)) for s in local_times})
    assert s3_rows == local_rows
    assert dict(local_rows)["published.sanitized_documents"] >= 100
    assert ledger_totals(s3_lake) == ledger_totals(local_lake)
    print("ledger totals:", ledger_totals(s3_lake))
    assert spans(s3_lake) == spans(local_lake)

    # an analyst's read of the published table in the bucket, outside Spark: deltalake + DuckDB
    uri = s3_lake.table_uri(PUBLISHED_SANITIZED_DOCUMENTS)
    published = DeltaTable(uri, storage_options=s3_lake.storage_options(PUBLISHED_SANITIZED_DOCUMENTS))
    dataset = published.to_pyarrow_dataset()
    count, docs = duckdb.sql("SELECT count(*), count(DISTINCT doc_id) FROM dataset").fetchall()[0]
    assert uri.startswith("s3://privtext-published/") and count == docs == dict(local_rows)["published.sanitized_documents"]
    manifest = json.loads(s3_lake_read(s3_settings, f"sanitized_documents/{DATE}/manifest.json"))
    assert manifest["rows"] == count


def s3_lake_read(settings, relative: str) -> bytes:
    from privtext.platform.storage import filesystem

    fs, root = filesystem(settings.publish.export_path, settings.lakehouse.zone_store("published"))
    with fs.open_input_stream(f"{root}/{relative}") as stream:
        return stream.read()


def _kill_when_running(cluster, worker: str, documents: Path, deadline: float) -> bool:
    """Once ingest committed the documents, SIGKILL ``worker``'s process group (the worker JVM, its executor
    and Python workers) as soon as its executor starts a task; True if it did."""
    while time.monotonic() < deadline:
        if (documents / "_delta_log" / "00000000000000000001.json").exists():
            seen = {p: len(p.read_text().splitlines()) for p in (cluster.folder / "work" / worker).glob("app-*/*/stderr")}
            while time.monotonic() < deadline:
                for log in (cluster.folder / "work" / worker).glob("app-*/*/stderr"):
                    if "Running task" in "\n".join(log.read_text().splitlines()[seen.get(log, 0):]):
                        os.killpg(cluster.pids[worker], signal.SIGKILL)
                        return True
                time.sleep(0.05)
        time.sleep(0.2)
    return False


@pytest.mark.cluster
def test_a_worker_killed_mid_stage_changes_nothing(tmp_path):
    from privtext.sample_data import generate, write_jsonl

    sample = write_jsonl(generate(100, seed=8), tmp_path / "in" / "messages.jsonl")
    skip = ("embed", "sanitize", "audit", "publish")
    deterministic = {"run": {"deterministic": True, "seed": 3}, "pii": {"canaries": {"count": 5}}}
    local_conf = write_conf({"spark": {"master": "local[2]", "conf": {"spark.sql.shuffle.partitions": "4"}}},
                            tmp_path / "local", deterministic)
    nightly(local_conf, sample, skip)
    events = tmp_path / "events"
    events.mkdir()
    with standalone_cluster(workers=2, cores=1, memory="1200m") as cluster:
        conf = cluster_conf(cluster, project_zip(tmp_path / "privtext.zip"))
        conf["spark"]["conf"].update({"spark.task.maxFailures": "4", "spark.eventLog.enabled": "true",
                                      "spark.eventLog.dir": events.as_uri(), "spark.eventLog.compress": "false",
                                      "spark.eventLog.rolling.enabled": "false", "spark.ui.port": str(free_port())})
        conf_path = write_conf(conf, tmp_path / "cluster", deterministic)
        process = privtext(conf_path, ["pipeline", "run", "nightly_sanitized_export", "--date", DATE, "--input",
                                       str(sample), *(a for s in skip for a in ("--skip", s))])
        killed = _kill_when_running(cluster, "worker-1", tmp_path / "cluster" / "lake" / "restricted" / "documents",
                                    time.monotonic() + 600)
        finish(process, conf_path)
    assert killed
    ends = [json.loads(line) for log in events.rglob("*") if log.is_file() for line in log.read_text().splitlines()
            if '"SparkListenerTaskEnd"' in line]
    lost = [e for e in ends if e["Task End Reason"]["Reason"] == "ExecutorLostFailure"]
    retried = [e for e in ends if e["Task Info"]["Attempt"] > 0 and e["Task End Reason"]["Reason"] == "Success"]
    print(f"\nkilled worker-1: {len(lost)} task(s) lost with its executor, {len(retried)} retried attempt(s) succeeded")
    assert lost and retried

    lakes = [Lakehouse(None, load_settings(p).lakehouse) for p in (local_conf, conf_path)]
    documents = [lake.delta_table(DOCUMENTS).to_pyarrow_table().column("doc_id").to_pylist() for lake in lakes]
    assert sorted(documents[1]) == sorted(documents[0]) and len(set(documents[1])) == len(documents[1]) >= 100
    assert spans(lakes[1]) == spans(lakes[0]) and len(set(spans(lakes[1]))) == len(spans(lakes[1])) > 50
    assert ledger_totals(lakes[1]) == ledger_totals(lakes[0])
