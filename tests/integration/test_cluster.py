"""The nightly export's per-document stages on a real standalone Spark cluster (a master and two workers,
separate JVMs, the project shipped as a zip with spark.submit.pyFiles) give the same tables and the same
ledger as on local[2], and both workers ran executors. The stages run in subprocesses through the CLI,
exactly as ``make cluster-demo`` does (privtext.platform.local_cluster)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from deltalake import DeltaTable

from privtext.platform.local_cluster import cluster_conf, project_zip, standalone_cluster

DATE = "2026-01-15"
COMMON = {"run": {"deterministic": True, "seed": 3}, "tracking": {"enabled": False},
          "pii": {"canaries": {"count": 5}},
          "clusant": {"vocabulary": {"size": 60}, "n_clusters": 4, "metrics": {"perplexity": False}}}


def run_pipeline(conf: dict, folder: Path, sample: Path) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    conf = {**conf, **COMMON, "lakehouse": {"root": str(folder / "lake")},
            "clusant": {**COMMON["clusant"], "cache_dir": str(folder.parent / "vocab-cache")}}
    (folder / "env.yaml").write_text(yaml.safe_dump(conf))
    env = {**os.environ, "PRIVTEXT_HMAC_KEY": "k" * 32, "HF_HUB_OFFLINE": "1", "PYSPARK_PYTHON": sys.executable}
    out = subprocess.run([sys.executable, "-m", "privtext.cli", "--conf", str(folder / "env.yaml"), "pipeline", "run",
                          "nightly_sanitized_export", "--date", DATE, "--input", str(sample),
                          "--skip", "embed", "--skip", "audit", "--skip", "publish"],
                         env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout[out.stdout.index("{"):])


def tables(folder: Path) -> dict:
    lake = folder / "lake"
    spans = DeltaTable(str(lake / "restricted" / "pii_spans")).to_pandas()
    staged = DeltaTable(str(lake / "restricted" / "sanitized_documents")).to_pandas()
    ledger = DeltaTable(str(lake / "protected" / "privacy_ledger")).to_pandas()
    return {
        "documents": len(DeltaTable(str(lake / "restricted" / "documents")).to_pandas()),
        "spans": sorted(map(tuple, spans[["doc_id", "entity_type", "start", "end", "secret_id"]].values.tolist())),
        "replaced": sorted(map(tuple, staged[["doc_id", "n_spans", "n_replaced"]].values.tolist())),
        "charges": sorted((r["stage"], r["mechanism"], json.dumps(json.loads(r["params"]).get("eps")))
                          for _, r in ledger.iterrows()),
    }


@pytest.mark.cluster
def test_the_nightly_stages_on_a_standalone_cluster_equal_local(tmp_path):
    from privtext.sample_data import generate, write_jsonl

    sample = write_jsonl(generate(120, seed=5), tmp_path / "in" / "messages.jsonl")
    local = run_pipeline({"spark": {"master": "local[2]", "conf": {"spark.sql.shuffle.partitions": "4"}}},
                         tmp_path / "local", sample)
    with standalone_cluster(workers=2, cores=1, memory="1200m") as cluster:
        conf = cluster_conf(cluster, project_zip(tmp_path / "privtext.zip"))
        on_cluster = run_pipeline(conf, tmp_path / "cluster", sample)
        finished = cluster.state()["completedapps"]
        executors = {w.name for w in (cluster.folder / "work").iterdir() if any(w.glob("app-*/*/stderr"))}
    assert on_cluster["detect_pii"]["spans"] == local["detect_pii"]["spans"] > 50
    assert tables(tmp_path / "cluster") == tables(tmp_path / "local")
    assert finished and finished[0]["cores"] == 2  # the application held a core on each worker
    assert executors == {"worker-0", "worker-1"}  # an executor JVM ran under each worker
